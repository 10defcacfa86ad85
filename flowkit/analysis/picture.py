"""The parts every picture shares: the figure and its box, axes in the data's terms (hemispheres,
equal scales), the field behind the particles (its speed, its outline, its land) and time as
dates or hours on a colour bar."""

from pathlib import Path
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import numpy as np

from .._custom_types import PathLike, TimesLike
from .._time import TimeOrigin
from ..fields.base import AbstractField
from ..fields.curvilinear import CurvilinearField
from ..fields.grid import GridField, metres_per_second
from ..fields.layered import LayeredField
from ..fields.streamed import StreamedField
from ..trajectory import Trajectory
from .outline import draw_outline, mesh_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

Shown = AbstractField | StreamedField
"""A field a picture draws behind the particles."""
Box = tuple[np.ndarray, np.ndarray]
"""`(lo, hi)`: the x–y box a picture shows (`view_box`)."""

GRID = (161, 121)
"""Points across and up a picture's box where the field is evaluated (its speed and outline)."""


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


def on_sphere(field: Shown | None) -> bool:
    """Whether the picture is a map in degrees (no field given: a plain plane)."""
    return field is not None and field.spherical


def when(origin: TimeOrigin | None, t: float) -> str:
    """A time for a title: the date on dated data, else `t = ...` in its unit (`t = 3 days`)."""
    if origin is not None:
        return date(origin, t)
    scale, unit = time_unit(t)
    return f"t = {t / scale:.4g} {unit}"


def date(origin: TimeOrigin, t: float) -> str:
    stamp = origin.dates([t])[0]
    return stamp.strftime("%Y-%m-%d %H:%M") if (stamp.hour, stamp.minute) != (0, 0) else stamp.strftime("%Y-%m-%d")


def time_unit(span: float) -> tuple[float, str]:
    """`(seconds, name)` of the unit a time span reads best in."""
    for seconds, name in ((86400.0, "days"), (3600.0, "hours"), (60.0, "minutes")):
        if abs(span) >= 2 * seconds:
            return seconds, name
    return 1.0, "s"


def time_axis(
    values: np.ndarray, start: float, origin: TimeOrigin | None, until: float
) -> tuple[np.ndarray, str, float, float]:
    """Times `values` as a colour bar shows them, `(values, label, bottom, top)` for a run from
    `start` whose particles moved until `until`: in days, hours, minutes or seconds by that span;
    on dated data since the first time (named), else as the run's own times."""
    scale, unit = time_unit(until - start)
    if origin is not None:
        return (values - start) / scale, f"{unit} since {date(origin, start)}", 0.0, (until - start) / scale
    return values / scale, f"time ({unit})", start / scale, until / scale


def projection(positions: np.ndarray, field: Shown | None) -> str:
    return (
        " (x–y projection)"
        if positions.shape[-1] == 3 and not on_sphere(field)
        else (" (surface view)" if positions.shape[-1] == 3 else "")
    )


def field_map(
    field: Shown, times: TimesLike, box: Box, per_time: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """`(gx, gy, speed, inside)` on the `GRID` over `box`: the mean speed over `times` (with
    `per_time`, the speed at each of them, `(len(times), ny, nx)`; m/s on a sphere, at the top
    level of a 3-D map; None for a 3-D field not on a sphere, which a plane view cannot show) and
    where the field's domain lies (at any depth, for 3-D; at every one of `times`)."""
    lo, hi = box
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], GRID[0]), np.linspace(lo[1], hi[1], GRID[1]), indexing="xy")
    flat = [gx.ravel(), gy.ravel()]
    f_lo, f_hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
    if field.dim == 3 and not on_sphere(field) and mesh_of(field) is not None:  # its outline is drawn from its faces
        return gx, gy, None, np.ones(gx.shape, bool)
    if field.dim == 3 and not on_sphere(field):  # the outline of the domain at five depths
        levels = f_lo[2] + (np.arange(5) + 0.5) / 5 * (f_hi[2] - f_lo[2])
        points = np.concatenate([np.stack(flat + [np.full(gx.size, z)], axis=-1) for z in levels])
        u = speeds_at(field, float(times[0]), points)
        inside = np.isfinite(u[:, 0]).reshape(len(levels), -1).any(axis=0).reshape(gx.shape)
        return gx, gy, None, inside
    points = np.stack(flat + ([np.full(gx.size, f_lo[2])] if field.dim == 3 else []), axis=-1)
    u = velocities_at(field, np.asarray(times, np.float64), points)[..., :2]
    if on_sphere(field):  # degrees per second back to m/s
        u = metres_per_second(u, gy.ravel())
    speeds = np.linalg.norm(u, axis=-1).reshape(len(u), *gx.shape)
    speed = speeds if per_time else np.mean(speeds, axis=0)
    return gx, gy, speed, np.isfinite(speeds).all(axis=0)


def speed_background(
    fig: "Figure", ax: "Axes", field: Shown, times: TimesLike, box: Box, label: str
) -> "QuadMesh | None":
    """The field's speed over the picture's box in grey with its colour bar (`label`, with m/s
    on a sphere), colour limits at the 99th percentile, and the domain's outline (a mesh's own,
    `draw_outline`); on a sphere the land. Returns the speed's mesh (on `field_map`'s grid: an
    animation sets its values frame by frame), None where nothing is drawn behind the outline: a
    3-D plane view, or water at rest everywhere."""
    gx, gy, speed, inside = field_map(field, times, box)
    outline(ax, field, gx, gy, inside)
    mesh = None
    if speed is not None and bool(np.nanmax(speed, initial=0.0) > 0):
        top = float(np.nanpercentile(speed[inside], 99))
        mesh = ax.pcolormesh(gx, gy, np.ma.masked_invalid(speed), cmap="Greys", shading="auto", alpha=0.5, vmin=0)
        mesh.set_clim(0, top if top > 0 else None)
        units = " (m/s)" if on_sphere(field) else ""
        fig.colorbar(mesh, ax=ax, label=f"{label}{units}", shrink=0.7, extend="max", pad=0.01)
    if on_sphere(field):
        land(ax, field)
    return mesh


def outline(ax: "Axes", field: Shown, gx: np.ndarray, gy: np.ndarray, inside: np.ndarray) -> None:
    """The domain's outline: a mesh's own (`draw_outline`), else the edge of `inside` on `field_map`'s grid."""
    if not draw_outline(ax, field) and inside.any() and not inside.all():
        ax.contour(gx, gy, inside.astype(float), levels=[0.5], colors="0.35", linewidths=0.7, zorder=2)


TIMES = 16
"""Times a compiled call of `velocities_at` evaluates together."""


def speeds_at(field: AbstractField | StreamedField, t: float, points: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """The field's velocity `(n, dim)` at `points` at time `t`, NaN outside its domain
    (`velocities_at` at one time)."""
    return velocities_at(field, [t], points, chunk)[0]


def velocities_at(
    field: AbstractField | StreamedField, times: TimesLike, points: np.ndarray, chunk: int = 8192
) -> np.ndarray:
    """The field's velocity `(len(times), n, dim)` at `points` at each of `times`, NaN outside its
    domain: located once per batch of `chunk` points and evaluated at `TIMES` times a call (one
    compiled shape; one time alone, or a streamed field's one time a call, near it), as a run
    evaluates its particles."""
    import jax.numpy as jnp

    times = np.atleast_1d(np.asarray(times, np.float64))
    out = np.full((len(times), len(points), field.dim), np.nan)
    together = 1 if isinstance(field, StreamedField) or len(times) == 1 else TIMES
    for first in range(0, len(times), together):
        at = times[first : first + together]
        shown = field.near(float(at[0])) if isinstance(field, StreamedField) else field
        dtype = shown.bounds[0].dtype
        ts = jnp.asarray(np.concatenate([at, np.repeat(at[-1:], together - len(at))]), dtype)
        for start in range(0, len(points), chunk):
            rows = np.asarray(points[start : start + chunk], np.float64)
            padded = np.concatenate([rows, np.repeat(rows[-1:], chunk - len(rows), axis=0)])
            u, inside = _located_velocities(shown, ts, jnp.asarray(padded, dtype))
            u = np.where(np.asarray(inside)[None, :, None], np.asarray(u), np.nan)
            out[first : first + len(at), start : start + len(rows)] = u[: len(at), : len(rows)]
    return out


@eqx.filter_jit
def _located_velocities(field: AbstractField, ts, x):
    hint, inside = field.locate_batch(x, None)
    u = jax.vmap(lambda t: field.velocity_batch(t, x, None, hint)[0])(ts)
    return u, inside


def land(ax: "Axes", field: Shown) -> None:
    """The field's land (its top level), drawn in sand colour."""
    mask = field.land if isinstance(field, (GridField, CurvilinearField, LayeredField)) else None
    if mask is None:
        return
    mask = np.asarray(mask) >= 0.5
    if isinstance(field, LayeredField):  # filled where the mask on the mesh reaches 1/2 (where particles beach)
        from matplotlib.tri import Triangulation

        cells = np.asarray(field.surface.nodes)
        triangles = cells if cells.shape[1] == 3 else np.concatenate([cells[:, [0, 1, 2]], cells[:, [0, 2, 3]]])
        points = np.asarray(field.surface.points)
        ax.tricontourf(
            Triangulation(points[:, 0], points[:, 1], triangles),
            mask.astype(float),
            levels=[0.5, 1.5],
            colors=["#b08040"],
            zorder=3,
        )
        return
    if isinstance(field, CurvilinearField):  # land per node of the 2-D lon/lat grid
        points = np.asarray(field.mesh.points).reshape(field.grid_shape + (-1,))
        mask, lon, lat = (
            a if a.ndim == 2 else a[:, :, 0] for a in (mask.reshape(field.grid_shape), points[..., 0], points[..., 1])
        )
    else:
        mask = mask if mask.ndim == 2 else mask[:, :, 0]
        lon, lat = np.meshgrid(np.asarray(field.axes[0]), np.asarray(field.axes[1]), indexing="ij")
    filled = np.ma.masked_where(~mask, mask.astype(float))
    ax.pcolormesh(lon, lat, filled, cmap="copper", vmin=0, vmax=1.6, shading="nearest", zorder=3)


def axes(ax: "Axes", field: Shown | None, box: Box | None = None) -> None:
    """x/y at equal scale, or on a sphere longitude/latitude at the middle latitude's scale,
    ticks labelled by hemisphere (°E/°W, °N/°S); limited to `box`."""
    from matplotlib.ticker import FuncFormatter

    if box is not None:
        ax.set_xlim(box[0][0], box[1][0])
        ax.set_ylim(box[0][1], box[1][1])
    ax.set_aspect(aspect(box, field))
    if not on_sphere(field):
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        return
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _degrees((v + 180) % 360 - 180, "E", "W")))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _degrees(v, "N", "S")))
    ax.set_xlabel("longitude")
    ax.set_ylabel("latitude")


def _degrees(value: float, positive: str, negative: str) -> str:
    value = round(value, 6) + 0.0  # no "-0"
    return "0°" if value == 0 or abs(value) == 180 else f"{abs(value):g}°{positive if value > 0 else negative}"


def aspect(box: Box | None, field: Shown | None) -> float:
    if not on_sphere(field) or box is None:
        return 1.0
    return 1 / max(np.cos(np.deg2rad(0.5 * (box[0][1] + box[1][1]))), 0.2)


def save(fig: "Figure", path: PathLike) -> Path:
    import matplotlib.pyplot as plt

    from .._files import written

    path = Path(path)
    try:
        with written(path, overwrite=True) as temporary:
            fig.savefig(temporary, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def figure(box: Box | None = None, field: Shown | None = None):
    """A figure whose size follows the picture's box (with room for two colour bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratio = 0.6
    if box is not None:
        (x0, y0), (x1, y1) = box[0][:2], box[1][:2]
        ratio = float(np.clip((y1 - y0) * aspect(box, field) / max(x1 - x0, 1e-300), 0.25, 2.0))
    width = 7.0 if ratio <= 1 else 7.0 / ratio
    return plt.subplots(figsize=(width + 2.0, width * ratio + 0.8), dpi=120, layout="constrained")


def say(ax: "Axes", message: str) -> None:
    """A picture with nothing to show says why, in its middle."""
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.25", zorder=6)
