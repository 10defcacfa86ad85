"""Particles that move with the fluid plus a velocity of their own, and models combined."""

import dataclasses
from collections.abc import Callable
from functools import reduce

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Args, Position, TimeLike
from .base import AbstractParticles, AbstractUpdating, AbstractWithVariables, Fluid, Needs, own_state, variable_names
from .drift import AbstractDrift, AbstractRuled, DriftRule


class Buoyant(AbstractRuled):
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
    def needs(self) -> Needs:
        return Needs(samples=callable(self.w))

    @property
    def rule(self) -> DriftRule | None:
        return None if callable(self.w) else DriftRule("rise", (), (self.w, float(self.axis)))

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        w = self.w(fluid) if callable(self.w) else self.w
        up = jnp.arange(fluid.velocity.shape[0]) == self.axis % fluid.velocity.shape[0]  # a one-hot, not a scatter
        return {"x": fluid.velocity + jnp.where(up, w, 0).astype(fluid.velocity.dtype)}


class Combined(AbstractWithVariables):
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
        names = [name for m in models for name in variable_names(m)]
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
        return tuple(name for m in self.models for name in variable_names(m))

    @property
    def needs(self) -> Needs:
        return reduce(Needs.merged, (m.needs for m in self.models))

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {
            name: value
            for m in self.models
            if isinstance(m, AbstractWithVariables)
            for name, value in m.initial(t, x, fluid, args).items()
        }

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        rates = dict(self.mover.rhs(t, own_state(self.mover, state), fluid, args))
        for rider in self.riders:
            if isinstance(rider, AbstractDrift):
                rates["x"] = rates["x"] + fluid.position_rate(rider.drift(t, own_state(rider, state), fluid, args))
        along = dataclasses.replace(fluid, particle_velocity=rates["x"])
        for rider in self.riders:
            rates.update({k: v for k, v in rider.rhs(t, own_state(rider, state), along, args).items() if k != "x"})
        return rates


class Aging(AbstractWithVariables):
    """The particle's `age`: time since its release (seconds; negative when tracking backward)."""

    variable_names = ("age",)
    needs = Needs()

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"age": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return {"x": fluid.velocity, "age": jnp.ones((), state["x"].dtype)}


class Distance(AbstractWithVariables):
    """The `distance` the particle has travelled along its path (in the field's length unit)."""

    variable_names = ("distance",)
    needs = Needs()

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"distance": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        velocity = fluid.velocity if fluid.particle_velocity is None else fluid.particle_velocity
        return {"x": fluid.velocity, "distance": jnp.sqrt(jnp.sum(velocity * velocity))}


class TimeInBox(AbstractWithVariables):
    """`time_in_box`: the time the particle has spent inside the box `(lo, hi)` (residence time)."""

    lo: jnp.ndarray
    hi: jnp.ndarray
    variable_names = ("time_in_box",)
    needs = Needs()

    def __init__(self, lo, hi):
        self.lo, self.hi = jnp.asarray(lo, float), jnp.asarray(hi, float)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"time_in_box": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        x = state["x"]
        inside = jnp.all((x >= self.lo.astype(x.dtype)) & (x <= self.hi.astype(x.dtype)))
        return {"x": fluid.velocity, "time_in_box": inside.astype(x.dtype)}


class Extremes(AbstractUpdating):
    """The maximum and the mean over the steps of one sampled field array (`name`, a scalar)
    along each particle's path: `{name}_max`, `{name}_mean` (values at the end of each step)."""

    name: str = eqx.field(static=True)

    @property
    def needs(self) -> Needs:
        return Needs(sample_names=(self.name,))

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
        return {"x": fluid.velocity}  # the records change in `update` only

    def update(self, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args):
        value = self._sample(fluid.samples).astype(state["x"].dtype)
        top, mean, count = (state[name] for name in self.variable_names)
        finite = jnp.isfinite(value)
        return {
            **state,
            f"{self.name}_max": jnp.where(finite, jnp.maximum(top, value), top),
            f"{self.name}_mean": jnp.where(finite, mean + (value - mean) / (count + 1), mean),
            f"{self.name}_count": jnp.where(finite, count + 1, count),
        }
