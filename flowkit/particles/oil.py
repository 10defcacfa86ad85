"""Oil as oil-spill models carry it (OpenDrift's OpenOil, NOAA's PyGNOME): each element holds a
mass of one ADIOS oil by pseudo-components, weathers after every step (`flowkit.oil.weathering`:
evaporation, emulsification, natural dispersion, biodegradation), is entrained under the slick
by breaking waves as droplets that rise again, and at the surface drifts with the wind and the
waves. Where it strands is the boundary's and the field's land's to say (`Status.BEACHED`); the
mass budget is the statistic `flowkit.statistics.OilBudget`."""

import logging

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._custom_types import Args, Position, TimeLike
from .._time import TimeOrigin
from ..oil import weathering
from ..oil.properties import OilType
from .base import AbstractDated, AbstractMovedByEvents, AbstractUpdating, Fluid, Needs
from .drift import forcing, forcing_value
from .seawater import Seawater, viscosity

KELVIN = 273.15
SPECTRA = ("johansen2015", "li2017")
CONVENTIONS = ("pygnome", "openoil")


class Oil(AbstractUpdating, AbstractMovedByEvents, AbstractDated):
    """Elements of `oil` (an `flowkit.oil.OilType`, or its ADIOS name: `Oil("AASGARD A 2003")`),
    each of `mass` kg unless the run gives `components` per element (`flowkit.oil.spill`).

    - At the surface (`submerged` 0) an element moves with the current, `wind_drift_factor` ×
      the wind (OpenOil's 3 % by default) and the Stokes drift (`stokes`, a sampled forcing's name, or None); below it,
      with the current, rising at its droplet's terminal velocity. Depth is the third
      coordinate, positive down (ocean fields); on 2-D fields oil stays at the surface and
      `entrainment` must be off.
    - Forcing: `wind` the sampled wind's name; `temperature`, `salinity` the sampled water's
      (ROMS `temp`/`salt`, CMEMS `thetao`/`so`; °C) or numbers; `wave_height`, `wave_period`
      a wave model's (significant height, mean period) or None, from the wind. Each constant or
      wind-made one is logged before the run.
    - Processes, each switched by its flag: `evaporation`, `emulsification`, `dispersion`
      of the slick as fine droplets, as PyGNOME; `convention="openoil"` takes OpenOil's reading:
      Roy's factor of `ν/ρ`, not of the kinematic `ν`, and submerged oil dispersed too),
      `entrainment` (droplets of the `spectrum`,
      Johansen et al. 2015 or Li et al. 2017, mixed down by breaking waves to 1.5 Hs), and
      `biodegradation` (Adcroft et al. 2010, or `half_life` seconds).
    - A submerged element resurfaces within one step's rise of the surface. The run's random
      walk mixes submerged oil (`fk.EulerMaruyama(fk.diffusion.Vertical(...))`); the slick it
      leaves at the surface. Elements released below the surface are droplets of diameters
      drawn uniformly within `subsea_diameters` (their geometric mean without entrainment).

    Variables: `components` (kg per pseudo-component), `evaporated`, `dispersed`, `biodegraded`
    (kg), `water_fraction`, `interfacial_area` (1/m), `density` (kg/m³) and `viscosity` (m²/s)
    of the emulsion, `diameter` (m), `submerged`, `age` (s), `rise` (m/s), `entrainment` (1/s),
    `droplet_median` (m), `wave_height` (m).
    """

    oil: OilType = eqx.field(converter=lambda v: OilType.named(v) if isinstance(v, str) else v)
    mass: Float[Array, ""] | float = 1.0
    film_thickness: Float[Array, ""] | float = 1e-3
    wind_drift_factor: Float[Array, ""] | float = 0.03
    wind: str = eqx.field(static=True, default="wind")
    stokes: str | None = eqx.field(static=True, default=None)
    temperature: str | Float[Array, ""] | float = eqx.field(default=10.0)
    salinity: str | Float[Array, ""] | float = eqx.field(default=34.0)
    wave_height: str | None = eqx.field(static=True, default=None)
    wave_period: str | None = eqx.field(static=True, default=None)
    evaporation: bool = eqx.field(static=True, default=True)
    emulsification: bool = eqx.field(static=True, default=True)
    dispersion: bool = eqx.field(static=True, default=True)
    entrainment: bool = eqx.field(static=True, default=True)
    biodegradation: bool = eqx.field(static=True, default=False)
    half_life: float | None = eqx.field(static=True, default=None)
    spectrum: str = eqx.field(static=True, default="johansen2015")
    convention: str = eqx.field(static=True, default="pygnome")
    subsea_diameters: tuple[float, float] = eqx.field(static=True, default=(5e-4, 5e-3))
    seawater: Seawater = eqx.field(default_factory=Seawater)

    def __check_init__(self):
        if self.spectrum not in SPECTRA:
            raise ValueError(f"Oil: spectrum={self.spectrum!r}: expected one of {SPECTRA}")
        if self.convention not in CONVENTIONS:
            raise ValueError(f"Oil: convention={self.convention!r}: expected one of {CONVENTIONS}")

    variable_names = (
        "components",
        "evaporated",
        "dispersed",
        "biodegraded",
        "water_fraction",
        "interfacial_area",
        "density",
        "viscosity",
        "diameter",
        "submerged",
        "age",
        "rise",
        "entrainment",
        "droplet_median",
        "wave_height",
    )

    @property
    def needs(self) -> Needs:
        names = [self.wind] + [v for v in (self.temperature, self.salinity) if isinstance(v, str)]
        names += [v for v in (self.stokes, self.wave_height, self.wave_period) if v is not None]
        return Needs(sample_names=tuple(names))

    def dated(self, origin: TimeOrigin | None) -> "Oil":
        log = logging.getLogger("flowkit")
        flags = {
            "evaporation": self.evaporation,
            "emulsification": self.emulsification,
            "dispersion": self.dispersion,
            "entrainment": self.entrainment,
            "biodegradation": self.biodegradation,
        }
        on, off = ([name for name, value in flags.items() if value is state] for state in (True, False))
        log.info(
            "Oil: %s (%s); processes on: %s; off: %s; droplets %s, %s convention",
            self.oil.name, self.oil.oil_id, ", ".join(on) or "none", ", ".join(off) or "none", self.spectrum,
            self.convention,
        )  # fmt: skip
        for name, value, unit in (("temperature", self.temperature, "°C"), ("salinity", self.salinity, "")):
            if not isinstance(value, str):
                log.info("Oil: water %s a constant %g%s (a number given)", name, value, unit)
        for name, value in (("wave height", self.wave_height), ("wave period", self.wave_period)):
            if value is None:
                log.info("Oil: %s from the wind (a fully developed sea; no wave forcing given)", name)
        return self

    @property
    def random(self) -> bool:  # type: ignore[override]
        """Waves entrain elements at random (without entrainment a run needs no key)."""
        return self.entrainment

    def drawn(self, key: PRNGKeyArray) -> dict:
        lo, hi = self.subsea_diameters
        return {"diameter": jax.random.uniform(key, (), minval=lo, maxval=hi)}

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args) -> dict:
        dtype = x.dtype
        water = self._water(x, fluid)
        oil_density = self.oil.density(water["temperature"]).astype(dtype)
        zero = jnp.zeros((), dtype)
        submerged = (x[2] > 0).astype(dtype) if x.shape[0] == 3 else zero
        return {
            "components": (jnp.asarray(self.oil.mass_fraction) * self.mass).astype(dtype),
            "evaporated": zero,
            "dispersed": zero,
            "biodegraded": zero,
            "water_fraction": zero,
            "interfacial_area": zero,
            "density": oil_density,
            "viscosity": self.oil.viscosity(water["temperature"]).astype(dtype),
            "diameter": submerged * jnp.sqrt(self.subsea_diameters[0] * self.subsea_diameters[1]),
            "submerged": submerged,
            "age": zero,
            "rise": zero,
            "entrainment": zero,
            "droplet_median": zero,
            "wave_height": water["wave_height"].astype(dtype),
        }

    def _water(self, x: Position, fluid: Fluid) -> dict:
        """The water and weather at ONE element: temperature (K), density, kinematic viscosity,
        wind speed, the waves' height and breaking fraction."""
        wind = forcing(fluid, self.wind, "Oil")[:2]
        speed = jnp.sqrt(jnp.maximum(jnp.sum(wind**2), 1e-30))
        celsius = forcing_value(fluid, self.temperature, "Oil")
        salinity = forcing_value(fluid, self.salinity, "Oil")
        depth = jnp.maximum(x[2], 0.0) if x.shape[0] == 3 else jnp.zeros((), x.dtype)
        density = self.seawater.density(salinity, celsius, depth)
        height = weathering.wave_height_from_wind(speed)
        if self.wave_height is not None:
            height = forcing_value(fluid, self.wave_height, "Oil")
        period = weathering.wave_period_from_wind(speed)
        if self.wave_period is not None:
            period = jnp.maximum(forcing_value(fluid, self.wave_period, "Oil"), 1e-3)
        return {
            "temperature": celsius + KELVIN,
            "density": density,
            "viscosity": viscosity(celsius, salinity) / density,
            "wind_speed": speed,
            "wave_height": height,
            "breaking": weathering.breaking_fraction(speed, period),
        }

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        x = state["x"]
        if x.shape[0] != 3 and self.entrainment:
            raise ValueError("Oil: on a 2-D field oil stays at the surface; give Oil(..., entrainment=False)")
        surface = state["submerged"] < 0.5
        drift = self.wind_drift_factor * forcing(fluid, self.wind, "Oil")[:2]
        if self.stokes is not None:
            drift = drift + forcing(fluid, self.stokes, "Oil")[:2]
        velocity = fluid.velocity + jnp.where(surface, fluid.position_rate(drift), 0.0)
        if x.shape[0] == 3:  # depth positive down: the slick stays, a droplet rises
            velocity = velocity.at[2].set(jnp.where(surface, 0.0, velocity[2] - state["rise"]))
        return {"x": velocity, "age": jnp.ones((), x.dtype)}

    def update(self, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        x = state["x"]
        dt = jnp.abs(jnp.asarray(dt, x.dtype))
        water = self._water(x, fluid)
        surface = state["submerged"] < 0.5
        components, state = state["components"], dict(state)
        oil_density = self.oil.density(water["temperature"])
        oil_viscosity = self.oil.viscosity(water["temperature"])

        def lost(components):  # the fraction evaporated
            return state["evaporated"] / jnp.maximum(jnp.sum(components) + state["evaporated"], 1e-30)

        def emulsion(components):  # the emulsion's density and kinematic viscosity
            water_fraction = state["water_fraction"]
            return (
                weathering.emulsion_density(oil_density, water["density"], water_fraction),
                weathering.emulsion_viscosity(oil_viscosity, lost(components), water_fraction),
            )

        density, kinematic = emulsion(components)
        if self.evaporation:
            area = jnp.sum(components) / density / self.film_thickness
            rates = weathering.evaporation_rates(self.oil, components, area, water["wind_speed"], water["temperature"])
            after = jnp.where(surface, components * jnp.exp(rates * dt), components)
            state["evaporated"] = state["evaporated"] + jnp.sum(components - after)
            components = after
        if self.emulsification:
            top = self.oil.max_water_fraction
            grown = weathering.interfacial_area_after(
                self.oil, state["interfacial_area"], water["wind_speed"], state["age"], dt, top
            )
            takes = surface & weathering.emulsifying(self.oil, state["age"], lost(components)) & (top > 0)
            state["interfacial_area"] = jnp.where(takes, grown, state["interfacial_area"])
            state["water_fraction"] = jnp.where(
                takes, weathering.water_fraction(state["interfacial_area"], top), state["water_fraction"]
            )
        if self.dispersion:
            openoil = self.convention == "openoil"
            damping = kinematic / density if openoil else kinematic
            fraction = weathering.dispersed_fraction(
                damping, water["wave_height"], water["breaking"], water["density"], dt
            )
            fraction = fraction if openoil else jnp.where(surface, fraction, 0.0)
            state["dispersed"] = state["dispersed"] + fraction * jnp.sum(components)
            components = components * (1 - fraction)
        if self.biodegradation:
            fraction = weathering.biodegraded_fraction(water["temperature"], dt, self.half_life)
            state["biodegraded"] = state["biodegraded"] + fraction * jnp.sum(components)
            components = components * (1 - fraction)
        density, kinematic = emulsion(components)
        state.update(components=components, density=density, viscosity=kinematic, wave_height=water["wave_height"])
        state.update(self._waves_on(state, water, density, kinematic))
        return {k: v.astype(state["x"].dtype) for k, v in state.items()}

    def _waves_on(self, state: dict, water: dict, density, kinematic) -> dict:
        """What the waves do to ONE element next: its droplet's rise, the rate at which they
        entrain it, and the median of the droplets they would make of it."""
        rise = weathering.rise_velocity(state["diameter"], density, water["density"], water["viscosity"])
        rate = weathering.entrainment_rate(
            self.oil, kinematic, density, water["density"], water["wave_height"], water["breaking"]
        )
        if self.spectrum == "johansen2015":
            median = weathering.median_droplet_johansen(
                self.oil, kinematic, density, self.film_thickness, water["wave_height"]
            )
        else:
            median = weathering.median_droplet_li(self.oil, kinematic, density, water["density"], water["wave_height"])
        calm = water["wave_height"] <= 0
        return {
            "rise": rise,
            "entrainment": jnp.where(calm, 0.0, rate),
            "droplet_median": jnp.where(calm, weathering.SPECTRUM_BOUNDS[0], median),
        }

    def jumped(self, t: TimeLike, dt: TimeLike, state: dict, key: PRNGKeyArray) -> dict:
        x = state["x"]
        if x.shape[0] != 3:
            return state
        dt = jnp.abs(jnp.asarray(dt, x.dtype))
        chance, depth, quantile = jax.random.uniform(key, (3,), x.dtype)
        surface = state["submerged"] < 0.5
        entrained = surface & (chance < -jnp.expm1(-state["entrainment"] * dt)) if self.entrainment else False
        resurfaced = ~surface & (x[2] <= jnp.maximum(state["rise"], 0.0) * dt)
        z = jnp.where(entrained, depth * 1.5 * state["wave_height"], jnp.where(surface | resurfaced, 0.0, x[2]))
        diameter = weathering.droplet_diameter(state["droplet_median"], quantile).astype(x.dtype)
        one, zero = jnp.ones((), x.dtype), jnp.zeros((), x.dtype)
        return {
            **state,
            "x": x.at[2].set(z),
            "submerged": jnp.where(entrained, one, jnp.where(resurfaced, zero, state["submerged"])),
            "diameter": jnp.where(entrained, diameter, state["diameter"]),
        }
