"""Particles that move with the fluid plus a velocity of their own, and models combined."""

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool

from .._custom_types import Args, Position, Positions, TimeLike
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, Hints
from ..integrators.base import AbstractIntegrator
from .base import AbstractParticles, Fluid, fluid_batch
from .drift import AbstractDrift


class Buoyant(AbstractParticles):
    """A particle that moves with the fluid plus a constant rise (`w > 0`) or sink (`w < 0`)
    velocity along the vertical `axis` (larvae, oil droplets, sediment at terminal velocity).

    `w` is a number (a leaf: sweeps and gradients work) or a function of the `Fluid` at the
    particle, e.g. `lambda fluid: 1e-3 * (fluid.samples["temperature"] - 4)`, which then reads
    the field's sampled arrays. The velocity is along the axis's own direction: on a field whose
    vertical axis is depth (positive down), rising is `w < 0`.
    """

    w: float | Callable[[Fluid], float]
    axis: int = eqx.field(static=True)

    def __init__(self, w, axis: int = -1):
        self.w = float(w) if isinstance(w, int) else w
        self.axis = int(axis)

    @property
    def needs_samples(self) -> bool:
        return callable(self.w)

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        w = self.w(fluid) if callable(self.w) else self.w
        up = jnp.arange(fluid.velocity.shape[0]) == self.axis % fluid.velocity.shape[0]  # a one-hot, not a scatter
        return {"x": fluid.velocity + jnp.where(up, w, 0).astype(fluid.velocity.dtype)}


class Combined(AbstractParticles):
    """One moving model with others riding along: `Combined(Inertial(...), Aging(), Distance())`.

    The first model moves the particle; the others add variables only (their `"x"` rate is
    ignored) and see the particle's own velocity as `fluid.particle_velocity`. Drifts
    (`Windage`, `StokesDrift`, `Leeway`) riding along add their velocity to the mover's:
    `Combined(Windage(0.03), StokesDrift())` drifts with current, 3 % of the wind and the Stokes
    drift. Variable names must differ between the models.
    """

    mover: AbstractParticles
    riders: tuple[AbstractParticles, ...]

    def __init__(self, mover: AbstractParticles, *riders: AbstractParticles):
        models = (mover,) + riders
        if not all(isinstance(m, AbstractParticles) for m in models):
            raise TypeError(f"Combined: give flowkit particle models, got {[type(m).__name__ for m in models]}")
        names = [name for m in models for name in m.variable_names]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"Combined: the models share variable names {repeated}; each variable must come from one model"
            )
        self.mover, self.riders = mover, tuple(riders)

    @property
    def models(self) -> tuple[AbstractParticles, ...]:
        return (self.mover,) + self.riders

    @property
    def variable_names(self) -> tuple[str, ...]:
        return tuple(name for m in self.models for name in m.variable_names)

    @property
    def needs_samples(self) -> bool:
        return any(m.needs_samples for m in self.models)

    @property
    def sample_names(self) -> tuple[str, ...]:
        return tuple(name for m in self.models for name in m.sample_names)

    @property
    def needs_acceleration(self) -> bool:
        return any(m.needs_acceleration for m in self.models)

    @property
    def updates(self) -> bool:
        return any(m.updates for m in self.models)

    @property
    def moves_in_metres(self) -> bool:
        return any(m.moves_in_metres for m in self.models)

    def _own(self, model, state):
        return {"x": state["x"], **{name: state[name] for name in model.variable_names}}

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {name: value for m in self.models for name, value in m.initial(t, x, fluid, args).items()}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        rates = dict(self.mover.rhs(t, self._own(self.mover, state), fluid, args))
        for rider in self.riders:
            if isinstance(rider, AbstractDrift):
                rates["x"] = rates["x"] + fluid.position_rate(rider.drift(t, self._own(rider, state), fluid, args))
        along = dataclasses.replace(fluid, particle_velocity=rates["x"])
        for rider in self.riders:
            rates.update({k: v for k, v in rider.rhs(t, self._own(rider, state), along, args).items() if k != "x"})
        return rates

    def update(self, t: TimeLike, state: dict, samples: dict, args: Args):
        state = dict(state)
        for m in self.models:
            if m.updates:
                state.update({k: v for k, v in m.update(t, self._own(m, state), samples, args).items() if k != "x"})
        return state

    def at_wall(
        self, boundary: AbstractBoundary, x_step: Positions, x: Positions, variables: dict, turned: Bool[Array, " n"]
    ):
        for m in self.models:
            own = {name: variables[name] for name in m.variable_names}
            variables = {**variables, **m.at_wall(boundary, x_step, x, own, turned)}
        return variables

    def resolve(self, integrator: AbstractIntegrator, dt: TimeLike, dim):
        return Combined(self.mover.resolve(integrator, dt, dim), *(r.resolve(integrator, dt, dim) for r in self.riders))

    def step_batch(
        self,
        integrator: AbstractIntegrator,
        field: AbstractField,
        x: Positions,
        variables: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args,
        keys: Array | None,
        hint: Hints,
    ):
        """All models by the integrator; or, when the moving model steps itself (Inertial's
        exponential update), the riders by the midpoint rule along its step's chord."""
        if not self.mover.steps_itself:
            return integrator.step_particles(field, self, x, variables, t, dt, args, keys, hint)
        if any(isinstance(rider, AbstractDrift) for rider in self.riders):
            raise ValueError(
                f"Combined: {type(self.mover).__name__} steps itself (its exponential update), so drifts cannot "
                'ride along; use scheme="rk", or a tracer-like mover'
            )
        result, moved = self.mover.step_batch(
            integrator, field, x, {n: variables[n] for n in self.mover.variable_names}, t, dt, args, keys, hint
        )
        middle = (x + result.x) / 2
        fluid, _ = fluid_batch(self, field, t + dt / 2, middle, args, hint if result.hint is None else result.hint)
        along = dataclasses.replace(fluid, particle_velocity=(result.x - x) / dt)
        for rider in self.riders:
            state = {"x": middle, **{n: variables[n] for n in rider.variable_names}}
            rates = jax.vmap(rider.rhs, in_axes=(None, 0, 0, None))(t + dt / 2, state, along, args)
            moved.update({n: variables[n] + dt * rates[n] for n in rider.variable_names})
        return result, moved


class Aging(AbstractParticles):
    """The particle's `age`: time since its release (seconds; negative when tracking backward)."""

    variable_names = ("age",)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"age": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return {"x": fluid.velocity, "age": jnp.ones((), state["x"].dtype)}


class Distance(AbstractParticles):
    """The `distance` the particle has travelled along its path (in the field's length unit)."""

    variable_names = ("distance",)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"distance": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        velocity = fluid.velocity if fluid.particle_velocity is None else fluid.particle_velocity
        return {"x": fluid.velocity, "distance": jnp.sqrt(jnp.sum(velocity * velocity))}


class TimeInBox(AbstractParticles):
    """`time_in_box`: the time the particle has spent inside the box `(lo, hi)` (residence time)."""

    lo: jnp.ndarray
    hi: jnp.ndarray
    variable_names = ("time_in_box",)

    def __init__(self, lo, hi):
        self.lo, self.hi = jnp.asarray(lo, float), jnp.asarray(hi, float)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"time_in_box": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        x = state["x"]
        inside = jnp.all((x >= self.lo.astype(x.dtype)) & (x <= self.hi.astype(x.dtype)))
        return {"x": fluid.velocity, "time_in_box": inside.astype(x.dtype)}


class Extremes(AbstractParticles):
    """The maximum and the mean over the steps of one sampled field array (`name`, a scalar)
    along each particle's path: `{name}_max`, `{name}_mean` (values at the end of each step)."""

    name: str = eqx.field(static=True)
    needs_samples = True
    updates = True

    @property
    def sample_names(self) -> tuple[str, ...]:
        return (self.name,)

    @property
    def variable_names(self) -> tuple[str, ...]:
        return (f"{self.name}_max", f"{self.name}_mean", f"{self.name}_count")

    def _sample(self, samples):
        if self.name not in samples:
            raise ValueError(
                f"Extremes: the field samples no array {self.name!r}; it samples {sorted(samples)} (read "
                f"it with sample=[{self.name!r}])"
            )
        value = samples[self.name]
        if value.ndim:
            raise ValueError(f"Extremes: {self.name!r} has {value.shape[0]} components; give a scalar array")
        return value

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        value = self._sample(fluid.samples).astype(x.dtype)
        return {f"{self.name}_max": value, f"{self.name}_mean": value, f"{self.name}_count": jnp.ones((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        zero = jnp.zeros((), state["x"].dtype)
        return {"x": fluid.velocity, **{name: zero for name in self.variable_names}}

    def update(self, t: TimeLike, state: dict, samples: dict, args: Args):
        value = self._sample(samples).astype(state["x"].dtype)
        top, mean, count = (state[name] for name in self.variable_names)
        finite = jnp.isfinite(value)
        return {
            **state,
            f"{self.name}_max": jnp.where(finite, jnp.maximum(top, value), top),
            f"{self.name}_mean": jnp.where(finite, mean + (value - mean) / (count + 1), mean),
            f"{self.name}_count": jnp.where(finite, count + 1, count),
        }
