"""Drift beside the current: windage and Stokes drift, as OpenDrift's `OceanDrift` has them, from
forcing fields sampled at the particle (leeway, the search-and-rescue drift, is in `leeway.py`).

Each is the current plus a velocity of its own (`AbstractDrift.drift`), in m/s from the forcing
(`fluid.samples[name]`, see `flowkit.fields.forcing`), turned into the position's units (degrees
per second on a lon/lat field). Drifts add up: in `Combined(Windage(0.03), StokesDrift())` the
first moves the particle with the current and its windage, and the Stokes drift is added to it.

Both (and `Leeway`) are also `AbstractRuled`: each declares its `DriftRule`, the form in which the CPU
kernels compute it (`flowkit/native/drift_rules.h`, the same rule once in C++), so that a run of
these particles takes the kernel's pace; the JAX forms below are the reference.
"""

import abc
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._custom_types import Args, TimeLike
from .base import AbstractParticles, Fluid, Needs

GRAVITY = 9.81
"""m/s², for the deep-water dispersion relation of `StokesDrift`'s decay."""


class AbstractDrift(AbstractParticles):
    """A particle moving with the current plus `drift(t, state, fluid, args)`, a velocity in m/s
    along the first axes (east and north on a lon/lat field). In a `Combined`, the drifts of the
    models riding along are added to the mover's velocity."""

    sample: eqx.AbstractVar[str]

    @abc.abstractmethod
    def drift(self, t: TimeLike, state: dict, fluid: Fluid, args: Args) -> Float[Array, " k"]:
        """The velocity (m/s) this model adds to the current, for ONE particle."""

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        return {"x": fluid.velocity + fluid.position_rate(self.drift(t, state, fluid, args))}


class DriftRule(NamedTuple):
    """A model's velocity beside the current as the CPU kernels compute it (`native/drift_rules.h`)."""

    rule: str
    """The rule's name there: `windage`, `stokes`, `leeway`, `rise`."""
    samples: tuple[str, ...]
    """The forcings it reads, by sample name: the drift's, and a second one (a sampled period)."""
    numbers: tuple[Float[Array, ""] | float, ...]
    """Its numbers, in the header's order for the rule."""
    orientation: str | None = None
    """The variable holding the side it drifts to (leeway's `orientation`), or None."""
    coefficients: Callable[[dict], Float[Array, " k"]] | None = None
    """ONE particle's own coefficients from its variables (leeway of each element's own), or None."""


class AbstractRuled(AbstractParticles):
    """A model whose velocity beside the current the CPU kernels compute as one of their rules:
    `rule` says which, with what (None: this one they do not, e.g. a rise velocity given as a
    function)."""

    @property
    @abc.abstractmethod
    def rule(self) -> DriftRule | None:
        """This model as a kernel's rule (the same arithmetic as its `rhs`), or None."""


def forcing(fluid: Fluid, name: str, model: str) -> Array:
    """The sampled forcing `name` at the particle, or an error naming what the field samples."""
    if name not in fluid.samples:
        raise KeyError(
            f"{model}: the field samples no {name!r}; it samples {sorted(fluid.samples)} (give the forcing as "
            f'fk.io.read(currents, samples={{"{name}": fk.io.read(...)}}), or name yours with {model}(..., sample=)'
        )
    return fluid.samples[name]


def forcing_value(fluid: Fluid, value: str | Float[ArrayLike, ""], model: str) -> Array:
    """A forcing that is a sampled array's name (a scalar there) or a number."""
    if not isinstance(value, str):
        return jnp.asarray(value)
    return jnp.reshape(forcing(fluid, value, model), (-1,))[0]


def windage(coefficient, depth, sample: str, state: dict, fluid: Fluid, model: str) -> Array:
    """`coefficient` × the wind sampled as `sample` for ONE particle, 0 below `depth` metres
    (3-D fields); `model` names who asked in the error for a missing wind."""
    wind = forcing(fluid, sample, model)[:2]
    x = state["x"]
    below = (x[2] > depth) if x.shape[0] == 3 else jnp.asarray(False)
    return jnp.where(below, 0.0, coefficient * wind)


class Windage(AbstractDrift, AbstractRuled):
    """Direct wind drag on a floating object: the current plus `coefficient` × the wind
    (OpenDrift's `wind_drift_factor`, e.g. 0.03 for 3 %), from the forcing named `sample`
    (default `"wind"`: eastward and northward wind in m/s, 10 m above the sea).

    Below `depth` metres (3-D fields, depth positive down) the wind drag is zero, as
    OpenDrift's `drift:wind_drift_depth` (0.1 m by default)."""

    coefficient: Float[Array, ""] | float
    depth: Float[Array, ""] | float = 0.1
    sample: str = eqx.field(static=True, default="wind")

    @property
    def needs(self) -> Needs:
        return Needs(sample_names=(self.sample,))

    @property
    def rule(self) -> DriftRule:
        return DriftRule("windage", (self.sample,), (self.coefficient, self.depth))

    def drift(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return windage(self.coefficient, self.depth, self.sample, state, fluid, "Windage")


class StokesDrift(AbstractDrift, AbstractRuled):
    """Stokes drift of surface waves, from a wave model's surface Stokes drift
    (`sea_surface_wave_stokes_drift_x/y_velocity`, m/s) in the forcing named `sample` (default
    `"stokes"`).

    At depth `z` (3-D fields, metres positive down) it decays as a deep-water wave of the mean
    period `T`: `u_s(z) = u_s(0) exp(-2 k z)`, `k = (2π/T)² / g`. `period` is a number of
    seconds or the name of a sampled forcing holding it (a wave file's mean period, e.g.
    `"wave_period"`); on 2-D fields the surface value applies.
    """

    period: Float[Array, ""] | float | str = 8.0
    sample: str = eqx.field(static=True, default="stokes")

    @property
    def needs(self) -> Needs:
        return Needs(sample_names=(self.sample,) + ((self.period,) if isinstance(self.period, str) else ()))

    @property
    def rule(self) -> DriftRule:
        if isinstance(self.period, str):
            return DriftRule("stokes", (self.sample, self.period), (0.0,))
        return DriftRule("stokes", (self.sample,), (self.period,))

    def drift(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        surface = forcing(fluid, self.sample, "StokesDrift")[:2]
        x = state["x"]
        if x.shape[0] < 3:
            return surface
        period = forcing(fluid, self.period, "StokesDrift") if isinstance(self.period, str) else self.period
        period = jnp.reshape(period, (-1,))[0]
        k = (2 * jnp.pi / jnp.maximum(period, 1e-3)) ** 2 / GRAVITY
        return surface * jnp.exp(-2 * k * jnp.maximum(x[2], 0.0))


class Plastic(AbstractDrift):
    """Buoyant plastics as OpenDrift's `PlastDrift` moves them: the current, rising at
    `rise_velocity` (m/s, positive up; depth is the third coordinate, positive down, as on
    ocean fields), and with `wind_drift_factor` × the wind (the forcing named `sample`) while
    within `wind_drift_depth` metres of the surface (always on a 2-D field): its `drift` is the
    windage and, on 3-D fields, the rise (down the depth axis).

    The wind mixes them down through the run's random walk, which the model leaves to the
    integrator: `fk.EulerMaruyama(fk.diffusion.Vertical(fk.diffusion.WindDriven("wind")))`
    (OpenDrift's `windspeed_Sundby1983`, PlastDrift's default), whose steady state against the
    rise is Kukulka et al. (2012)'s exponential profile `C(z) ∝ exp(-z w / K)`, the profile
    OpenDrift's `analytical` mixing draws depths from at each step."""

    rise_velocity: Float[Array, ""] | float = 0.01
    wind_drift_factor: Float[Array, ""] | float = 0.02
    wind_drift_depth: Float[Array, ""] | float = 0.1
    sample: str = eqx.field(static=True, default="wind")

    @property
    def needs(self) -> Needs:
        return Needs(sample_names=(self.sample,))

    def drift(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        wind = windage(self.wind_drift_factor, self.wind_drift_depth, self.sample, state, fluid, "Plastic")
        if state["x"].shape[0] < 3:
            return wind
        return jnp.concatenate([wind, -jnp.reshape(jnp.asarray(self.rise_velocity, wind.dtype), (1,))])
