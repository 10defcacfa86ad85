"""The boundary contract: what happens to particles after each step.

A boundary is either bound (its geometry is arrays, ready to trace) or a config
(`AbstractBoundaryConfig`: regions and walls given by name, `"xmin"`, `"reflect"`) that
`bind(field)` turns into the bound boundary that acts. Binding happens once, on the host,
before compiling; a bound boundary binds to itself.
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .._custom_types import Args, HostOrDevice, Position, Positions, ScalarLike, StatusCode, TimeLike
from ..fields.base import AbstractField, Hints


class Block(eqx.Module):
    """One block of particles at the end of a step, as a restarting boundary sees it.

    `x`, `status`, `hint`, `generation` are the outcome of the step (walls applied, statuses
    set); `x_prev` is where the step began and `x_step` where the integrator put it, before any
    wall. `moving` marks the particles that took this step. `origin` are the slots' seed
    positions (projected onto the inlet where a boundary asks for that) and their cells, `index` the slots'
    global indices (-1 for padding), `keys` their raw PRNG keys, `block` this block's number
    among `n_blocks`.
    """

    x: Float[Array, "n dim"]
    status: Int[Array, " n"]
    hint: Hints
    generation: Int[Array, " n"]
    x_prev: Float[Array, "n dim"]
    x_step: Float[Array, "n dim"]
    moving: Bool[Array, " n"]
    origin: Float[Array, "n dim"]
    origin_hint: Hints
    t_release: Float[Array, " n"]
    index: Int[Array, " n"]
    keys: Array
    block: Int[Array, ""]
    n_blocks: int = eqx.field(static=True)


class AbstractBoundary(eqx.Module):
    """Applied to every particle after every step, inside the compiled program.

    - `apply_batch(field, x_prev, x_next, status, hint, inside) -> (x, status, hint, inside)` for
      a block whose step ends `x_next` are located already (`hint`, `inside`: the integrator's
      stages located them, or the tracker did); the returned `hint` and `inside` locate `x`.
      Boundaries that act on one particle at a time are `AbstractPointWalls` and write `apply`.
    - `restart(field, args, t, h, step, block) -> (x, status, hint, generation, lost)` at the end
      of the step `[t, t + h]` (global step number `step`): put particles back
      (inlets); a restarted slot gets `generation + 1`, so outputs start a new path. `lost` counts
      the releases that found no free slot in the block. Called only when `restarts` is true.
    - `turn_velocity`: an inertial particle's velocity at the walls that moved it.
    - What the planner reads before the run: `stochastic`, `restarts`, `extra_slots`,
      `parking`, `origins`, `restarts_at_origins`, `origin_region`.

    Every boundary is final and one of: `AbstractWalls` (acts on steps, never puts particles
    back), `AbstractInlet` (puts them back), `Composed`, or an `AbstractBoundaryConfig` (names,
    bound to a field before a run). Boundaries never need a Python branch on values, and the
    particle count never changes.
    """

    @property
    @abc.abstractmethod
    def stochastic(self) -> bool:
        """Whether `restart` draws random numbers (the run then needs a PRNG `key`)."""

    @property
    @abc.abstractmethod
    def restarts(self) -> bool:
        """Whether `restart` may put particles back (the tracker then saves each slot's generation)."""

    @abc.abstractmethod
    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        """`(x, status, hint, inside)` of a block of particles after their step."""

    @abc.abstractmethod
    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        """Particles put back at the end of the step `[t, t + h]`: `(x, status, hint, generation, lost)`."""

    @abc.abstractmethod
    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        """The `(n, dim)` velocities `v` of particles (inertial ones) that this boundary turned,
        having stepped to `x_step` and been put at `x`: reflected with the wall-normal part
        scaled by `restitution`, or the normal part removed where they slide."""

    @abc.abstractmethod
    def bind(self, field: AbstractField) -> "AbstractBoundary":
        """The bound boundary for `field` (host side, before compiling)."""

    @abc.abstractmethod
    def origins(self, seeds: Float[HostOrDevice, "n dim"]) -> Float[HostOrDevice, "n dim"]:
        """Where each slot restarts in `grid` mode."""

    @property
    @abc.abstractmethod
    def extra_slots(self) -> int:
        """Spare slots the tracker appends after the seeds, for particles released later."""

    @property
    @abc.abstractmethod
    def restarts_at_origins(self) -> bool:
        """Whether `restart` puts slots back at `origins` (whose cells the tracker then locates once)."""

    @property
    @abc.abstractmethod
    def origin_region(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The box `(lo, hi)` that `origins` must lie in for a restart there to be valid (an
        inlet's region), or None: anywhere in the domain."""

    @property
    @abc.abstractmethod
    def parking(self) -> np.ndarray | None:
        """Where the `extra_slots` wait before their release: a point of the domain (None without spare slots)."""


class AbstractWalls(AbstractBoundary):
    """A bound boundary that acts on steps and never puts a particle back: no restarts, no
    spare slots, no randomness; it is its own binding. Its final classes write `apply_batch`
    (or, one particle at a time, `apply` under `AbstractPointWalls`) and `turn_velocity`."""

    stochastic = False
    restarts = False
    extra_slots = 0
    restarts_at_origins = False
    origin_region = None
    parking = None

    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        return block.x, block.status, block.hint, block.generation, 0

    def bind(self, field: AbstractField) -> "AbstractWalls":
        return self

    def origins(self, seeds: Float[HostOrDevice, "n dim"]) -> Float[HostOrDevice, "n dim"]:
        return seeds


class AbstractPointWalls(AbstractWalls):
    """Walls that act on one particle at a time and need no neighbour and no field (wrap,
    reflect, clamp, absorb on a box or a round shape): they write `apply`; the block's step is
    it vmapped, then the points it gives located by the field."""

    @abc.abstractmethod
    def apply(
        self, x_prev: Position, x_next: Position, status: StatusCode, key: PRNGKeyArray | None = None
    ) -> tuple[Position, StatusCode]:
        """New position and status of a particle that stepped from `x_prev` to `x_next`."""

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        x, status = jax.vmap(self.apply)(x_prev, x_next, status)
        hint, inside = field.locate_batch(x, hint)  # where the walls put them
        return x, status, hint, inside


def mirrored(v: Positions, normal, restitution: ScalarLike):
    """`v` reflected off a wall with outward unit `normal` (rows moving into it only), its normal
    part scaled by `restitution` (0: it slides along the wall)."""
    into = jnp.sum(v * normal, axis=-1, keepdims=True)
    return jnp.where(into > 0, v - (1 + restitution) * into * normal, v)


class AbstractBoundaryConfig(AbstractBoundary):
    """A boundary described by names, resolved by `bind(field)` into the bound boundary that acts.

    Its facts (`restarts`, `stochastic`, `extra_slots`) are known before binding, so a run can
    be planned from it; acting and placing are the bound boundary's, and a config used unbound
    says so instead of doing nothing.
    """

    def _unbound(self):
        return TypeError(
            f"{type(self).__name__} is a boundary config: bind it to a field first "
            "(boundary.bind(field); fk.track does this)"
        )

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        raise self._unbound()

    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        raise self._unbound()

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        raise self._unbound()

    def origins(self, seeds: Float[HostOrDevice, "n dim"]) -> Float[HostOrDevice, "n dim"]:
        raise self._unbound()

    @property
    def restarts_at_origins(self) -> bool:
        raise self._unbound()

    @property
    def origin_region(self) -> tuple[np.ndarray, np.ndarray] | None:
        raise self._unbound()

    @property
    def parking(self) -> np.ndarray | None:
        raise self._unbound()


class AbstractWallsConfig(AbstractBoundaryConfig):
    """A config whose bound boundary is walls (`AbstractWalls`): nothing restarts."""

    stochastic = False
    restarts = False
    extra_slots = 0
