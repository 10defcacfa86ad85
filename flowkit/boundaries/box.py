"""Axis-aligned box walls: periodic, reflective, clamp, absorbing, or a mix per axis."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._custom_types import Bounds, Position, StatusCode
from .._status import Status
from ..fields.base import as_bounds
from .base import AbstractBoundary

MODES = ("periodic", "reflective", "clamp", "absorbing", "open")


class AbstractBox(AbstractBoundary):
    """Walls on the faces of the box `bounds = (lo, hi)`, one behaviour per axis.

    - `periodic`: leave through one face, re-enter through the opposite one.
    - `reflective`: specular reflection; the distance travelled is preserved (a step longer than
      the box folds back and forth).
    - `clamp`: the coordinate is clipped onto the wall; the particle slides along it.
    - `absorbing`: the particle stops at the point where its step crossed the wall and gets
      status `ABSORBED`.
    - `open`: nothing happens on that axis.
    """

    bounds: eqx.AbstractVar[Bounds]
    modes: eqx.AbstractVar[tuple[str, ...]]

    def _masks(self):
        modes = np.array(self.modes)
        return {m: modes == m for m in MODES}

    def _fold(self, x, masks):
        lo, hi = (b.astype(x.dtype) for b in self.bounds)
        length = hi - lo
        wrapped = lo + jnp.mod(x - lo, length)
        y = jnp.mod(x - lo, 2 * length)
        reflected = lo + jnp.where(y > length, 2 * length - y, y)
        clamped = jnp.clip(x, lo, hi)
        outside = (x < lo) | (x > hi)  # inside the box every mode leaves x untouched, bit for bit
        out = jnp.where(masks["periodic"] & outside, wrapped, x)
        out = jnp.where(masks["reflective"] & outside, reflected, out)
        return jnp.where(masks["clamp"], clamped, out)

    def apply(self, x_prev: Position, x_next: Position, status: StatusCode, key=None) -> tuple[Position, StatusCode]:
        masks = self._masks()
        moved = self._fold(x_next, masks)
        if not masks["absorbing"].any():
            return moved, status
        lo, hi = (b.astype(x_next.dtype) for b in self.bounds)
        below = masks["absorbing"] & (x_next < lo)
        above = masks["absorbing"] & (x_next > hi)
        step = x_next - x_prev
        safe = jnp.where(step == 0, 1, step)
        fraction = jnp.where(below, (lo - x_prev) / safe, jnp.where(above, (hi - x_prev) / safe, 1))
        s = jnp.clip(jnp.min(fraction), 0, 1)
        hit_point = x_prev + s * step
        hit_point = jnp.where(masks["absorbing"], jnp.clip(hit_point, lo, hi), hit_point)
        hit = jnp.any(below | above)
        x = jnp.where(hit, self._fold(hit_point, masks), moved)
        return x, jnp.where(hit, jnp.asarray(Status.ABSORBED, status.dtype), status)


class AbstractUniformBox(AbstractBox):
    """A box with the same behaviour (`mode`) on every axis."""

    mode: eqx.AbstractClassVar[str]
    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds):
        self.bounds = as_bounds(bounds)
        self.modes = (self.mode,) * self.bounds[0].shape[0]


class Periodic(AbstractUniformBox):
    """Periodic in every axis of `bounds`."""

    mode: ClassVar[str] = "periodic"


class Reflective(AbstractUniformBox):
    """Specular reflection on every face of `bounds`."""

    mode: ClassVar[str] = "reflective"


class Clamp(AbstractUniformBox):
    """Coordinates clipped onto the faces of `bounds`."""

    mode: ClassVar[str] = "clamp"


class Absorbing(AbstractUniformBox):
    """Particles stop (status `ABSORBED`) where they cross a face of `bounds`."""

    mode: ClassVar[str] = "absorbing"


class Mixed(AbstractBox):
    """One behaviour per axis, e.g. `Mixed(bounds, ("periodic", "reflective", "absorbing"))`."""

    bounds: Bounds
    modes: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, bounds, modes):
        self.bounds = as_bounds(bounds)
        modes = tuple(str(m) for m in modes)
        if len(modes) != self.bounds[0].shape[0] or any(m not in MODES for m in modes):
            raise ValueError(f"Mixed: modes must name one of {MODES} per axis ({self.bounds[0].shape[0]}), got {modes}")
        self.modes = modes


class Open(AbstractBoundary):
    """No walls: particles move freely; only the field's own domain limits them."""
