"""An oil's properties as the weathering needs them, from its ADIOS record by NOAA's `adios_db`:
its pseudo-components for evaporation, its density and viscosity with temperature, and what
governs its emulsification."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .records import display_name, record

Numbers = np.ndarray | Array
"""Host arrays as an oil is read, traced ones where a gradient reaches them."""

ATMOSPHERE = 101325.0
"""Pa."""
REFERENCE = 288.15
"""15 °C, K."""


class OilType(eqx.Module):
    """One oil, as NOAA's ADIOS describes it (`OilType.named("AASGARD A 2003")`). Its numbers
    are leaves, so a gradient reaches them; temperatures are in kelvin.

    - `boiling_point`, `molecular_weight` (kg/mol), `mass_fraction`: its pseudo-components
      (ADIOS's distillation cuts, each split into saturates and aromatics, and the resins and
      asphaltenes that do not evaporate).
    - Density: ADIOS's measured densities at their temperatures, interpolated, and beyond them
      the linear slope `density_slope` (kg/m³/K) (`adios_db`'s `Density`).
    - Kinematic viscosity: `A exp(viscosity_k / T)` (m²/s), fitted to the measurements
      (`adios_db`'s `KinematicViscosity`), kept as its value at 15 °C, `viscosity_15`
      (A itself is below float32's range for heavy oils).
    - `interfacial_tension` with seawater (N/m, from the API gravity), `pour_point`,
      `max_water_fraction` of its emulsion, and when it emulsifies: once `bullwinkle_fraction`
      of it has evaporated, or after `bullwinkle_time` seconds (negative: never by age).
    """

    name: str = eqx.field(static=True)
    oil_id: str = eqx.field(static=True)
    boiling_point: Float[Numbers, " k"]
    molecular_weight: Float[Numbers, " k"]
    mass_fraction: Float[Numbers, " k"]
    density_temperatures: Float[Numbers, " m"]
    densities: Float[Numbers, " m"]
    density_slope: Float[Numbers, ""]
    viscosity_15: Float[Numbers, ""]
    viscosity_k: Float[Numbers, ""]
    interfacial_tension: Float[Numbers, ""]
    pour_point: Float[Numbers, ""]
    max_water_fraction: Float[Numbers, ""]
    bullwinkle_fraction: Float[Numbers, ""]
    bullwinkle_time: Float[Numbers, ""]

    @classmethod
    def named(cls, name: str) -> "OilType":
        """The oil called `name` (or with the ADIOS id `name`) among the shipped records."""
        return cls.from_record(record(name))

    @classmethod
    def from_record(cls, data: dict) -> "OilType":
        """The oil of one ADIOS record (a dict of NOAA's JSON)."""
        from adios_db.computation import gnome_oil, physical_properties
        from adios_db.computation.estimations import oil_water_surface_tension_from_api
        from adios_db.models.oil.oil import Oil as AdiosOil

        oil = AdiosOil.from_py_json(data)
        gnome = gnome_oil.make_gnome_oil(oil)
        density = physical_properties.Density(oil)
        kinematic = physical_properties.KinematicViscosity(oil)
        cold, warm = 273.15, 303.15
        nu_cold, nu_warm = (float(kinematic.at_temp(t)) for t in (cold, warm))
        k = np.log(nu_cold / nu_warm) / (1 / cold - 1 / warm)
        bulltime = gnome["bullwinkle_time"]
        scalar = lambda v: np.asarray(v, np.float64)  # noqa: E731
        return cls(
            name=display_name(data),
            oil_id=data["oil_id"],
            boiling_point=scalar(gnome["boiling_point"]),
            molecular_weight=scalar(gnome["molecular_weight"]) / 1000.0,
            mass_fraction=scalar(gnome["mass_fraction"]),
            density_temperatures=scalar(density.temps),
            densities=scalar(density.densities),
            density_slope=scalar(density.k_rho_default),
            viscosity_15=scalar(nu_cold * np.exp(k * (1 / REFERENCE - 1 / cold))),
            viscosity_k=scalar(k),
            interfacial_tension=scalar(oil_water_surface_tension_from_api(gnome["api"])),
            pour_point=scalar(gnome["pour_point"]),
            max_water_fraction=scalar(gnome["emulsion_water_fraction_max"]),
            bullwinkle_fraction=scalar(gnome["bullwinkle_fraction"]),
            bullwinkle_time=scalar(-1.0 if bulltime is None else bulltime),
        )

    @property
    def components(self) -> int:
        return int(np.shape(self.mass_fraction)[0])

    def density(self, temperature: Float[ArrayLike, "*t"]) -> Float[Array, "*t"]:
        """The fresh oil's density (kg/m³) at `temperature` (K)."""
        temps, values = jnp.asarray(self.density_temperatures), jnp.asarray(self.densities)
        inside = jnp.interp(temperature, temps, values)
        below = values[0] + self.density_slope * (temperature - temps[0])
        above = values[-1] + self.density_slope * (temperature - temps[-1])
        return jnp.where(temperature < temps[0], below, jnp.where(temperature > temps[-1], above, inside))

    def viscosity(self, temperature: Float[ArrayLike, "*t"]) -> Float[Array, "*t"]:
        """The fresh oil's kinematic viscosity (m²/s) at `temperature` (K)."""
        spread = 1 / jnp.asarray(temperature) - 1 / REFERENCE
        return jnp.asarray(self.viscosity_15) * jnp.exp(jnp.asarray(self.viscosity_k) * spread)

    def vapour_pressure(self, temperature: Float[ArrayLike, ""]) -> Float[Array, " k"]:
        """Each pseudo-component's vapour pressure (Pa) at `temperature` (K): Antoine's equation
        with the constants estimated from the boiling point (Lyman et al. 1990, as ADIOS 2)."""
        boiling = jnp.asarray(self.boiling_point)
        entropy = 8.75 + 1.987 * jnp.log(boiling)  # Trouton's rule, cal/mol/K
        c2 = 0.19 * boiling - 18.0
        spread = 1 / (boiling - c2) - 1 / (temperature - c2)
        log_ratio = entropy * (boiling - c2) ** 2 / (0.97 * 1.987 * boiling) * spread
        return ATMOSPHERE * jnp.exp(log_ratio)
