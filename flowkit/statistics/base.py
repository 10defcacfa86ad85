"""What a statistic gathered inside the compiled step is: its tallies (per particle slot, and
totals), how one saved frame adds to them, and its result as an xarray dataset."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._status import Status
from .._time import TimeOrigin


class Tally(eqx.Module):
    """A statistic's running state on the device: `slots`, arrays with one row per particle
    slot (what a particle must remember from frame to frame), and `totals`, the sums so far."""

    slots: dict
    totals: dict


class RunFacts(eqx.Module):
    """What a statistic needs to know of the run: its start, end and frames' interval."""

    t0: float
    t1: float
    save_interval: float
    n_frames: int
    """Saved frames, the start's included."""
    dtype: object
    """The run's floating dtype."""
    time_origin: TimeOrigin | None = None
    """The field's `time_origin` (dates), or None."""
    spherical: bool = False


class AbstractStatistic(eqx.Module):
    """A statistic of the particles gathered at every saved frame inside the compiled run
    (`fk.track(..., statistics=[...])`), without storing tracks. Each equals the same statistic
    computed from the stored frames of the same run (`tests/test_statistics.py` computes them
    so).

    A frame counts the particles that are active in it (`Status.ACTIVE`): released and moving."""

    name: eqx.AbstractVar[str]
    """The key of its dataset in `Trajectory.statistics`."""

    @abc.abstractmethod
    def tally(self, run: RunFacts, n_slots: int) -> Tally:
        """Zero tallies for a batch of `n_slots` particles (host arrays)."""

    @abc.abstractmethod
    def start(self, tally: Tally, x: Float[Array, "n dim"]) -> Tally:
        """`tally` knowing the batch's seeds `x` (traced, before its first frame is added)."""

    @abc.abstractmethod
    def add(
        self,
        tally: Tally,
        frame: Int[Array, ""],
        t: Float[Array, ""],
        save_interval: Float[Array, ""],
        x: Float[Array, "n dim"],
        status: Int[Array, " n"],
        t_release: Float[Array, " n"],
        index: Int[Array, " n"],
        variables: dict,
    ) -> Tally:
        """`tally` with saved frame number `frame` (at time `t`) added (traced, inside the run's
        program); `index` holds each slot's particle (its row in the seeds; -1 for padding),
        `variables` the particle model's (`{name: (n, ...)}`; empty for tracers)."""

    @abc.abstractmethod
    def dataset(self, totals: dict, run: RunFacts):
        """The result, an `xarray.Dataset` with CF metadata, from the run's summed `totals`."""


def windows(run: RunFacts, window: float | None) -> int:
    """How many time windows of length `window` (seconds: the run's time unit) cover the run
    (one without a window)."""
    if window is None:
        return 1
    check_window(window, run)
    return max(1, int(np.ceil(abs(run.t1 - run.t0) / window - 1e-9)))


def window_index(frame, save_interval, window: float | None, count: int):
    """The window of saved frame number `frame` (0: the run's start): windows are whole numbers
    of save intervals from the run's start, the run's last frame in the last one."""
    if window is None:
        return jnp.zeros((), jnp.int32)
    per_window = jnp.maximum(jnp.round(window / save_interval), 1).astype(jnp.int32)
    return jnp.minimum(frame.astype(jnp.int32) // per_window, count - 1)


def frames_per_window(run: RunFacts, window: float | None, count: int) -> np.ndarray:
    """How many of the run's frames each window holds (`window_index` on the host)."""
    index = window_index(jnp.arange(run.n_frames), abs(run.save_interval), window, count)
    return np.bincount(np.broadcast_to(np.asarray(index), (run.n_frames,)), minlength=count)


def check_window(window: float, run: RunFacts) -> None:
    """A window must be a whole number of the run's save intervals."""
    ratio = window / abs(run.save_interval)
    if abs(ratio - round(ratio)) > 1e-9 * max(ratio, 1) or round(ratio) < 1:
        raise ValueError(
            f"statistics: window={window:g} s must be a whole number of the run's save interval "
            f"({abs(run.save_interval):g} s: save_every x dt)"
        )


def active(status) -> jax.Array:
    return status == Status.ACTIVE


def window_starts(run: RunFacts, window: float | None, count: int) -> tuple[np.ndarray, dict]:
    """The windows' start times as the dataset's `time` coordinate: dates where the field's
    times are (CF units and calendar), else the run's own seconds."""
    step = (window or abs(run.t1 - run.t0)) * (1 if run.t1 >= run.t0 else -1)
    starts = run.t0 + step * np.arange(count)
    if run.time_origin is None:
        return starts, {"long_name": "start of the time window", "units": "s"}
    origin = run.time_origin
    return origin.in_units(starts), {"standard_name": "time", "units": origin.units, "calendar": origin.calendar}


def position_names(run: RunFacts, dim: int) -> list[str]:
    """The position axes' names, CF's where the positions are geographic."""
    return (["lon", "lat", "z"] if run.spherical else ["x", "y", "z"])[:dim]


def position_attrs(name: str) -> dict:
    """CF attributes of a position axis named by `position_names`."""
    return {
        "lon": {"standard_name": "longitude", "units": "degrees_east"},
        "lat": {"standard_name": "latitude", "units": "degrees_north"},
    }.get(name, {"long_name": f"position {name}"})


def added(statistics: tuple, tallies: tuple, frame, t, save_interval, x, status, t_release, index, variables) -> tuple:
    """Each statistic's tally with one frame added. Totals keep a leading row per device: the
    local device's one row inside a sharded program, row 0 of all of them outside one."""
    out = []
    for statistic, tally in zip(statistics, tallies):
        local = Tally(tally.slots, {name: total[0] for name, total in tally.totals.items()})
        new = statistic.add(local, frame, t, save_interval, x, status, t_release, index, variables)
        out.append(Tally(new.slots, {name: tally.totals[name].at[0].set(v) for name, v in new.totals.items()}))
    return tuple(out)


def begun(statistics: tuple, tallies: tuple, x, status, t0, save_interval, t_release, index, variables) -> tuple:
    """A batch's tallies knowing its seeds `x`, with its frame 0 (`x`, `status` and `variables`
    at `t0`) added."""
    tallies = tuple(statistic.start(tally, x) for statistic, tally in zip(statistics, tallies))
    frame = jnp.zeros((), jnp.int32)
    return added(statistics, tallies, frame, t0, save_interval, x, status, t_release, index, variables)


UNUSED = np.iinfo(np.int32).min
"""What the unused entries of a log (a total named `*_log`) hold."""


def gathered(name: str, rows: np.ndarray) -> np.ndarray:
    """A total's rows, one per device, as one: summed in 64 bits; for those named `*_min`, the
    least; for logs (`*_log`, filled from their start), their used entries one after another."""
    if name.endswith("_log"):
        return rows[rows != UNUSED]
    if name.endswith("_min"):
        return np.asarray(rows.min(axis=0))
    return np.asarray(rows.sum(axis=0, dtype=np.int64 if np.issubdtype(rows.dtype, np.integer) else np.float64))


def combined(a: dict, b: dict) -> dict:
    """Two sets of totals as one: summed; for those named `*_min`, the least; logs (`*_log`)
    one after the other."""
    return {
        name: np.concatenate([a[name], b[name]])
        if name.endswith("_log")
        else np.minimum(a[name], b[name])
        if name.endswith("_min")
        else a[name] + b[name]
        for name in a
    }


def checked(statistics) -> tuple:
    """`fk.track`'s `statistics` as a tuple, each a statistic with its own name."""
    if statistics is None:
        return ()
    items = tuple(statistics) if isinstance(statistics, (list, tuple)) else (statistics,)
    wrong = [type(s).__name__ for s in items if not isinstance(s, AbstractStatistic)]
    if wrong:
        raise TypeError(f"statistics: expected flowkit.statistics objects (GridCounts, PolygonStats), got {wrong}")
    names = [s.name for s in items]
    if len(set(names)) != len(names):
        raise ValueError(f"statistics: each needs its own name (name=...), got {names}")
    return items
