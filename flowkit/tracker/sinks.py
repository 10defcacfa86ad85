"""Where a run's saved frames go, chunk by chunk: host memory (a `Trajectory`), or a zarr store
on disk for runs whose frames do not fit in memory. Both take the same calls (`TrajectorySink`).

The zarr store has the CF trajectory layout of `Trajectory.to_xarray` (dims `trajectory`, `obs`;
variables `x`, `y`(, `z`), `status`, `time`, `t_release`, `exit_time`(, `u`, `v`, `w`)), written
with `zarr` directly so that each chunk of frames goes to its own region of the arrays and is
never held with the others.

A store says what it holds while the run goes on (`flowkit._store`), so that an interrupted
run can be resumed and a partial store is never taken for a whole one.
"""

import contextlib
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Protocol

import numpy as np
from jax.typing import DTypeLike
from jaxtyping import ArrayLike

from .._custom_types import PathLike
from .._files import refuse_existing, replace
from .._status import Status
from .._store import (
    NOT_WRITTEN_STATUS,
    STORE_FORMAT,
    StoreLock,
    check_store,
    missing_chunks,
    write_dataset,
)
from ..trajectory import Frame, RunStats, Trajectory
from .identity import content_hash, differences


class TrajectorySink(Protocol):
    """What the tracker's driver writes a run into: frames are `flowkit.trajectory.Frame`s of
    host arrays, stats a `flowkit.RunStats`."""

    def write_frames(self, frames: slice, particles: slice, frame: Frame) -> None:
        """Frames `frames` of particles `particles` (host arrays with leading axes `(F, P)`)."""

    def write_exit_time(self, particles: slice, exit_time: ArrayLike) -> None:
        """The exit times of particles `particles`, once their batch has finished."""

    batches_done: int
    """Batches already written (a resumed store's; 0 for a new sink)."""

    saved_totals: list | None
    """A resumed store's statistics totals over its `batches_done` batches (None: none)."""

    complete: bool
    """A resumed store that was already complete (it is returned as it is)."""

    def batch_done(self, totals: list | None = None) -> None:
        """Record that the next batch is whole; `totals`: the run's statistics totals with it."""

    def finish(self, stats: RunStats, statistics: dict | None = None):
        """The run's result, carrying `stats` and the `statistics` datasets (by name)."""

    def close(self) -> str:
        """After a run that stopped part-way: what was kept, for its message."""


class MemorySink:
    """Host arrays for all frames (the default), returned as a `flowkit.Trajectory`."""

    @staticmethod
    def nbytes(n: int, frames: int, dim: int, dtype: DTypeLike, with_velocity: bool, with_generation: bool) -> int:
        """The bytes `__init__` allocates for `n` particles and `frames` frames (samples and a
        model's variables, made on first use, aside)."""
        itemsize = np.dtype(dtype).itemsize
        per_frame = dim * itemsize * (2 if with_velocity else 1) + 1 + (4 if with_generation else 0)
        return n * (frames * per_frame + 2 * itemsize)

    def __init__(
        self,
        n: int,
        times: ArrayLike,
        dim: int,
        dtype: DTypeLike,
        t_release: ArrayLike,
        with_velocity: bool,
        with_generation: bool,
    ):
        frames = len(times)
        self.times, self.t_release = np.asarray(times, dtype), np.asarray(t_release, dtype)
        self.positions = np.empty((frames, n, dim), dtype)
        self.status = np.empty((frames, n), np.int8)
        self.velocities = np.zeros((frames, n, dim), dtype) if with_velocity else None
        self.generation = np.zeros((frames, n), np.int32) if with_generation else None
        self.exit_time = np.empty(n, dtype)
        self.samples = None
        self.variables = None
        self.batches_done = 0
        self.saved_totals = None
        self.complete = False

    def batch_done(self, totals: list | None = None) -> None:
        self.batches_done += 1

    def write_frames(self, frames: slice, particles: slice, frame: Frame) -> None:
        self.positions[frames, particles] = frame.positions
        self.status[frames, particles] = frame.status
        if self.velocities is not None:
            self.velocities[frames, particles] = frame.velocities
        if self.generation is not None:
            self.generation[frames, particles] = frame.generation
        self.samples = self._write(self.samples, frame.samples, frames, particles)
        self.variables = self._write(self.variables, frame.variables, frames, particles)

    def _write(self, store, arrays, frames, particles):
        """A dict of per-frame arrays (samples, variables) written into `store` (made on first use)."""
        if not arrays:
            return store
        if store is None:
            shape = self.positions.shape[:2]
            store = {name: np.full(shape + a.shape[2:], np.nan, a.dtype) for name, a in arrays.items()}
        for name, a in arrays.items():
            store[name][frames, particles] = a
        return store

    def write_exit_time(self, particles: slice, exit_time: ArrayLike) -> None:
        self.exit_time[particles] = exit_time

    def close(self) -> str:
        return "nothing was kept (a store keeps every finished batch: output= in Python, output.store=true in the app)"

    def finish(self, stats: RunStats, statistics: dict | None = None) -> Trajectory:
        return Trajectory(
            times=self.times,
            positions=self.positions,
            status=self.status,
            t_release=self.t_release,
            exit_time=self.exit_time,
            velocities=self.velocities,
            samples=self.samples,
            generation=self.generation,
            stats=stats,
            variables=self.variables,
            statistics=statistics,
        )


_EXISTS = " (a trajectory store; resume=True continues the run that made it)"
TOTALS = "flowkit_totals"
"""A store's group of the statistics totals over its finished batches, `TOTALS/<batches>/<i>/<total>`
(statistic `i` of the run's list), while the run goes on; its datasets replace it at the end."""
TOTALS_DIGEST = "flowkit_totals_digest"
"""The store's attribute holding the hash (`content_hash`) of the totals of `TOTALS`' batches,
written with `flowkit_batches_done`: totals deleted, damaged or replaced are found on resume."""
STATISTICS = "statistics"
"""A finished store's group of the run's statistics, one dataset a subgroup by its name."""


class ZarrSink:
    """Creates the store for `n` particles at `times` and writes regions of it; `finish` opens
    it lazily as an `xarray.Dataset` with the run's stats as JSON in `attrs["flowkit_stats"]`.
    A run's statistics are kept in it: their totals after each batch (so that a resumed run adds
    on to them), their datasets at the end, each the group `statistics/<name>`
    (`Trajectory.load` reads them; the dataset's `attrs["flowkit_statistics"]` names them).

    One process writes a store (`StoreLock`): a second writer is refused, a lock whose process is
    gone is taken over. With `overwrite` an existing store stays as it is until the new one,
    written beside it, is complete and takes its place. `run` is the run's identity (`run_identity`):
    `resume` continues a store only of the same run, and names the parts that differ."""

    def __init__(
        self,
        path: PathLike,
        n: int,
        times: ArrayLike,
        dim: int,
        dtype: DTypeLike,
        t_release: ArrayLike,
        with_velocity: bool,
        with_generation: bool,
        frames_per_chunk: int,
        *,
        run: dict,
        batch_size: int | None = None,
        resume: bool = False,
        overwrite: bool = False,
        statistics: int = 0,
    ):
        self.final = self.path = Path(path)
        self.batches_done, self.statistics, self.complete = 0, statistics, False
        self.saved_totals = None
        self.lock = StoreLock(self.final)
        self.lock.acquire()
        try:
            if resume and self.path.exists():
                check_store(self.path)
                if self._reopen(run):
                    return
                shutil.rmtree(self.path)  # it holds no batch yet: made anew
            elif self.path.exists():
                refuse_existing(self.path, overwrite, _EXISTS)
                for stale in self.final.parent.glob(f".{self.final.name}.new-*"):  # killed overwrites' (ours now)
                    shutil.rmtree(stale, ignore_errors=True)
                self.path = self.final.with_name(f".{self.final.name}.new-{os.getpid()}")  # swapped in when whole
            self._create(n, times, dim, dtype, t_release, with_velocity, with_generation, frames_per_chunk)
            self.group.update_attributes(  # one write: a store is a flowkit one whole, or not
                {
                    "featureType": "trajectory",
                    "Conventions": "CF-1.10",
                    "source": "flowkit",
                    "flowkit_complete": False,
                    "flowkit_batches_done": 0,
                    "flowkit_store_format": STORE_FORMAT,
                    "flowkit_batches": -(-n // max(n if batch_size is None else int(batch_size), 1)),
                    "flowkit_batch_size": n if batch_size is None else int(batch_size),
                    "flowkit_identity": run,
                }
            )
        except BaseException:
            self.close()
            raise

    def _create(self, n, times, dim, dtype, t_release, with_velocity, with_generation, frames_per_chunk) -> None:
        import zarr

        self.group = zarr.open_group(str(self.path), mode="a")
        rows, frames = int(min(n, 2**16)), len(times)
        self._shape, self._chunks = (n, frames), (rows, int(max(1, min(frames, frames_per_chunk))))
        self._dtype = dtype
        self.samples: dict = {}
        standard = {"x": "projection_x_coordinate", "y": "projection_y_coordinate", "z": "height"}
        self.positions = [
            self._frames(name, dtype, {"standard_name": standard[name], "units": "1"}) for name in "xyz"[:dim]
        ]
        flags = {"flag_values": [s.value for s in Status], "flag_meanings": " ".join(s.name.lower() for s in Status)}
        self.status = self._frames("status", np.int8, flags)
        restarts = {"comment": "restarts of the slot by an inlet; each generation is a separate path"}
        self.generation = self._frames("generation", np.int32, restarts) if with_generation else None
        self.velocities = [self._frames(name, dtype, {"units": "1"}) for name in "uvw"[:dim]] if with_velocity else []
        time = self._array("time", (frames,), (frames,), dtype, ["obs"], {"standard_name": "time", "units": "1"})
        time[:] = np.asarray(times, dtype=dtype)
        self._array("trajectory", (n,), (rows,), np.int64, ["trajectory"], {"cf_role": "trajectory_id"})[:] = np.arange(
            n
        )
        self._array("t_release", (n,), (rows,), dtype, ["trajectory"], {"units": "1"})[:] = np.asarray(t_release)
        still = {"units": "1", "comment": "inf: still active at the end"}
        self.exit_time = self._array("exit_time", (n,), (rows,), dtype, ["trajectory"], still)

    def _array(self, name: str, shape: tuple, chunks: tuple, kind, dims: list[str], attrs: dict):
        """A new array of the store; unwritten parts read as NaN (or `NOT_WRITTEN_STATUS`), never
        as a value posing as data. Every chunk written is a file, fill values or not."""
        fill = np.nan if np.issubdtype(np.dtype(kind), np.floating) else NOT_WRITTEN_STATUS
        created = self.group.create_array(
            name,
            shape=shape,
            chunks=chunks,
            dtype=kind,
            dimension_names=dims,
            fill_value=fill,
            config={"write_empty_chunks": True},
        )
        created.attrs.update(attrs)
        return created

    def _frames(self, name: str, kind, attrs: dict):
        """A new `(particles, frames)` array of the store."""
        return self._array(name, self._shape, self._chunks, kind, ["trajectory", "obs"], attrs)

    def _reopen(self, run: dict) -> bool:
        """A store this same run began: its arrays and how many batches it holds; False when it
        holds none yet (it is then made anew)."""
        import zarr

        for partial in self.path.rglob("*.partial"):  # zarr's file of a write a kill cut short: never a member
            partial.unlink(missing_ok=True)
        group = zarr.open_group(str(self.path), mode="r+")
        recorded = group.attrs.get("flowkit_identity")
        differ = differences(recorded or {}, run)
        if differ:
            self.close()
            why = (
                f"its {', '.join(differ)} differ from this run's"
                if recorded
                else "it records no run identity: an earlier flowkit made it"
            )
            raise ValueError(
                f"{self.path}: made by another run ({why}), so resume=True cannot continue it; give output= "
                "a new path, or overwrite=True to replace it"
            )
        self.group, self.batches_done = group, int(group.attrs["flowkit_batches_done"])
        if self.batches_done == 0:
            return False
        missing = missing_chunks(group)
        if missing:
            self.close()
            raise ValueError(
                f"{self.path} is damaged: {len(missing)} chunk file(s) of its {self.batches_done} written batches "
                f"are missing ({', '.join(missing[:3])}), so resume=True cannot finish it; overwrite=True runs "
                "the job again"
            )
        every_chunk = {"write_empty_chunks": True}
        opened = lambda name: group[name].with_config(every_chunk)  # noqa: E731
        self.positions = [opened(name) for name in ("x", "y", "z") if name in group]
        self.status, self.exit_time = opened("status"), opened("exit_time")
        self.generation = opened("generation") if "generation" in group else None
        self.velocities = [opened(name) for name in ("u", "v", "w") if name in group]
        self.samples = {name: opened(name) for name in group.array_keys() if group[name].attrs.get("flowkit_role")}
        self._dtype = group["x"].dtype
        self._shape, self._chunks = group["status"].shape, group["status"].chunks
        self.complete = group.attrs.get("flowkit_complete") is True
        if self.statistics and not self.complete:
            self.saved_totals = self._saved_totals(group)
        return True

    def _saved_totals(self, group) -> list:
        """The statistics totals over the store's written batches, as `batch_done` kept them:
        refused in one line when they are missing, unreadable or not the ones it recorded."""
        done, kept = self.batches_done, f"{TOTALS}/{self.batches_done}"
        try:
            subgroups = sorted(group[kept].groups(), key=lambda item: int(item[0]))
            totals = [{name: np.asarray(a[...]) for name, a in sub.arrays()} for _, sub in subgroups]
            why = (
                None
                if len(totals) == self.statistics and content_hash(totals) == group.attrs.get(TOTALS_DIGEST)
                else "they are not the totals it recorded"
            )
        except Exception as err:  # noqa: BLE001 - any damage (a file gone, bytes changed) is refused alike
            why = f"{type(err).__name__}: {err}".splitlines()[0]
        if why is None:
            return totals
        self.close()
        raise ValueError(
            f"{self.path}: the statistics totals of its {done} written batches ({kept}) are missing or damaged "
            f"({why}), so resume=True cannot finish the run's statistics; overwrite=True runs the job again"
        )

    def write_frames(self, frames: slice, particles: slice, frame: Frame) -> None:
        with self._writing():
            self._write_frames(frames, particles, frame)

    def _write_frames(self, frames: slice, particles: slice, frame) -> None:
        positions, status, velocities, generation = frame.positions, frame.status, frame.velocities, frame.generation
        if self.generation is not None:
            self.generation[particles, frames] = np.asarray(generation).T
        for axis, target in enumerate(self.positions):
            target[particles, frames] = np.asarray(positions[..., axis]).T
        self.status[particles, frames] = np.asarray(status).T.astype(np.int8)
        for axis, target in enumerate(self.velocities):
            target[particles, frames] = np.asarray(velocities[..., axis]).T
        roles = (
            (
                "",
                frame.samples,
                {"flowkit_role": "sample", "comment": "interpolated from the field; NaN outside its domain"},
            ),
            ("particle_", frame.variables, {"flowkit_role": "particle", "comment": "carried by the particle model"}),
        )
        for prefix, arrays, attrs in roles:
            for name, values in (arrays or {}).items():
                name = prefix + name
                values = np.swapaxes(np.asarray(values), 0, 1)  # (P, F[, c])
                if name not in self.samples:
                    extra = values.shape[2:]
                    dims = ["trajectory", "obs"] + [f"{name}_component"] * len(extra)
                    self.samples[name] = self._array(
                        name, self._shape + extra, self._chunks + extra, self._dtype, dims, attrs
                    )
                self.samples[name][particles, frames] = values

    @contextlib.contextmanager
    def _writing(self):
        """A write that fails (a full disk, a folder gone) raises one line naming the store and
        what it keeps."""
        try:
            yield
        except OSError as err:
            if err.errno is None:
                raise
            raise OSError(
                err.errno,
                f"{self.final}: writing batch {self.batches_done + 1} failed ({os.strerror(err.errno)}); "
                + self._kept()
                + ("; free space, then resume=True finishes the run" if self.path == self.final else ""),
            ) from None

    def write_exit_time(self, particles: slice, exit_time: ArrayLike) -> None:
        with self._writing():
            self.exit_time[particles] = np.asarray(exit_time)

    def batch_done(self, totals: list | None = None) -> None:
        """The next batch counted as written; `totals` are kept before it counts, and the
        previous batch's removed after, so that a run stopped between the two resumes from
        totals that match the batches it holds."""
        with self._writing():
            done = self.batches_done + 1
            totals = [{name: np.asarray(values) for name, values in total.items()} for total in totals or ()]
            for i, total in enumerate(totals):
                kept = self.group.require_group(f"{TOTALS}/{done}/{i}")
                for name, values in total.items():
                    kept.create_array(name, data=values, overwrite=True)
            self.batches_done = done
            self.group.update_attributes(  # one write: the count and its totals' digest agree
                {"flowkit_batches_done": done} | ({TOTALS_DIGEST: content_hash(totals)} if totals else {})
            )
            if f"{TOTALS}/{done - 1}" in self.group:
                del self.group[f"{TOTALS}/{done - 1}"]

    def finish(self, stats: RunStats, statistics: dict | None = None):
        import xarray as xr

        if not self.complete:  # a store resumed once complete is left as it is
            self._complete(statistics or {})
        if self.path != self.final:  # an overwrite: the new store takes the old one's place
            replace(self.path, self.final)
            self.path = self.final
        self.lock.release()
        opened = xr.open_dataset(self.final, engine="zarr", consolidated=False, chunks=None)
        opened.attrs["flowkit_stats"] = json.dumps(dataclasses.asdict(stats))
        return opened

    def _complete(self, statistics: dict) -> None:
        """The statistics' datasets written beside the store and moved in whole, then the store
        marked complete, then the totals moved out and removed: a run stopped at any point
        resumes (from the totals) or loads, and no half-written group is ever inside it."""
        with self._writing():
            staged = self._beside("statistics")
            for name, dataset in statistics.items():
                write_dataset(dataset, staged, f"{STATISTICS}/{name}")
            self._remove_member(STATISTICS)  # a stopped finish's
            if statistics:
                os.replace(staged / STATISTICS, self.path / STATISTICS)
            shutil.rmtree(staged, ignore_errors=True)
            self.group.update_attributes({"flowkit_statistics": list(statistics), "flowkit_complete": True})
            self.complete = True
            self._remove_member(TOTALS)

    def _beside(self, what: str) -> Path:
        """A path beside the store for `what` is moved into or out of it whole (none there: a
        stopped run's is removed)."""
        for stale in self.path.parent.glob(f".{self.path.name}.{what}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        return self.path.with_name(f".{self.path.name}.{what}-{os.getpid()}")

    def _remove_member(self, name: str) -> None:
        """The store's folder `name` moved out in one rename, then removed."""
        if (self.path / name).exists():
            aside = self._beside(f"{name}-removed")
            os.replace(self.path / name, aside)
            shutil.rmtree(aside, ignore_errors=True)

    def close(self) -> str:
        kept = self._kept()
        if self.path != self.final:  # an overwrite that did not finish: the old store stays
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = self.final
        self.lock.release()
        return kept

    def _kept(self) -> str:
        if self.path != self.final:
            return f"the store it replaces is unchanged at {self.final} and nothing of this run was kept"
        group = getattr(self, "group", None)
        total = "?" if group is None else group.attrs.get("flowkit_batches", "?")
        return f"{self.batches_done} of {total} batches are in {self.final}"


def check_output(path: PathLike, overwrite: bool, resume: bool) -> None:
    """Before a run compiles: a store it cannot write is refused in one line (a busy store; one
    that exists, unless `overwrite` or `resume`; for `resume`, a path that is not a store). The
    sink claims the store when the run starts, so a run that slips in between is still refused."""
    path = Path(path)
    if not path.exists():
        return
    if resume:
        check_store(path)
    StoreLock(path).check_free()
    if not resume:
        refuse_existing(path, overwrite, _EXISTS)
