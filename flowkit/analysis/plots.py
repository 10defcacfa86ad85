"""Pictures of trajectories and of what is computed from them (matplotlib, written to files)."""

from pathlib import Path

import numpy as np

from .._custom_types import PathLike
from .._status import Status
from ..fields.base import AbstractField
from ..fields.streamed import StreamedField
from ..trajectory import Trajectory
from .outline import draw_outline
from .picture import (
    axes,
    figure,
    land,
    on_sphere,
    projection,
    save,
    say,
    speed_background,
    time_axis,
    view_box,
    when,
)

BACKGROUND_TIMES = 5
"""Saved times (evenly chosen) whose mean speed is drawn behind pathlines."""


def plot_pathlines(
    traj: Trajectory,
    path: PathLike,
    field: AbstractField | StreamedField | None = None,
    max_lines: int = 300,
    title: str | None = None,
    color_by: str = "time",
) -> Path:
    """Pathlines coloured by time (days or hours, since the first date on dated data; or by
    speed along the path, `color_by="speed"`), over the field's mean speed during the run in
    grey with its scale (2-D fields and maps) and the domain's outline, zoomed to the particles.

    The time scale ends when the last drawn particle stops moving. 3-D trajectories are drawn
    as their x–y projection (said in the title). At most `max_lines` particles are drawn (evenly
    chosen), each starting at a dot; jumps across a periodic wrap and restarts on an inlet (a
    new generation) are not drawn as lines. Stopped particles end with a black cross.
    """
    from matplotlib.collections import LineCollection

    positions = np.asarray(traj.positions, dtype=np.float64)
    times = np.asarray(traj.times, dtype=np.float64)
    n = positions.shape[1]
    chosen = np.unique(np.linspace(0, n - 1, min(n, max_lines)).astype(int))
    xy = positions[:, chosen, :2]
    box = view_box(traj, field)
    fig, ax = figure(box, field)
    origin = None if field is None else field.time_origin
    background = False
    if field is not None:
        picked = times[np.unique(np.linspace(0, len(times) - 1, BACKGROUND_TIMES).astype(int))]
        background = speed_background(fig, ax, field, picked, box, "mean speed over the run") is not None
    span = np.ptp(positions[..., :2].reshape(-1, 2), axis=0) + 1e-12
    segments = np.stack([xy[:-1], xy[1:]], axis=2)  # (T-1, P, 2, 2)
    jumps = np.any(np.abs(segments[:, :, 1] - segments[:, :, 0]) > 0.5 * span, axis=-1)
    if traj.generation is not None:
        jumps |= np.diff(np.asarray(traj.generation)[:, chosen], axis=0) != 0
    moved = np.any(segments[:, :, 1] != segments[:, :, 0], axis=-1)
    moves = ~jumps & np.all(np.isfinite(segments), axis=(2, 3)) & moved
    if moves.any():
        until = times[1:][moves.any(axis=1)].max()
        colour, label, limits = _line_colours(segments, times, origin, until, color_by, field)
        lines = LineCollection(segments[moves], array=colour[moves], cmap="viridis", linewidths=0.9, zorder=4)
        lines.set_clim(*limits)
        ax.add_collection(lines)
        fig.colorbar(lines, ax=ax, label=label, shrink=0.9, pad=0.01)
        first = np.isfinite(xy[0]).all(axis=1)
        ax.plot(xy[0, first, 0], xy[0, first, 1], ".", color="0.15", ms=2.5, zorder=5, label="start")
    else:
        say(ax, "no particle moved")
    stopped = np.asarray(traj.status)[-1, chosen] > Status.NOT_RELEASED
    if stopped.any():
        ax.plot(xy[-1, stopped, 0], xy[-1, stopped, 1], "kx", ms=4, label="stopped", zorder=5)
    if moves.any() or stopped.any():
        ax.legend(loc="upper right", fontsize=7)
    axes(ax, field, box)
    behind = ", grey: mean speed" if background else ""
    ax.set_title(
        title
        or f"{len(chosen)} of {n} pathlines, {when(origin, times[0])} → {when(origin, times[-1])}"
        f"{projection(positions, field)}{behind}",
        fontsize=9,
    )
    return save(fig, path)


def _line_colours(segments, times, origin, until, color_by, field) -> tuple[np.ndarray, str, tuple[float, float]]:
    """Each segment's colour value, the colour bar's label and the limits of its scale (the
    run's start to the last time a particle moved; speeds: 0 to the 99th percentile)."""
    if color_by == "time":
        values, label, bottom, top = time_axis(0.5 * (times[:-1] + times[1:]), times[0], origin, until)
        return np.broadcast_to(values[:, None], segments.shape[:2]), label, (bottom, top)
    if color_by != "speed":
        raise ValueError(f"color_by must be 'time' or 'speed', got {color_by!r}")
    duration = np.maximum(np.abs(np.diff(times)), 1e-300)[:, None]
    speed = np.linalg.norm(segments[:, :, 1] - segments[:, :, 0], axis=-1) / duration
    label = "speed along the path"
    if on_sphere(field):  # degrees per second to m/s at the segment's mean latitude
        from ..fields.grid import metres_per_second

        latitude = 0.5 * (segments[:, :, 0, 1] + segments[:, :, 1, 1])
        speed = np.linalg.norm(metres_per_second(segments[:, :, 1] - segments[:, :, 0], latitude), axis=-1) / duration
        label += " (m/s)"
    finite = speed[np.isfinite(speed)]
    return speed, label, (0.0, float(np.percentile(finite, 99)) if finite.size else 1.0)


def plot_scalar_map(
    values,
    coords,
    path: PathLike,
    label: str,
    title: str,
    cmap: str = "viridis",
    field: AbstractField | StreamedField | None = None,
    scale: str = "percentiles",
) -> Path:
    """A 2-D map of `values` `(nx, ny)` on coordinates `coords` (x, y) with a labelled colour
    bar; with a spherical `field`, a lon/lat map with its land. `scale`: `"percentiles"` (the
    colours span the 1st to 99th percentile, so one corner value does not set them), `"counts"`
    (empty cells blank, 0 to the 98th percentile of the others: a pile-up at one wall does not
    flatten the rest) or `"full"` (minimum to maximum)."""
    values = np.asarray(values, dtype=np.float64)
    x, y = np.asarray(coords[0], dtype=np.float64), np.asarray(coords[1], dtype=np.float64)
    box = (np.array([x[0], y[0]]), np.array([x[-1], y[-1]]))
    fig, ax = figure(box, field)
    finite = values[np.isfinite(values)]
    limits = {}
    if scale == "counts" and np.any(finite > 0):
        limits = {"vmin": 0.0, "vmax": max(float(np.percentile(finite[finite > 0], 98)), 1e-300)}
        values = np.ma.masked_equal(values, 0.0)
    elif scale == "percentiles" and finite.size:
        low, high = np.percentile(finite, [1, 99])
        limits = {"vmin": float(low), "vmax": float(high)} if high > low else {}
    elif scale not in ("full", "counts", "percentiles"):
        raise ValueError(f"scale must be 'percentiles', 'counts' or 'full', got {scale!r}")
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(values).T, cmap=cmap, shading="auto", **limits)
    above = bool(limits and finite.size and finite.max() > limits["vmax"])
    below = bool(limits and scale == "percentiles" and finite.size and finite.min() < limits["vmin"])
    extend = {(True, True): "both", (True, False): "max", (False, True): "min"}.get((above, below), "neither")
    fig.colorbar(mesh, ax=ax, label=label, shrink=0.9, extend=extend)
    if not finite.size:
        say(ax, "no finite value to show")
    if on_sphere(field):
        land(ax, field)
    draw_outline(ax, field)
    axes(ax, field, box)
    ax.set_title(title, fontsize=9)
    return save(fig, path)


def plot_ftle(ftle, coords, path: PathLike, t0: float, T: float) -> Path:
    """FTLE map (a 3-D field is shown at its middle z slice), in 1/s, its colours spanning the
    1st to 99th percentile."""
    ftle = np.asarray(ftle)
    if ftle.ndim == 3:
        ftle = ftle[:, :, ftle.shape[2] // 2]
    kind = "forward (repelling)" if T > 0 else "backward (attracting)"
    return plot_scalar_map(
        ftle, coords, path, label="FTLE (1/s)", title=f"{kind} FTLE, t0 = {t0:g} s, T = {T:g} s", cmap="magma"
    )


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
    poles), on a lon/lat map with its land. Empty cells are blank and the colours end at the
    98th percentile. `projected`: the counts are summed over depth (a 3-D run), said in the title."""
    from .density import per_area

    counts = np.asarray(counts, dtype=np.float64)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    edges = [np.linspace(lo[i], hi[i], counts.shape[i] + 1) for i in range(2)]
    size = (hi - lo) / np.asarray(counts.shape[:2])
    origin = None if field is None else field.time_origin
    suffix = "" if time is None else f", {when(origin, time)}"
    label = f"particles per cell of {size[0]:.3g} × {size[1]:.3g}"
    if on_sphere(field):
        counts, label = (
            per_area(counts, (lo, hi)) * 1e4,
            f"particles per 10⁴ km² (cells {size[0]:.3g}° × {size[1]:.3g}°)",
        )
    depth = " (x–y projection: summed over z)" if not on_sphere(field) else " (all depths)"
    title = f"particle density{suffix}{depth if projected else ''}"
    return plot_scalar_map(counts, edges, path, label=label, title=title, cmap="viridis", field=field, scale="counts")


BUDGET_COLOURS = ("#1f1f1f", "#4c72b0", "#8c564b", "#bbbbbb", "#dd8452", "#55a868", "#937860", "#8172b3")
"""The budget's terms' colours, in the order of its `terms` attribute."""


def plot_oil_budget(budget, path: PathLike, title: str = "oil budget") -> Path:
    """The mass budget of a spill (`flowkit.statistics.OilBudget`'s dataset) as stacked areas:
    each term's share of the oil released by then, over the run's time."""
    from .picture import figure, save, time_unit

    elapsed = np.asarray(budget["elapsed"], np.float64)
    released = np.asarray(budget["released"], np.float64)
    scale, unit = time_unit(float(elapsed[-1] - elapsed[0]) if len(elapsed) > 1 else 1.0)
    share = {
        term: 100 * np.divide(np.asarray(budget[term]), released, out=np.zeros_like(released), where=released > 0)
        for term in budget.attrs["terms"].split()
    }
    fig, ax = figure()
    ax.stackplot(elapsed / scale, *share.values(), labels=list(share), colors=BUDGET_COLOURS[: len(share)])
    ax.set(xlabel=f"time ({unit})", ylabel="% of the oil released", ylim=(0, 100))
    ax.set_xlim(elapsed[0] / scale, elapsed[-1] / scale)
    ax.set_title(f"{title}: {released[-1]:.4g} kg released")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return save(fig, path)


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
    """Particles at one saved frame over the field's speed at that time in grey with its scale
    (2-D fields and maps) and the domain's outline, each status in its own colour and marker,
    drawn above the land, zoomed to the particles."""
    box = view_box(traj, field)
    fig, ax = figure(box, field)
    t = float(np.asarray(traj.times)[frame])
    origin = None if field is None else field.time_origin
    rest = ""
    if field is not None:
        drawn = speed_background(fig, ax, field, [t], box, f"speed at {when(origin, t)}") is not None
        rest = ", the flow at rest" if not drawn and (field.dim == 2 or on_sphere(field)) else ""
    x = np.asarray(traj.positions[frame], dtype=np.float64)
    status = np.asarray(traj.status[frame])
    for code in np.unique(status):
        sel = status == code
        style = _STATUS_STYLE.get(Status(int(code)), dict(marker="+", ms=4, color="orange"))
        ax.plot(
            x[sel, 0],
            x[sel, 1],
            ls="none",
            label=f"{Status(int(code)).name.lower().replace('_', ' ')} ({int(sel.sum())})",
            zorder=5,
            **style,
        )
    ax.legend(loc="upper right", fontsize=7, markerscale=2)
    axes(ax, field, box)
    ax.set_title(f"particles, {when(origin, t)}{projection(x[None], field)}{rest}", fontsize=9)
    return save(fig, path)
