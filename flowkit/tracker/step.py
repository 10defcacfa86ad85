"""One step of a block of particles, all its branches `jnp.where`: the integrator or particle
model moves them, the boundary, the domain, land and finiteness set their statuses, restarts
and releases start them."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._custom_types import Args, TimeLike
from .._status import Status
from ..boundaries.base import Block
from ..fields.base import AbstractField, Hints, select
from ..particles.base import AbstractParticles, fluid_batch, initial_batch, is_tracer
from ..particles.stepping import (
    drawing,
    jumped_batch,
    resting,
    resting_batch,
    term_for,
    turned_at_walls,
    updated,
    updating,
)
from .pieces import Carry, Rows, RunPieces, Slots, Times


def step_times(times: Times, k):
    """Start time and length of global step `k`; steps past `t1` have length 0 (no-ops)."""
    forward = times.dt > 0
    clip = lambda t: jnp.where(forward, jnp.minimum(t, times.t1), jnp.maximum(t, times.t1))  # noqa: E731
    kf = k.astype(times.dt.dtype)
    start = clip(times.t0 + kf * times.dt)
    return start, clip(times.t0 + (kf + 1) * times.dt) - start


def is_due(t: TimeLike, t_release, dt: TimeLike):
    """The release rule, shared by the initial state and every step: a particle is due once the
    time `t` has reached its `t_release` in the direction of travel (to rounding). Operators
    only, so it serves NumPy on the host and JAX in the step alike."""
    return dt * (t - t_release) >= -1e-6 * dt * dt


def one_step(
    pieces: RunPieces,
    times: Times,
    carry: Carry,
    k: Int[Array, ""],
    slots: Slots,
    block_id: Int[Array, ""],
    *,
    n_blocks: int,
    given: tuple = (),
) -> Carry:
    """One step of a block of particles: the integrator (or the particle model) steps the
    moving ones, the field settles them, the boundary applies, and the domain, land and
    finiteness checks, restarts and releases set their statuses (all `jnp.where`)."""
    field, particles, args = pieces.field, pieces.particles, pieces.args
    carries = not is_tracer(particles)
    rows, lost = carry.rows, carry.lost
    x, status, exit_time, hint, variables, generation = (
        rows.x,
        rows.status,
        rows.exit_time,
        rows.hint,
        rows.variables,
        rows.generation,
    )
    t, h = step_times(times, k)
    moving = (status == Status.ACTIVE) & (h != 0)
    masked = hint.skip(~moving)
    result, stepped, step_hint = _integrate(pieces, t, h, k, x, variables, masked, slots.keys, rows.remainder)
    if resting(particles):  # a resting particle (a grain on the bed) stays where it is through the step
        result, step_hint = _held(particles, x, variables, hint, result, step_hint)
    # longitudes in one period; depths in the water, mirrored at the surface and the floor in random
    # walks; where the integrator located the step's ends (`inside`), settling locates nothing
    located = step_hint if result.inside is None else step_hint.marked(True)
    x_new, step_hint = field.settle_batch(t + h, result.x, located, reflect=pieces.integrator.stochastic)
    finite = jnp.all(jnp.isfinite(x_new), axis=-1)
    x_b, hint_b, new_status, moved, walled = _judged(pieces, x, x_new, status, step_hint, result.inside, moving, finite)
    x_next = jnp.where(moved[:, None], x_b, x)
    hint = select(moved, hint_b, hint)
    crossing = _crossing(x, x_new, x_b)  # a wall's stop is where the step's chord met it
    t_stop = jnp.where(walled, t + crossing * h, t + h)
    kept = moving & finite
    if result.status is not None:  # the integrator stopped some particles itself (events, failures)
        stopped = moving & (result.status != Status.ACTIVE)
        new_status = jnp.where(stopped, result.status.astype(status.dtype), new_status)
        at_exit = stopped & (result.status == Status.OUT_OF_DOMAIN) & finite
        x_next = jnp.where(at_exit[:, None], x_new, jnp.where(stopped[:, None], x, x_next))
        kept = kept & (~stopped | at_exit)
        if result.t_stop is not None:
            t_stop = jnp.where(stopped, result.t_stop, t_stop)
    if carries:  # the variables follow the step (a particle stopped in it keeps its last values)
        turned = moved & (new_status == Status.ACTIVE) & jnp.any(x_b != x_new, axis=1)
        stepped = turned_at_walls(particles, pieces.boundary, x_new, x_b, stepped, turned)
        # a particle stopped by a wall carries its values at the crossing, interpolated along the step
        at_wall = jax.tree.map(
            lambda old, new: old + crossing.reshape((-1,) + (1,) * (old.ndim - 1)) * (new - old), variables, stepped
        )
        variables = select(kept, select(walled, at_wall, stepped), variables)
        if updating(particles):
            variables = _updated(particles, field, args, t + h, h, x_next, variables, hint, kept)
        if drawing(particles):  # the step's random events (a leeway object's jibe, an oil element entrained)
            x_next, hint, variables = _events(particles, t + h, h, k, x_next, hint, variables, slots, kept, new_status)
    exit_time = jnp.where(moving & (new_status != Status.ACTIVE), t_stop, exit_time)
    if pieces.boundary.restarts:
        view = Block(
            x=x_next,
            status=new_status,
            hint=hint,
            generation=generation,
            x_prev=x,
            x_step=x_new,
            moving=moving,
            origin=slots.origin,
            origin_hint=slots.origin_hint,
            t_release=slots.t_release,
            index=slots.index,
            keys=slots.keys,
            block=block_id,
            n_blocks=n_blocks,
        )
        x_next, new_status, hint, restarted, more = pieces.boundary.restart(field, args, t, h, k, view)
        never = jnp.asarray(jnp.inf, exit_time.dtype) * jnp.sign(times.dt)
        exit_time = jnp.where(restarted != generation, never, exit_time)
        if carries:
            variables = started(particles, field, args, t + h, x_next, variables, hint, restarted != generation)
        generation, lost = restarted, lost + more
    remainder = _left_out(result, x_next, moving, rows.remainder, generation != rows.generation)
    # Release whoever is due by the end of this step: they start moving with the next one.
    due = (new_status == Status.NOT_RELEASED) & is_due(t + h, slots.t_release, times.dt)
    new_status = jnp.where(due, jnp.asarray(Status.ACTIVE, status.dtype), new_status)
    if carries:
        variables = started(particles, field, args, t + h, x_next, variables, hint, due, given)
    return Carry(Rows(x_next, new_status, exit_time, hint, variables, generation, remainder), lost)


def jax_steps(
    pieces: RunPieces,
    times: Times,
    carry: Carry,
    slots: Slots,
    steps: Int[Array, " steps"],
    block_id: Int[Array, ""],
    *,
    n_blocks: int,
    given: tuple = (),
) -> tuple[Carry, Float[Array, "n dim"]]:
    """The global `steps` of a block by `one_step` in a `lax.scan`, and each row's position
    before the last of them."""

    def step(c, k):
        carry, _ = c
        return (one_step(pieces, times, carry, k, slots, block_id, n_blocks=n_blocks, given=given), carry.rows.x), None

    return jax.lax.scan(step, (carry, carry.rows.x), steps)[0]


def _integrate(pieces: RunPieces, t, h, k, x, variables, masked: Hints, keys, remainder):
    """`(result, stepped variables, hints)` of one step of the rows not `SKIP`ped in `masked`:
    the integrator along the particle model's term (a tracer's: the flow), given what rounding
    left out of the positions (`Rows.remainder`); stochastic ones get per-step keys."""
    integrator = pieces.integrator
    step_keys = None
    if integrator.stochastic:
        step_keys = jax.vmap(lambda key: jax.random.fold_in(jax.random.wrap_key_data(key), k))(keys)
    term = term_for(pieces.particles, pieces.field, integrator)
    result = integrator.step(term, {"x": x, **variables}, t, h, pieces.args, step_keys, masked, remainder)
    stepped = {name: value for name, value in result.state.items() if name != "x"}
    return result, stepped, masked if result.hint is None else result.hint


def _held(particles, x, variables, hint: Hints, result, step_hint: Hints):
    """The step's result and hints with the rows that rest (before the step) where they were."""
    held = resting_batch(particles, {"x": x, **variables})
    state = {**result.state, "x": jnp.where(held[:, None], x, result.state["x"])}
    remainder = None if result.remainder is None else jnp.where(held[:, None], 0, result.remainder)
    inside = None if result.inside is None else result.inside | held
    return result._replace(state=state, inside=inside, remainder=remainder), select(held, hint, step_hint)


def _events(particles, t, h, k, x, hint: Hints, variables, slots: Slots, kept, status):
    """Positions, hints and variables after the step's random events in the rows `kept`: where
    events moved an active particle (`AbstractMovedByEvents`), it is located again from its cell."""
    jumped = jumped_batch(particles, t, h, {"x": x, **variables}, slots.keys, k)
    x_events = jumped.pop("x", None)
    variables = select(kept, jumped, variables)
    if x_events is None:
        return x, hint, variables
    moved = kept & (status == Status.ACTIVE) & jnp.any(x_events != x, axis=1)
    point = jnp.where(moved[:, None], jnp.nan, hint.point)
    return jnp.where(moved[:, None], x_events, x), eqx.tree_at(lambda h: h.point, hint, point), variables


def _left_out(result, x_next, moving, before, restarted):
    """What rounding left out of each row's position after the step: the integrator's remainder
    (`StepResult.remainder`) per coordinate where the row took the integrator's end as it is,
    0 where anything else set it (settling, walls, a stop, a restart: `restarted`), the one
    before where the row did not move."""
    moved = moving[:, None]
    kept = jnp.where(moved, jnp.zeros_like(before), before)
    if result.remainder is not None:
        kept = jnp.where(moved & (x_next == result.x), result.remainder.astype(before.dtype), kept)
    return jnp.where(restarted[:, None], 0, kept)


def _judged(pieces: RunPieces, x, x_new, status, step_hint: Hints, inside, moving, finite):
    """The boundary applied to the step's end points (located by the integrator, `inside` not
    None, or here), and what follows for each row:
    `(x_b, hint_b, status, moved, walled)`: a non-finite end is `NONFINITE`, a wall's stop keeps
    the wall's status, an end outside the domain is `OUT_OF_DOMAIN`, on land `BEACHED` (at its
    last wet position); `moved`: the row takes `x_b`; `walled`: a wall stopped it in the step."""
    code = lambda s: jnp.asarray(s, status.dtype)  # noqa: E731
    if inside is None:  # nothing to locate where the field's settling located the ends (`exact`)
        step_hint, inside = pieces.field.locate_batch(x_new, step_hint)
    step_hint = step_hint.marked(False)  # a boundary locates again the rows it moves
    x_b, status_b, hint_b, inside = pieces.boundary.apply_batch(pieces.field, x, x_new, status, step_hint, inside)
    stopped_by_wall = status_b != Status.ACTIVE
    outside = jnp.where(moving & ~inside, code(Status.OUT_OF_DOMAIN), status)
    new_status = jnp.where(moving & stopped_by_wall, status_b, outside)
    new_status = jnp.where(moving & ~finite, code(Status.NONFINITE), new_status)
    moved = moving & finite & (inside | stopped_by_wall)
    beached = pieces.field.beached_batch(x_b, hint_b.marked(True))  # hint_b locates x_b where it still moves
    if beached is not None:  # a step ending on land stops at its last wet position
        ashore = moved & ~stopped_by_wall & beached
        new_status = jnp.where(ashore, code(Status.BEACHED), new_status)
        moved = moved & ~ashore
    return x_b, hint_b, new_status, moved, moving & finite & stopped_by_wall


def _crossing(x, x_new, x_b):
    """Where along each step's chord `x -> x_new` the point `x_b` (a wall's stop) lies, in [0, 1]."""
    chord = x_new - x
    return jnp.clip(
        jnp.sum((x_b - x) * chord, axis=1) / jnp.maximum(jnp.sum(chord * chord, axis=1), jnp.finfo(x.dtype).tiny), 0, 1
    )


def started(
    particles: AbstractParticles,
    field: AbstractField,
    args: Args,
    t: TimeLike,
    x,
    variables: dict,
    hint: Hints,
    mask,
    given=(),
):
    """`variables` with the rows `mask` (released or restarted at `(t, x)`) set to the model's
    initial values there, except those the run `given` itself; evaluated only in steps where
    some row starts."""

    def start(variables):
        fresh = {
            k: v for k, v in initial_batch(particles, field, t, x, args, hint.skip(~mask)).items() if k not in given
        }
        return {**variables, **select(mask, fresh, {k: variables[k] for k in fresh})}

    return jax.lax.cond(jnp.any(mask), start, lambda v: v, variables)


def _updated(particles, field, args, t, h, x, variables, hint, mask):
    """The model's `update` after a step of `h` ending at `t`, for the rows `mask` that took it."""
    fluid, _ = fluid_batch(particles, field, t, x, args, hint)
    new = jax.vmap(updated, in_axes=(None, None, None, 0, 0, None))(particles, t, h, {"x": x, **variables}, fluid, args)
    new.pop("x", None)
    return select(mask, new, variables)
