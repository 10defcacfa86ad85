"""What the `track` app takes from the data where a user gave nothing: the run's times, the size
of a seed lattice, the depth drawn seeds start at."""

import logging

import numpy as np
from omegaconf import DictConfig

from .fields.base import AbstractField
from .fields.streamed import StreamedField
from .tracker.courant import AUTO, has_cells

_log = logging.getLogger("flowkit")


def grid_resolution(n: int, bounds, spherical: bool = False) -> list[int]:
    """Points per axis for about `n` grid points spread over `bounds` in proportion to its sides;
    on a sphere the sides in kilometres (degrees of longitude at the middle latitude, of
    latitude, and a depth's metres), so an ocean's lattice is not hundreds of levels deep."""
    sides = np.asarray(bounds[1], dtype=np.float64) - np.asarray(bounds[0], dtype=np.float64)
    if spherical:
        middle = np.deg2rad(0.5 * (bounds[0][1] + bounds[1][1]))
        sides = sides * np.array([111.2 * np.cos(middle), 111.2, 1e-3][: len(sides)])
    counts = np.zeros(len(sides), np.int64)
    free = np.ones(len(sides), bool)
    while free.any():  # an axis too short for 2 points gets 2, and the others share the rest
        left = n / np.prod(counts[~free]) if (~free).any() else n
        spacing = (np.prod(sides[free]) / max(left, 1.0)) ** (1 / free.sum())
        wanted = np.round(sides / spacing).astype(np.int64)
        short = free & (wanted < 2)
        if not short.any():
            counts[free] = wanted[free]
            break
        counts[short], free = 2, free & ~short
    return [int(c) for c in counts]


def surface_seeds_for(particles, seeds: np.ndarray, cfg: DictConfig) -> np.ndarray:
    """Drawn seeds (not a file's) start at the surface for a surface drift (`Windage` acts
    above its `depth`): a 3-D random or lattice seeding would put nearly all below it."""
    depth = getattr(particles, "depth", None)
    if depth is None or np.ndim(depth) != 0 or seeds.shape[1] != 3 or str(cfg.seeds._target_).endswith("from_file"):
        return seeds
    _log.info("seeds: started at the surface, where %s acts (above %g m)", type(particles).__name__, float(depth))
    return np.column_stack([seeds[:, :2], np.zeros(len(seeds))])


STEADY_SPAN = 2.0
"""`t1 - t0` of a run on a field without times (a steady file, a closed-form flow) when `t1` is
not given, in seconds."""


CLOSED_FORM_STEPS = 400
"""Steps of a run with `dt=auto` on a closed-form flow (which has no cells for a Courant number)."""

SHORT_RUN = 0.01
"""A run shorter than this fraction of the data's record is said (a toy `t1` on a 3-day file)."""


def run_times(cfg: DictConfig, field: AbstractField | StreamedField) -> None:
    """`t0` and `t1` from the data where not given (`null`): its first and last times (a steady
    field: `t0 = 0`, `t1 = t0 + STEADY_SPAN`), logged; checked against the data's times and `dt`
    before anything is seeded, so a run that cannot start says so at once. Set in `cfg`."""
    lo, hi = (float(v) for v in field.time_range)
    for key, value, default in (("t0", cfg.t0, lo), ("t1", cfg.t1, hi)):
        if value is None:
            chosen = default if np.isfinite(default) else (0.0 if key == "t0" else float(cfg.t0) + STEADY_SPAN)
            cfg[key] = chosen
            why = (
                "the data's " + ("first" if key == "t0" else "last") + " time"
                if np.isfinite(default)
                else ("the field has no times" + ("" if key == "t0" else f": t0 + {STEADY_SPAN:g} s; give t1"))
            )
            _log.info("%s: %g s (%s)", key, chosen, why)
    numbers = [v for v in (cfg.t0, cfg.t1) if isinstance(v, (int, float))]
    if cfg.dt == AUTO and len(numbers) == 2 and isinstance(field, AbstractField) and not has_cells(field):
        cfg.dt = (cfg.t1 - cfg.t0) / CLOSED_FORM_STEPS
        _log.info(
            "dt: %g s (dt=auto counts cells, and a closed-form flow has none: the run in %d steps)",
            cfg.dt,
            CLOSED_FORM_STEPS,
        )
    record = hi - lo
    if len(numbers) == 2 and np.isfinite(record) and 0 < abs(cfg.t1 - cfg.t0) < SHORT_RUN * record:
        _log.warning(
            "the run (t0=%g to t1=%g s) covers %.2g %% of the data's record of %g s; leave t0 and t1 out "
            "to run over all of it",
            cfg.t0,
            cfg.t1,
            100 * abs(cfg.t1 - cfg.t0) / record,
            record,
        )
    outside = [
        f"{k}={v:g}" for k, v in (("t0", cfg.t0), ("t1", cfg.t1)) if isinstance(v, (int, float)) and not lo <= v <= hi
    ]
    if outside:
        raise ValueError(
            f"{' and '.join(outside)} {'lies' if len(outside) == 1 else 'lie'} outside the field's times "
            f"[{lo:g}, {hi:g}] s; leave t0 and t1 out to run over the data's times"
        )
    check_step(cfg)


def check_step(cfg: DictConfig) -> None:
    """A `dt` longer than a run of given numbers `t0` and `t1` is refused (before any reading
    when the user gave all three)."""
    numbers = [v for v in (cfg.t0, cfg.t1, cfg.dt) if isinstance(v, (int, float))]
    if len(numbers) == 3 and abs(cfg.dt) > abs(cfg.t1 - cfg.t0) > 0:
        raise ValueError(
            f"dt={cfg.dt:g} is longer than the run (t0={cfg.t0:g} to t1={cfg.t1:g}); give a shorter dt or dt=auto"
        )
