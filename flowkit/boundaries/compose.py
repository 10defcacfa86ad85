"""Several boundaries acting one after another in the same step."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._custom_types import Args, HostOrDevice, Positions, ScalarLike, TimeLike
from .._status import Status
from ..fields.base import AbstractField, Hints, select
from .base import AbstractBoundary, Block


class Composed(AbstractBoundary):
    """`parts` applied in order: each sees the previous one's result; a particle one part has
    stopped (absorbed, left) is left alone by the later parts. Restarts (inlets) run in order."""

    parts: tuple[AbstractBoundary, ...]

    @property
    def stochastic(self) -> bool:
        return any(p.stochastic for p in self.parts)

    @property
    def restarts(self) -> bool:
        return any(p.restarts for p in self.parts)

    @property
    def extra_slots(self) -> int:
        return sum(p.extra_slots for p in self.parts)

    @property
    def restarts_at_origins(self) -> bool:
        return any(p.restarts_at_origins for p in self.parts)

    @property
    def parking(self):
        return next((p.parking for p in self.parts if p.parking is not None), None)

    @property
    def origin_region(self):
        return next((p.origin_region for p in self.parts if p.origin_region is not None), None)

    def bind(self, field: AbstractField) -> "Composed":
        return Composed(tuple(p.bind(field) for p in self.parts))

    def origins(self, seeds: Float[HostOrDevice, "n dim"]) -> Float[HostOrDevice, "n dim"]:
        for p in self.parts:
            seeds = p.origins(seeds)
        return seeds

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        x, new_status, new_hint, inside = self.parts[0].apply_batch(field, x_prev, x_next, status, hint, inside)
        for part in self.parts[1:]:
            x2, status2, hint2, inside2 = part.apply_batch(field, x_prev, x, new_status, new_hint, inside)
            going = new_status == Status.ACTIVE
            x = jnp.where(going[:, None], x2, x)
            new_status = jnp.where(going, status2, new_status)
            new_hint = select(going, hint2, new_hint)
            inside = jnp.where(going, inside2, inside)
        return x, new_status, new_hint, inside

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        """Each part's turn in order (a part that turned nothing leaves `v` as it is)."""
        for part in self.parts:
            v = part.turn_velocity(x_step, x, v, restitution)
        return v

    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        lost = jnp.zeros((), jnp.int32)
        for part in self.parts:
            if part.restarts:
                x, status, hint, generation, more = part.restart(field, args, t, h, step, block)
                block = eqx.tree_at(
                    lambda b: (b.x, b.status, b.hint, b.generation), block, (x, status, hint, generation)
                )
                lost = lost + more
        return block.x, block.status, block.hint, block.generation, lost


def compose(*parts: AbstractBoundary) -> Composed:
    """One boundary made of `parts`, applied in order each step, e.g.
    `compose(fk.Cylinder(c, axis, r), fk.Mixed(bounds, ("periodic", "open", "open")))`."""
    if not parts or not all(isinstance(p, AbstractBoundary) for p in parts):
        raise TypeError(f"compose: give one or more flowkit boundaries, got {[type(p).__name__ for p in parts]}")
    return Composed(tuple(parts))
