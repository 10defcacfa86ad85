"""Inlets: particles put back into the domain inside the compiled step, with fixed shapes.

- `InletOutlet`: a particle whose step leaves through the outlet restarts on the inlet in the
  same step; the particle count never changes.
- `ContinuousInlet`: particles are released on the inlet at a rate (or in pulses) into free
  slots: slots never used yet (`extra_slots`) and slots whose particle has stopped.

A restarted slot's `generation` goes up by one, so outputs start a new path (a new
`particle_id`) instead of drawing a line from the outlet back to the inlet. Where a particle is
put: `grid` (its own seed, projected onto the inlet: the seed pattern is kept), `random`
(uniform on the inlet), `flux` (in proportion to the inflow through the inlet at that time).
Random draws come from each slot's PRNG key folded with the global step, so they do not depend
on chunking, blocking or sharding.
"""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Int

from .._custom_types import Args, Positions, ScalarLike, TimeLike
from .._status import Status
from ..fields.base import AbstractField, Hints, select
from ..fields.mesh import AbstractMeshField
from .base import AbstractBoundary, AbstractBoundaryConfig, Block
from .box import Open
from .draws import uniforms
from .modes import wall_mode
from .regions import InletSurface, Plane, inlet_surface, plane_tolerance, region

INLET_MODES = ("grid", "random", "flux")


def walls_for(field: AbstractField, walls) -> AbstractBoundary:
    """The wall boundary named `walls` for `field`: mesh walls on a `MeshField`, box walls otherwise."""
    from .box import Absorbing, Clamp, Reflective
    from .mesh import MeshWalls

    if isinstance(walls, AbstractBoundary):
        return walls.bind(field)
    box = {"reflect": Reflective, "slip": Clamp, "absorb": Absorbing, "stick": Absorbing}
    walls = "open" if walls is None else wall_mode(walls, ("open", *box), "walls (or a boundary)")
    if walls == "open":
        return Open()
    if isinstance(field, AbstractMeshField):
        return MeshWalls(walls).bind(field)
    return box[walls](field.bounds)


class AbstractInlet(AbstractBoundary):
    """A bound inlet: the surface particles are put on, the placement mode, the walls elsewhere."""

    inlet: eqx.AbstractVar[Plane]
    walls: eqx.AbstractVar[AbstractBoundary]
    surface: eqx.AbstractVar[InletSurface]
    mode: eqx.AbstractVar[str]

    restarts = True

    @property
    def stochastic(self) -> bool:
        return self.mode in ("random", "flux")

    def bind(self, field: AbstractField) -> "AbstractInlet":
        return self

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        return self.walls.turn_velocity(x_step, x, v, restitution)  # only the walls turn a particle

    @property
    def restarts_at_origins(self) -> bool:
        return self.mode in ("grid", "auto")

    @property
    def origin_region(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.inlet.lo), np.asarray(self.inlet.hi)

    def origins(self, seeds):
        """Seeds projected onto the inlet plane (NumPy or JAX): where `grid` mode restarts each slot."""
        xp = jnp if isinstance(seeds, jax.Array) else np
        normal, point = xp.asarray(self.inlet.normal, seeds.dtype), xp.asarray(self.inlet.point, seeds.dtype)
        projected = seeds - ((seeds - point) @ normal)[:, None] * normal
        size = xp.abs(normal)
        exact = (xp.arange(seeds.shape[1]) == xp.argmax(size)) & (xp.abs(xp.max(size) - 1) < 1e-6)
        projected = xp.where(exact, point, projected)  # axis-aligned: the coordinate exactly on the plane
        return projected

    def _place(self, field, args, t, step, block: Block, chosen):
        """`block.x` and `block.hint` with the `chosen` rows put on the inlet at time `t`.

        Only the chosen rows are computed (draws), gathered into compact batches of a
        fixed size, so a step in which a few particles restart costs a few rows' work.
        """
        n, dim = block.x.shape
        size = min(n, max(32, n // 32))

        def body(carry):
            pending, x, hint = carry
            rows = jnp.nonzero(pending, size=size, fill_value=n)[0]
            take = jnp.minimum(rows, n - 1)
            if self.mode in ("grid", "auto"):  # auto: grid where traced inputs leave it unresolved
                new_x, new_hint = block.origin[take], block.origin_hint.rows(take)
            else:
                u = uniforms(block.keys[take], step, dim + 3, x.dtype)
                inflow = self.surface.normal_speed(field, args, t) if self.mode == "flux" else None
                new_x, cells = self.surface.draw(u, inflow)
                new_hint = Hints.of_cells(cells.astype(hint.cell.dtype), hint.point.shape[1], hint.point.dtype)
            put = lambda a, v: a.at[rows].set(v.astype(a.dtype), mode="drop")  # noqa: E731
            return pending.at[rows].set(False, mode="drop"), put(x, new_x), jax.tree.map(put, hint, new_hint)

        _, x, hint = jax.lax.while_loop(lambda carry: jnp.any(carry[0]), body, (chosen, block.x, block.hint))
        return x, hint

    def _restart_rows(self, field, args, t, step, block: Block, chosen):
        """`(x, status, hint, generation)` with the `chosen` rows started afresh on the inlet."""
        x, hint = self._place(field, args, t, step, block, chosen)
        status = jnp.where(chosen, jnp.asarray(Status.ACTIVE, block.status.dtype), block.status)
        return x, status, hint, block.generation + chosen.astype(block.generation.dtype)


def _check_mode(mode, allowed=INLET_MODES):
    if mode not in allowed:
        raise ValueError(f"mode must be one of {allowed}, got {mode!r}")
    return str(mode)


def _check_walls(walls):
    if walls is None or isinstance(walls, AbstractBoundary):
        return walls
    return wall_mode(walls, ("open", "reflect", "slip", "absorb", "stick"), "walls (or a boundary)")


class AbstractInletConfig(AbstractBoundaryConfig):
    """Shared by the inlet configs: the regions and walls by name, the placement mode."""

    inlet: eqx.AbstractVar[Plane | str | dict]
    outlet: eqx.AbstractVar[Plane | str | dict | None]
    walls: eqx.AbstractVar[AbstractBoundary | str | None]
    mode: eqx.AbstractVar[str]
    resolution: eqx.AbstractVar[int]

    restarts = True

    @property
    def stochastic(self) -> bool:
        return self.mode in ("random", "flux")

    def _geometry(self, field):
        """`(inlet, outlet, walls, surface)` resolved against `field`."""
        inlet = region(self.inlet, field)
        outlet = None if self.outlet is None else region(self.outlet, field)
        return inlet, outlet, walls_for(field, self.walls), inlet_surface(field, inlet, self.resolution, "inlet")


class BoundInletOutlet(AbstractInlet):
    """`InletOutlet` bound to a field: its planes, inlet surface and walls resolved."""

    inlet: Plane
    outlet: Plane
    walls: AbstractBoundary
    surface: InletSurface
    mode: str = eqx.field(static=True)

    extra_slots = 0
    parking = None

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        return self.walls.apply_batch(field, x_prev, x_next, status, hint, inside)

    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        tolerance = plane_tolerance(field.bounds, block.x.dtype)
        leaving = block.moving & self.outlet.crossed(block.x_prev, block.x_step, tolerance)
        return (*self._restart_rows(field, args, t + h, step, block, leaving), jnp.zeros((), jnp.int32))


class InletOutlet(AbstractInletConfig):
    """Particles leaving through `outlet` restart on `inlet` in the same step.

    **Arguments:**

    - `inlet`, `outlet`: a side of the field's box (`"xmin"`, `"xmax"`, ...), a `Plane`, or
      `{point, normal[, lo, hi]}` with the normal pointing out of the domain. On a `MeshField`
      the inlet is the mesh's boundary faces on that plane (e.g. the disc of a pipe's end).
    - `mode`: `grid` (each slot returns to its own seed, projected onto the inlet plane),
      `random` (uniform over the inlet), `flux` (in proportion to the inflow `u · n` there);
      `auto` (default): `grid` when every seed projects onto the inlet, else `random` (a
      small patch of a real case, seeds spread through the domain), logged.
    - `walls`: what the rest of the boundary does: `"reflect"`, `"absorb"`/`"stick"`,
      `"slip"`, `"open"` (mesh walls on a `MeshField`, box walls otherwise) or any boundary.
    - `resolution`: simplices per side covering a box face (fields without a mesh; `flux` is
      exact for velocities linear over each).
    """

    inlet: Plane | str | dict
    outlet: Plane | str | dict
    walls: AbstractBoundary | str | None
    mode: str = eqx.field(static=True)
    resolution: int = eqx.field(static=True)

    extra_slots = 0

    def __init__(self, inlet="xmin", outlet="xmax", mode: str = "auto", walls="open", resolution: int = 32):
        self.inlet, self.outlet = inlet, outlet
        self.mode = _check_mode(mode, INLET_MODES + ("auto",))
        self.walls = _check_walls(walls)
        self.resolution = int(resolution)

    def bind(self, field: AbstractField) -> BoundInletOutlet:
        return BoundInletOutlet(*self._geometry(field), self.mode)


class ReleaseSchedule(eqx.Module):
    """When a `ContinuousInlet` releases: `rate` per unit time over `[t_start, t_stop)`, or
    `per_pulse` particles at each of `pulses`; `slots` spare slots hold them."""

    rate: float | None = eqx.field(static=True)
    t_start: float = eqx.field(static=True)
    t_stop: float | None = eqx.field(static=True)
    pulses: tuple[float, ...] | None = eqx.field(static=True)
    per_pulse: int = eqx.field(static=True)
    slots: int = eqx.field(static=True)

    def released_before(self, t: TimeLike):
        """How many releases are due strictly before time `t` (traced or not)."""
        if self.pulses is not None:
            return self.per_pulse * jnp.searchsorted(
                jnp.asarray(self.pulses, jnp.result_type(t)), t, side="left"
            ).astype(jnp.int32)
        # release k is due at t_start + (k + 1/2) / rate: mid-interval, so a step holding a whole
        # number of releases always gets exactly that many despite rounding of t
        cap = 2**30 if self.t_stop is None else int(np.floor((self.t_stop - self.t_start) * self.rate + 0.5))
        count = jnp.floor((t - self.t_start) * self.rate + 0.5)
        return jnp.clip(count, 0, cap).astype(jnp.int32)


class BoundContinuousInlet(AbstractInlet):
    """`ContinuousInlet` bound to a field: its planes, inlet surface and walls resolved."""

    inlet: Plane
    outlet: Plane | None
    walls: AbstractBoundary
    surface: InletSurface
    mode: str = eqx.field(static=True)
    schedule: ReleaseSchedule

    @property
    def extra_slots(self) -> int:
        return self.schedule.slots

    @property
    def parking(self) -> np.ndarray:
        return np.asarray(self.surface.vertices[0], np.float64)

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        x, status_b, hint_b, inside = self.walls.apply_batch(field, x_prev, x_next, status, hint, inside)
        if self.outlet is None:
            return x, status_b, hint_b, inside
        tolerance = plane_tolerance(field.bounds, x.dtype)
        gone = (status == Status.ACTIVE) & self.outlet.crossed(x_prev, x_next, tolerance)
        out = jnp.asarray(Status.OUT_OF_DOMAIN, status.dtype)
        return (
            jnp.where(gone[:, None], x_prev, x),
            jnp.where(gone, out, status_b),
            select(gone, hint, hint_b),
            inside | gone,
        )

    def restart(
        self, field: AbstractField, args: Args, t: TimeLike, h: TimeLike, step: Int[ArrayLike, ""], block: Block
    ):
        b, n_blocks = block.block, block.n_blocks

        def share(total):  # releases 0..total-1 go to blocks round-robin: release k to block k % n_blocks
            return jnp.maximum((total - b + n_blocks - 1) // n_blocks, 0)

        due = share(self.schedule.released_before(t + h)) - share(self.schedule.released_before(t))
        waiting = (block.status == Status.NOT_RELEASED) & jnp.isfinite(block.t_release)
        free = (block.index >= 0) & (block.status != Status.ACTIVE) & ~waiting
        rank = jnp.cumsum(free) - 1
        born = free & (rank < due)
        lost = jnp.maximum(due - jnp.sum(free), 0).astype(jnp.int32)
        return (*self._restart_rows(field, args, t + h, step, block, born), lost)


class ContinuousInlet(AbstractInletConfig):
    """Particles released on `inlet` at `rate` per unit time, or `per_pulse` at each of `pulses`.

    Each release takes a free slot: one of the `slots` spare slots appended after the seeds, or
    a slot whose particle has stopped (left the domain, absorbed, ...), which then starts a new
    path. Memory is fixed: give `slots` for the most particles alive at once. A release that
    finds no free slot is counted (`Trajectory.stats.lost_releases`) and reported, never silently lost.
    Releases due in a step appear on the inlet at its end and move from the next step on.

    **Arguments:**

    - `inlet`: as for `InletOutlet`; `mode`: `random` or `flux` (grid needs a seed per slot).
    - `rate`: particles per unit time from `t_start` (default 0) to `t_stop` (default: never
      stop); or `pulses`: release times, `per_pulse` particles at each.
    - `slots`: spare slots appended after the seeds.
    - `walls`: as for `InletOutlet`; `outlet`: optionally a plane through which particles
      leave (they stop as `OUT_OF_DOMAIN`, freeing their slot).
    """

    inlet: Plane | str | dict
    outlet: Plane | str | dict | None
    walls: AbstractBoundary | str | None
    mode: str = eqx.field(static=True)
    resolution: int = eqx.field(static=True)
    schedule: ReleaseSchedule

    def __init__(
        self,
        inlet="xmin",
        rate: float | None = None,
        *,
        pulses: Sequence[float] | None = None,
        per_pulse: int = 0,
        slots: int = 1000,
        mode: str = "random",
        t_start: float = 0.0,
        t_stop: float | None = None,
        walls="open",
        outlet=None,
        resolution: int = 32,
    ):
        self.inlet, self.outlet = inlet, outlet
        self.mode = _check_mode(mode, ("random", "flux"))
        if (rate is None) == (pulses is None):
            raise ValueError("ContinuousInlet: give either rate (particles per unit time) or pulses (release times)")
        if rate is not None and not (np.isfinite(rate) and rate > 0):
            raise ValueError(f"ContinuousInlet: rate must be a positive number, got {rate}")
        if pulses is not None:
            pulses = tuple(sorted(float(p) for p in pulses))
            if not pulses or int(per_pulse) < 1:
                raise ValueError(
                    f"ContinuousInlet: pulses need at least one time and per_pulse >= 1, got {pulses} and {per_pulse}"
                )
        if int(slots) < 1:
            raise ValueError(f"ContinuousInlet: slots must be positive, got {slots}")
        rate = None if rate is None else float(rate)
        self.schedule = ReleaseSchedule(
            rate, float(t_start), None if t_stop is None else float(t_stop), pulses, int(per_pulse), int(slots)
        )
        self.walls = _check_walls(walls)
        self.resolution = int(resolution)

    @property
    def extra_slots(self) -> int:
        return self.schedule.slots

    def bind(self, field: AbstractField) -> BoundContinuousInlet:
        return BoundContinuousInlet(*self._geometry(field), self.mode, self.schedule)
