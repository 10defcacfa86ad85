"""Residence, arrival and exit times, and dispersion, from trajectories and their statuses."""

import numpy as np

from .._status import Status
from ..trajectory import Trajectory


def _segment_fraction_inside(p0, p1, lo, hi):
    """Parametric interval [s_in, s_out] ∩ [0, 1] of each straight segment inside the box (slab method)."""
    d = p1 - p0
    with np.errstate(divide="ignore", invalid="ignore"):
        s_a = (lo - p0) / d
        s_b = (hi - p0) / d
    parallel = d == 0
    inside_axis = (p0 >= lo) & (p0 <= hi)
    s_low = np.where(parallel, np.where(inside_axis, -np.inf, np.inf), np.minimum(s_a, s_b))
    s_high = np.where(parallel, np.where(inside_axis, np.inf, -np.inf), np.maximum(s_a, s_b))
    enter = np.clip(np.max(s_low, axis=-1), 0, 1)
    leave = np.clip(np.min(s_high, axis=-1), 0, 1)
    return enter, np.maximum(leave, enter)


def residence_time(traj: Trajectory, region) -> np.ndarray:
    """Time each particle spends inside the box `region = (lo, hi)` while active, `(N,)`.

    Between saved frames a particle is taken to move in a straight line, so the result is exact
    for piecewise-straight motion (e.g. a uniform flow) and converges with `save_every` otherwise.
    """
    enter, leave, dt, moving = _segments(traj, region)
    return np.sum((leave - enter) * dt * moving, axis=0)


def arrival_time(traj: Trajectory, region) -> np.ndarray:
    """First time each particle is inside `region` while active, `(N,)`; `inf` if never."""
    enter, leave, dt, moving = _segments(traj, region)
    times = np.asarray(traj.times, dtype=np.float64)
    hit = (leave > enter) & moving
    first = np.argmax(hit, axis=0)
    idx = np.arange(hit.shape[1])
    when = times[first] + enter[first, idx] * dt[first, 0]
    start_inside = _inside(np.asarray(traj.positions[0], dtype=np.float64), region) & (
        np.asarray(traj.status[0]) == Status.ACTIVE
    )
    return np.where(start_inside, times[0], np.where(hit.any(axis=0), when, np.inf))


def exit_time(traj: Trajectory) -> np.ndarray:
    """When each particle stopped being active (domain exit, absorption, failure); `inf` if never."""
    return np.asarray(traj.exit_time)


def _inside(x, region):
    lo, hi = (np.asarray(b, dtype=np.float64) for b in region)
    return np.all((x >= lo) & (x <= hi), axis=-1)


def _segments(traj, region):
    lo, hi = (np.asarray(b, dtype=np.float64) for b in region)
    x = np.asarray(traj.positions, dtype=np.float64)
    status = np.asarray(traj.status)
    enter, leave = _segment_fraction_inside(x[:-1], x[1:], lo, hi)
    dt = np.abs(np.diff(np.asarray(traj.times, dtype=np.float64)))[:, None]
    # a segment counts while the particle is active at its start; one that stopped during it
    # moved only up to where it stopped, which is its saved end position
    moving = status[:-1] == Status.ACTIVE
    return enter, leave, dt, moving


def absolute_dispersion(traj: Trajectory) -> np.ndarray:
    """Mean squared displacement from the release position per saved time, over active particles, `(T,)`."""
    x = np.asarray(traj.positions, dtype=np.float64)
    active = np.asarray(traj.status) == Status.ACTIVE
    squared = np.sum((x - x[0]) ** 2, axis=-1)
    count = np.maximum(active.sum(axis=1), 1)
    return np.where(active.any(axis=1), np.sum(squared * active, axis=1) / count, np.nan)


def relative_dispersion(traj: Trajectory, pairs) -> np.ndarray:
    """Mean squared separation of the given particle `pairs` `(P, 2)` per saved time, `(T,)`,
    over pairs whose both particles are active."""
    pairs = np.asarray(pairs)
    x = np.asarray(traj.positions, dtype=np.float64)
    active = np.asarray(traj.status) == Status.ACTIVE
    both = active[:, pairs[:, 0]] & active[:, pairs[:, 1]]
    separation = np.sum((x[:, pairs[:, 0]] - x[:, pairs[:, 1]]) ** 2, axis=-1)
    return np.where(both.any(axis=1), np.sum(separation * both, axis=1) / np.maximum(both.sum(axis=1), 1), np.nan)
