"""The integrator contract: advance one particle (or a batch) by one step."""

import abc

import equinox as eqx

from .._custom_types import Args, Position, Positions, TimeLike
from ..fields.base import AbstractField


class AbstractIntegrator(eqx.Module):
    """A one-step method for $\\dot x = u(t, x)$.

    `step` advances ONE particle; `step_batch` advances all particles of a step at once and is
    what the tracker calls (it must equal `jax.vmap(step)` up to rounding). Negative `dt`
    integrates backward in time.
    """

    order: eqx.AbstractClassVar[int]

    @abc.abstractmethod
    def step(self, field: AbstractField, x: Position, t: TimeLike, dt: TimeLike, args: Args = None) -> Position:
        """Position after one step of size `dt` from `(t, x)`."""

    @abc.abstractmethod
    def step_batch(self, field: AbstractField, x: Positions, t: TimeLike, dt: TimeLike, args: Args = None) -> Positions:
        """`step` for every row of `x` (shape `(n, dim)`), all at the same time `t`."""
