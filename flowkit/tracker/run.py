"""`TrackRun`: a planned run and the driver loop that calls the compiled chunk, batch after
batch and chunk after chunk, writing the frames to memory or a zarr store."""

import logging
import math
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import _dtypes
from .._status import Status
from .._time import as_seconds
from ..io.atomic import refuse_existing
from ..io.sinks import MemorySink, ZarrSink
from ..io.stream import StreamedField, WindowFeeder, device_budget, plan_windows, swap_window
from ..trajectory import RunStats, Trajectory
from .cache import compiled_program
from .courant import AUTO, DEFAULT_COURANT, auto_dt, has_cells, report
from .identity import run_identity
from .kernel import Modules, Slots, State, Times, is_due, locate_seeds, particle_keys
from .plan import CHUNK_BYTES, block_size, bucket_size, check_memory, check_particle_state, check_particles, check_pieces, check_seeds, locate_origins, time_plan

_log = logging.getLogger("flowkit")


class TrackRun:
    """A prepared run: validated inputs on the device, the compiled chunk, the chunk plan.

    `track()` is `TrackRun(...).run()`; the pieces are public so tests can run one chunk under
    `jax.transfer_guard("disallow")` and benchmarks can separate compilation from running.
    `block_policy` ("cpu", "gpu", ...; default: the devices' platform) chooses the block layout
    (`block_size`), so the accelerator layout can be exercised on a CPU.
    """

    def __init__(
        self,
        field,
        seeds,
        t0,
        t1,
        dt,
        integrator=None,
        boundary=None,
        save_every=1,
        *,
        t_release=None,
        args=None,
        key=None,
        record_velocity=False,
        dtype="float32",
        batch_size=None,
        devices=None,
        chunk_saves=None,
        progress=False,
        output=None,
        bucket=False,
        warmup=False,
        part=None,
        block_policy=None,
        particles=None,
        particle_state=None,
        courant=DEFAULT_COURANT,
        overwrite=False,
        resume=False,
    ):
        self.stream = field if isinstance(field, StreamedField) else None
        if self.stream is not None:
            field = self.stream.template
        integrator, boundary = check_pieces(field, integrator, boundary, key)
        self.dtype = _dtypes.resolve(dtype)
        origin = (self.stream or field).time_origin
        t0, t1 = as_seconds(t0, "t0", origin), as_seconds(t1, "t1", origin)
        dt = auto_dt(self.stream or field, t0, t1, save_every, courant) if isinstance(dt, str) and dt == AUTO else as_seconds(dt, "dt", duration=True)
        particles = check_particles(particles, integrator, field, dt)
        self.n_steps, self.save_every, self.n_saves, self.times = time_plan(self.stream or field, t0, t1, dt, save_every)
        direction = 1.0 if dt > 0 else -1.0
        self.t0, self.t1, self.dt = t0, t1, dt
        self.record_velocity = bool(record_velocity)
        self.progress = progress
        self.key = key

        spare = boundary.extra_slots
        seeds, t_release = check_seeds(field, seeds, t0, t1, t_release, spare)
        given = check_particle_state(particle_state, particles, len(seeds))
        part_index, part_count = (jax.process_index(), jax.process_count()) if part is None else (int(part[0]), int(part[1]))
        if not 0 <= part_index < part_count:
            raise ValueError(f"part must be (index, count) with 0 <= index < count, got {part}")
        self.first_particle = 0
        if part_count > 1:  # this process's contiguous share; keys and slot indices stay global
            if spare:
                raise ValueError(f"boundary: {type(boundary).__name__} releases into one shared set of slots; run it in a single process (part=(0, 1))")
            total = len(seeds)
            self.first_particle, stop = (total * i // part_count for i in (part_index, part_index + 1))
            seeds, t_release = seeds[self.first_particle : stop], t_release[self.first_particle : stop]
            given = {name: a[self.first_particle : stop] for name, a in given.items()}
            if len(seeds) == 0:
                raise ValueError(f"part {part_index} of {part_count} holds none of the {total} seeds; use fewer processes")
            if output is not None:  # one store per share, never two writers on one store
                output = Path(output).with_name(f"{Path(output).stem}.part{part_index}{Path(output).suffix}")
        if spare:  # slots for particles released later by the boundary: waiting, never due by themselves
            if dt < 0:
                raise ValueError(f"boundary: {type(boundary).__name__} releases particles forward in time only; got dt={dt}")
            if batch_size is not None and int(batch_size) < len(seeds) + spare:
                raise ValueError(f"batch_size: {type(boundary).__name__} fills slots during the run, so all {len(seeds) + spare} slots must be tracked in one batch")
            parked = np.asarray(boundary.parking, np.float64)
            seeds = np.concatenate([seeds, np.repeat(parked[None], spare, axis=0)])
            if given:
                raise ValueError(f"particle_state: {type(boundary).__name__} releases particles of its own; their variables start at the model's initial values, so give none")
            t_release = np.concatenate([t_release, np.full(spare, np.inf)])
        n = seeds.shape[0]
        if resume and output is None:
            raise ValueError("resume=True continues a streamed store: give output= the store a run began")
        if output is not None and not resume:
            refuse_existing(output, overwrite, " (a trajectory store; resume=True continues the run that made it)")
        self.output = output
        self.resume = bool(resume)
        self.origins = np.asarray(boundary.origins(seeds), np.float64)
        self.origin_hints = field.hints(n, self.dtype, np)
        if boundary.restarts_at_origins:
            located = locate_origins(field, boundary, seeds, self.origins)
            self.origin_hints = jax.tree.map(lambda a, like: a.astype(like.dtype), located, self.origin_hints)
        self.n_particles = n

        devices = list(devices) if devices is not None else jax.local_devices()
        if not integrator.shardable:
            devices = devices[:1]
        self.devices = devices
        self.mesh = Mesh(np.array(devices), ("particles",)) if len(devices) > 1 else None
        replicated = NamedSharding(self.mesh, PartitionSpec()) if self.mesh else jax.sharding.SingleDeviceSharding(devices[0])
        self._particle_sharding = NamedSharding(self.mesh, PartitionSpec("particles")) if self.mesh else replicated

        batch = n if batch_size is None else min(int(batch_size), n)
        if batch < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
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

        frame_bytes = self.padded_batch * field.dim * self.dtype.itemsize * (2 if record_velocity else 1)
        max_saves = max(1, CHUNK_BYTES // frame_bytes)
        if progress:
            max_saves = min(max_saves, max(1, math.ceil(self.n_saves / 20)))
        if chunk_saves is not None:
            max_saves = int(chunk_saves)
        self.n_chunks = math.ceil(self.n_saves / max_saves)
        self.chunk_saves = math.ceil(self.n_saves / self.n_chunks)
        self.window_starts = None
        if self.stream is not None:  # a window of slices per chunk, of one width
            self.chunk_saves, self.window_width, self.window_starts = self._plan_windows(self.chunk_saves)
            self.n_chunks = len(self.window_starts)
            field = self.stream.window_field(self.window_width)

        # memory, estimated before anything is allocated: the frames on the host, a batch on the device
        copies = len(devices) if devices[0].platform == "cpu" else 1
        per_particle = self.dtype.itemsize * (4 * field.dim + 8) + 16 + self.chunk_saves * (field.dim * self.dtype.itemsize * (2 if record_velocity else 1) + 1)
        frame_memory = lambda count, saves: MemorySink.nbytes(count, saves, field.dim, self.dtype, self.record_velocity, boundary.restarts)  # noqa: E731
        self.host_bytes = frame_memory(min(self.padded_batch, n), self.chunk_saves) + (0 if output is not None else frame_memory(n, self.n_saves + 1))  # a chunk copied off the device, and the sink
        check_memory(self.host_bytes, field.nbytes * copies + self.padded_batch * per_particle, per_particle, device_budget(), self.padded_batch)

        modules = _dtypes.cast_floating(Modules(field, integrator, boundary, particles, args), self.dtype)
        dynamic, static = eqx.partition(modules, eqx.is_array)
        self.modules = eqx.combine(jax.device_put(dynamic, replicated), static)
        scalar = lambda v: jax.device_put(np.asarray(v, self.dtype), replicated)  # noqa: E731
        self.run_times = Times(scalar(t0), scalar(dt), scalar(t1))
        self.seeds = seeds
        self.given = given
        self.t_release = t_release
        self.boundary = boundary
        self.restarts = bool(boundary.restarts)
        self._direction = direction
        self._replicated = replicated
        self.compile_s = 0.0
        self._compiled = None
        self.warmup = bool(warmup)
        self.identity = None
        if output is not None:  # what a store records of the run, for resume
            settings = dict(t0=t0, t1=t1, dt=dt, save_every=self.save_every, n_saves=self.n_saves, batch_size=self.batch_size, padded=self.padded_batch, dtype=self.dtype.name, record_velocity=self.record_velocity, part=self.first_particle)
            series = None if self.stream is None else (self.stream.source.description, self.stream.times.tolist())
            self.identity = run_identity(self.modules, seeds, t_release, settings, key, series)

    def _plan_windows(self, chunk_saves: int):
        """`(chunk_saves, width, starts)` for a streamed field: the longest chunks (at most
        `chunk_saves` saves) whose windows fit `max_device_bytes`, one width for all."""
        stream, itemsize = self.stream, self.dtype.itemsize
        copies = len(self.devices) if self.devices[0].platform == "cpu" else 1
        limit = min(stream.max_window(itemsize, copies), stream.n_slices)
        tol = 8 * float(np.finfo(self.dtype).eps) * max(abs(self.t0), abs(self.t1), abs(self.t1 - self.t0))
        while True:
            n_chunks = math.ceil(self.n_saves / chunk_saves)
            chunk_saves = math.ceil(self.n_saves / n_chunks)
            edges = self.times[np.minimum(np.arange(n_chunks + 1) * chunk_saves, self.n_saves)]  # chunks end at saved times
            width, starts = plan_windows(stream.times, np.sort(np.stack([edges[:-1], edges[1:]], axis=1), axis=1), tol)
            if width <= limit:
                return chunk_saves, width, starts
            if chunk_saves == 1:
                raise ValueError(
                    f"max_device_bytes={stream.max_device_bytes}: besides the field's fixed arrays ({stream.static_nbytes(itemsize) / 2**20:.2f} MiB), it leaves room for windows of {limit} "
                    f"time slices of {stream.slice_nbytes(itemsize) / 2**20:.2f} MiB (two windows resident, one copy per CPU device), but one save interval "
                    f"(save_every={self.save_every} steps of dt={self.dt}) spans {width}; "
                    "lower save_every or raise max_device_bytes"
                )
            chunk_saves = max(1, min(chunk_saves - 1, chunk_saves * max(limit - 2, 1) // width))

    def _kwargs(self):
        return dict(saves=self.chunk_saves, save_every=self.save_every, blocks=self.blocks, record_velocity=self.record_velocity, mesh=self.mesh, given=tuple(sorted(self.given)))

    def initial_state(self, start: int = 0, modules=None):
        """Device state and per-slot inputs of the batch of particles starting at `start`, and
        its frame 0 (evaluated with `modules`, default the run's own)."""
        stop = min(start + self.batch_size, self.n_particles)
        pad = self.padded_batch - (stop - start)
        padded = lambda a, fill: np.concatenate([a[start:stop], fill(a[start : start + 1], pad)])  # noqa: E731
        x = padded(self.seeds, lambda first, k: np.repeat(first, k, axis=0))
        t_rel = padded(self.t_release, lambda _, k: np.full(k, self._direction * np.inf))
        due = is_due(self.t0, t_rel, self.dt)
        status = np.where(due, Status.ACTIVE, Status.NOT_RELEASED).astype(np.int32)
        put = lambda a: jax.device_put(a, self._particle_sharding)  # noqa: E731
        count = len(x)
        state = State(
            put(x.astype(self.dtype)),
            put(status),
            put(np.full(count, self._direction * np.inf, self.dtype)),
            jax.tree.map(put, self.modules.field.hints(count, self.dtype, np)),
            {name: put(padded(a, lambda first, k: np.repeat(first, k, axis=0)).astype(self.dtype)) for name, a in self.given.items()},
            put(np.zeros(count, np.int32)),
            put(np.zeros(len(self.devices) * self.blocks, np.int32)),
            jax.device_put(np.int32(0), self._replicated),
            put(np.zeros(len(self.devices) * self.blocks, self.dtype)),
        )
        state, frame = locate_seeds(self.modules if modules is None else modules, self.run_times.t0, state, record_velocity=self.record_velocity, restarts=self.restarts)
        slots = Slots(
            put(t_rel.astype(self.dtype)),
            put(particle_keys(self.key, self.first_particle + start, count)),
            put(padded(self.origins, lambda first, k: np.repeat(first, k, axis=0)).astype(self.dtype)),
            jax.tree.map(lambda a: put(padded(a, lambda first, k: np.repeat(first, k, axis=0))), self.origin_hints),
            put(np.concatenate([np.arange(start, stop) + self.first_particle, np.full(pad, -1)]).astype(np.int32)),
        )
        return state, slots, frame

    def _with_window(self, leaves, times):
        """The run's modules with the field's time window replaced (same shapes: no recompile)."""
        return self.modules._replace(field=swap_window(self.modules.field, leaves, times))

    def compile(self):
        """Compile (or fetch from the cache) the chunk program, once per run; returns it."""
        if self._compiled is None:
            state, slots, _ = self.initial_state()
            self._compiled, seconds = compiled_program((self.modules, self.run_times, state, slots), self._kwargs())
            self.compile_s += seconds
        return self._compiled

    def advance(self, state, slots):
        """Run one chunk; returns the new state and the chunk's saved frames (a `Frame`)."""
        if self.stream is not None:
            raise TypeError("advance: a streamed field needs its time windows swapped in between chunks; use run()")
        return self.compile()(self.modules, self.run_times, state, slots)

    def run(self):
        """Track every batch; return a `Trajectory`, or with `output` the lazily opened store."""
        compiled = self.compile()
        warmup_s = 0.0
        if self.warmup:  # one chunk of the first batch, results dropped: first-call costs stay out of run_s
            start_time = time.perf_counter()
            state, slots, _ = self.initial_state()
            jax.block_until_ready(compiled(self.modules, self.run_times, state, slots))
            warmup_s = time.perf_counter() - start_time
        n, dim = self.n_particles, self.seeds.shape[1]
        frames = self.n_saves + 1
        if self.output is not None:
            sink = ZarrSink(self.output, n, self.times, dim, self.dtype, self.t_release, self.record_velocity, self.restarts, self.chunk_saves, run=self.identity, batch_size=self.batch_size, resume=self.resume)
        else:
            sink = MemorySink(n, self.times, dim, self.dtype, self.t_release, self.record_velocity, self.restarts, Trajectory)
        bar = _progress_bar(self.progress, n * self.n_steps)
        outside = lost = ashore = 0
        courant = 0.0
        windows = feeder = None
        batches = range(sink.batches_done * self.batch_size, n, self.batch_size)  # a resumed store: the batches it lacks
        if sink.batches_done:
            _log.info("resume: %s holds %d of %d batches; tracking the other %d", self.output, sink.batches_done, math.ceil(n / self.batch_size), len(batches))
        if self.stream is not None:  # windows of the series, read one ahead in a background thread
            feeder = WindowFeeder(self.stream, self.window_width, self.dtype, self._replicated)
            windows = feeder.windows(np.tile(self.window_starts, len(batches)))
        next_modules = lambda: self.modules if windows is None else self._with_window(*next(windows))  # noqa: E731
        start_time = time.perf_counter()
        chunk = 0
        try:
            for start in batches:
                stop = min(start + self.batch_size, n)
                count = stop - start
                particles = slice(start, stop)
                modules = next_modules()
                state, slots, frame0 = self.initial_state(start, modules)
                outside += int(np.sum(np.asarray(frame0.status)[:count] == Status.OUT_OF_DOMAIN))
                ashore += int(np.sum(np.asarray(frame0.status)[:count] == Status.BEACHED))
                frame0 = jax.tree.map(lambda a: np.asarray(a)[None, :count], frame0)
                given = self.seeds[None, start:stop].astype(self.dtype)
                settled = np.where(frame0.positions == given, given, frame0.positions)  # as given, but where the field settled a seed (below a sea floor)
                sink.write_frames(slice(0, 1), particles, eqx.tree_at(lambda f: f.positions, frame0, settled))
                for chunk in range(self.n_chunks):
                    if chunk:
                        modules = next_modules()
                    state, chunk_frames = compiled(modules, self.run_times, state, slots)
                    first = 1 + chunk * self.chunk_saves
                    last = min(first + self.chunk_saves, frames)
                    sink.write_frames(slice(first, last), particles, jax.tree.map(lambda a: np.asarray(a)[: last - first, :count], chunk_frames))
                    if bar is not None:
                        steps_done = min((chunk + 1) * self.chunk_saves * self.save_every, self.n_steps) - min(chunk * self.chunk_saves * self.save_every, self.n_steps)
                        bar.update(count * steps_done)
                sink.write_exit_time(particles, np.asarray(state.exit_time)[:count])
                lost += int(np.sum(np.asarray(state.lost)))
                courant = max(courant, float(np.max(np.asarray(state.courant))))
                sink.batch_done()
        except KeyboardInterrupt:
            t = self.times[min(chunk * self.chunk_saves, self.n_saves)]
            kept = (
                f"{sink.batches_done} of {math.ceil(n / self.batch_size)} batches are in {self.output}; fk.track(..., output=..., resume=True) (resume=true in the app) continues the run"
                if self.output is not None
                else "nothing was kept (a store keeps every finished batch: output= in Python, output.store=true in the app)"
            )
            raise Interrupted(f"interrupted at t = {t:g}: {kept}") from None
        finally:
            if windows is not None:
                windows.close()  # stops the reading thread, also when a chunk failed
        run_s = time.perf_counter() - start_time
        if bar is not None:
            bar.close()
        if outside:
            _log.warning("%d of %d seeds lie outside the field's domain (e.g. outside the mesh): they are marked OUT_OF_DOMAIN from the start; fk.seeding.random_inside draws seeds inside", outside, n)
        if ashore:
            _log.warning("%d of %d seeds lie on land: they start BEACHED", ashore, n)
        if lost:
            _log.warning("%d releases found no free slot and were not made: give the inlet more slots (it has %d)", lost, self.boundary.extra_slots)
        streamed = {} if feeder is None else dict(window_slices=self.window_width, slices_read=feeder.loaded, load_s=feeder.load_s, first_window_s=feeder.first_s, load_wait_s=feeder.wait_s)
        courant = courant if has_cells(self.modules.field) else None
        report(courant, self.dt, self.modules.integrator)
        stats = RunStats(n, self.n_steps, frames, self.dtype.name, self.devices[0].platform, len(self.devices), self.compile_s, run_s, lost, warmup_s, courant=courant, **streamed)
        return sink.finish(stats)


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT) between or inside chunks: its message says where it
    stopped and how to go on."""


def _progress_bar(progress, total):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="particle-step", unit_scale=True, desc="tracking", smoothing=0.3)
