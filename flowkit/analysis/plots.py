"""Pictures of trajectories (matplotlib, written to files)."""

from pathlib import Path

import numpy as np

from .._status import Status
from ..fields.layered import LayeredField


def plot_pathlines(traj, path, field=None, max_lines: int = 300, title: str | None = None, color_by: str = "time") -> Path:
    """Pathlines coloured by time (or by speed along the path, `color_by="speed"`), over the
    field's speed at the first saved time (2-D fields).

    3-D trajectories are drawn as their x–y projection. At most `max_lines` particles are drawn
    (evenly chosen); jumps across a periodic wrap and restarts on an inlet (a new generation)
    are not drawn as lines. Stopped particles end with a black cross.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    path = Path(path)
    positions = np.asarray(traj.positions, dtype=np.float64)
    times = np.asarray(traj.times, dtype=np.float64)
    n = positions.shape[1]
    chosen = np.unique(np.linspace(0, n - 1, min(n, max_lines)).astype(int))
    xy = positions[:, chosen, :2]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    if field is not None and (field.dim == 2 or _on_sphere(field)):
        _speed_background(fig, ax, field, float(times[0]))
    span = np.ptp(positions[..., :2].reshape(-1, 2), axis=0) + 1e-12
    segments = np.stack([xy[:-1], xy[1:]], axis=2)  # (T-1, P, 2, 2)
    jumps = np.any(np.abs(segments[:, :, 1] - segments[:, :, 0]) > 0.5 * span, axis=-1)
    if traj.generation is not None:
        jumps |= np.diff(np.asarray(traj.generation)[:, chosen], axis=0) != 0
    if color_by == "time":
        colour = np.broadcast_to(0.5 * (times[:-1] + times[1:])[:, None], jumps.shape)
    elif color_by == "speed":
        colour = np.linalg.norm(segments[:, :, 1] - segments[:, :, 0], axis=-1) / np.maximum(np.abs(np.diff(times)), 1e-300)[:, None]
    else:
        raise ValueError(f"color_by must be 'time' or 'speed', got {color_by!r}")
    lines = LineCollection(segments[~jumps], array=colour[~jumps], cmap="viridis", linewidths=0.7)
    ax.add_collection(lines)
    fig.colorbar(lines, ax=ax, label=color_by)
    stopped = np.asarray(traj.status)[-1, chosen] > Status.NOT_RELEASED
    if stopped.any():
        ax.plot(xy[-1, stopped, 0], xy[-1, stopped, 1], "kx", ms=3, label="stopped")
        ax.legend(loc="upper right", fontsize=7)
    if field is not None:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    else:
        ax.autoscale()
    _axes(ax, field)
    projection = " (x–y projection)" if positions.shape[-1] == 3 and not _on_sphere(field) else ""
    ax.set_title(title or f"{len(chosen)} of {n} pathlines, t = {times[0]:g} → {times[-1]:g}{projection}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _on_sphere(field) -> bool:
    """Whether the plot is a map in degrees (no field given: a plain plane)."""
    return field is not None and field.spherical


def _speed_background(fig, ax, field, t):
    """The field's speed over its box (on a sphere: in m/s at the surface, with the land drawn)."""
    import jax
    import jax.numpy as jnp

    from ..fields.grid import EARTH_RADIUS

    lo, hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 161), np.linspace(lo[1], hi[1], 81), indexing="xy")
    points = np.stack([gx.ravel(), gy.ravel()] + ([np.full(gx.size, lo[2])] if field.dim == 3 else []), axis=-1)
    points = jnp.asarray(points, dtype=field.bounds[0].dtype)
    u = np.asarray(jax.vmap(field, in_axes=(None, 0, None))(jnp.asarray(t, points.dtype), points, None))[:, :2]
    label = f"speed at t = {t:g}"
    if _on_sphere(field):  # degrees per second back to m/s
        u = u * np.pi / 180 * EARTH_RADIUS
        u[:, 0] *= np.cos(np.deg2rad(gy.ravel()))
        label = f"surface speed (m/s) at t = {t:g}"
    speed = np.linalg.norm(u, axis=-1).reshape(gx.shape)
    mesh = ax.pcolormesh(gx, gy, np.ma.masked_invalid(speed), cmap="Greys", shading="auto", alpha=0.5)
    fig.colorbar(mesh, ax=ax, label=label)
    if _on_sphere(field):
        _land(ax, field)


def _land(ax, field) -> None:
    """The field's land (its top level), drawn in sand colour."""
    land = getattr(field, "land", None)
    if land is None:
        return
    land = np.asarray(land) >= 0.5
    if isinstance(field, LayeredField):  # land per node of the horizontal mesh
        points = np.asarray(field.surface.points)[land]
        ax.scatter(points[:, 0], points[:, 1], s=4, marker="s", c="#b08040", linewidths=0, zorder=3)
        return
    if hasattr(field, "grid_shape"):  # curvilinear: land per node of the 2-D lon/lat grid
        points = np.asarray(field.points).reshape(field.grid_shape + (-1,))
        land, lon, lat = (a if a.ndim == 2 else a[:, :, 0] for a in (land.reshape(field.grid_shape), points[..., 0], points[..., 1]))
    else:
        land = land if land.ndim == 2 else land[:, :, 0]
        lon, lat = np.meshgrid(np.asarray(field.axes[0]), np.asarray(field.axes[1]), indexing="ij")
    ax.pcolormesh(lon, lat, np.ma.masked_where(~land, land.astype(float)), cmap="copper", vmin=0, vmax=1.6, shading="nearest", zorder=3)


def _axes(ax, field) -> None:
    """x/y at equal scale, or on a sphere longitude/latitude at the middle latitude's scale."""
    if _on_sphere(field):
        lo, hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
        ax.set_aspect(1 / max(np.cos(np.deg2rad(0.5 * (lo[1] + hi[1]))), 0.2))
        ax.set_xlabel("longitude (°E)")
        ax.set_ylabel("latitude (°N)")
    else:
        ax.set_aspect("equal")
        ax.set_xlabel("x")
        ax.set_ylabel("y")


def _save(fig, path) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(8, 4.5), dpi=120)


def plot_scalar_map(values, axes, path, label: str, title: str, cmap: str = "viridis", field=None) -> Path:
    """A 2-D map of `values` `(nx, ny)` on coordinate `axes` (x, y) with a labelled colour bar;
    with a spherical `field`, a lon/lat map with its land."""
    fig, ax = _figure()
    mesh = ax.pcolormesh(np.asarray(axes[0]), np.asarray(axes[1]), np.asarray(values, dtype=np.float64).T, cmap=cmap, shading="auto")
    fig.colorbar(mesh, ax=ax, label=label)
    if _on_sphere(field):
        _land(ax, field)
    _axes(ax, field)
    ax.set_title(title)
    return _save(fig, path)


def plot_ftle(ftle, axes, path, t0: float, T: float) -> Path:
    """FTLE map (a 3-D field is shown at its middle z slice)."""
    ftle = np.asarray(ftle)
    if ftle.ndim == 3:
        ftle = ftle[:, :, ftle.shape[2] // 2]
    kind = "forward (repelling)" if T > 0 else "backward (attracting)"
    return plot_scalar_map(ftle, axes, path, label="FTLE", title=f"{kind} FTLE, t0 = {t0:g}, T = {T:g}", cmap="magma")


def plot_density(counts, bounds, path, time: float | None = None, field=None) -> Path:
    """Particle counts per cell `(nx, ny)` on the box `bounds`; with a spherical `field`, per
    10⁴ km² of the sphere (cells shrink toward the poles), on a lon/lat map with its land."""
    from .density import per_area

    counts = np.asarray(counts, dtype=np.float64)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    edges = [np.linspace(lo[i], hi[i], counts.shape[i] + 1) for i in range(2)]
    suffix = "" if time is None else f" at t = {time:g}"
    label = "particles per cell"
    if _on_sphere(field):
        counts, label = per_area(counts, (lo, hi)) * 1e4, "particles per 10⁴ km²"
    return plot_scalar_map(counts, edges, path, label=label, title=f"particle density{suffix}", cmap="viridis", field=field)


def plot_snapshot(traj, frame: int, path, field=None) -> Path:
    """Particles at one saved frame over the field's speed (2-D fields), coloured by status."""
    fig, ax = _figure()
    t = float(np.asarray(traj.times)[frame])
    if field is not None and (field.dim == 2 or _on_sphere(field)):
        _speed_background(fig, ax, field, t)
    x = np.asarray(traj.positions[frame], dtype=np.float64)
    status = np.asarray(traj.status[frame])
    for code in np.unique(status):
        sel = status == code
        ax.plot(x[sel, 0], x[sel, 1], ".", ms=2, label=f"{Status(int(code)).name.lower()} ({int(sel.sum())})")
    ax.legend(loc="upper right", fontsize=7, markerscale=4)
    _axes(ax, field)
    ax.set_title(f"particles at t = {t:g}")
    return _save(fig, path)
