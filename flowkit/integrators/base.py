"""The integrator contract: advance one particle (or a batch) by one step."""

import abc
from typing import NamedTuple

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._custom_types import Args, Position, Positions, TimeLike
from ..fields.base import AbstractField, Hints


class StepResult(NamedTuple):
    """What `step_batch` returns: new positions and, optionally, what stopped a particle.

    - `x`: `(n, dim)` positions after the step.
    - `status`: `(n,)` `flowkit.Status` codes set by the integrator (`ACTIVE` where all went
      well; `OUT_OF_DOMAIN` at an exit event, then `x` is the exit point; `MAX_STEPS` or
      `SOLVER_FAILED`, then the particle stays where the step began), or None if it never stops one.
    - `t_stop`: `(n,)` the time at which such a particle stopped (e.g. the located exit time), or
      None for "the end of the step".
    """

    x: Positions
    status: Int[Array, " n"] | None = None
    t_stop: Float[Array, " n"] | None = None
    hint: Hints | None = None
    """The field's location `Hints` after the step's last evaluation, or None to keep the ones
    the step started with."""
    inside: Bool[Array, " n"] | None = None
    """Whether each end point `x` lies in the field's domain, where the step located it (then
    `hint` locates `x`; fields with `shared_location`), or None: the tracker locates `x`."""


class AbstractIntegrator(eqx.Module):
    """A one-step method for $\\dot x = u(t, x)$ (plus noise for stochastic ones).

    `step` advances ONE particle; `step_batch` advances all particles of a step at once and is
    what the tracker calls (it must equal `jax.vmap(step)` up to rounding). Negative `dt`
    integrates backward in time. Stochastic integrators (`stochastic = True`) get one PRNG key
    per particle and step from the tracker.
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

    courant_limit: eqx.AbstractClassVar[float]
    """The Courant number above which a run warns: its steps skip over cells' detail."""

    @abc.abstractmethod
    def step(
        self,
        field: AbstractField,
        x: Position,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        key: PRNGKeyArray | None = None,
    ) -> Position:
        """Position after one step of size `dt` from `(t, x)`."""

    @abc.abstractmethod
    def step_batch(
        self,
        field: AbstractField,
        x: Positions,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
    ) -> StepResult:
        """`step` for every row of `x` (shape `(n, dim)`), all at the same time `t`.

        `hint` holds each particle's location `Hints` for fields that use them (`MeshField`: the
        cell it was last found in; None: unknown), to pass to `field.velocity_batch`.
        """

    @abc.abstractmethod
    def step_particles(
        self,
        field: AbstractField,
        particles,
        x: Positions,
        variables: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
    ) -> tuple[StepResult, dict]:
        """One step of particles that carry `variables` (`{name: (n, ...)}`) besides `x` and move
        by `particles.rhs` (a `flowkit.particles.AbstractParticles`): `(StepResult, variables)`."""


def hints_for(field: AbstractField, x: Positions, hint: Hints | None) -> Hints:
    """`hint`, or hints located nowhere for every row of `x` when None."""
    return field.hints(x.shape[0], x.dtype) if hint is None else hint
