"""`track()`: one compiled program advances all particles a chunk of steps; a thin driver loops.

Inside a chunk (`_advance`): particles are sharded over the local devices (`shard_map`), split
into cache-sized blocks (`lax.map`), and each block runs `lax.scan` over saves, each save a
`lax.scan` over `save_every` steps. A step is: release due particles, one integrator step of
the whole block, the boundary, the domain and finiteness checks, all with `jnp.where`.
The driver compiles the chunk once per run shape (AOT, cached), then calls it chunk after chunk,
copying each chunk's saved frames to the host and updating the progress bar.
"""

import dataclasses
import json
import math
import time
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from . import _dtypes
from ._status import Status
from .boundaries.base import AbstractBoundary, Block
from .boundaries.box import Open
from .fields.base import SKIP, AbstractField
from .fields.stream import StreamedField, WindowFeeder, plan_windows, refuse_streamed, swap_window
from .integrators.base import AbstractIntegrator
from .integrators.runge_kutta import RK4
from .trajectory import RunStats, Trajectory

BLOCK = 8192
"""Particles per cache block inside one CPU device's share (measured best between ~2 500 and 10 000)."""


def block_size(platform: str) -> int | None:
    """Particles per block on a platform, None for "the device's whole share at once".

    CPU: cache-sized blocks, run one after another by `lax.map`; each keeps its state in cache
    through a save interval, and a block with nothing moving is skipped. GPU/TPU: one block per
    device, since a `lax.map` over cache-sized blocks would serialise a million particles into
    hundreds of small kernels per step, leaving the accelerator idle."""
    return BLOCK if platform == "cpu" else None


_CHUNK_BYTES = 256 * 2**20
"""Upper bound on the saved frames one chunk keeps on the device."""


def bucket_size(n: int, minimum: int = 1) -> int:
    """The smallest size `>= n` of the form `2^k × (1, 1.25, 1.5 or 1.75)` (and `>= minimum`): a
    few sizes per octave, so padding costs at most 25 % and usually much less."""
    n = max(int(n), minimum)
    if n <= 4:
        return n
    octave = 1 << (n.bit_length() - 1)
    quarter = max(octave // 4, 1)
    return octave + quarter * math.ceil((n - octave) / quarter)


class _State(eqx.Module):
    """Everything that changes from chunk to chunk, resident on the device."""

    x: jax.Array
    status: jax.Array
    exit_time: jax.Array
    hint: jax.Array
    """Per-particle location hints: the mesh cell each particle was last found in (-1: unknown)."""
    generation: jax.Array
    """Per-slot count of restarts (inlets): each generation is a separate path."""
    lost: jax.Array
    """Per-block count of releases that found no free slot."""
    step: jax.Array


class _Slots(eqx.Module):
    """Per-particle inputs that never change during a run."""

    t_release: jax.Array
    keys: jax.Array
    """Raw PRNG keys (used by stochastic integrators and inlets, folded with the global step)."""
    origin: jax.Array
    """Where `grid` inlets restart each slot."""
    origin_hint: jax.Array
    """The cell of each `origin` (-1: unknown)."""
    index: jax.Array
    """Global slot index (-1: padding)."""


class _Times(eqx.Module):
    """Numeric run parameters: leaves, so a new `t0`/`dt`/`t1` reuses the compiled program."""

    t0: jax.Array
    dt: jax.Array
    t1: jax.Array


def _step_times(times: _Times, k):
    """Start time and length of global step `k`; steps past `t1` have length 0 (no-ops)."""
    forward = times.dt > 0
    clip = lambda t: jnp.where(forward, jnp.minimum(t, times.t1), jnp.maximum(t, times.t1))  # noqa: E731
    kf = k.astype(times.dt.dtype)
    start = clip(times.t0 + kf * times.dt)
    return start, clip(times.t0 + (kf + 1) * times.dt) - start


def _is_due(t, t_release, dt):
    """The release rule, shared by the initial state and every step: a particle is due once the
    time `t` has reached its `t_release` in the direction of travel (to rounding). Operators
    only, so it serves NumPy on the host and JAX in the step alike."""
    return dt * (t - t_release) >= -1e-6 * dt * dt


def _advance_local(field, integrator, boundary, args, times, state: _State, slots: _Slots, *, saves, save_every, blocks, n_blocks, record_velocity):
    """Advance this device's particles by `saves * save_every` steps; return the state and the
    saved frames. `n_blocks` is the number of blocks on all devices together.

    Stopped particles cost (almost) nothing: a particle that is not moving takes no location
    work in the step (its hint is `SKIP`), a block with no moving particle skips the save's
    steps altogether (`lax.cond`), and at each save the rows are compacted (a stable partition,
    moving particles first) whenever that empties blocks, so that particles which stopped
    mid-run leave whole blocks to skip. Rows are permuted with all their per-slot inputs, and
    frames and the final state are put back in slot order: results do not depend on the
    layout. Restarting boundaries (inlets) hand releases to blocks, so with them blocks are
    neither skipped nor compacted."""
    n = state.x.shape[0]
    block = n // blocks
    code = lambda s: jnp.asarray(s, state.status.dtype)  # noqa: E731
    first_block = jax.lax.axis_index("particles") * blocks if n_blocks > blocks else 0
    skippable = not boundary.restarts

    def one_step(carry, k, slots, block_id):
        x, status, exit_time, hint, generation, lost = carry
        t, h = _step_times(times, k)
        moving = (status == Status.ACTIVE) & (h != 0)
        step_keys = jax.vmap(lambda key: jax.random.fold_in(jax.random.wrap_key_data(key), k))(slots.keys) if integrator.stochastic else None
        masked = jnp.where(moving, hint, SKIP)  # no location work for particles not moving
        result = integrator.step_batch(field, x, t, h, args, step_keys, masked)
        x_new = result.x
        finite = jnp.all(jnp.isfinite(x_new), axis=-1)
        step_hint = masked if result.hint is None else result.hint
        x_b, status_b, hint_b, inside = boundary.apply_batch(field, x, x_new, status, step_hint)
        stopped_by_wall = status_b != Status.ACTIVE
        new_status = jnp.where(moving & ~finite, code(Status.NONFINITE), jnp.where(moving & stopped_by_wall, status_b, jnp.where(moving & ~inside, code(Status.OUT_OF_DOMAIN), status)))
        moved = moving & finite & (inside | stopped_by_wall)
        x_next = jnp.where(moved[:, None], x_b, x)
        hint = jnp.where(moved, hint_b, hint)
        t_stop = t + h
        if result.status is not None:  # the integrator stopped some particles itself (events, failures)
            stopped = moving & (result.status != Status.ACTIVE)
            new_status = jnp.where(stopped, result.status.astype(status.dtype), new_status)
            at_exit = stopped & (result.status == Status.OUT_OF_DOMAIN) & finite
            x_next = jnp.where(at_exit[:, None], x_new, jnp.where(stopped[:, None], x, x_next))
            if result.t_stop is not None:
                t_stop = jnp.where(stopped, result.t_stop, t_stop)
        exit_time = jnp.where(moving & (new_status != Status.ACTIVE), t_stop, exit_time)
        if boundary.restarts:
            view = Block(x_next, new_status, hint, generation, x, x_new, moving, slots.origin, slots.origin_hint, slots.t_release, slots.index, slots.keys, block_id, n_blocks)
            x_next, new_status, hint, restarted, more = boundary.restart(field, args, t, h, k, view)
            exit_time = jnp.where(restarted != generation, jnp.asarray(jnp.inf, exit_time.dtype) * jnp.sign(times.dt), exit_time)
            generation, lost = restarted, lost + more
        # Release whoever is due by the end of this step: they start moving with the next one.
        due = (new_status == Status.NOT_RELEASED) & _is_due(t + h, slots.t_release, times.dt)
        new_status = jnp.where(due, code(Status.ACTIVE), new_status)
        return (x_next, new_status, exit_time, hint, generation, lost), None

    def busy(status, t_release, first):
        """Rows with work in the save starting at step `first`: moving, or released during it."""
        t_end, h = _step_times(times, first + save_every - 1)
        return (status == Status.ACTIVE) | ((status == Status.NOT_RELEASED) & _is_due(t_end + h, t_release, times.dt))

    def run_block(inputs, first):
        """One save interval of one block: its steps (skipped if nothing moves), then its frame."""
        carry, slots, block_id = inputs
        steps = first + jnp.arange(save_every, dtype=state.step.dtype)
        go = lambda c: jax.lax.scan(lambda c, k: one_step(c, k, slots, block_id), c, steps)[0]  # noqa: E731
        if skippable:
            carry = jax.lax.cond(jnp.any(busy(carry[1], slots.t_release, first)), go, lambda c: c, carry)
        else:
            carry = go(carry)
        x, status, _, hint, generation, _ = carry
        t_end, h = _step_times(times, first + save_every - 1)
        return carry, _frame(field, args, t_end + h, x, status, hint, generation if boundary.restarts else None, record_velocity)

    split = lambda a: a.reshape((blocks, block) + a.shape[1:])  # noqa: E731
    merge = lambda a: a.reshape((n,) + a.shape[2:])  # noqa: E731
    block_ids = first_block + jnp.arange(blocks, dtype=jnp.int32)

    def compact(rows, slots, order, first):
        """Moving rows first (a stable partition), when that leaves more blocks to skip."""
        work = busy(rows[1], slots.t_release, first)
        needed = (jnp.sum(work) + block - 1) // block
        occupied = jnp.sum(jnp.any(split(work), axis=1))
        perm = jnp.argsort(~work, stable=True)
        take = lambda tree: jax.tree.map(lambda a: a[perm], tree)  # noqa: E731
        return jax.lax.cond(occupied > needed, lambda: (take(rows), take(slots), order[perm]), lambda: (rows, slots, order))

    def one_save(carry, m):
        rows, lost, slots, order = carry
        first = state.step + m * save_every
        if skippable and blocks > 1:
            rows, slots, order = compact(rows, slots, order, first)
        blocked = tuple(split(a) for a in rows) + (lost,)
        blocked, frame = jax.lax.map(lambda inputs: run_block(inputs, first), (blocked, jax.tree.map(split, slots), block_ids))
        rows, lost = tuple(merge(a) for a in blocked[:5]), blocked[5]
        frame = jax.tree.map(lambda a: _in_slot_order(merge(a), order), frame)
        return (rows, lost, slots, order), frame

    rows = (state.x, state.status, state.exit_time, state.hint, state.generation)
    order = jnp.arange(n, dtype=jnp.int32)
    (rows, lost, _, order), frames = jax.lax.scan(one_save, (rows, state.lost, slots, order), jnp.arange(saves, dtype=state.step.dtype))
    x, status, exit_time, hint, generation = (_in_slot_order(a, order) for a in rows)
    return _State(x, status, exit_time, hint, generation, lost, state.step + saves * save_every), frames


def _in_slot_order(rows, order):
    """`rows` (row `i` belonging to slot `order[i]`) put back in slot order."""
    return jnp.zeros_like(rows).at[order].set(rows, unique_indices=True)


def _frame(field, args, t, x, status, hint, generation, record_velocity):
    """What one saved frame holds: positions, status, velocities (if recorded; zero where not
    active), the field's sampled arrays (NaN outside its domain) and, with restarting
    boundaries, each slot's generation."""
    v = None
    if record_velocity:
        v, _ = field.velocity_batch(t, x, args, hint)
        v = jnp.where((status == Status.ACTIVE)[:, None], v, jnp.zeros_like(v))
    return x, status, v, field.sample_batch(t, x, hint), generation


@eqx.filter_jit
def _advance(modules, times: _Times, state: _State, slots: _Slots, *, saves: int, save_every: int, blocks: int, record_velocity: bool, mesh):
    """The compiled chunk: `saves * save_every` steps of every particle, frames saved at a stride."""
    dynamic, static = eqx.partition(modules, eqx.is_array)
    n_blocks = blocks * (1 if mesh is None else mesh.size)

    def local(dynamic, times, state, slots):
        field, integrator, boundary, args = eqx.combine(dynamic, static)
        return _advance_local(field, integrator, boundary, args, times, state, slots, saves=saves, save_every=save_every, blocks=blocks, n_blocks=n_blocks, record_velocity=record_velocity)

    if mesh is None:
        return local(dynamic, times, state, slots)
    p = PartitionSpec("particles")
    state_spec = _State(p, p, p, p, p, p, PartitionSpec())
    fn = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(PartitionSpec(), PartitionSpec(), state_spec, _Slots(p, p, p, p, p)),
        out_specs=(state_spec, PartitionSpec(None, "particles")),
        check_vma=False,
    )
    return fn(dynamic, times, state, slots)


@eqx.filter_jit
def _locate_seeds(modules, t0, state: _State, *, record_velocity: bool, restarts: bool):
    """Locate the seeds once (their first hints); seeds outside the domain (inside the field's
    box but outside its mesh) are marked `OUT_OF_DOMAIN` at `t0`. Returns the state and frame 0."""
    field, _, _, args = modules
    hint, inside = field.locate_batch(state.x, state.hint)
    status = jnp.where(inside, state.status, jnp.asarray(Status.OUT_OF_DOMAIN, state.status.dtype))
    exit_time = jnp.where(inside, state.exit_time, t0.astype(state.exit_time.dtype))
    state = eqx.tree_at(lambda s: (s.status, s.exit_time, s.hint), state, (status, exit_time, hint))
    return state, _frame(field, args, t0, state.x, status, hint, state.generation if restarts else None, record_velocity)


_COMPILED: dict = {}
_MAX_PROGRAMS = 64


_compiles = 0


def clear_caches() -> None:
    """Forget every compiled program: flowkit's chunk programs and JAX's own caches. A process
    that tracks many differently shaped runs (a test suite, a notebook) releases their
    executables' memory this way; the next run of each shape compiles again."""
    _COMPILED.clear()
    jax.clear_caches()


def compile_count() -> int:
    """How many chunk programs this process has compiled (for tests and diagnostics)."""
    return _compiles


def _compiled(call_args, call_kwargs):
    """AOT-compile `_advance` once per structure and shape; return it and the compile time."""
    global _compiles
    dynamic, static = eqx.partition(call_args, eqx.is_array)
    leaves, treedef = jax.tree.flatten(dynamic)
    static_leaves, static_def = jax.tree.flatten(static)
    key = (treedef, tuple((leaf.shape, leaf.dtype, leaf.sharding) for leaf in leaves), static_def, tuple(static_leaves), tuple(sorted(call_kwargs.items())))
    if key in _COMPILED:
        return _COMPILED[key], 0.0
    _compiles += 1
    start = time.perf_counter()
    compiled = _advance.lower(*call_args, **call_kwargs).compile()
    if len(_COMPILED) >= _MAX_PROGRAMS:  # forget the oldest program rather than grow without bound
        _COMPILED.pop(next(iter(_COMPILED)))
    _COMPILED[key] = lambda *args: compiled(*args, **call_kwargs)
    return _COMPILED[key], time.perf_counter() - start


def _check_pieces(field, integrator, boundary, key):
    integrator = RK4() if integrator is None else integrator
    boundary = Open() if boundary is None else boundary
    if not isinstance(field, AbstractField):
        raise TypeError(f"field must be a flowkit field (AbstractField), got {type(field).__name__}")
    if not isinstance(integrator, AbstractIntegrator):
        raise TypeError(f"integrator must be a flowkit integrator, got {type(integrator).__name__}")
    if not isinstance(boundary, AbstractBoundary):
        raise TypeError(f"boundary must be a flowkit boundary, got {type(boundary).__name__}")
    if getattr(field, "components", field.dim) != field.dim:
        raise ValueError(f"field: a velocity field needs {field.dim} components, this one has {field.components}")
    if integrator.stochastic and key is None:
        raise ValueError(f"key: {type(integrator).__name__} is stochastic and needs a PRNG key, e.g. key=jax.random.key(0)")
    boundary = boundary.bind(field)
    if boundary.stochastic and key is None:
        raise ValueError(f"key: {type(boundary).__name__} draws random positions and needs a PRNG key, e.g. key=jax.random.key(0)")
    return integrator, boundary


def _time_plan(field, t0: float, t1: float, dt: float, save_every):
    """Check the run's times; return `(n_steps, save_every, n_saves, saved_times)`."""
    for name, value in (("t0", t0), ("t1", t1), ("dt", dt)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if dt == 0:
        raise ValueError("dt must be non-zero")
    if t1 == t0:
        raise ValueError(f"t1 must differ from t0 (both are {t0})")
    if (t1 - t0) * dt < 0:
        raise ValueError(f"dt must have the sign of t1 - t0 (t0={t0}, t1={t1}, dt={dt}); use a negative dt to track backward")
    lo_t, hi_t = field.time_range
    span = abs(t1 - t0)
    for name, value in (("t0", t0), ("t1", t1)):
        if not (lo_t - 1e-9 * span <= value <= hi_t + 1e-9 * span):
            raise ValueError(f"{name}={value} lies outside the field's time range [{lo_t}, {hi_t}]")
    if int(save_every) != save_every or save_every < 1:
        raise ValueError(f"save_every must be a positive integer, got {save_every}")
    n_steps = max(1, math.ceil(abs(t1 - t0) / abs(dt) - 1e-9))
    save_every = min(int(save_every), n_steps)
    n_saves = math.ceil(n_steps / save_every)
    save_steps = np.minimum(np.arange(n_saves + 1) * save_every, n_steps)
    return n_steps, save_every, n_saves, np.where(save_steps == n_steps, t1, t0 + save_steps * dt)


def _locate_origins(field, boundary, seeds, origins) -> np.ndarray:
    """The cells of the `grid` restart points (located once, here, not at every restart).

    `grid` inlets restart slots at their seeds projected onto the inlet: every seed inside the
    domain must project into the domain and the inlet's region (seeds outside never move)."""
    locate = eqx.filter_jit(field.locate_batch)
    unknown = jnp.full(len(seeds), -1, jnp.int32)
    inside = np.asarray(locate(jnp.asarray(seeds, field.bounds[0].dtype), unknown)[1])
    hints, lands = (np.array(a) for a in locate(jnp.asarray(origins, field.bounds[0].dtype), unknown))
    region = getattr(boundary, "inlet", None)
    if region is not None:
        scale = 1e-9 * np.max(np.asarray(field.bounds[1]) - np.asarray(field.bounds[0]))
        lands &= np.all((origins >= np.asarray(region.lo) - scale) & (origins <= np.asarray(region.hi) + scale), axis=1)
    bad = inside & ~lands
    if bad.any():
        raise ValueError(
            f"boundary: {int(bad.sum())} of {len(seeds)} seeds project onto the inlet plane outside the domain or the inlet's region (grid mode restarts each slot at its seed's projection); seed on or in front of the inlet, or use mode='random'"
        )
    return hints


def _particle_keys(key, start: int, count: int):
    """Raw per-particle keys: the run key folded with each particle's global index."""
    if key is None:
        return np.zeros((count, 2), np.uint32)
    ids = jnp.arange(start, start + count, dtype=jnp.uint32)
    return jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(key, i)))(ids)


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
    ):
        self.stream = field if isinstance(field, StreamedField) else None
        if self.stream is not None:
            field = self.stream.template
        integrator, boundary = _check_pieces(field, integrator, boundary, key)
        self.dtype = _dtypes.resolve(dtype)
        t0, t1, dt = float(t0), float(t1), float(dt)
        self.n_steps, self.save_every, self.n_saves, self.times = _time_plan(self.stream or field, t0, t1, dt, save_every)
        direction = 1.0 if dt > 0 else -1.0
        self.t0, self.t1, self.dt = t0, t1, dt
        self.record_velocity = bool(record_velocity)
        self.progress = progress
        self.key = key

        seeds = np.asarray(seeds, dtype=np.float64)
        if seeds.ndim == 1 and seeds.shape[0] == field.dim:
            seeds = seeds[None]
        spare = boundary.extra_slots
        if seeds.ndim != 2 or seeds.shape[1] != field.dim or seeds.shape[0] + spare == 0:
            raise ValueError(f"seeds must have shape (N, {field.dim}) for this {field.dim}-D field, got {seeds.shape}")
        if not np.all(np.isfinite(seeds)):
            raise ValueError(f"seeds contain {int(np.sum(~np.all(np.isfinite(seeds), axis=1)))} non-finite positions")
        lo, hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
        slack = 1e-6 * (hi - lo)
        outside = np.any((seeds < lo - slack) | (seeds > hi + slack), axis=1)
        if outside.any():
            raise ValueError(f"{int(outside.sum())} of {seeds.shape[0]} seeds lie outside the field bounds lo={lo.tolist()}, hi={hi.tolist()}")
        if t_release is None:
            t_release = np.full(len(seeds), t0)
        t_release = np.asarray(t_release, dtype=np.float64)
        if t_release.shape != (len(seeds),):
            raise ValueError(f"t_release must have shape ({len(seeds)},) (one release time per seed), got {t_release.shape}")
        if not np.all((np.minimum(t0, t1) <= t_release) & (t_release <= np.maximum(t0, t1))):
            raise ValueError(f"t_release: every release time must lie between t0={t0} and t1={t1}")
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
            if len(seeds) == 0:
                raise ValueError(f"part {part_index} of {part_count} holds none of the {total} seeds; use fewer processes")
            if output is not None:  # one store per share, never two writers on one store
                output = Path(output).with_name(f"{Path(output).stem}.part{part_index}{Path(output).suffix}")
        if spare:  # slots for particles released later by the boundary: waiting, never due by themselves
            if dt < 0:
                raise ValueError(f"boundary: {type(boundary).__name__} releases particles forward in time only; got dt={dt}")
            if batch_size is not None and int(batch_size) < len(seeds) + spare:
                raise ValueError(f"batch_size: {type(boundary).__name__} fills slots during the run, so all {len(seeds) + spare} slots must be tracked in one batch")
            parked = np.asarray(boundary.surface.vertices[0], np.float64)
            seeds = np.concatenate([seeds, np.repeat(parked[None], spare, axis=0)])
            t_release = np.concatenate([t_release, np.full(spare, np.inf)])
        n = seeds.shape[0]
        self.output = output
        self.origins = np.asarray(boundary.origins(seeds), np.float64)
        self.origin_hints = np.full(n, -1, np.int32)
        if boundary.restarts and getattr(boundary, "mode", None) == "grid":
            self.origin_hints = _locate_origins(field, boundary, seeds, self.origins).astype(np.int32)
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
        max_saves = max(1, _CHUNK_BYTES // frame_bytes)
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

        modules = _dtypes.cast_floating((field, integrator, boundary, args), self.dtype)
        dynamic, static = eqx.partition(modules, eqx.is_array)
        self.modules = eqx.combine(jax.device_put(dynamic, replicated), static)
        scalar = lambda v: jax.device_put(np.asarray(v, self.dtype), replicated)  # noqa: E731
        self.run_times = _Times(scalar(t0), scalar(dt), scalar(t1))
        self.seeds = seeds
        self.t_release = t_release
        self.boundary = boundary
        self.restarts = bool(boundary.restarts)
        self._direction = direction
        self._replicated = replicated
        self.compile_s = 0.0
        self.warmup = bool(warmup)

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
        return dict(saves=self.chunk_saves, save_every=self.save_every, blocks=self.blocks, record_velocity=self.record_velocity, mesh=self.mesh)

    def initial_state(self, start: int = 0, modules=None):
        """Device state and per-slot inputs of the batch of particles starting at `start`, and
        its frame 0 (evaluated with `modules`, default the run's own)."""
        stop = min(start + self.batch_size, self.n_particles)
        pad = self.padded_batch - (stop - start)
        padded = lambda a, fill: np.concatenate([a[start:stop], fill(a[start : start + 1], pad)])  # noqa: E731
        x = padded(self.seeds, lambda first, k: np.repeat(first, k, axis=0))
        t_rel = padded(self.t_release, lambda _, k: np.full(k, self._direction * np.inf))
        due = _is_due(self.t0, t_rel, self.dt)
        status = np.where(due, Status.ACTIVE, Status.NOT_RELEASED).astype(np.int32)
        put = lambda a: jax.device_put(a, self._particle_sharding)  # noqa: E731
        count = len(x)
        state = _State(
            put(x.astype(self.dtype)),
            put(status),
            put(np.full(count, self._direction * np.inf, self.dtype)),
            put(np.full(count, -1, np.int32)),
            put(np.zeros(count, np.int32)),
            put(np.zeros(len(self.devices) * self.blocks, np.int32)),
            jax.device_put(np.int32(0), self._replicated),
        )
        state, frame = _locate_seeds(self.modules if modules is None else modules, self.run_times.t0, state, record_velocity=self.record_velocity, restarts=self.restarts)
        slots = _Slots(
            put(t_rel.astype(self.dtype)),
            put(_particle_keys(self.key, self.first_particle + start, count)),
            put(padded(self.origins, lambda first, k: np.repeat(first, k, axis=0)).astype(self.dtype)),
            put(padded(self.origin_hints, lambda first, k: np.repeat(first, k, axis=0))),
            put(np.concatenate([np.arange(start, stop) + self.first_particle, np.full(pad, -1)]).astype(np.int32)),
        )
        return state, slots, frame

    def _with_window(self, leaves, times):
        """The run's modules with the field's time window replaced (same shapes: no recompile)."""
        return (swap_window(self.modules[0], leaves, times),) + tuple(self.modules[1:])

    def compile(self):
        """Compile (or fetch from the cache) the chunk program; returns it."""
        state, slots, _ = self.initial_state()
        compiled, seconds = _compiled((self.modules, self.run_times, state, slots), self._kwargs())
        self.compile_s += seconds
        return compiled

    def advance(self, state, slots):
        """Run one chunk; returns the new state and the chunk's saved `(positions, status, velocities, samples, generation)`."""
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
            from .io.stream import ZarrTrajectoryWriter

            sink = ZarrTrajectoryWriter(self.output, n, self.times, dim, self.dtype, self.t_release, self.record_velocity, self.chunk_saves, self.restarts)
        else:
            sink = _MemorySink(n, frames, dim, self.dtype, self.record_velocity, self.restarts)
        bar = _progress_bar(self.progress, n * self.n_steps)
        outside = lost = 0
        windows = feeder = None
        if self.stream is not None:  # windows of the series, read one ahead in a background thread
            feeder = WindowFeeder(self.stream, self.window_width, self.dtype, self._replicated)
            windows = feeder.windows(np.tile(self.window_starts, math.ceil(n / self.batch_size)))
        next_modules = lambda: self.modules if windows is None else self._with_window(*next(windows))  # noqa: E731
        start_time = time.perf_counter()
        try:
            for start in range(0, n, self.batch_size):
                stop = min(start + self.batch_size, n)
                count = stop - start
                particles = slice(start, stop)
                modules = next_modules()
                state, slots, frame0 = self.initial_state(start, modules)
                outside += int(np.sum(np.asarray(frame0[1])[:count] == Status.OUT_OF_DOMAIN))
                frame0 = jax.tree.map(lambda a: np.asarray(a)[None, :count], frame0)
                sink.write_frames(slice(0, 1), particles, self.seeds[None, start:stop].astype(self.dtype), *frame0[1:])
                for chunk in range(self.n_chunks):
                    if chunk:
                        modules = next_modules()
                    state, chunk_frames = compiled(modules, self.run_times, state, slots)
                    first = 1 + chunk * self.chunk_saves
                    last = min(first + self.chunk_saves, frames)
                    sink.write_frames(slice(first, last), particles, *jax.tree.map(lambda a: np.asarray(a)[: last - first, :count], chunk_frames))
                    if bar is not None:
                        steps_done = min((chunk + 1) * self.chunk_saves * self.save_every, self.n_steps) - min(chunk * self.chunk_saves * self.save_every, self.n_steps)
                        bar.update(count * steps_done)
                sink.write_exit_time(particles, np.asarray(state.exit_time)[:count])
                lost += int(np.sum(np.asarray(state.lost)))
        finally:
            if windows is not None:
                windows.close()  # stops the reading thread, also when a chunk failed
        run_s = time.perf_counter() - start_time
        if bar is not None:
            bar.close()
        if outside:
            warnings.warn(f"{outside} of {n} seeds lie outside the field's domain (e.g. outside the mesh): they are marked OUT_OF_DOMAIN from the start", stacklevel=3)
        if lost:
            warnings.warn(f"{lost} releases found no free slot and were not made: give the inlet more slots (it has {self.boundary.extra_slots})", stacklevel=3)
        streamed = {} if feeder is None else dict(window_slices=self.window_width, slices_read=feeder.loaded, load_s=feeder.load_s, first_window_s=feeder.first_s, load_wait_s=feeder.wait_s)
        stats = RunStats(n, self.n_steps, frames, self.dtype.name, self.devices[0].platform, len(self.devices), self.compile_s, run_s, lost, warmup_s, **streamed)
        if self.output is not None:
            opened = sink.open()
            opened.attrs["flowkit_stats"] = json.dumps(dataclasses.asdict(stats))
            return opened
        return Trajectory(self.times.astype(self.dtype), sink.positions, sink.status, self.t_release.astype(self.dtype), sink.exit_time, sink.velocities, sink.samples, sink.generation, stats)


class _MemorySink:
    """Host arrays for all frames (the default when nothing is streamed to disk)."""

    def __init__(self, n, frames, dim, dtype, with_velocity, with_generation):
        self.positions = np.empty((frames, n, dim), dtype)
        self.status = np.empty((frames, n), np.int8)
        self.velocities = np.zeros((frames, n, dim), dtype) if with_velocity else None
        self.generation = np.zeros((frames, n), np.int32) if with_generation else None
        self.exit_time = np.empty(n, dtype)
        self.samples = None

    def write_frames(self, frames: slice, particles: slice, positions, status, velocities=None, samples=None, generation=None) -> None:
        self.positions[frames, particles] = positions
        self.status[frames, particles] = status
        if self.velocities is not None:
            self.velocities[frames, particles] = velocities
        if self.generation is not None:
            self.generation[frames, particles] = generation
        if samples:
            if self.samples is None:
                shape = self.positions.shape[:2]
                self.samples = {name: np.full(shape + a.shape[2:], np.nan, a.dtype) for name, a in samples.items()}
            for name, a in samples.items():
                self.samples[name][frames, particles] = a

    def write_exit_time(self, particles: slice, exit_time) -> None:
        self.exit_time[particles] = exit_time


def _progress_bar(progress, total):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="particle-step", unit_scale=True, desc="tracking", smoothing=0.3)


def track(
    field: AbstractField,
    seeds,
    t0: float,
    t1: float,
    dt: float,
    integrator: AbstractIntegrator | None = None,
    boundary: AbstractBoundary | None = None,
    save_every: int = 1,
    *,
    t_release=None,
    args=None,
    key=None,
    record_velocity: bool = False,
    dtype="float32",
    batch_size: int | None = None,
    bucket: bool = False,
    progress: bool = False,
    devices=None,
    output=None,
    warmup: bool = False,
    part: tuple[int, int] | None = None,
) -> Trajectory:
    """Track particles from `seeds` through `field` from `t0` to `t1` in steps of `dt`.

    **Arguments:**

    - `field`: any `flowkit.fields.AbstractField`.
    - `seeds`: `(N, dim)` start positions (inside `field.bounds`).
    - `t0`, `t1`, `dt`: start, end and step; `t1 < t0` with `dt < 0` tracks backward. The last
      step is shortened so the run ends exactly at `t1`.
    - `integrator`: default `fk.RK4()`.
    - `boundary`: default none (`fk.Open()`): particles are limited only by the field's domain.
      Inlets (`fk.InletOutlet`, `fk.ContinuousInlet`) restart slots inside the run; the result
      then has `generation` (and `particle_id`) per frame, and a `ContinuousInlet`'s spare slots
      are appended after the seeds (seeds may then be empty, shape `(0, dim)`).
    - `save_every`: save a frame every this many steps (and always at `t1`).
    - `t_release`: `(N,)` release times; a particle waits (status `NOT_RELEASED`) at its seed
      until the first step that starts at or after its release time.
    - `args`: passed to the field as its third argument.
    - `key`: a `jax.random.key` for stochastic integrators and random/flux inlets (each particle's noise comes from
      this key folded with the particle's index).
    - `record_velocity`: also save the field velocity at each saved position.
    - `dtype`: `"float32"` (default) or `"float64"`.
    - `batch_size`: track at most this many particles at once (bounded memory); every batch
      reuses the same compiled program.
    - `bucket`: pad the particles (per device) to one of a few sizes, `2^k × (1, 1.25, 1.5, 1.75)`,
      so that runs with new particle counts reuse a compiled program (padded slots are never
      released). Off by default: on the mesh benchmark a power-of-two block ran ~35 % slower
      than the 9 % of padding explains; `False` pads to a multiple of 8 only.
    - `progress`: show a tqdm bar with particle-steps per second.
    - `devices`: devices to shard the particles over (default: all local devices).
    - `warmup`: before the timed run, execute one chunk of the first batch and drop it, so
      `traj.stats.run_s` excludes first-call costs (buffer allocation, thread start-up) as well as
      compilation (which is always done ahead of time, in `compile_s`); for benchmarks.
    - `part`: `(index, count)`: track only share `index` of `count` contiguous shares of the
      seeds (default: this process's share in a multi-host run, `(jax.process_index(),
      jax.process_count())`, so every process of a `jax.distributed` job tracks its own
      particles on its own devices). Noise keys and slot indices stay global: the shares
      together equal a one-process run. The result holds this share's particles only; an
      `output` store becomes `name.part<index>.zarr`.
    - `output`: a `.zarr` path to stream the frames to, chunk by chunk, instead of keeping them
      in memory (for 10⁷–10⁸ particles × many saves; combine with `batch_size`). `track` then
      returns the store opened lazily as an `xarray.Dataset` in the CF trajectory layout, its
      `attrs["flowkit_stats"]` the run's `RunStats` as JSON.

    **Returns:** a `flowkit.Trajectory` with `T = ceil(n_steps / save_every) + 1` frames; its
    `stats` (a `flowkit.RunStats`) hold the run's timings, sizes and counters.

    **Differentiable:** when `seeds`, the field's parameters or `args` are JAX tracers (inside
    `jax.grad`, `jax.jacfwd`, `jax.jit`, ...), `track` runs as one traced program (no chunks,
    no host copies, no sharding) and returns a `Trajectory` of JAX arrays, so gradients of
    final positions with respect to seeds and field parameters flow through the integrator.

    **Raises:** `ValueError` naming the parameter, before anything is compiled, for seeds outside
    the bounds or of the wrong shape, a zero or wrongly signed `dt`, times outside the field's
    time range, bad `save_every`/`t_release`/`dtype`.
    """
    if _is_traced((seeds, field, args, t_release)):
        return _track_traced(field, seeds, t0, t1, dt, integrator, boundary, save_every, t_release, args, key, record_velocity, dtype)
    return TrackRun(
        field,
        seeds,
        t0,
        t1,
        dt,
        integrator,
        boundary,
        save_every,
        t_release=t_release,
        args=args,
        key=key,
        record_velocity=record_velocity,
        dtype=dtype,
        batch_size=batch_size,
        devices=devices,
        progress=progress,
        output=output,
        bucket=bucket,
        warmup=warmup,
        part=part,
    ).run()


def _is_traced(tree) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree))


def _track_traced(field, seeds, t0, t1, dt, integrator, boundary, save_every, t_release, args, key, record_velocity, dtype):
    """`track` as one pure traced computation, for autodiff and for use inside user `jit`s."""
    refuse_streamed(field, "tracking with traced inputs (grad, jit, vmap, track_ensemble)", "read it with stream=False")
    integrator, boundary = _check_pieces(field, integrator, boundary, key)
    dtype = _dtypes.resolve(dtype)
    try:
        t0, t1, dt = float(t0), float(t1), float(dt)
    except TypeError:
        raise TypeError("t0, t1 and dt set the number of steps and must be concrete numbers, not traced values") from None
    n_steps, save_every, n_saves, saved_times = _time_plan(field, t0, t1, dt, save_every)
    x0 = jnp.asarray(seeds, dtype)
    if x0.ndim != 2 or x0.shape[1] != field.dim:
        raise ValueError(f"seeds must have shape (N, {field.dim}) for this {field.dim}-D field, got {x0.shape}")
    n = x0.shape[0]
    direction = 1.0 if dt > 0 else -1.0
    t_rel = jnp.full(n, t0, dtype) if t_release is None else jnp.asarray(t_release, dtype)
    status0 = jnp.where(_is_due(t0, t_rel, dt), Status.ACTIVE, Status.NOT_RELEASED).astype(jnp.int32)
    field, integrator, boundary, args = _dtypes.cast_floating((field, integrator, boundary, args), dtype)
    times = _Times(jnp.asarray(t0, dtype), jnp.asarray(dt, dtype), jnp.asarray(t1, dtype))
    if boundary.extra_slots:
        raise ValueError(f"boundary: {type(boundary).__name__} fills spare slots during the run; call track with concrete (untraced) inputs")
    state = _State(x0, status0, jnp.full(n, direction * jnp.inf, dtype), jnp.full(n, -1, jnp.int32), jnp.zeros(n, jnp.int32), jnp.zeros(1, jnp.int32), jnp.asarray(0, jnp.int32))
    state, first = _locate_seeds((field, integrator, boundary, args), times.t0, state, record_velocity=record_velocity, restarts=boundary.restarts)
    origins = jnp.asarray(boundary.origins(x0), dtype)
    origin_hints = field.locate_batch(origins, jnp.full(n, -1, jnp.int32))[0] if boundary.restarts else jnp.full(n, -1, jnp.int32)
    slots = _Slots(t_rel, jnp.asarray(_particle_keys(key, 0, n)), origins, origin_hints, jnp.arange(n, dtype=jnp.int32))
    state, frames = _advance_local(field, integrator, boundary, args, times, state, slots, saves=n_saves, save_every=save_every, blocks=1, n_blocks=1, record_velocity=record_velocity)
    frames = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, frames)
    return Trajectory(jnp.asarray(saved_times, dtype), frames[0], frames[1].astype(jnp.int8), t_rel, state.exit_time, frames[2], frames[3] or None, frames[4])


def track_ensemble(
    build,
    params,
    seeds,
    t0: float,
    t1: float,
    dt: float,
    integrator: AbstractIntegrator | None = None,
    boundary: AbstractBoundary | None = None,
    save_every: int = 1,
    *,
    t_release=None,
    args=None,
    key=None,
    record_velocity: bool = False,
    dtype="float32",
) -> Trajectory:
    """Many runs that differ only in numeric parameters, `vmap`ped into one compiled program.

    `build(p)` returns a field, or a `(field, integrator)` pair, for one parameter set `p`;
    `params` is an array (or pytree of arrays) with the ensemble on its leading axis — e.g. 64
    double-gyre amplitudes, or 64 diffusivities with `build = lambda K: (field, fk.EulerMaruyama(K))`.
    Use this instead of a Hydra multirun when only numbers change: one compile, one program.

    **Returns:** a `Trajectory` whose arrays carry a leading ensemble axis (`positions[E, T, N, d]`).
    """
    dtype = _dtypes.resolve(dtype)
    params = jax.tree.map(jnp.asarray, params)
    seeds = jnp.asarray(seeds, dtype)
    if boundary is not None:  # resolve its geometry once, on the host, against the first member's field
        first = build(jax.tree.map(lambda a: a[0], params))
        boundary = boundary.bind(first[0] if isinstance(first, tuple) else first)

    def member(p):
        piece = build(p)
        field, member_integrator = piece if isinstance(piece, tuple) else (piece, integrator)
        return _track_traced(field, seeds, t0, t1, dt, member_integrator, boundary, save_every, t_release, args, key, record_velocity, dtype)

    return eqx.filter_jit(jax.vmap(member))(params)
