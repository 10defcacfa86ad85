"""The integrator contract: one step of a batch of particle states along a term."""

import abc
from typing import NamedTuple

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import Args, Positions, TimeLike
from ..fields.base import AbstractField, Hints
from .terms import AbstractTerm


class StepResult(NamedTuple):
    """What `step` returns: the new states and, optionally, what stopped a particle.

    - `state`: `{"x": (n, dim), **variables}` after the step.
    - `status`: `(n,)` `flowkit.Status` codes set by the integrator (`ACTIVE` where all went
      well; `OUT_OF_DOMAIN` at an exit event, then `x` is the exit point; `MAX_STEPS` or
      `SOLVER_FAILED`, then the particle stays where the step began), or None if it never stops one.
    - `t_stop`: `(n,)` the time at which such a particle stopped (e.g. the located exit time), or
      None for "the end of the step".
    """

    state: dict
    status: Int[Array, " n"] | None = None
    t_stop: Float[Array, " n"] | None = None
    hint: Hints | None = None
    """The field's location `Hints` after the step's last evaluation, or None to keep the ones
    the step started with."""
    inside: Bool[Array, " n"] | None = None
    """Whether each end point lies in the field's domain, where the step located it (then
    `hint` locates it; fields with `shared_location`), or None: the tracker locates it."""
    remainder: Positions | None = None
    """`(n, dim)`: what rounding left out of `x` (the step's increment and the `remainder` it
    was given, summed compensated: x + remainder is the position to twice the precision), or
    None for a method that does not compensate."""

    @property
    def x(self) -> Positions:
        """The positions after the step."""
        return self.state["x"]


class AbstractIntegrator(eqx.Module):
    """A one-step method for a term's $\\dot y = f(t, y)$ (plus noise for stochastic ones).

    `step` advances every particle of a block at once, at the same time `t` (a row's result
    never depends on the others'). Negative `dt` integrates backward in time. Stochastic
    integrators (`stochastic = True`) get one PRNG key per particle and step from the tracker.
    """

    @property
    @abc.abstractmethod
    def order(self) -> int:
        """The method's order of convergence (global error O(dt^order))."""

    @property
    @abc.abstractmethod
    def stochastic(self) -> bool:
        """Whether `step` takes noise: the tracker then gives it a PRNG key per particle and step."""

    @property
    @abc.abstractmethod
    def sample_names(self) -> frozenset[str]:
        """The field's samples the method reads at the particles (a diffusivity's `"AKs"`)."""

    @property
    @abc.abstractmethod
    def shardable(self) -> bool:
        """Whether the tracker may shard particles over several devices with this integrator."""

    @property
    @abc.abstractmethod
    def courant_limit(self) -> float:
        """The Courant number above which a run warns: its steps skip over cells' detail."""

    @abc.abstractmethod
    def step(
        self,
        term: AbstractTerm,
        state: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
        remainder: Positions | None = None,
    ) -> StepResult:
        """One step of size `dt` from `(t, state)` along `term` for every row of `state`
        (`{"x": (n, dim), **variables}`).

        `hint` holds each particle's location `Hints` for fields that use them (`MeshField`: the
        cell it was last found in; None: unknown), to pass to the term. `remainder`: `(n, dim)`,
        what rounding left out of each position at its last step (`StepResult.remainder`), for
        a method that sums its positions compensated to add into this step (None: zeros).
        """


def hints_for(field: AbstractField, x: Positions, hint: Hints | None) -> Hints:
    """`hint`, or hints located nowhere for every row of `x` when None."""
    return field.hints(x.shape[0], x.dtype) if hint is None else hint
