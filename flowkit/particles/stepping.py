"""How the tracker steps a particle model: its term and solver for a run, and its capabilities
applied to every part of it (a `Combined`'s models one by one)."""

import functools
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, PRNGKeyArray

from .._custom_types import Args, Positions, TimeLike
from .._time import TimeOrigin
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField
from ..integrators.base import AbstractIntegrator
from ..integrators.exponential import ExponentialDrag
from ..integrators.terms import AbstractTerm, FlowTerm
from .base import (
    AbstractDated,
    AbstractMovedByEvents,
    AbstractParticles,
    AbstractRandom,
    AbstractResting,
    AbstractTurnedByWalls,
    AbstractUpdating,
    Fluid,
    ModelTerm,
    is_tracer,
    own_state,
    variable_names,
)
from .drift import AbstractDrift
from .inertial import DragTerm, Inertial
from .models import Combined


def parts(particles: AbstractParticles) -> tuple[AbstractParticles, ...]:
    """The models a run's model is made of: a `Combined`'s, or the model itself."""
    return particles.models if isinstance(particles, Combined) else (particles,)


def _mover(particles: AbstractParticles) -> AbstractParticles:
    return particles.mover if isinstance(particles, Combined) else particles


def resolved(
    particles: AbstractParticles, integrator: AbstractIntegrator, dt: float, dim: int
) -> tuple[AbstractParticles, AbstractIntegrator]:
    """The model made ready for a run (host side, before compiling) and the solver that steps
    it: the run's integrator, or the exponential solver for an inertial particle whose drag is
    stepped exactly (`Inertial(scheme=)`, chosen here for `"auto"`)."""
    mover = _mover(particles)
    if not isinstance(mover, Inertial):
        return particles, integrator
    mover = mover.resolve(integrator, dt, dim)
    if isinstance(particles, Combined):
        particles = Combined(mover, *particles.riders)
    else:
        particles = mover
    if mover.scheme != "exponential":
        return particles, integrator
    if any(isinstance(rider, AbstractDrift) for rider in parts(particles)[1:]):
        raise ValueError(
            "Combined: Inertial steps its drag exactly (its exponential update), so drifts cannot ride along; "
            'use scheme="rk", or a tracer-like mover'
        )
    return particles, ExponentialDrag(integrator)


def dated(particles: AbstractParticles, origin: TimeOrigin | None) -> AbstractParticles:
    """`particles` with each part that reads the calendar given the field's time 0 (`origin`)."""
    if isinstance(particles, Combined):
        return Combined(*(dated(m, origin) for m in particles.models))
    return particles.dated(origin) if isinstance(particles, AbstractDated) else particles


def term_for(particles: AbstractParticles, field: AbstractField, integrator: AbstractIntegrator) -> AbstractTerm:
    """What `integrator` steps for `particles` in `field`: the flow itself for a tracer, the
    drag term for the exponential solver, else the model's term."""
    if is_tracer(particles):
        return FlowTerm(field)
    if isinstance(integrator, ExponentialDrag):
        return DragTerm(field, particles, cast(Inertial, _mover(particles)))  # resolved() chose it for Inertial
    return ModelTerm(field, particles)


def updating(particles: AbstractParticles) -> bool:
    """Whether some part of `particles` sets variables after every step."""
    return any(isinstance(m, AbstractUpdating) for m in parts(particles))


def updated(particles: AbstractParticles, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
    """ONE particle's `state` after a step of `dt` ends at `(t, state["x"])`: each updating
    part's own."""
    state = dict(state)
    for m in parts(particles):
        if isinstance(m, AbstractUpdating):
            state.update({k: v for k, v in m.update(t, dt, own_state(m, state), fluid, args).items() if k != "x"})
    return state


def resting(particles: AbstractParticles) -> bool:
    """Whether some part of `particles` may rest (the tracker then holds resting rows)."""
    return any(isinstance(m, AbstractResting) for m in parts(particles))


def resting_batch(particles: AbstractParticles, state: dict) -> Bool[Array, " n"]:
    """Which rows of the batched `state` rest through the next step (any resting part's say)."""

    def one(state):
        says = [m.resting(own_state(m, state)) for m in parts(particles) if isinstance(m, AbstractResting)]
        return functools.reduce(jnp.logical_or, says)

    return jax.vmap(one)(state)


def turned_at_walls(
    particles: AbstractParticles,
    boundary: AbstractBoundary,
    x_step: Positions,
    x: Positions,
    variables: dict,
    turned: Bool[Array, " n"],
) -> dict:
    """The batch's variables after the walls: each part with a velocity of its own turned
    where `turned`."""
    for m in parts(particles):
        if isinstance(m, AbstractTurnedByWalls):
            own = {name: variables[name] for name in variable_names(m)}
            variables = {**variables, **m.at_wall(boundary, x_step, x, own, turned)}
    return variables


_DRAWS, JUMPS = 0x647277, 0x6A6D70
"""Tags folded into a particle's key for its model's draws and its steps' random events, apart
from the integrator's noise (the key folded with the step alone)."""


def _random_parts(particles: AbstractParticles) -> tuple[AbstractRandom, ...]:
    return tuple(m for m in parts(particles) if isinstance(m, AbstractRandom) and m.random)


def drawing(particles: AbstractParticles) -> bool:
    """Whether some part of `particles` draws variables at random (its runs need a key)."""
    return bool(_random_parts(particles))


def drawn_state(particles: AbstractParticles, key: PRNGKeyArray, count: int) -> dict[str, Array]:
    """Each of `count` particles' own random variables (before the run; traced where the key
    is): every random part's `drawn`, from the run's key folded with a tag and the particle's
    index."""
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(key, _DRAWS), i))(np.arange(count, dtype=np.uint32))
    drawn: dict = {}
    for index, m in enumerate(_random_parts(particles)):
        own = jax.vmap(lambda k: m.drawn(jax.random.fold_in(k, index)))(keys)  # noqa: B023 (used at once)
        drawn.update(own)
    return drawn


def jumped_batch(particles: AbstractParticles, t: TimeLike, dt: TimeLike, state: dict, keys: Array, k) -> dict:
    """The batch's variables after a step of `dt` ending at `t`, with each random part's
    events of global step `k` drawn from each row's key (`Slots.keys`, raw), and `"x"` where
    a part's events may move particles (`AbstractMovedByEvents`)."""

    def one(state, raw):
        key = jax.random.fold_in(jax.random.fold_in(jax.random.wrap_key_data(raw), JUMPS), k)
        state = dict(state)
        for index, m in enumerate(_random_parts(particles)):
            new = m.jumped(t, dt, own_state(m, state), jax.random.fold_in(key, index))
            moves = isinstance(m, AbstractMovedByEvents)
            state.update({name: value for name, value in new.items() if moves or name != "x"})
        return state

    new = jax.vmap(one)(state, keys)
    if not moving_by_events(particles):
        new.pop("x", None)
    return new


def moving_by_events(particles: AbstractParticles) -> bool:
    """Whether some random part of `particles` may move a particle by its events (its
    `jumped_batch` then returns `"x"`)."""
    return any(isinstance(m, AbstractMovedByEvents) for m in _random_parts(particles))
