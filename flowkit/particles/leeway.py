"""Leeway of drifting objects for search and rescue, as the US Coast Guard's model (Allen &
Plourde 1999; Allen 2005) and OpenDrift's `Leeway` have it: beside the current, a downwind and a
crosswind velocity, each linear in the 10 m wind speed, with each object's own random part.

Every object class of the published leeway table (`fk.io.leeway_classes()`, OpenDrift's
`OBJECTPROP.DAT`) gives, for the downwind component and for each crosswind side, a slope (% of
the wind speed), an offset (cm/s) and the standard deviation of the fit's residual (cm/s). An
element draws a unit normal `r` per component once (the downwind one truncated where the slope
would turn negative, as OpenDrift redraws it), so that its leeway is

    (slope + r·std/20) · W + offset + r·std/2   cm/s,

OpenDrift's (and the USCG's C code's) division of the residual between slope and offset, and it
drifts to one side of the wind (right or left, each with its own coefficients), switching sides
(jibing) with a probability per hour.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr, ndtri
from jaxtyping import Array, Float, PRNGKeyArray

from .._custom_types import Args, Position, TimeLike
from .base import AbstractRandom, Fluid, Needs
from .drift import AbstractDrift, AbstractRuled, DriftRule, forcing

HOUR = 3600.0

Number = Float[Array, ""] | float


def _is_zero(value) -> bool:
    """Whether `value` is a concrete 0 (a traced value counts as not zero)."""
    try:
        return float(value) == 0.0
    except (TypeError, jax.errors.ConcretizationTypeError):
        return False


class Leeway(AbstractDrift, AbstractRuled, AbstractRandom):
    """Leeway of a drifting object: beside the current, a downwind velocity
    `downwind_slope` % × wind speed + `downwind_offset` cm/s, and a crosswind one to the right
    of downwind (seen from above) of `crosswind_slope` % × wind speed + `crosswind_offset` cm/s
    for elements whose `orientation` is +1; those with -1 drift with the left side's
    coefficients (`left_slope`, `left_offset`; by default the right side's mirrored). The
    wind is the forcing named `sample` (default `"wind"`, 10 m east and north, m/s).

    Build it from the leeway table by class name or number: `fk.io.leeway("PIW-1")`,
    `fk.io.leeway("LIFE-RAFT-DB-11", jibe_probability=0.04)`. With standard deviations
    (`downwind_std`, `crosswind_std`, `left_std`, cm/s) each element draws its own
    coefficients, and its side at random; with `jibe_probability` (per hour) it switches sides
    in a step of `dt` with probability `1 - (1 - p)^(|dt|/1 h)`. Either makes the runs need a
    `key`. The variables: `orientation` (+1 right, -1 left), `downwind_draw` (a uniform draw
    that sets the downwind residual's truncated normal), `crosswind_draw` (the crosswind one's
    unit normal); all can be given per particle (`fk.track(..., particle_state=)`).

    Crosswind is to the right of downwind for the table's right-side coefficients (the table's
    meaning); OpenDrift's `Leeway` moves that side to the left of the wind (its sign, kept from
    the USCG's C code: OpenDrift issue 1693), which mirrors the slick of an asymmetric object.
    """

    downwind_slope: Number
    crosswind_slope: Number
    downwind_offset: Number
    crosswind_offset: Number
    downwind_std: Number
    crosswind_std: Number
    left_slope: Number
    left_offset: Number
    left_std: Number
    jibe_probability: Number
    sample: str = eqx.field(static=True)
    name: str = eqx.field(static=True)
    random: bool = eqx.field(static=True)
    """Whether the elements draw anything (a spread or jibing): then the runs need a key."""
    mirrored: bool = eqx.field(static=True)
    """Whether the left side's coefficients are the right side's mirrored, its spread none."""
    variable_names = ("orientation", "downwind_draw", "crosswind_draw")

    def __init__(
        self,
        downwind_slope: Number,
        crosswind_slope: Number,
        downwind_offset: Number = 0.0,
        crosswind_offset: Number = 0.0,
        downwind_std: Number = 0.0,
        crosswind_std: Number = 0.0,
        *,
        left_slope: Number | None = None,
        left_offset: Number | None = None,
        left_std: Number | None = None,
        jibe_probability: Number = 0.0,
        sample: str = "wind",
        name: str = "",
    ):
        self.downwind_slope, self.crosswind_slope = downwind_slope, crosswind_slope
        self.downwind_offset, self.crosswind_offset = downwind_offset, crosswind_offset
        self.downwind_std, self.crosswind_std = downwind_std, crosswind_std
        self.left_slope = -crosswind_slope if left_slope is None else left_slope
        self.left_offset = -crosswind_offset if left_offset is None else left_offset
        self.left_std = crosswind_std if left_std is None else left_std
        self.jibe_probability = jibe_probability
        self.sample, self.name = sample, name
        spreads = (downwind_std, crosswind_std, self.left_std, jibe_probability)
        self.random = not all(_is_zero(value) for value in spreads)
        self.mirrored = _is_zero(self.left_slope + crosswind_slope) and _is_zero(self.left_offset + crosswind_offset)

    @property
    def needs(self) -> Needs:
        return Needs(sample_names=(self.sample,))

    @property
    def rule(self) -> DriftRule | None:
        if self.random or not self.mirrored:  # each element's own coefficients, and its jibes
            return DriftRule(
                "leeway_each", (self.sample,), (self.jibe_probability, 0.0), "orientation", self.coefficients
            )
        numbers = (self.downwind_slope, self.crosswind_slope, self.downwind_offset, self.crosswind_offset)
        return DriftRule("leeway", (self.sample,), numbers, orientation="orientation")

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {
            "orientation": jnp.ones((), x.dtype),
            "downwind_draw": jnp.full((), 0.5, x.dtype),
            "crosswind_draw": jnp.zeros((), x.dtype),
        }

    def drawn(self, key: PRNGKeyArray) -> dict:
        side, along, across = jax.random.split(key, 3)
        return {
            "orientation": jnp.where(jax.random.bernoulli(side), 1.0, -1.0),
            "downwind_draw": jax.random.uniform(along, minval=1e-6, maxval=1 - 1e-6),
            "crosswind_draw": jax.random.normal(across),
        }

    def jumped(self, t: TimeLike, dt: TimeLike, state: dict, key: PRNGKeyArray) -> dict:
        chance = 1 - (1 - self.jibe_probability) ** (jnp.abs(dt) / HOUR)
        jibes = jax.random.uniform(key) < chance
        return {"orientation": jnp.where(jibes, -state["orientation"], state["orientation"])}

    def coefficients(self, state: dict) -> Float[Array, " 6"]:
        """ONE element's own coefficients from its draws: the downwind slope (%) and offset
        (cm/s), the right side's crosswind slope and offset, the left side's; each the table's
        with the element's residual (a truncated normal downwind, where slope + r std / 20 < 0
        is cut off; a normal across, scaled by each side's deviation) as slope + e / 20 and
        offset + e / 2. What the ocean kernel reads per element (`rule` "leeway_each")."""
        dtype = jnp.result_type(state["downwind_draw"])
        std = jnp.asarray(self.downwind_std, dtype)
        floor = jnp.where(std > 0, -20 * self.downwind_slope / jnp.where(std > 0, std, 1), -jnp.inf)
        low = ndtr(floor)
        eps_along = ndtri(low + state["downwind_draw"] * (1 - low)) * std
        eps_right = state["crosswind_draw"] * self.crosswind_std
        eps_left = state["crosswind_draw"] * self.left_std
        values = (
            (self.downwind_slope + eps_along / 20, self.downwind_offset + eps_along / 2),
            (self.crosswind_slope + eps_right / 20, self.crosswind_offset + eps_right / 2),
            (self.left_slope + eps_left / 20, self.left_offset + eps_left / 2),
        )
        return jnp.stack([jnp.asarray(v, dtype) for pair in values for v in pair])

    def speeds(self, wind_speed, state: dict):
        """The downwind and crosswind leeway (m/s, crosswind positive to the right) of ONE
        element at `wind_speed` (m/s), from its variables."""
        c = self.coefficients(state).astype(wind_speed.dtype)
        right = state["orientation"] >= 0
        slope, offset = jnp.where(right, c[2], c[4]), jnp.where(right, c[3], c[5])
        return (c[0] * wind_speed + c[1]) / 100, (slope * wind_speed + offset) / 100

    def drift(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        wind = forcing(fluid, self.sample, "Leeway")[:2]
        speed = jnp.sqrt(jnp.sum(wind * wind))
        along = wind / jnp.maximum(speed, 1e-12)
        right = jnp.stack([along[1], -along[0]])  # downwind turned clockwise by 90°
        downwind, crosswind = self.speeds(speed, state)
        return downwind * along + crosswind * right
