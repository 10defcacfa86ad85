"""Axis-aligned box walls: periodic, reflect, slip, absorb, or a mix per axis."""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int, PRNGKeyArray

from .._custom_types import Bounds, BoundsLike, Position, Positions, ScalarLike, StatusCode
from .._status import Status
from ..fields.base import AbstractField, Hints, as_bounds
from .base import AbstractPointWalls, AbstractWalls
from .modes import wall_mode

MODES = ("periodic", "reflect", "slip", "absorb", "stick", "open")
"""The wall modes a box takes (`fk.boundaries.modes.WALL_MODES`), one per axis."""


class AbstractBox(AbstractPointWalls):
    """Walls on the faces of the box `bounds = (lo, hi)`, one behaviour per axis.

    - `periodic`: leave through one face, re-enter through the opposite one.
    - `reflect`: specular reflection; the distance travelled is preserved (a step longer than
      the box folds back and forth).
    - `slip`: the coordinate is clipped onto the wall; the particle slides along it.
    - `absorb` (or `stick`): the particle stops at the point where its step crossed the wall
      and gets status `ABSORBED`.
    - `open`: nothing happens on that axis.
    """

    bounds: eqx.AbstractVar[Bounds]
    modes: eqx.AbstractVar[tuple[str, ...]]

    def _masks(self):
        modes = np.array(self.modes)
        masks = {m: modes == m for m in MODES}
        masks["absorb"] = masks["absorb"] | masks.pop("stick")
        return masks

    def _fold(self, x, masks):
        lo, hi = (b.astype(x.dtype) for b in self.bounds)
        length = hi - lo
        wrapped = lo + jnp.mod(x - lo, length)
        y = jnp.mod(x - lo, 2 * length)
        reflected = lo + jnp.where(y > length, 2 * length - y, y)
        clamped = jnp.clip(x, lo, hi)
        outside = (x < lo) | (x > hi)  # inside the box every mode leaves x untouched, bit for bit
        out = jnp.where(masks["periodic"] & outside, wrapped, x)
        out = jnp.where(masks["reflect"] & outside, reflected, out)
        return jnp.where(masks["slip"], clamped, out)

    def apply(
        self, x_prev: Position, x_next: Position, status: StatusCode, key: PRNGKeyArray | None = None
    ) -> tuple[Position, StatusCode]:
        masks = self._masks()
        moved = self._fold(x_next, masks)
        if not masks["absorb"].any():
            return moved, status
        lo, hi = (b.astype(x_next.dtype) for b in self.bounds)
        below = masks["absorb"] & (x_next < lo)
        above = masks["absorb"] & (x_next > hi)
        step = x_next - x_prev
        safe = jnp.where(step == 0, 1, step)
        fraction = jnp.where(below, (lo - x_prev) / safe, jnp.where(above, (hi - x_prev) / safe, 1))
        s = jnp.clip(jnp.min(fraction), 0, 1)
        hit_point = x_prev + s * step
        hit_point = jnp.where(masks["absorb"], jnp.clip(hit_point, lo, hi), hit_point)
        hit = jnp.any(below | above)
        x = jnp.where(hit, self._fold(hit_point, masks), moved)
        return x, jnp.where(hit, jnp.asarray(Status.ABSORBED, status.dtype), status)

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        masks = self._masks()
        lo, hi = (b.astype(v.dtype) for b in self.bounds)
        outside = (x_step < lo) | (x_step > hi)
        odd = jnp.mod(jnp.floor((x_step - lo) / (hi - lo)), 2) != 0  # reflected an odd number of times
        out = jnp.where(masks["reflect"] & outside & odd, -restitution * v, v)
        return jnp.where(masks["slip"] & outside, 0, out)


def uniform(bounds: BoundsLike, mode: str) -> tuple[Bounds, tuple[str, ...]]:
    """`(bounds, modes)` of a box with the same wall `mode` on every axis."""
    bounds = as_bounds(bounds)
    return bounds, (mode,) * bounds[0].shape[0]


class Periodic(AbstractBox):
    """Periodic in every axis of `bounds`."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds: BoundsLike):
        self.bounds, self.modes = uniform(bounds, "periodic")


class Reflective(AbstractBox):
    """Specular reflection on every face of `bounds`."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds: BoundsLike):
        self.bounds, self.modes = uniform(bounds, "reflect")


class Clamp(AbstractBox):
    """Coordinates clipped onto the faces of `bounds` (the `slip` mode)."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds: BoundsLike):
        self.bounds, self.modes = uniform(bounds, "slip")


class Absorbing(AbstractBox):
    """Particles stop (status `ABSORBED`) where they cross a face of `bounds`."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds: BoundsLike):
        self.bounds, self.modes = uniform(bounds, "absorb")


class Mixed(AbstractBox):
    """One wall mode per axis, e.g. `Mixed(bounds, ("periodic", "reflect", "absorb"))`."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds: BoundsLike, modes: Sequence[str]):
        self.bounds = as_bounds(bounds)
        modes = tuple(modes)
        if len(modes) != self.bounds[0].shape[0]:
            raise ValueError(f"Mixed: modes must name one wall mode per axis ({self.bounds[0].shape[0]}), got {modes}")
        self.modes = tuple(wall_mode(m, MODES, "Mixed: modes") for m in modes)


class Open(AbstractWalls):
    """No walls: particles move freely; only the field's own domain limits them."""

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        """The step's ends as they are, located as they came."""
        return x_next, status, hint, inside

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        return v  # no wall turns a particle
