"""Sediment grains as OpenDrift's `SedimentDrift` moves them: they settle through the water,
come to rest on the sea floor, and are lifted again where the current over the bed is strong."""

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Args, Position, TimeLike
from .base import AbstractResting, AbstractUpdating, Fluid, Needs


class Sediment(AbstractUpdating, AbstractResting):
    """A grain that moves with the current and sinks at `settling_velocity` (m/s, positive
    down; depth is the third coordinate, positive down, as on ocean fields: 3-D fields with a
    sea floor, `fk.fields.AbstractWithSeaFloor`).

    It settles (`settled` 1) where a step leaves it within one step's settling of the sea floor
    (`settling_velocity × |dt|`: the deposition flux is then the settling velocity times the
    concentration at the bed, whatever the step) and the current there is at most
    `resuspension_threshold` (m/s; OpenDrift's `vertical_mixing:resuspension_threshold`, 0.2); a
    settled grain rests (it neither drifts nor walks at random) until the current over it exceeds
    the threshold, and then moves again, with the mixing lifting it."""

    settling_velocity: Float[Array, ""] | float = 1e-3
    resuspension_threshold: Float[Array, ""] | float = 0.2
    variable_names = ("settled",)
    needs = Needs(sea_floor=True)

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"settled": jnp.zeros((), x.dtype)}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        x = state["x"]
        if x.shape[0] != 3:
            raise ValueError(f"Sediment settles in depth: it needs a 3-D field (this one is {x.shape[0]}-D)")
        return {"x": fluid.velocity + jnp.array([0.0, 0.0, 1.0], x.dtype) * self.settling_velocity}

    def update(self, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args):
        x = state["x"]
        reach = jnp.asarray(self.settling_velocity, x.dtype) * jnp.abs(jnp.asarray(dt, x.dtype))
        on_bed = x[2] >= fluid.sea_floor - reach
        speed = jnp.sqrt(jnp.sum(fluid.velocity_metres()[:2] ** 2))
        settled = on_bed & (speed <= self.resuspension_threshold)
        return {**state, "settled": settled.astype(x.dtype)}

    def resting(self, state: dict) -> Array:
        return state["settled"] > 0.5
