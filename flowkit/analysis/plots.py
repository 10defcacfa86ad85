"""Pictures of trajectories (matplotlib, written to files)."""

from pathlib import Path

import equinox as eqx
import numpy as np

from .._custom_types import PathLike
from .._status import Status
from ..fields.base import AbstractField
from ..fields.curvilinear import CurvilinearField
from ..fields.grid import GridField
from ..fields.layered import LayeredField
from ..io.stream import StreamedField
from ..trajectory import Trajectory


def plot_pathlines(
    traj: Trajectory,
    path: PathLike,
    field: AbstractField | StreamedField | None = None,
    max_lines: int = 300,
    title: str | None = None,
    color_by: str = "time",
) -> Path:
    """Pathlines coloured by time (dates on dated data; or by speed along the path,
    `color_by="speed"`), over the field's speed at the first saved time in grey (2-D fields and
    maps), zoomed to the particles.

    3-D trajectories are drawn as their x–y projection (said in the title). At most `max_lines`
    particles are drawn (evenly chosen); jumps across a periodic wrap and restarts on an inlet
    (a new generation) are not drawn as lines. Stopped particles end with a black cross.
    """
    from matplotlib.collections import LineCollection

    path = Path(path)
    positions = np.asarray(traj.positions, dtype=np.float64)
    times = np.asarray(traj.times, dtype=np.float64)
    n = positions.shape[1]
    chosen = np.unique(np.linspace(0, n - 1, min(n, max_lines)).astype(int))
    xy = positions[:, chosen, :2]
    box = view_box(traj, field)
    fig, ax = _figure(box, field)
    if field is not None and (field.dim == 2 or _on_sphere(field)):
        _speed_background(fig, ax, field, float(times[0]), box, colourbar=False)
    span = np.ptp(positions[..., :2].reshape(-1, 2), axis=0) + 1e-12
    segments = np.stack([xy[:-1], xy[1:]], axis=2)  # (T-1, P, 2, 2)
    jumps = np.any(np.abs(segments[:, :, 1] - segments[:, :, 0]) > 0.5 * span, axis=-1)
    if traj.generation is not None:
        jumps |= np.diff(np.asarray(traj.generation)[:, chosen], axis=0) != 0
    origin = None if field is None else field.time_origin
    if color_by == "time":
        scale, label = (86400.0, f"days since {_date(origin, times[0])}") if origin is not None else (1.0, "time")
        colour = np.broadcast_to(
            (0.5 * (times[:-1] + times[1:]) - (times[0] if origin is not None else 0.0))[:, None] / scale, jumps.shape
        )
    elif color_by == "speed":
        colour = (
            np.linalg.norm(segments[:, :, 1] - segments[:, :, 0], axis=-1)
            / np.maximum(np.abs(np.diff(times)), 1e-300)[:, None]
        )
        label = "speed along the path (° per s)" if _on_sphere(field) else "speed along the path"
    else:
        raise ValueError(f"color_by must be 'time' or 'speed', got {color_by!r}")
    lines = LineCollection(segments[~jumps], array=colour[~jumps], cmap="viridis", linewidths=0.7, zorder=4)
    ax.add_collection(lines)
    fig.colorbar(lines, ax=ax, label=label, shrink=0.9)
    stopped = np.asarray(traj.status)[-1, chosen] > Status.NOT_RELEASED
    if stopped.any():
        ax.plot(xy[-1, stopped, 0], xy[-1, stopped, 1], "kx", ms=4, label="stopped", zorder=5)
        ax.legend(loc="upper right", fontsize=7)
    _axes(ax, field, box)
    background = ", grey: speed at the start" if field is not None and (field.dim == 2 or _on_sphere(field)) else ""
    span = f"{_when(origin, times[0])} → {_when(origin, times[-1])}"
    ax.set_title(
        title or f"{len(chosen)} of {n} pathlines, {span}{_projection(positions, field)}{background}", fontsize=9
    )
    return _save(fig, path)


def view_box(
    traj: Trajectory, field: AbstractField | StreamedField | None = None, margin: float = 0.08
) -> tuple[np.ndarray, np.ndarray]:
    """The x–y box a picture shows: the particles' extent over all frames with a margin,
    within the field's box; the whole field when the particles fill most of it."""
    xy = np.asarray(traj.positions, dtype=np.float64)[..., :2].reshape(-1, 2)
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if field is None:
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        pad = margin * np.maximum(hi - lo, 1e-12)
        return lo - pad, hi + pad
    f_lo, f_hi = (np.asarray(b, dtype=np.float64)[:2] for b in field.bounds)
    if not len(xy):
        return f_lo, f_hi
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    pad = margin * np.maximum(hi - lo, 0.02 * (f_hi - f_lo))
    lo, hi = np.maximum(lo - pad, f_lo), np.minimum(hi + pad, f_hi)
    if np.all((hi - lo) > 0.7 * (f_hi - f_lo)):
        return f_lo, f_hi
    return lo, hi


def _when(origin, t) -> str:
    """A time for a title: the date on dated data, else `t = ...`."""
    return _date(origin, t) if origin is not None else f"t = {t:g}"


def _date(origin, t) -> str:
    date = origin.dates([t])[0]
    return date.strftime("%Y-%m-%d %H:%M") if (date.hour, date.minute) != (0, 0) else date.strftime("%Y-%m-%d")


def _projection(positions, field) -> str:
    return (
        " (x–y projection)"
        if positions.shape[-1] == 3 and not _on_sphere(field)
        else (" (surface view)" if positions.shape[-1] == 3 else "")
    )


def _on_sphere(field) -> bool:
    """Whether the plot is a map in degrees (no field given: a plain plane)."""
    return field is not None and field.spherical


def _speed_background(fig, ax, field, t, box, colourbar: bool = True):
    """The field's speed over the picture's box, grey (on a sphere: in m/s at the surface, with
    the land drawn); colour limits at the 99th percentile, so one fast spot does not wash it out."""
    from ..fields.grid import EARTH_RADIUS

    lo, hi = box
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 161), np.linspace(lo[1], hi[1], 121), indexing="xy")
    f_lo = np.asarray(field.bounds[0], dtype=np.float64)
    points = np.stack([gx.ravel(), gy.ravel()] + ([np.full(gx.size, f_lo[2])] if field.dim == 3 else []), axis=-1)
    u = speeds_at(field, t, points)[:, :2]
    label = f"speed at {_when(field.time_origin, t)}"
    if _on_sphere(field):  # degrees per second back to m/s
        u = u * np.pi / 180 * EARTH_RADIUS
        u[:, 0] *= np.cos(np.deg2rad(gy.ravel()))
        label = f"surface speed (m/s), {_when(field.time_origin, t)}"
    speed = np.linalg.norm(u, axis=-1).reshape(gx.shape)
    top = np.nanpercentile(speed, 99) if np.isfinite(speed).any() else None
    mesh = ax.pcolormesh(gx, gy, np.ma.masked_invalid(speed), cmap="Greys", shading="auto", alpha=0.5, vmin=0, vmax=top)
    if colourbar:
        fig.colorbar(mesh, ax=ax, label=label, shrink=0.9)
    if _on_sphere(field):
        _land(ax, field)


def speeds_at(field: AbstractField | StreamedField, t: float, points: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """The field's velocity `(n, dim)` at `points` at time `t`, NaN outside its domain: located
    once and evaluated in batches of `chunk` (one compiled shape), as a run evaluates its
    particles."""
    import jax.numpy as jnp

    field = field.near(t) if isinstance(field, StreamedField) else field
    dtype = field.bounds[0].dtype
    out = np.full((len(points), field.dim), np.nan)
    for start in range(0, len(points), chunk):
        rows = np.asarray(points[start : start + chunk], np.float64)
        padded = np.concatenate([rows, np.repeat(rows[-1:], chunk - len(rows), axis=0)])
        u, inside = _located_velocity(field, jnp.asarray(t, dtype), jnp.asarray(padded, dtype))
        out[start : start + len(rows)] = np.where(np.asarray(inside)[:, None], np.asarray(u), np.nan)[: len(rows)]
    return out


@eqx.filter_jit
def _located_velocity(field: AbstractField, t, x):
    hint, inside = field.locate_batch(x, None)
    u, _ = field.velocity_batch(t, x, None, hint)
    return u, inside


def _land(ax, field) -> None:
    """The field's land (its top level), drawn in sand colour."""
    land = field.land if isinstance(field, (GridField, CurvilinearField, LayeredField)) else None
    if land is None:
        return
    land = np.asarray(land) >= 0.5
    if isinstance(
        field, LayeredField
    ):  # filled where the mask interpolated on the mesh reaches 1/2 (where particles beach)
        from matplotlib.tri import Triangulation

        cells = np.asarray(field.surface.nodes)
        triangles = cells if cells.shape[1] == 3 else np.concatenate([cells[:, [0, 1, 2]], cells[:, [0, 2, 3]]])
        points = np.asarray(field.surface.points)
        ax.tricontourf(
            Triangulation(points[:, 0], points[:, 1], triangles),
            land.astype(float),
            levels=[0.5, 1.5],
            colors=["#b08040"],
            zorder=3,
        )
        return
    if isinstance(field, CurvilinearField):  # curvilinear: land per node of the 2-D lon/lat grid
        points = np.asarray(field.mesh.points).reshape(field.grid_shape + (-1,))
        land, lon, lat = (
            a if a.ndim == 2 else a[:, :, 0] for a in (land.reshape(field.grid_shape), points[..., 0], points[..., 1])
        )
    else:
        land = land if land.ndim == 2 else land[:, :, 0]
        lon, lat = np.meshgrid(np.asarray(field.axes[0]), np.asarray(field.axes[1]), indexing="ij")
    ax.pcolormesh(
        lon,
        lat,
        np.ma.masked_where(~land, land.astype(float)),
        cmap="copper",
        vmin=0,
        vmax=1.6,
        shading="nearest",
        zorder=3,
    )


def _axes(ax, field, box=None) -> None:
    """x/y at equal scale, or on a sphere longitude/latitude at the middle latitude's scale;
    limited to `box`."""
    if box is not None:
        ax.set_xlim(box[0][0], box[1][0])
        ax.set_ylim(box[0][1], box[1][1])
    ax.set_aspect(_aspect(box, field))
    ax.set_xlabel("longitude (°E)" if _on_sphere(field) else "x")
    ax.set_ylabel("latitude (°N)" if _on_sphere(field) else "y")


def _aspect(box, field) -> float:
    if not _on_sphere(field) or box is None:
        return 1.0
    return 1 / max(np.cos(np.deg2rad(0.5 * (box[0][1] + box[1][1]))), 0.2)


def _save(fig, path) -> Path:
    import matplotlib.pyplot as plt

    from ..io.atomic import written

    path = Path(path)
    try:
        with written(path, overwrite=True) as temporary:
            fig.savefig(temporary, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def _figure(box=None, field=None):
    """A figure whose size follows the picture's box (with room for one colour bar)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratio = (
        0.6
        if box is None
        else float(
            np.clip((box[1][1] - box[0][1]) * _aspect(box, field) / max(box[1][0] - box[0][0], 1e-300), 0.25, 2.0)
        )
    )
    width = 7.0 if ratio <= 1 else 7.0 / ratio
    return plt.subplots(figsize=(width + 1.3, width * ratio + 0.8), dpi=120, layout="constrained")


def plot_scalar_map(
    values,
    axes,
    path: PathLike,
    label: str,
    title: str,
    cmap: str = "viridis",
    field: AbstractField | StreamedField | None = None,
    robust: bool = False,
) -> Path:
    """A 2-D map of `values` `(nx, ny)` on coordinate `axes` (x, y) with a labelled colour bar;
    with a spherical `field`, a lon/lat map with its land. `robust` (counts): empty cells blank,
    the colour scale from 0 to the 98th percentile of the others (a pile-up at one wall does not
    flatten the rest)."""
    values = np.asarray(values, dtype=np.float64)
    x, y = np.asarray(axes[0], dtype=np.float64), np.asarray(axes[1], dtype=np.float64)
    box = (np.array([x[0], y[0]]), np.array([x[-1], y[-1]]))
    fig, ax = _figure(box, field)
    limits = {}
    if robust and np.any(values > 0):  # counts: empty cells left blank, the top at the 98th percentile
        limits = {"vmin": 0.0, "vmax": max(float(np.nanpercentile(values[values > 0], 98)), 1e-300)}
        values = np.ma.masked_equal(values, 0.0)
    mesh = ax.pcolormesh(x, y, values.T, cmap=cmap, shading="auto", **limits)
    fig.colorbar(
        mesh, ax=ax, label=label, shrink=0.9, extend="max" if limits and values.max() > limits["vmax"] else "neither"
    )
    if _on_sphere(field):
        _land(ax, field)
    _axes(ax, field, box)
    ax.set_title(title, fontsize=9)
    return _save(fig, path)


def plot_ftle(ftle, axes, path: PathLike, t0: float, T: float) -> Path:
    """FTLE map (a 3-D field is shown at its middle z slice)."""
    ftle = np.asarray(ftle)
    if ftle.ndim == 3:
        ftle = ftle[:, :, ftle.shape[2] // 2]
    kind = "forward (repelling)" if T > 0 else "backward (attracting)"
    return plot_scalar_map(ftle, axes, path, label="FTLE", title=f"{kind} FTLE, t0 = {t0:g}, T = {T:g}", cmap="magma")


def plot_density(
    counts,
    bounds,
    path: PathLike,
    time: float | None = None,
    field: AbstractField | StreamedField | None = None,
    projected: bool = False,
) -> Path:
    """Particle counts per cell `(nx, ny)` on the box `bounds`, the cell size in the colour
    bar's label; with a spherical `field`, per 10⁴ km² of the sphere (cells shrink toward the
    poles), on a lon/lat map with its land. Colour limits are robust (percentiles).
    `projected`: the counts are summed over depth (a 3-D run), said in the title."""
    from .density import per_area

    counts = np.asarray(counts, dtype=np.float64)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    edges = [np.linspace(lo[i], hi[i], counts.shape[i] + 1) for i in range(2)]
    size = (hi - lo) / np.asarray(counts.shape[:2])
    origin = None if field is None else field.time_origin
    suffix = "" if time is None else f", {_when(origin, time)}"
    label = f"particles per cell of {size[0]:.3g} × {size[1]:.3g}"
    if _on_sphere(field):
        counts, label = (
            per_area(counts, (lo, hi)) * 1e4,
            f"particles per 10⁴ km² (cells {size[0]:.3g}° × {size[1]:.3g}°)",
        )
    title = f"particle density{suffix}" + (
        " (x–y projection: summed over z)"
        if projected and not _on_sphere(field)
        else " (all depths)"
        if projected
        else ""
    )
    return plot_scalar_map(counts, edges, path, label=label, title=title, cmap="viridis", field=field, robust=True)


_STATUS_STYLE = {
    Status.ACTIVE: dict(marker=".", ms=2.5, color="tab:blue"),
    Status.NOT_RELEASED: dict(marker=".", ms=2, color="0.6"),
    Status.BEACHED: dict(marker="o", ms=3.5, color="red", mec="black", mew=0.4),
    Status.OUT_OF_DOMAIN: dict(marker="x", ms=4, color="black"),
    Status.ABSORBED: dict(marker="s", ms=3, color="magenta", mec="black", mew=0.3),
}


def plot_snapshot(
    traj: Trajectory, frame: int, path: PathLike, field: AbstractField | StreamedField | None = None
) -> Path:
    """Particles at one saved frame over the field's speed (2-D fields and maps), each status
    in its own colour and marker, drawn above the land, zoomed to the particles."""
    box = view_box(traj, field)
    fig, ax = _figure(box, field)
    t = float(np.asarray(traj.times)[frame])
    if field is not None and (field.dim == 2 or _on_sphere(field)):
        _speed_background(fig, ax, field, t, box)
    x = np.asarray(traj.positions[frame], dtype=np.float64)
    status = np.asarray(traj.status[frame])
    for code in np.unique(status):
        sel = status == code
        style = _STATUS_STYLE.get(Status(int(code)), dict(marker="+", ms=4, color="orange"))
        ax.plot(
            x[sel, 0],
            x[sel, 1],
            ls="none",
            label=f"{Status(int(code)).name.lower()} ({int(sel.sum())})",
            zorder=5,
            **style,
        )
    ax.legend(loc="upper right", fontsize=7, markerscale=2)
    _axes(ax, field, box)
    ax.set_title(
        f"particles, {_when(None if field is None else field.time_origin, t)}{_projection(x[None], field)}", fontsize=9
    )
    return _save(fig, path)
