"""The compiled chunk: particles sharded over devices, split into blocks, advanced by `lax.scan`
over saves and steps; the particle state and per-slot inputs it carries."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec
from jaxtyping import PRNGKeyArray, PyTree

from .._custom_types import Args, TimeLike
from .._status import Status
from .._xla import options_for
from ..fields.base import AbstractField, Hints
from ..particles.base import initial_batch, is_tracer
from ..statistics.base import added, begun
from ..trajectory import Frame
from .kernels import KERNELS
from .pieces import Carry, Rows, RunPieces, Slots, State, Times
from .step import is_due, jax_steps, started, step_times


def advance_local(
    pieces: RunPieces,
    times: Times,
    state: State,
    slots: Slots,
    *,
    saves: int,
    save_every: int,
    blocks: int,
    n_blocks: int,
    record_velocity: bool,
    given: tuple = (),
    kernel: str | None = None,
    keep_frames: bool = True,
):
    """Advance this device's particles by `saves * save_every` steps; return the state and the
    saved frames (None unless `keep_frames`). `n_blocks` is the number of blocks on all devices
    together. `kernel`: the CPU kernel of that name takes the steps (`tracker.kernels.kernel_use` decided
    it for the run). The run's statistics (`pieces.statistics`) take every saved frame into
    their tallies (`state.tallies`), inside the program.

    `particles` is the particle model (`flowkit.particles`): a plain tracer steps positions
    alone; any other model steps positions and its variables together, which also restart
    with a slot, start at its release (but for those the run `given` per particle), and turn
    at the walls with the particle.

    Stopped particles cost (almost) nothing: a particle that is not moving takes no location
    work in the step (its hint is `SKIP`), a block with no moving particle skips the save's
    steps altogether (`lax.cond`), and at each save the rows are compacted (a stable partition,
    moving particles first) whenever that empties blocks, so that particles which stopped
    mid-run leave whole blocks to skip. Rows are permuted with all their per-slot inputs, and
    frames and the final state are put back in slot order: results do not depend on the
    layout. Restarting boundaries (inlets) hand releases to blocks, so with them blocks are
    neither skipped nor compacted."""
    field, boundary = pieces.field, pieces.boundary
    n = state.rows.x.shape[0]
    block = n // blocks
    first_block = jax.lax.axis_index("particles") * blocks if n_blocks > blocks else 0
    skippable = not boundary.restarts
    busy = functools.partial(_busy, times, save_every=save_every)

    def run_block(inputs, first):
        """One save interval of one block: its steps (skipped if nothing moves), then its frame
        and the Courant number of its last step."""
        carry, courant, slots, block_id = inputs
        steps = first + jnp.arange(save_every, dtype=state.step.dtype)

        def go(carry):
            """The steps, also returning the positions before the last one."""
            if kernel is not None:
                return KERNELS[kernel].steps(pieces, times, carry, slots, steps, block_id, n_blocks=n_blocks)
            return jax_steps(pieces, times, carry, slots, steps, block_id, n_blocks=n_blocks, given=given)

        def idle(carry):
            return _idle(pieces, times, carry, slots, first + save_every - 1, given), carry.rows.x

        generation_before = carry.rows.generation
        if skippable:
            carry, before = jax.lax.cond(jnp.any(busy(carry.rows.status, slots.t_release, first)), go, idle, carry)
        else:
            carry, before = go(carry)
        rows = carry.rows
        t_end, h = step_times(times, first + save_every - 1)
        frame = frame_of(
            field,
            pieces.args,
            t_end + h,
            rows.x,
            rows.status,
            rows.hint,
            rows.variables,
            rows.generation if boundary.restarts else None,
            record_velocity,
        )
        # a row restarted at an inlet in this interval jumped there: not a step through cells
        moved = (
            rows.status if not boundary.restarts else jnp.where(rows.generation == generation_before, rows.status, -1)
        )
        return (carry, jnp.maximum(courant, step_courant(field, before, rows.x, moved, rows.hint))), frame

    split = lambda tree: jax.tree.map(lambda a: a.reshape((blocks, block) + a.shape[1:]), tree)  # noqa: E731
    merge = lambda tree: jax.tree.map(lambda a: a.reshape((n,) + a.shape[2:]), tree)  # noqa: E731
    block_ids = first_block + jnp.arange(blocks, dtype=jnp.int32)

    def one_save(carry, m):
        rows, lost, courant, slots, order, tallies = carry
        first = state.step + m * save_every
        if skippable and blocks > 1:
            rows, slots, order = _compacted(rows, slots, order, busy(rows.status, slots.t_release, first), blocks)
        (blocked, courant), frame = jax.lax.map(
            lambda inputs: run_block(inputs, first),
            (Carry(split(rows), lost), courant, jax.tree.map(split, slots), block_ids),
        )
        rows, lost = merge(blocked.rows), blocked.lost
        frame = jax.tree.map(lambda a: _in_slot_order(a, order), merge(frame))
        if pieces.statistics:
            tallies = _tallied(pieces.statistics, tallies, times, first, save_every, frame, ordered)
        return (rows, lost, courant, slots, order, tallies), frame if keep_frames else None

    ordered = (slots.t_release, slots.index)  # in slot order, as the frames (the carry's get compacted)
    tallies = _begun(pieces.statistics, state, times, save_every, ordered) if pieces.statistics else ()
    order = jnp.arange(n, dtype=jnp.int32)
    (rows, lost, courant, _, order, tallies), frames = jax.lax.scan(
        one_save,
        (state.rows, state.lost, state.courant, slots, order, tallies),
        jnp.arange(saves, dtype=state.step.dtype),
    )
    rows = _in_slot_order(rows, order)
    step = state.step + saves * save_every
    new = State(rows, lost, step, courant, tallies)
    return new, frames


def _begun(statistics: tuple, state: State, times: Times, save_every: int, ordered: tuple) -> tuple:
    """The tallies, with the seeds and frame 0 counted where this is a batch's first chunk."""
    interval = jnp.abs(times.dt) * save_every
    rows = state.rows
    return jax.lax.cond(
        state.step == 0,
        lambda t: begun(statistics, t, rows.x, rows.status, times.t0, interval, *ordered, rows.variables),
        lambda t: t,
        state.tallies,
    )


def _tallied(statistics: tuple, tallies: tuple, times: Times, first, save_every: int, frame: Frame, ordered: tuple):
    """The tallies with the frame that ends the save starting at global step `first`, unless
    the run ended before it (a chunk's saves past `t1`); `ordered`: the slots' release times and
    particles, in slot order as the frames."""
    last_start, h = step_times(times, first + save_every - 1)
    frame_index, interval = (first + save_every) // save_every, jnp.abs(times.dt) * save_every
    return jax.lax.cond(
        step_times(times, first)[1] != 0,
        lambda t: added(
            statistics,
            t,
            frame_index,
            last_start + h,
            interval,
            frame.positions,
            frame.status,
            *ordered,
            frame.variables,
        ),  # fmt: skip
        lambda t: t,
        tallies,
    )


def _busy(times: Times, status, t_release, first, *, save_every: int):
    """Rows with work in the save starting at step `first`: moving, or released in time to move
    in it (a release due at the end of its last step starts moving in the next save)."""
    t_last, _ = step_times(times, first + save_every - 1)
    return (status == Status.ACTIVE) | ((status == Status.NOT_RELEASED) & is_due(t_last, t_release, times.dt))


def _idle(pieces: RunPieces, times: Times, carry: Carry, slots: Slots, last, given: tuple) -> Carry:
    """A save's steps (the last is step `last`) when nothing moves in the block: only the
    releases due at its end happen."""
    t_last, h = step_times(times, last)
    rows = carry.rows
    due = (rows.status == Status.NOT_RELEASED) & is_due(t_last + h, slots.t_release, times.dt)
    variables = rows.variables
    if not is_tracer(pieces.particles):
        variables = started(
            pieces.particles, pieces.field, pieces.args, t_last + h, rows.x, variables, rows.hint, due, given
        )
    status = jnp.where(due, jnp.asarray(Status.ACTIVE, rows.status.dtype), rows.status)
    return eqx.tree_at(lambda c: (c.rows.status, c.rows.variables), carry, (status, variables))


def _compacted(rows: Rows, slots: Slots, order, work, blocks: int):
    """The rows with `work` first (a stable partition, slots and slot order alike), when that
    leaves more of the `blocks` without work to skip; else as they are."""
    block = work.shape[0] // blocks
    needed = (jnp.sum(work) + block - 1) // block
    occupied = jnp.sum(jnp.any(work.reshape(blocks, block), axis=1))
    perm = _partition(work)
    take = lambda tree: jax.tree.map(lambda a: a[perm], tree)  # noqa: E731
    return jax.lax.cond(occupied > needed, lambda: (take(rows), take(slots), order[perm]), lambda: (rows, slots, order))


def _partition(work):
    """The permutation putting the rows with `work` first, each part in its own order: what
    `argsort(~work, stable=True)` gives, by prefix counts (a stable sort of 10⁴ rows costs
    0.8 ms on XLA:CPU, this ~0.04 ms)."""
    index = jnp.arange(work.shape[0], dtype=jnp.int32)
    before = jnp.cumsum(work.astype(jnp.int32)) - work  # rows with work before each row
    place = jnp.where(work, before, jnp.sum(work) + index - before)
    return jnp.zeros_like(index).at[place].set(index, unique_indices=True)


def _in_slot_order(rows, order):
    """`rows` (a pytree; row `i` belonging to slot `order[i]`) put back in slot order."""
    return jax.tree.map(lambda a: jnp.zeros_like(a).at[order].set(a, unique_indices=True), rows)


def frame_of(
    field: AbstractField,
    args: Args,
    t: TimeLike,
    x,
    status,
    hint: Hints,
    variables: dict,
    generation,
    record_velocity: bool,
):
    """What one saved frame holds: positions, status, velocities (if recorded; zero where not
    active), the field's sampled arrays (NaN outside its domain), the particles' variables and,
    with restarting boundaries, each slot's generation."""
    v = None
    if record_velocity:
        v, _ = field.velocity_batch(t, x, args, hint)
        v = jnp.where((status == Status.ACTIVE)[:, None], v, jnp.zeros_like(v))
    return Frame(
        positions=x,
        status=status,
        velocities=v,
        samples=field.samples_at(t, x, hint),
        generation=generation,
        variables=variables,
    )


def step_courant(field: AbstractField, before, x, status, hint: Hints):
    """The largest Courant number `max_i |dx_i| / size_i` of the active rows' step from
    `before` to `x` (`size_i` of the cell at `x`; a periodic axis's wrap not counted): the
    cells the step crossed, with no evaluation of the field. 0 for fields without cells."""
    sizes = field.cell_sizes(x, hint)
    if sizes is None:
        return jnp.zeros((), x.dtype)
    chord = x - before
    lo, hi = field.bounds
    for axis, periodic in enumerate(field.periodic):
        if periodic:
            period = hi[axis] - lo[axis]
            chord = chord.at[:, axis].set(chord[:, axis] - period * jnp.round(chord[:, axis] / period))
    active = (status == Status.ACTIVE)[:, None]
    return jnp.max(jnp.where(active, jnp.abs(chord) / sizes, 0), initial=0).astype(x.dtype)


@eqx.filter_jit
def advance(
    pieces: RunPieces,
    times: Times,
    state: State,
    slots: Slots,
    *,
    saves: int,
    save_every: int,
    blocks: int,
    record_velocity: bool,
    mesh: jax.sharding.Mesh | None,
    given: tuple = (),
    kernel: str | None = None,
    keep_frames: bool = True,
):
    """The compiled chunk: `saves * save_every` steps of every particle, frames saved at a
    stride (`advance_local`)."""
    dynamic, static = eqx.partition(pieces, eqx.is_array)
    n_blocks = blocks * (1 if mesh is None else mesh.size)

    def local(dynamic, times, state, slots):
        return advance_local(
            eqx.combine(dynamic, static),
            times,
            state,
            slots,
            saves=saves,
            save_every=save_every,
            blocks=blocks,
            n_blocks=n_blocks,
            record_velocity=record_velocity,
            given=given,
            kernel=kernel,
            keep_frames=keep_frames,
        )

    if mesh is None:
        return local(dynamic, times, state, slots)
    p, state_spec = PartitionSpec("particles"), _state_spec(state)
    fn = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(
            PartitionSpec(),
            PartitionSpec(),
            state_spec,
            jax.tree.map(lambda _: p, slots),
        ),
        out_specs=(state_spec, PartitionSpec(None, "particles")),
        check_vma=False,
    )
    return fn(dynamic, times, state, slots)


def _state_spec(state: State) -> State:
    """The state's layout over the devices: every per-slot or per-device array split over the
    "particles" axis, the step replicated."""
    return eqx.tree_at(lambda s: s.step, jax.tree.map(lambda _: PartitionSpec("particles"), state), PartitionSpec())


def locate_seeds(
    pieces: RunPieces, t0, state: State, *, record_velocity: bool, restarts: bool, kernel: str | None = None
):
    """`located_seeds` as its own program, compiled with the XLA options of the seeds' devices;
    on several devices each locates its own seeds (a program partitioned by XLA instead ran the
    location's loops 40 times slower on an ocean model's grid)."""
    sharding = state.rows.x.sharding
    mesh = sharding.mesh if isinstance(sharding, jax.sharding.NamedSharding) and sharding.mesh.size > 1 else None
    program = _seed_program(tuple(sorted(options_for(state.rows.x).items())), mesh)
    located, frame = program(pieces, t0, state, record_velocity=record_velocity, restarts=restarts, kernel=kernel)
    return eqx.tree_at(lambda s: s.rows.hint, located, laid_out_as(located.rows.hint, state.rows.hint)), frame


def laid_out_as(new: PyTree, like: PyTree) -> PyTree:
    """`new` with each array on `like`'s sharding. A program's results that it makes afresh
    (a field's constant hints, empty `(N, 0)` hints that an inlet's restart rebuilds) come
    back replicated whatever the program was told; the chunk program takes them sharded."""
    return jax.tree.map(lambda a, b: a if a.sharding == b.sharding else jax.device_put(a, b.sharding), new, like)


@functools.cache
def _seed_program(options: tuple, mesh: jax.sharding.Mesh | None):
    def located(pieces: RunPieces, t0, state: State, **flags):
        if mesh is None:
            return located_seeds(pieces, t0, state, **flags)
        dynamic, static = eqx.partition(pieces, eqx.is_array)
        p, state_spec = PartitionSpec("particles"), _state_spec(state)

        def local(dynamic, t0, state):  # the rows come back whole: a model's variables start here
            located, frame = located_seeds(eqx.combine(dynamic, static), t0, state, **flags)
            return located.rows, frame

        rows, frame = jax.shard_map(
            local, mesh=mesh, in_specs=(PartitionSpec(), PartitionSpec(), state_spec), out_specs=(p, p), check_vma=False
        )(dynamic, t0, state)
        return eqx.tree_at(lambda s: s.rows, state, rows), frame

    return eqx.filter_jit(located, compiler_options=dict(options))


def located_seeds(
    pieces: RunPieces, t0, state: State, *, record_velocity: bool, restarts: bool, kernel: str | None = None
):
    """Locate the seeds once (their first hints; by the kernel's own search where the CPU kernel
    `kernel` takes the run's steps and has one); seeds outside the domain (inside the field's box but outside its
    mesh) are marked `OUT_OF_DOMAIN` at `t0`, seeds on land `BEACHED`. A particle model's
    variables start at its initial values there, but for those `state` already holds (given by
    the run). Returns the state and frame 0."""
    field, particles, args = pieces.field, pieces.particles, pieces.args
    # seeds, located nowhere yet (a mesh searches their bins alone); below a layered sea floor
    # they start on it, located there
    rows = state.rows
    located = None if kernel is None else KERNELS[kernel].located
    if located is not None:  # by the kernel: the program holds no JAX location
        x, hint, inside, beached = located(pieces, t0, rows.x)
    else:
        x, hint = field.settle_batch(t0, rows.x, None)
        hint, inside = field.locate_batch(x, hint)
        beached = field.beached_batch(x, hint)
    status = jnp.where(inside, rows.status, jnp.asarray(Status.OUT_OF_DOMAIN, rows.status.dtype))
    if beached is not None:
        status = jnp.where(inside & beached, jnp.asarray(Status.BEACHED, status.dtype), status)
    stopped = ~inside if beached is None else ~inside | beached
    exit_time = jnp.where(stopped, t0.astype(rows.exit_time.dtype), rows.exit_time)
    variables = rows.variables
    if not is_tracer(particles):
        variables = {**initial_batch(particles, field, t0, x, args, hint), **variables}
    rows = Rows(x, status, exit_time, hint.marked(False), variables, rows.generation, jnp.zeros_like(x))
    return eqx.tree_at(lambda s: s.rows, state, rows), frame_of(
        field, args, t0, x, status, hint, variables, rows.generation if restarts else None, record_velocity
    )


def particle_keys(key: PRNGKeyArray | None, start: int, count: int):
    """Raw per-particle keys: the run key folded with each particle's global index."""
    if key is None:
        return np.zeros((count, 2), np.uint32)
    ids = jnp.arange(start, start + count, dtype=jnp.uint32)
    return jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(key, i)))(ids)
