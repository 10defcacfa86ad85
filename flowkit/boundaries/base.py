"""The boundary contract: what happens to a particle after each step."""

import abc
from typing import ClassVar

import equinox as eqx

from .._custom_types import Position, StatusCode


class AbstractBoundary(eqx.Module):
    """Applied to every particle after every step, inside the compiled program.

    `apply(x_prev, x_next, status, key) -> (x, status)` for ONE particle (the tracker vmaps it).
    It may move the particle (wrap, reflect, clamp) or change its status (absorb); it must never
    need a Python branch on values. Only active particles' results are used.
    """

    stochastic: ClassVar[bool] = False
    """Whether `apply` needs a PRNG key; the tracker passes `key=None` when it does not."""

    @abc.abstractmethod
    def apply(self, x_prev: Position, x_next: Position, status: StatusCode, key=None) -> tuple[Position, StatusCode]:
        """New position and status of a particle that stepped from `x_prev` to `x_next`."""
