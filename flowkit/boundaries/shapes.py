"""Round domains: the inside of a sphere (a circle in 2-D) or of an infinite cylinder."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from .._custom_types import PointsLike, Position, Positions, ScalarLike, StatusCode
from .._status import Status
from .base import AbstractPointWalls, mirrored
from .modes import wall_mode

ROUND_MODES = ("reflect", "absorb", "stick")


class AbstractRound(AbstractPointWalls):
    """A domain `|P(x - centre)| <= radius`, with `P` the identity (sphere) or the projection
    across an axis (cylinder). `reflect`: the step is mirrored on the tangent plane where it
    met the wall (up to `max_bounces` times, then pulled back radially); `absorb` (or `stick`):
    the particle stops there with status `ABSORBED`."""

    centre: eqx.AbstractVar[Float[Array, " dim"]]
    radius: eqx.AbstractVar[Float[Array, ""]]
    mode: eqx.AbstractVar[str]
    max_bounces: eqx.AbstractVar[int]

    @abc.abstractmethod
    def _across(self, v):
        """The part of `v` across the shape's axis (all of it for a sphere)."""

    def _meet(self, start, end):
        """Where the segment `start -> end` (start inside) meets the wall, and the normal there."""
        d, p = self._across(end - start), self._across(start - self.centre)
        a, b, c = jnp.dot(d, d), 2 * jnp.dot(d, p), jnp.dot(p, p) - self.radius**2
        root = jnp.sqrt(jnp.maximum(b * b - 4 * a * c, 0))
        s = jnp.clip((-b + root) / jnp.where(a == 0, 1, 2 * a), 0, 1)
        hit = start + s * (end - start)
        normal = self._across(hit - self.centre)
        return hit, normal / jnp.maximum(jnp.linalg.norm(normal), jnp.finfo(hit.dtype).tiny)

    def _outside(self, x):
        return jnp.linalg.norm(self._across(x - self.centre)) > self.radius

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        return _turned(self, x, v, restitution)

    def apply(
        self, x_prev: Position, x_next: Position, status: StatusCode, key: PRNGKeyArray | None = None
    ) -> tuple[Position, StatusCode]:
        outside = self._outside(x_next)
        if self.mode in ("absorb", "stick"):
            hit, _ = self._meet(x_prev, x_next)
            return jnp.where(outside, hit, x_next), jnp.where(
                outside, jnp.asarray(Status.ABSORBED, status.dtype), status
            )

        def bounce(_, carry):
            start, end = carry
            hit, normal = self._meet(start, end)
            mirrored = end - 2 * jnp.dot(end - hit, normal) * normal
            out = self._outside(end)
            return jnp.where(out, hit, start), jnp.where(out, mirrored, end)

        _, x = jax.lax.fori_loop(0, self.max_bounces, bounce, (x_prev, x_next))
        radial = self._across(x - self.centre)
        length = jnp.linalg.norm(radial)
        pulled = x - radial * (1 - self.radius * (1 - 8 * jnp.finfo(x.dtype).eps) / jnp.maximum(length, self.radius))
        return jnp.where(self._outside(x), pulled, x), status


def _turned(boundary, x, v, restitution):
    """`AbstractRound.turn_velocity`: mirrored on the tangent plane where the particle is."""
    if boundary.mode != "reflect":
        return v
    normal = jax.vmap(boundary._across)(x - boundary.centre.astype(x.dtype))
    normal = normal / jnp.maximum(jnp.linalg.norm(normal, axis=1, keepdims=True), jnp.finfo(x.dtype).tiny)
    return mirrored(v, normal, restitution)


def _mode(mode):
    return wall_mode(mode, ROUND_MODES)


class Sphere(AbstractRound):
    """The inside of the sphere (circle in 2-D) of `radius` around `centre`."""

    centre: Float[Array, " dim"]
    radius: Float[Array, ""]
    mode: str = eqx.field(static=True)
    max_bounces: int = eqx.field(static=True)

    def __init__(self, centre: PointsLike, radius: ScalarLike, mode: str = "reflect", max_bounces: int = 4):
        self.centre = jnp.asarray(np.asarray(centre, np.float64))
        if self.centre.ndim != 1 or self.centre.shape[0] not in (2, 3) or not float(radius) > 0:
            raise ValueError(
                "Sphere: centre needs 2 or 3 coordinates and radius must be positive, got "
                f"{np.asarray(centre).tolist()} and {radius}"
            )
        self.radius = jnp.asarray(float(radius))
        self.mode = _mode(mode)
        self.max_bounces = int(max_bounces)

    def _across(self, v):
        return v


class Cylinder(AbstractRound):
    """The inside of the infinite cylinder of `radius` around the line through `centre` along
    `axis` (3-D); close its ends with `compose` and a box boundary, or the field's own domain."""

    centre: Float[Array, " dim"]
    axis: Float[Array, " dim"]
    radius: Float[Array, ""]
    mode: str = eqx.field(static=True)
    max_bounces: int = eqx.field(static=True)

    def __init__(
        self, centre: PointsLike, axis: PointsLike, radius: ScalarLike, mode: str = "reflect", max_bounces: int = 4
    ):
        centre, axis = np.asarray(centre, np.float64), np.asarray(axis, np.float64)
        if centre.shape != (3,) or axis.shape != (3,) or not np.linalg.norm(axis) > 0 or not float(radius) > 0:
            raise ValueError(
                "Cylinder: centre and a non-zero axis need 3 coordinates each and radius must be "
                f"positive, got {centre.tolist()}, {axis.tolist()}, {radius}"
            )
        self.centre = jnp.asarray(centre)
        self.axis = jnp.asarray(axis / np.linalg.norm(axis))
        self.radius = jnp.asarray(float(radius))
        self.mode = _mode(mode)
        self.max_bounces = int(max_bounces)

    def _across(self, v):
        return v - jnp.dot(v, self.axis) * self.axis
