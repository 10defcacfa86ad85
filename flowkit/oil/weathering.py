"""The published weathering schemes an oil-spill model applies to each element, as NOAA's ADIOS
and PyGNOME and OpenDrift's OpenOil apply them: pure functions of one element's state and the
water and weather around it (SI units, temperatures in kelvin), which `flowkit.particles.Oil`
calls after each step.

- Sea state from the wind where no wave model is given: the significant height of a fully
  developed sea (WMO 1998), the period of its spectral peak (Pierson and Moskowitz 1964), the
  fraction of breaking waves (Delvigne and Sweeney 1988, as ADIOS).
- Evaporation by pseudo-components (Jones 1997; the mass-transfer coefficient of Mackay and
  Matsugu 1973, as ADIOS 2).
- Emulsification: water taken up through the oil-water interfacial area (Lehr et al. 2002,
  ADIOS 2), the emulsion's viscosity by Mooney (1951) and by the fraction evaporated (Mackay
  et al. 1980), its density as the mix.
- Natural dispersion (Delvigne and Sweeney 1988 with Roy's constant, as PyGNOME).
- Entrainment by breaking waves (Li et al. 2017) and the entrained droplets' sizes (Johansen
  et al. 2015, or Li et al. 2017), their terminal velocity (Tkalich and Chan 2002).
- Biodegradation (Adcroft et al. 2010, or a half-life).
"""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .properties import OilType

GRAVITY = 9.81
GAS_CONSTANT = 8.314
"""J/(mol K)."""
WATER_UPTAKE = 2.024e-6
"""ADIOS 2's water-uptake constant K0Y (m²/s per (m/s)²... per wind speed squared)."""
DROPLET_MIN, DROPLET_MAX = 1.0e-6, 1.0e-5
"""The emulsion's water droplets, m (ADIOS 2)."""
DISPERSION_VOLUME = 3.9e-8
"""Delvigne and Sweeney's entrained volume per unit of dissipation (m³ s^0.57 / kg^0.57)."""
SPECTRUM_SPREAD = 0.4
"""The droplet spectrum's standard deviation in log10 of the diameter (Johansen et al. 2015)."""
SPECTRUM_BOUNDS = (1.0e-6, 3.0e-3)
"""The entrained droplets' diameters, m (as OpenOil bounds them)."""

Scalar = Float[ArrayLike, ""]


def wave_height_from_wind(wind_speed: Scalar) -> Scalar:
    """The significant wave height (m) of a fully developed sea under `wind_speed` (m/s at 10 m)."""
    return 0.0246 * wind_speed**2


def wave_period_from_wind(wind_speed: Scalar) -> Scalar:
    """The peak period (s) of a fully developed sea (Pierson-Moskowitz), 2π/5 s in calm air."""
    omega = jnp.where(wind_speed > 0, 0.877 * GRAVITY / (1.17 * jnp.maximum(wind_speed, 1e-9)), 5.0)
    return 2 * jnp.pi / omega


def breaking_fraction(wind_speed: Scalar, wave_period: Scalar) -> Scalar:
    """The fraction of the sea surface's waves that break (none below 5 m/s of wind)."""
    return jnp.maximum(0.032 * (wind_speed - 5.0) / wave_period, 0.0)


def wave_dissipation(wave_height: Scalar, water_density: Scalar) -> Scalar:
    """The energy breaking waves dissipate per unit area (J/m²; Delvigne and Sweeney 1988)."""
    return 0.0034 * water_density * GRAVITY * wave_height**2


def mass_transfer(wind_speed: Scalar) -> Scalar:
    """The evaporative mass-transfer coefficient (m/s) under `wind_speed` (Mackay and Matsugu)."""
    calm = jnp.maximum(wind_speed, 1e-9)  # no infinite derivative in still air
    return jnp.where(wind_speed < 10, 0.0025 * calm**0.78, 0.06 * 0.0025 * wind_speed**2)


def evaporation_rates(
    oil: OilType, components: Float[ArrayLike, " k"], area: Scalar, wind_speed: Scalar, temperature: Scalar
) -> Float[Array, " k"]:
    """Each pseudo-component's evaporation rate constant (1/s, ≤ 0): `dm_i/dt = λ_i m_i` for an
    element of surface `area` (m²) holding `components` (kg), each evaporating as its vapour
    pressure over the element's moles (Raoult's law)."""
    moles = jnp.sum(components / jnp.asarray(oil.molecular_weight))
    scale = area * mass_transfer(wind_speed) / (GAS_CONSTANT * temperature * jnp.maximum(moles, 1e-30))
    return -jnp.asarray(scale) * oil.vapour_pressure(temperature)


def emulsifying(oil: OilType, age: Scalar, fraction_evaporated: Scalar) -> Array:
    """Whether an element of `age` (s) takes up water: once its oil's `bullwinkle_fraction` has
    evaporated, or from its oil's `bullwinkle_time` of age."""
    onset, loss = jnp.asarray(oil.bullwinkle_time), jnp.asarray(oil.bullwinkle_fraction)
    return ((onset >= 0) & (age >= onset)) | ((loss > 0) & (fraction_evaporated >= loss))


def interfacial_area_after(
    oil: OilType, area: Scalar, wind_speed: Scalar, age: Scalar, dt: Scalar, max_water_fraction: Scalar
) -> Scalar:
    """The oil-water interfacial area per volume (1/m) of an emulsifying element after a step
    of `dt` ending at `age`: it grows at `k exp(-k a / S_max)` toward `S_max` (the exact growth
    over the step, whose rate is the one ADIOS 2 steps explicitly)."""
    rate = 6.0 * WATER_UPTAKE * wind_speed**2 / DROPLET_MAX
    top = (6.0 / DROPLET_MIN) * max_water_fraction / (1.0 - max_water_fraction)
    decay = rate / jnp.maximum(top, 1e-30)
    grown = top * (jnp.exp(-decay * jnp.maximum(age - dt, 0.0)) - jnp.exp(-decay * age))
    return jnp.minimum(area + grown, top)


def water_fraction(interfacial_area: Scalar, max_water_fraction: Scalar) -> Scalar:
    """The emulsion's water fraction from its interfacial area, at most the oil's maximum."""
    y = interfacial_area * DROPLET_MAX / (6.0 + interfacial_area * DROPLET_MAX)
    return jnp.minimum(y, max_water_fraction)


def emulsion_density(oil_density: Scalar, water_density: Scalar, water: Scalar) -> Scalar:
    return water * water_density + (1.0 - water) * oil_density


def emulsion_viscosity(oil_viscosity: Scalar, fraction_evaporated: Scalar, water: Scalar) -> Scalar:
    """The emulsion's kinematic viscosity (m²/s): the oil's, raised by its evaporation
    (exponentially, by up to 10 e-folds per fraction lost) and by its water (Mooney's law)."""
    per_fraction = jnp.clip(jnp.sqrt(oil_viscosity) * 1.5e3, 1.0, 10.0)
    packed = water / 0.84
    return oil_viscosity * jnp.exp(per_fraction * fraction_evaporated) * (1 + packed / (1.187 - packed)) ** 2.49


def dispersed_fraction(viscosity: Scalar, wave_height: Scalar, breaking: Scalar, water_density: Scalar, dt: Scalar):
    """The fraction of a surface element's oil that breaking waves disperse as fine droplets
    in a step of `dt` (Delvigne and Sweeney 1988), at most 0.99. Roy's factor
    `2400 exp(-73.682 √ν)` damps it by the viscosity `ν` (PyGNOME's: the emulsion's kinematic
    viscosity, m²/s; OpenOil passes `ν / ρ`)."""
    roy = 2400.0 * jnp.exp(-73.682 * jnp.sqrt(viscosity))
    rate = roy * wave_dissipation(wave_height, water_density) ** 0.57 * breaking * DISPERSION_VOLUME
    return jnp.minimum(rate * dt, 0.99)


def _under_breaking_waves(oil: OilType, viscosity: Scalar, oil_density: Scalar, water_density: Scalar, wave_height):
    """`(d0, We, Oh)` of oil under breaking waves (Li et al. 2017): its maximum stable droplet
    diameter (m) from its interfacial tension, the Weber number of the waves on it and its
    Ohnesorge number (`viscosity` kinematic)."""
    tension = oil.interfacial_tension
    d0 = 4.0 * jnp.sqrt(tension / (jnp.maximum(water_density - oil_density, 1e-3) * GRAVITY))
    weber = water_density * GRAVITY * wave_height * d0 / tension
    ohnesorge = viscosity * oil_density / jnp.sqrt(oil_density * tension * d0)
    return d0, weber, ohnesorge


def entrainment_rate(
    oil: OilType, viscosity: Scalar, oil_density: Scalar, water_density: Scalar, wave_height: Scalar, breaking: Scalar
) -> Scalar:
    """The rate (1/s) at which breaking waves entrain a surface element (Li et al. 2017), from
    the Weber and Ohnesorge numbers of the oil under the waves."""
    _, weber, ohnesorge = _under_breaking_waves(oil, viscosity, oil_density, water_density, wave_height)
    return 4.604e-10 * weber**1.805 * ohnesorge**-1.023 * breaking


def median_droplet_johansen(
    oil: OilType, viscosity: Scalar, oil_density: Scalar, film_thickness: Scalar, wave_height: Scalar
) -> Scalar:
    """The volume-median diameter (m) of droplets a breaking wave makes of a film
    (Johansen et al. 2015: the wave's fall height, the film's Weber and Reynolds numbers)."""
    reynolds = film_thickness * jnp.sqrt(GRAVITY * wave_height) / viscosity
    weber = oil_density * film_thickness * GRAVITY * wave_height / oil.interfacial_tension
    a = 2.251
    number_median = a * film_thickness * weber**-0.6 + a * 0.027 * film_thickness * reynolds**-0.6
    return jnp.exp(jnp.log(number_median) + 3 * (jnp.log(10.0) * SPECTRUM_SPREAD) ** 2)


def median_droplet_li(
    oil: OilType, viscosity: Scalar, oil_density: Scalar, water_density: Scalar, wave_height: Scalar
) -> Scalar:
    """The volume-median diameter (m) of droplets entrained by breaking waves (Li et al. 2017)."""
    d0, weber, ohnesorge = _under_breaking_waves(oil, viscosity, oil_density, water_density, wave_height)
    return d0 * 1.791 * (1 + 10 * ohnesorge) ** 0.460 * weber**-0.518


def droplet_diameter(median: Scalar, uniform: Scalar) -> Scalar:
    """The diameter (m) at quantile `uniform` of the log-normal spectrum of volume median
    `median`, within `SPECTRUM_BOUNDS`."""
    from jax.scipy.special import ndtr, ndtri

    spread = jnp.log(10.0) * SPECTRUM_SPREAD
    lo, hi = (ndtr((jnp.log(b) - jnp.log(median)) / spread) for b in SPECTRUM_BOUNDS)
    quantile = jnp.clip(lo + uniform * (hi - lo), 1e-12, 1 - 1e-12)
    return jnp.clip(jnp.exp(jnp.log(median) + spread * ndtri(quantile)), *SPECTRUM_BOUNDS)


def rise_velocity(diameter: Scalar, oil_density: Scalar, water_density: Scalar, water_viscosity: Scalar) -> Scalar:
    """A droplet's terminal velocity up (m/s; Tkalich and Chan 2002): Stokes's law, and above a
    Reynolds number of 50 the drag of a large drop."""
    buoyancy = GRAVITY * (1.0 - oil_density / water_density)
    radius = diameter / 2
    stokes = 2 * buoyancy * radius**2 / (9 * water_viscosity)
    large = jnp.sign(buoyancy) * jnp.sqrt(jnp.maximum(16 * jnp.abs(buoyancy) / 3 * radius, 1e-30))
    return jnp.where(diameter * jnp.abs(stokes) / water_viscosity > 50, large, stokes)


def biodegraded_fraction(temperature: Scalar, dt: Scalar, half_life: Scalar | None = None) -> Scalar:
    """The fraction of an element's oil that bacteria degrade in `dt` (s): a decay time of
    `12 × 3^((20 - T°C)/10)` days (Adcroft et al. 2010), or `half_life` seconds."""
    if half_life is None:
        tau = 12.0 * 3.0 ** ((293.15 - temperature) / 10.0) * 86400.0
    else:
        tau = half_life / jnp.log(2.0)
    return 1.0 - jnp.exp(-dt / tau)
