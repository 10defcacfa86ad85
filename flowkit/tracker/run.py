"""`TrackRun`: a planned run and the driver loop that calls the compiled chunk, batch after
batch and chunk after chunk, writing the frames to memory or a zarr store."""

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import _dtypes
from .._custom_types import PathLike
from .._host_devices import note_devices
from .._status import Status
from ..fields.streamed import device_budget, swap_window
from ..trajectory import Frame
from .cache import compiled_program, placed, placed_scalars
from .gathering import Gathering, bare, check_statistics
from .identity import run_identity
from .interrupt import Interrupted, ctrl_c_noted
from .kernel import locate_seeds, particle_keys
from .kernels import kernel_use, say_steps
from .memory import check_memory, check_seeds_fit
from .pieces import Rows, RunPieces, Slots, State, Times, blank_parts
from .plan import CHUNK_BYTES, RunPlan, block_size, bucket_size, positive_integer, prepare, share
from .sinks import MemorySink, ZarrSink, check_output
from .step import is_due
from .tally import Tally, progress_bar, run_stats
from .windows import WindowFeeder, chunk_windows, host_copies

_log = logging.getLogger("flowkit")


class TrackRun:
    """A planned run laid out for the devices: this process's share of the `RunPlan`'s
    particles, the devices, blocks and chunks, the pieces on the devices, the compiled chunk.

    `TrackRun(field, seeds, ...)` plans (`prepare`) and lays out; `TrackRun.from_plan(plan, ...)`
    lays out a plan made before. `track()` is `TrackRun.from_plan(...).run()`; the pieces are
    public so tests can run one chunk under
    `jax.transfer_guard("disallow")` and benchmarks can separate compilation from running.
    `block_policy` ("cpu", "gpu", ...; default: the devices' platform) chooses the block layout
    (`block_size`), so the accelerator layout can be exercised on a CPU.
    """

    def __init__(
        self,
        *inputs: Any,
        batch_size: int | None = None,
        devices: Sequence[jax.Device] | None = None,
        chunk_saves: int | None = None,
        progress: bool = False,
        output: PathLike | None = None,
        bucket: bool = False,
        warmup: bool = False,
        part: tuple[int, int] | None = None,
        block_policy: str | None = None,
        overwrite: bool = False,
        resume: bool = False,
        tracks: bool = True,
        **named_inputs: Any,
    ):
        """`inputs`, `named_inputs`: the run's inputs, as `prepare` (and `fk.track`) takes them;
        the others lay the run out, as for `fk.track`."""
        layout = dict(batch_size=batch_size, devices=devices, chunk_saves=chunk_saves, progress=progress)
        layout.update(output=output, bucket=bucket, warmup=warmup, part=part, block_policy=block_policy)
        check_seeds_fit(inputs, named_inputs, streamed=output is not None, tracks=tracks)
        self._lay_out(prepare(*inputs, **named_inputs), overwrite=overwrite, resume=resume, tracks=tracks, **layout)

    @classmethod
    def from_plan(cls, plan: RunPlan, **layout) -> "TrackRun":
        """The run of a `prepare`d plan, laid out on `devices` (`layout`: `TrackRun`'s keywords
        `batch_size`, `devices`, ..., as for `fk.track`)."""
        run = cls.__new__(cls)
        run._lay_out(plan, **layout)
        return run

    def _lay_out(
        self,
        plan: RunPlan,
        *,
        batch_size=None,
        devices=None,
        chunk_saves=None,
        progress=False,
        output=None,
        bucket=False,
        warmup=False,
        part=None,
        block_policy=None,
        overwrite=False,
        resume=False,
        tracks=True,
    ):
        """This process's share of the plan's particles over the devices, in blocks and chunks;
        the pieces placed on the devices; the memory checked."""
        if batch_size is not None:
            batch_size = positive_integer(batch_size, "batch_size")
        self.n_particles_total = plan.seeds.shape[0]
        plan, output, self.first_particle = share(plan, part, output)
        self.plan, self.progress, self.warmup = plan, progress, bool(warmup)
        n = plan.seeds.shape[0]
        if batch_size is not None and plan.pieces.boundary.extra_slots and int(batch_size) < n:
            raise ValueError(
                f"batch_size: {type(plan.pieces.boundary).__name__} fills slots during the run, so all "
                f"{n} slots must be tracked in one batch"
            )
        if resume and output is None:
            raise ValueError("resume=True continues a streamed store: give output= the store a run began")
        if output is not None:
            check_output(output, overwrite, resume)
        self.output, self.resume, self.overwrite = output, bool(resume), bool(overwrite)
        self.tracks = bool(tracks)
        check_statistics(plan, self.tracks)
        dtype = plan.dtype
        # slots that restart at their seeds, located nowhere (no inlet), take the rows' own arrays as origins
        self.origin_hints = None
        if plan.origin_hints is not None:
            like = plan.pieces.field.hints(n, dtype, np)
            self.origin_hints = jax.tree.map(lambda a, b: a.astype(b.dtype), plan.origin_hints, like)
        elif plan.origins is not plan.seeds:
            self.origin_hints = plan.pieces.field.hints(n, dtype, np)
        self.n_particles = n

        if devices is None:
            devices = jax.local_devices()
            note_devices(devices)
        devices = list(devices)
        if not plan.pieces.integrator.shardable:
            devices = devices[:1]
        self.devices = devices
        self.mesh = Mesh(np.array(devices), ("particles",)) if len(devices) > 1 else None
        replicated = (
            NamedSharding(self.mesh, PartitionSpec()) if self.mesh else jax.sharding.SingleDeviceSharding(devices[0])
        )
        self._particle_sharding = NamedSharding(self.mesh, PartitionSpec("particles")) if self.mesh else replicated
        self._replicated = replicated
        self._lay_out_blocks(batch_size, block_policy, bucket)
        self._lay_out_chunks(chunk_saves)

        pieces = plan.pieces
        if plan.stream is not None:
            pieces = dataclasses.replace(
                pieces, field=_dtypes.cast_floating(plan.stream.window_field(self.window_width), dtype)
            )
        self._check_memory(pieces.field)
        dynamic, static = eqx.partition(pieces, eqx.is_array)
        self.pieces = eqx.combine(placed(dynamic, replicated), static)
        self.hint_width = self.pieces.field.hints(0, dtype, np).point.shape[1]  # a hint's point's coordinates
        self.gathering = None
        if plan.pieces.statistics:  # the statistics placed on the devices with the pieces
            origin = (plan.stream or plan.pieces.field).time_origin
            self.gathering = Gathering(plan, self.pieces.statistics, len(devices), self._particle_sharding, origin)
        self.run_times = Times(*placed_scalars((plan.t0, plan.dt, plan.t1), dtype.name, replicated))
        self.compile_s = 0.0
        self._compiled = None
        self._static = None
        self._first_batch = None
        self._ctrl_c: list[bool] = []  # Ctrl-C noted during run()
        self.identity = None
        if output is not None:  # what a store records of the run, for resume
            self.identity = run_identity(
                self.pieces,
                plan.seeds,
                plan.t_release,
                times=dict(t0=plan.t0, t1=plan.t1, dt=plan.dt, save_every=plan.save_every, n_saves=plan.n_saves),
                batches=dict(batch_size=self.batch_size, padded=self.padded_batch, part=self.first_particle),
                output=dict(dtype=dtype.name, record_velocity=plan.record_velocity, tracks=self.tracks),
                key=plan.key,
                series=plan.stream,
            )

    def _lay_out_blocks(self, batch_size, block_policy, bucket):
        """Batches of at most `batch_size` particles, each split over the devices into blocks."""
        n, devices = self.n_particles, self.devices
        batch = n if batch_size is None else min(int(batch_size), n)
        self.batch_size = batch
        per_device = math.ceil(batch / len(devices))
        self.block_policy = devices[0].platform if block_policy is None else str(block_policy)
        preferred = block_size(self.block_policy)
        blocks = 1 if preferred is None else math.ceil(per_device / preferred)
        if bucket:  # a few sizes only, so that new particle counts reuse compiled programs
            blocks = bucket_size(blocks)
            block = bucket_size(math.ceil(per_device / blocks), minimum=8)
        else:
            block = 8 * math.ceil(math.ceil(per_device / blocks) / 8)
        self.blocks = blocks
        self.padded_batch = len(devices) * blocks * block

    def _lay_out_chunks(self, chunk_saves):
        """Saves per chunk: the frames a chunk keeps on the device are bounded (and a progress
        bar updates ~20 times); a streamed field's chunks follow its time windows."""
        plan = self.plan
        frame_bytes = (
            self.padded_batch * plan.pieces.field.dim * plan.dtype.itemsize * (2 if plan.record_velocity else 1)
        )
        max_saves = max(1, CHUNK_BYTES // frame_bytes)
        if self.progress:
            max_saves = min(max_saves, max(1, math.ceil(plan.n_saves / 20)))
        if chunk_saves is not None:
            max_saves = int(chunk_saves)
        self.n_chunks = math.ceil(plan.n_saves / max_saves)
        self.chunk_saves = math.ceil(plan.n_saves / self.n_chunks)
        self.window_starts = None
        if plan.stream is not None:  # a window of slices per chunk, of one width
            windows = chunk_windows(plan, self.devices, self.chunk_saves)
            self.chunk_saves, self.window_width, self.window_starts = windows
            self.n_chunks = len(self.window_starts)

    def _check_memory(self, field):
        """The frames on the host and a batch on the device, estimated before anything is allocated."""
        plan, dim, itemsize = self.plan, field.dim, self.plan.dtype.itemsize
        copies = host_copies(self.devices)
        per_particle = (
            itemsize * (4 * dim + 8) + 16 + self.chunk_saves * (dim * itemsize * (2 if plan.record_velocity else 1) + 1)
        )

        def frame_memory(count, saves):
            return MemorySink.nbytes(count, saves, dim, plan.dtype, plan.record_velocity, plan.pieces.boundary.restarts)

        chunk, kept = (self.chunk_saves, plan.n_saves + 1) if self.tracks else (0, 2)  # no tracks: first, last
        self.host_bytes = frame_memory(min(self.padded_batch, self.n_particles), chunk) + (
            0 if self.output is not None else frame_memory(self.n_particles, kept)
        )  # a chunk copied off the device, and the sink
        check_memory(
            self.host_bytes,
            field.nbytes * copies + self.padded_batch * per_particle,
            per_particle,
            device_budget(),
            self.padded_batch,
        )

    def _kwargs(self):
        """The chunk program's static arguments, worked out once a run."""
        if self._static is None:
            self._static = dict(
                saves=self.chunk_saves,
                save_every=self.plan.save_every,
                blocks=self.blocks,
                record_velocity=self.plan.record_velocity,
                mesh=self.mesh,
                given=tuple(sorted(self.plan.given)),
                kernel=kernel_use(self.pieces, self.plan.dtype, self.devices[0].platform),
                keep_frames=self.tracks,
            )
        return self._static

    def initial_state(self, start: int = 0, pieces: RunPieces | None = None):
        """Device state and per-slot inputs of the batch of particles starting at `start`, and
        its frame 0 (evaluated with `pieces`, default the run's own)."""
        plan, dtype = self.plan, self.plan.dtype
        direction = 1.0 if plan.dt > 0 else -1.0
        stop = min(start + self.batch_size, self.n_particles)
        pad = self.padded_batch - (stop - start)

        def padded(a, fill, dtype=None):  # the batch's rows of `a`, `fill`ed to the padded size, in `dtype`
            rows = a[start:stop] if not pad else np.concatenate([a[start:stop], fill(a[start : start + 1], pad)])
            return rows if dtype is None else rows.astype(dtype, copy=False)

        repeated = lambda a, dtype=None: padded(a, lambda first, k: np.repeat(first, k, axis=0), dtype)  # noqa: E731
        t_rel = padded(plan.t_release, lambda _, k: np.full(k, direction * np.inf))
        count, per_block = self.padded_batch, len(self.devices) * self.blocks
        origins = {}
        if self.origin_hints is not None:
            origin = repeated(np.asarray(plan.origins), dtype)
            origins = dict(origin=origin, origin_hint=jax.tree.map(repeated, self.origin_hints))
        shardings = (self._particle_sharding, self._replicated)  # the parts without particles' data: made there
        blank, step = blank_parts(
            count, self.hint_width, plan.seeds.shape[1], dtype.name, per_block, direction, *shardings, plan.key is None
        )()
        host = dict(  # the particles' data, placed on the devices in one transfer
            x=repeated(plan.seeds, dtype),
            status=np.where(is_due(plan.t0, t_rel, plan.dt), Status.ACTIVE, Status.NOT_RELEASED).astype(np.int32),
            variables={name: repeated(a, dtype) for name, a in plan.given.items()},
            t_release=t_rel.astype(dtype),
            index=np.concatenate([np.arange(start, stop) + self.first_particle, np.full(pad, -1)]).astype(np.int32),
            origins=origins,
        )
        if plan.key is not None:
            host["keys"] = particle_keys(plan.key, self.first_particle + start, count)
        data = {**blank, **jax.device_put(host, self._particle_sharding)}
        names = ("x", "status", "exit_time", "hint", "variables", "generation", "remainder")
        rows = Rows(*(data[name] for name in names))
        slots = Slots(
            **{"origin": rows.x, "origin_hint": rows.hint, **data["origins"]},
            **{name: data[name] for name in ("t_release", "keys", "index")},
        )
        state = State(
            rows=rows,
            lost=data["lost"],
            step=step,
            courant=data["courant"],
            tallies=() if self.gathering is None else self.gathering.new(count),
        )
        state, frame = locate_seeds(
            self.pieces if pieces is None else pieces,
            self.run_times.t0,
            state,
            record_velocity=plan.record_velocity,
            restarts=self.restarts,
            kernel=self._kwargs()["kernel"],
        )
        return state, slots, frame

    @property
    def restarts(self) -> bool:
        return bool(self.plan.pieces.boundary.restarts)

    def _with_window(self, leaves, times):
        """The run's pieces with the field's time window replaced (same shapes: no recompile)."""
        return dataclasses.replace(self.pieces, field=swap_window(self.pieces.field, leaves, times))

    def compile(self):
        """Compile (or fetch from the cache) the run's chunk, once per run; returns it: a function
        `(pieces, times, state, slots) -> (state, frames)`."""
        if self._compiled is None:
            self._first_batch = self.initial_state()  # the first batch starts from it (seeds located once)
            args, kwargs = (self.pieces, self.run_times, *self._first_batch[:2]), self._kwargs()
            say_steps(self.pieces, self.plan.dtype, self.devices[0].platform, kwargs["kernel"])
            self._compiled, self.compile_s = compiled_program(args, kwargs)
        return self._compiled

    def advance(self, state: State, slots: Slots) -> tuple[State, Frame | None]:
        """Run one chunk; returns the new state and the chunk's saved frames (a `Frame`; None
        for a run without tracks)."""
        if self.plan.stream is not None:
            raise TypeError("advance: a streamed field needs its time windows swapped in between chunks; use run()")
        return self.compile()(self.pieces, self.run_times, state, slots)

    def run(self):
        """Track every batch; return a `Trajectory`, or with `output` the lazily opened store."""
        with ctrl_c_noted() as self._ctrl_c:
            return self._run()

    def _run(self):
        plan, compiled = self.plan, self.compile()
        warmup_s = self._warm_up(compiled) if self.warmup else 0.0
        sink = self._sink()
        batches = range(
            sink.batches_done * self.batch_size, self.n_particles, self.batch_size
        )  # a resumed store: the batches it lacks
        if self.gathering is not None and sink.saved_totals is not None:  # a resumed store's batches counted
            self.gathering.totals = sink.saved_totals
        if sink.batches_done:
            _log.info(
                "resume: %s holds %d of %d batches; tracking the other %d",
                self.output,
                sink.batches_done,
                math.ceil(self.n_particles / self.batch_size),
                len(batches),
            )
        feeder = windows = None
        if plan.stream is not None:  # windows of the series, read one ahead in a background thread
            feeder = WindowFeeder(plan.stream, self.window_width, plan.dtype, self._replicated)
            windows = feeder.windows(np.tile(self.window_starts, len(batches)))
        tally = Tally()
        start_time = time.perf_counter()
        try:  # the bar drawn inside: a Ctrl-C as it first shows ends the run as any other
            tally.bar = progress_bar(self.progress, self.n_particles * plan.n_steps)
            for start in batches:
                self._track_batch(
                    compiled,
                    start,
                    sink,
                    tally,
                    lambda: self.pieces if windows is None else self._with_window(*next(windows)),
                )
        except KeyboardInterrupt:
            if tally.bar is not None:  # its line ended, so that the run's last line is its own
                tally.bar.close()
            raise Interrupted(self._interrupted(sink, tally.chunk)) from None
        except BaseException:
            sink.close()  # a store's lock released; an overwrite's new store removed, the old one kept
            raise
        finally:
            if windows is not None:
                windows.close()  # stops the reading thread, also when a chunk failed
        run_s = time.perf_counter() - start_time
        streamed = (
            {}
            if feeder is None
            else dict(
                window_slices=self.window_width,
                slices_read=feeder.loaded,
                load_s=feeder.load_s,
                first_window_s=feeder.first_s,
                load_wait_s=feeder.wait_s,
            )
        )
        stats = run_stats(self.plan, self.n_particles, self.devices, self.compile_s, tally, run_s, warmup_s, streamed)
        try:
            return sink.finish(stats, None if self.gathering is None or sink.complete else self.gathering.datasets())
        except BaseException:
            sink.close()
            raise

    def _warm_up(self, compiled) -> float:
        """One chunk of the first batch, results dropped: first-call costs stay out of `run_s`."""
        start_time = time.perf_counter()
        state, slots, _ = self.initial_state()
        jax.block_until_ready(compiled(self.pieces, self.run_times, state, slots))
        return time.perf_counter() - start_time

    def _sink(self):
        plan, n, dim = self.plan, self.n_particles, self.plan.seeds.shape[1]
        times, velocity, generation = plan.saved_times, plan.record_velocity, self.restarts
        if not self.tracks:  # the start and the end only
            times, velocity, generation = plan.saved_times[[0, -1]], False, False
        if self.output is not None:
            return ZarrSink(
                self.output,
                n,
                times,
                dim,
                plan.dtype,
                plan.t_release,
                velocity,
                generation,
                self.chunk_saves,
                run=self.identity,
                batch_size=self.batch_size,
                resume=self.resume,
                overwrite=self.overwrite,
                statistics=len(self.plan.pieces.statistics),
            )
        return MemorySink(n, times, dim, plan.dtype, plan.t_release, velocity, generation)

    def _track_batch(self, compiled, start: int, sink, tally: Tally, next_pieces) -> None:
        """The batch of particles from `start`: frame 0, then chunk after chunk into `sink`."""
        plan = self.plan
        stop = min(start + self.batch_size, self.n_particles)
        count, particles = stop - start, slice(start, stop)
        pieces = next_pieces()
        first, self._first_batch = self._first_batch, None
        reuse = first is not None and start == 0 and pieces is self.pieces
        state, slots, frame0 = first if reuse else self.initial_state(start, pieces)
        frame0 = jax.tree.map(lambda a: a[None, :count], jax.device_get(frame0))  # its arrays fetched together
        tally.outside += int(np.sum(frame0.status == Status.OUT_OF_DOMAIN))
        tally.ashore += int(np.sum(frame0.status == Status.BEACHED))
        given = plan.seeds[None, start:stop].astype(plan.dtype)
        settled = np.where(
            frame0.positions == given, given, frame0.positions
        )  # as given, but where the field settled a seed (below a sea floor)
        frame0 = eqx.tree_at(lambda f: f.positions, frame0, settled)
        sink.write_frames(slice(0, 1), particles, frame0 if self.tracks else bare(frame0.positions, frame0.status))
        steps_per_chunk = self.chunk_saves * plan.save_every
        for chunk in range(self.n_chunks):
            tally.chunk = chunk
            if self._ctrl_c:  # a Ctrl-C that a call back from the compiler swallowed
                raise KeyboardInterrupt
            if chunk:
                pieces = next_pieces()
            state, chunk_frames = compiled(pieces, self.run_times, state, slots)
            first = 1 + chunk * self.chunk_saves
            last = min(first + self.chunk_saves, plan.n_saves + 1)
            if self.tracks:
                sink.write_frames(
                    slice(first, last),
                    particles,
                    jax.tree.map(lambda a: a[: last - first, :count], jax.device_get(chunk_frames)),
                )
            if tally.bar is not None:
                tally.bar.update(
                    count
                    * (min((chunk + 1) * steps_per_chunk, plan.n_steps) - min(chunk * steps_per_chunk, plan.n_steps))
                )
        rows = () if self.tracks else (state.rows.x, state.rows.status)
        exit_time, lost, courant, *rows = jax.device_get((state.rows.exit_time, state.lost, state.courant, *rows))
        if not self.tracks:  # the end: the last chunk's state
            sink.write_frames(slice(1, 2), particles, bare(*(a[None, :count] for a in rows)))
        if self.gathering is not None:
            self.gathering.add(state.tallies)
        sink.write_exit_time(particles, exit_time[:count])
        tally.lost += int(np.sum(lost))
        tally.courant = max(tally.courant, float(np.max(courant)))
        sink.batch_done(None if self.gathering is None else self.gathering.totals)

    def _interrupted(self, sink, chunk: int) -> str:
        """Where a Ctrl-C stopped the run, and what was kept."""
        t = self.plan.saved_times[min(chunk * self.chunk_saves, self.plan.n_saves)]
        if self.output is not None:
            replacing = sink.path != sink.final
            kept = sink.close() + (
                ""
                if replacing
                else "; fk.track(..., output=..., resume=True) (resume=true in the app) continues the run"
            )
        else:
            kept = sink.close()
        return f"interrupted at t = {t:g}: {kept}"
