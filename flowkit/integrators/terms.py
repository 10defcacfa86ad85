"""What an integrator steps: the right-hand side of a batch of particle states (diffrax's term,
with flowkit's integrators as its solvers).

A state is `{"x": (n, dim) positions, **variables}`. A tracer's term is the field's velocity
(`FlowTerm`); a particle model's term (`flowkit.particles`) adds its variables' rates; a term
that relaxes a velocity toward the fluid's (`AbstractDragTerm`) also gives its drag apart, for
the exponential solver that steps drag exactly.
"""

import abc

import equinox as eqx
from jaxtyping import Array, Float

from .._custom_types import Args, TimeLike
from ..fields.base import AbstractField, Hints


class AbstractTerm(eqx.Module):
    """d/dt of particle states, batched for the tracker and for one particle for per-particle
    solvers (diffrax's). `field` is where the particles move: solvers locate end points in it
    and read its samples (a diffusivity's)."""

    field: eqx.AbstractVar[AbstractField]

    @abc.abstractmethod
    def rates(self, t: TimeLike, state: dict, args: Args, hint: Hints) -> tuple[dict, Hints]:
        """d/dt of every entry of the batched `state`, and the field's hints after evaluating it."""

    @abc.abstractmethod
    def rate(self, t: TimeLike, state: dict, args: Args) -> dict:
        """d/dt of ONE particle's `state`."""


class FlowTerm(AbstractTerm):
    """$\\dot x = u(t, x)$: a tracer, whose state is its position alone."""

    field: AbstractField

    def rates(self, t: TimeLike, state: dict, args: Args, hint: Hints) -> tuple[dict, Hints]:
        u, hint = self.field.velocity_batch(t, state["x"], args, hint)
        return {"x": u}, hint

    def rate(self, t: TimeLike, state: dict, args: Args) -> dict:
        return {"x": self.field(t, state["x"], args)}


class AbstractDragTerm(AbstractTerm):
    """A term whose state holds a velocity (`velocity_name`) relaxing toward the fluid's:
    $\\dot x = v$, $\\dot v = a = \\lambda (W - v)$. `relaxation` gives `a` and the drag's
    rate `λ` per row; the exponential solver steps that relaxation exactly."""

    velocity_name: eqx.AbstractClassVar[str]

    @abc.abstractmethod
    def relaxation(
        self, t: TimeLike, x: Float[Array, "n dim"], v: Float[Array, "n dim"], args: Args, hint: Hints
    ) -> tuple[Float[Array, "n dim"], Float[Array, " n"], Hints]:
        """`(a, λ, hint)`: every row's acceleration and its drag's relaxation rate."""

    @abc.abstractmethod
    def uniform_rate(self, dtype) -> Float[Array, ""] | None:
        """The drag's rate where it is one for every particle (Stokes drag), else None."""
