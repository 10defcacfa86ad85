"""Seawater at a particle, for models that rise or sink by their buoyancy: TEOS-10's density
(the `gsw` package's, tabulated once on the host and interpolated in the step), Sharqawy et
al. (2010)'s viscosity, and the terminal velocity of a small sphere in the flow regimes the
fisheries models use (Stokes; Sundby (1983)'s transitional one)."""

import functools

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax.scipy.ndimage import map_coordinates
from jaxtyping import Array, ArrayLike, Float

GRAVITY = 9.81
"""m/s²."""

AXES = {"salinity": (0.0, 42.0, 0.5), "temperature": (-2.5, 35.0, 0.5), "pressure": (0.0, 2000.0, 100.0)}
"""The density table's axes (first, last, spacing): practical salinity, potential temperature
(°C), pressure (dbar); values beyond them take the nearest edge's."""


@functools.lru_cache(maxsize=1)
def density_table() -> np.ndarray:
    """In-situ density (kg/m³) on the `AXES` grid by TEOS-10 (`gsw.rho`), from practical salinity
    as reference-composition Absolute Salinity (`gsw.SR_from_SP`: the regional anomaly, below
    0.03 g/kg, is left out; it cancels in a particle's density difference to first order) and
    potential temperature as Conservative Temperature (`gsw.CT_from_pt`)."""
    import gsw

    s, t, p = (np.arange(lo, hi + step / 2, step) for lo, hi, step in AXES.values())
    salinity, temperature, pressure = np.meshgrid(s, t, p, indexing="ij")
    absolute = gsw.SR_from_SP(salinity)
    return np.asarray(gsw.rho(absolute, gsw.CT_from_pt(absolute, temperature), pressure), np.float64)


class Seawater(eqx.Module):
    """Seawater's density by TEOS-10 as a particle model reads it (a leaf table of `gsw`'s values)."""

    table: Float[Array, "s t p"]

    def __init__(self):
        self.table = jnp.asarray(density_table())

    def density(self, salinity: ArrayLike, temperature: ArrayLike, depth: ArrayLike) -> Float[Array, ""]:
        """Density (kg/m³) at a practical salinity, potential temperature (°C) and depth (m, positive
        down; taken as the pressure in dbar, within 1 % above 2000 m), trilinear in the table."""
        values = (salinity, temperature, depth)
        index = [
            jnp.clip((jnp.asarray(v, self.table.dtype) - lo) / step, 0, n - 1)
            for v, (lo, _, step), n in zip(values, AXES.values(), self.table.shape, strict=True)
        ]
        return map_coordinates(self.table, index, order=1)


def viscosity(temperature: ArrayLike, salinity: ArrayLike) -> Array:
    """Seawater's dynamic viscosity (Pa s) at a temperature (°C) and salinity (g/kg): Sharqawy,
    Lienhard and Zubair (2010), eqs. 22-23 (OpenDrift's default)."""
    t, s = jnp.asarray(temperature), jnp.asarray(salinity) / 1000
    pure = 4.2844e-5 + 1 / (0.157 * (t + 64.993) ** 2 - 91.296)
    a = 1.541 + 1.998e-2 * t - 9.52e-5 * t**2
    b = 7.974 - 7.561e-2 * t + 4.724e-4 * t**2
    return pure * (1 + a * s + b * s**2)


def terminal_velocity(diameter: ArrayLike, water: ArrayLike, particle: ArrayLike, mu: ArrayLike) -> Array:
    """The upward terminal velocity (m/s; negative: sinking) of a sphere of `diameter` (m) and
    density `particle` in water of density `water` (kg/m³) and viscosity `mu` (Pa s).

    Stokes' law, `g d² Δρ / (18 μ)`, while the Reynolds number `|w| d ρ / μ` stays at or below
    0.5; above it Sundby (1983)'s fit to Dallavalle's transitional regime, in its own units
    (cm, g/cm³, poise): `w = 19 d₀ Δρ^(2/3) μ^(-1/3)`, `d₀ = d - 0.4 (9 ν² ρ / (g Δρ))^(1/3)`, as
    LADIM and OpenDrift's `PelagicEggDrift` take it (those for rising eggs; sinking particles
    here take the same regimes by `|Δρ|`)."""
    d, rho, mu = jnp.asarray(diameter), jnp.asarray(water), jnp.asarray(mu)
    difference = rho - jnp.asarray(particle)
    stokes = GRAVITY * d**2 * difference / (18 * mu)
    transitional = jnp.abs(stokes) * d * rho / mu > 0.5
    size = jnp.where(transitional, jnp.abs(difference), 1.0)  # no 0 divides where it is not used
    nu = mu / rho
    d0 = d - 0.4 * (9 * nu**2 * rho / (GRAVITY * size)) ** (1 / 3)
    sundby = 19 * (100 * d0) * (1e-3 * size) ** (2 / 3) * (10 * mu) ** (-1 / 3) / 100
    return jnp.where(transitional, jnp.sign(difference) * sundby, stokes)
