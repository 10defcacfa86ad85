"""Fish eggs and larvae as the fisheries models drift them (OpenDrift's `PelagicEggDrift`,
LADIM, Ichthyop): eggs rise or sink at their terminal velocity from their buoyancy in the
water around them, hatch after an age or a sum of degree-days, and the larvae migrate between
a day and a night depth; the wind's and the tide's mixing is the run's random walk
(`fk.EulerMaruyama(fk.diffusion.Vertical(...))`), left to the integrator."""

import logging

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Args, Position, TimeLike
from .._time import TimeOrigin
from .base import AbstractDated, AbstractUpdating, Fluid, Needs
from .drift import forcing_value
from .seawater import Seawater, terminal_velocity, viscosity

DAY = 86400.0


def daylight(seconds_since_2000: Array, longitude: Array, latitude: Array) -> Array:
    """Whether the sun is above the horizon at a UTC time (seconds since 2000-01-01 00:00) and
    place (degrees): its declination by day of year, its hour angle by local solar time (the
    equation of time, under 17 minutes, left out)."""
    days = seconds_since_2000 / DAY
    declination = -jnp.deg2rad(23.44) * jnp.cos(2 * jnp.pi * (jnp.mod(days, 365.2422) + 10) / 365.2422)
    hour_angle = 2 * jnp.pi * (jnp.mod(days, 1.0) + longitude / 360.0) - jnp.pi
    phi = jnp.deg2rad(latitude)
    elevation = jnp.sin(phi) * jnp.sin(declination) + jnp.cos(phi) * jnp.cos(declination) * jnp.cos(hour_angle)
    return elevation > 0


class Larva(eqx.Module):
    """What a hatched larva does: it swims at up to `swim_speed` (m/s) toward `day_depth` while
    the sun is up and `night_depth` while it is down (metres, positive down; diel vertical
    migration), slowing within `approach` metres of it. `site` (longitude, latitude) places the
    sun on fields in metres; lon/lat fields use each particle's own place."""

    day_depth: Float[Array, ""] | float = 20.0
    night_depth: Float[Array, ""] | float = 5.0
    swim_speed: Float[Array, ""] | float = 1e-3
    approach: Float[Array, ""] | float = 1.0
    site: tuple[float, float] | None = None

    def sinking(self, seconds_since_2000: Array, x: Position, spherical: bool) -> Array:
        """The larva's swimming velocity down (m/s) at `x`."""
        if spherical:
            longitude, latitude = x[0], x[1]
        elif self.site is not None:
            longitude, latitude = (jnp.asarray(v, x.dtype) for v in self.site)
        else:
            raise ValueError(
                "Larva: on a field in metres the sun needs a place: give Larva(site=(longitude, latitude))"
            )
        target = jnp.where(daylight(seconds_since_2000, longitude, latitude), self.day_depth, self.night_depth)
        return self.swim_speed * jnp.tanh((target - x[2]) / self.approach)


class PelagicEgg(AbstractUpdating, AbstractDated):
    """A pelagic fish egg (and, with `larva`, the larva it hatches into).

    - Buoyancy: an egg of `diameter` (m) is neutrally buoyant at `neutral_buoyancy_salinity`
      (practical salinity): it has the density of seawater of that salinity at the water's own
      temperature and pressure (TEOS-10 by `gsw`), and rises or sinks at its terminal velocity
      (`seawater.terminal_velocity`: Stokes, or Sundby's transitional regime). Defaults: North-East
      Arctic cod, as OpenDrift's.
    - `temperature`, `salinity`: the field's sampled arrays by name (potential temperature °C and
      practical salinity: ROMS `temp`/`salt`, NEMO `votemper`/`vosaline`, CMEMS `thetao`/`so`), or
      numbers, constant forcings (logged before the run).
    - Hatching after `hatch_days` of age or `hatch_degree_days` (the sum of the temperature over
      the days, °C day), whichever comes first (None: never). A hatched egg is a larva (`stage`
      1), which swims as `larva` says (None: it keeps the egg's buoyancy, as a yolk-sac larva).
    - `mortality`: a rate per day; `survival` is the expected fraction alive, `exp(-m t)`.

    Variables: `age` (s), `degree_days`, `stage` (0 egg, 1 larva), `survival`.
    """

    diameter: Float[Array, ""] | float = 0.0014
    neutral_buoyancy_salinity: Float[Array, ""] | float = 31.25
    temperature: str | Float[Array, ""] | float = eqx.field(default="temp")
    salinity: str | Float[Array, ""] | float = eqx.field(default="salt")
    hatch_days: Float[Array, ""] | float | None = None
    hatch_degree_days: Float[Array, ""] | float | None = None
    mortality: Float[Array, ""] | float = 0.0
    larva: Larva | None = None
    seawater: Seawater = eqx.field(default_factory=Seawater)
    epoch: float | None = None
    """Seconds from 2000-01-01 00:00 UTC to the field's time 0 (set by `dated` before a run)."""
    variable_names = ("age", "degree_days", "stage", "survival")

    @property
    def needs(self) -> Needs:
        names = tuple(v for v in (self.temperature, self.salinity) if isinstance(v, str))
        return Needs(sample_names=names)

    def dated(self, origin: TimeOrigin | None) -> "PelagicEgg":
        for name, value, unit in (("temperature", self.temperature, "°C"), ("salinity", self.salinity, "")):
            if not isinstance(value, str):
                logging.getLogger("flowkit").info("PelagicEgg: %s a constant %g%s (a number given)", name, value, unit)
        if self.larva is None:
            return self
        if origin is None:
            raise ValueError(
                "PelagicEgg: its larvae migrate by the sun, which needs the field's dates; this field has none "
                "(give its times as dates, or leave larva=None)"
            )
        return eqx.tree_at(lambda m: m.epoch, self, -origin.seconds("2000-01-01T00:00:00"), is_leaf=lambda v: v is None)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        zero = jnp.zeros((), x.dtype)
        return {"age": zero, "degree_days": zero, "stage": zero, "survival": jnp.ones((), x.dtype)}

    def rising(self, t: TimeLike, state: dict, fluid: Fluid) -> Array:
        """ONE particle's velocity up (m/s) of its own: the egg's terminal velocity, the larva's swimming."""
        x = state["x"]
        temperature = forcing_value(fluid, self.temperature, "PelagicEgg")
        salinity = forcing_value(fluid, self.salinity, "PelagicEgg")
        depth = jnp.maximum(x[2], 0.0)
        water = self.seawater.density(salinity, temperature, depth)
        egg = self.seawater.density(self.neutral_buoyancy_salinity, temperature, depth)
        rising = terminal_velocity(self.diameter, water, egg, viscosity(temperature, salinity))
        if self.larva is not None:
            epoch = jnp.asarray(0.0 if self.epoch is None else self.epoch, x.dtype)
            swimming = -self.larva.sinking(epoch + t, x, fluid.latitude is not None)
            rising = jnp.where(state["stage"] >= 1, swimming, rising)
        return rising.astype(x.dtype)

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        x = state["x"]
        velocity = fluid.velocity
        if x.shape[0] == 3:
            velocity = velocity - jnp.array([0.0, 0.0, 1.0], x.dtype) * self.rising(t, state, fluid)
        temperature = forcing_value(fluid, self.temperature, "PelagicEgg").astype(x.dtype)
        return {
            "x": velocity,
            "age": jnp.ones((), x.dtype),
            "degree_days": temperature / DAY,
            "survival": -jnp.asarray(self.mortality, x.dtype) / DAY * state["survival"],
        }

    def update(self, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args):
        hatched = jnp.asarray(False)
        if self.hatch_days is not None:
            hatched = hatched | (state["age"] >= self.hatch_days * DAY)
        if self.hatch_degree_days is not None:
            hatched = hatched | (state["degree_days"] >= self.hatch_degree_days)
        return {**state, "stage": jnp.where(hatched, jnp.ones_like(state["stage"]), state["stage"])}


def neutral_salinity(density: float, temperature: float, depth: float = 0.0) -> float:
    """The practical salinity at which seawater of `temperature` (°C) at `depth` (m) has `density`
    (kg/m³): an egg of that density's `neutral_buoyancy_salinity` (host side, by bisection)."""
    seawater = Seawater()
    lo, hi = 0.0, 42.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(seawater.density(mid, temperature, depth)) < density else (lo, mid)
    return float(np.round((lo + hi) / 2, 6))
