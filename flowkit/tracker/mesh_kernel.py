"""The CPU mesh kernel (`flowkit.native`, `mesh_chunk.cc`) as the seam (`tracker.seam`) calls
it: what it takes, its declared interface, its inputs.

The kernel carries each group of particles of a block through all of a save interval's steps
before the next group, so that their cells stay in cache from stage to stage and step to step;
a pass of XLA kernels over the whole block per stage cannot keep them there. It finishes every
step itself as the run's boundary would: without walls (`fk.Open`) a step ending outside the
mesh leaves (`OUT_OF_DOMAIN`); under `fk.MeshWalls` it leaves through an opening, or a wall
stops it (`absorb`, `stick`) or turns it back (`reflect`, `slip`), from the walls' face table
(`BoundMeshWalls.kernel_faces`); a step ending not finite stops it (`NONFINITE`). Under an
`InletOutlet` it starts a row that went out through the outlet again on the inlet, in the same
step: at its slot's origin (`grid`) or drawn over the inlet (`random`, `flux`) from the same
hash of its key and the step as the JAX step (`flowkit.boundaries.draws`). Under a
`ContinuousInlet` it releases each step's due particles into the block's first free slots, and
its outlet stops the rows that go out through it.

Its interface is declared here by name (`MESH`): `KernelInputs`, `KernelResults` and
`KernelAttrs`, in the order and element types of the kernel's own declared layout
(`flowkit.native.layout("mesh")`), which the seam checks once before registering the targets.
"""

from typing import NamedTuple, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int32

from .._custom_types import TimeLike
from ..boundaries.base import AbstractBoundary
from ..boundaries.box import Open
from ..boundaries.inlet import INLET_MODES, AbstractInlet, BoundContinuousInlet, BoundInletOutlet
from ..boundaries.mesh import BoundMeshWalls, FaceKind
from ..boundaries.regions import plane_tolerance
from ..fields import cells
from ..fields.base import Hints
from ..fields.mesh import MeshField
from . import seam
from .pieces import Carry, Rows, RunPieces, Slots, Times
from .step import step_times

_WALLS = {"open": "open", "reflect": "reflect", "slip": "slip", "absorb": "absorb", "stick": "absorb"}
"""The kernel's wall mode for no walls and each `MeshWalls` mode (a stuck particle stops as an
absorbed one does, where its step met the wall)."""


class KernelInputs(NamedTuple):
    """The kernel's input buffers (`mesh_chunk.cc`, `FLOWKIT_MESH_INPUTS`): the block's rows,
    the steps' times, the tableau, then the mesh's tables; `Float` ones in the positions'
    precision. An absent table is an empty buffer."""

    x: Float[Array, "n 3"]
    status: Int32[Array, " n"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 3"]
    coords: Float[Array, "n 3"]
    release: Int32[Array, " n"]
    """The step in which a waiting row is released (-1: not in this interval)."""
    step_start: Float[Array, " steps"]
    step_length: Float[Array, " steps"]
    tableau: Float[Array, "rows columns"]
    affine_map: Float[Array, "cells map"]
    nodes: Int32[Array, "cells corners"]
    kind_of_cell: Int32[Array, " cells_or_none"]
    kind_code: Int32[Array, " kinds"]
    neighbours: Int32[Array, "cells faces"]
    values: Float[Array, "slices points 3"]
    times: Float[Array, " slices_or_none"]
    bin_origin: Float[Array, " 3"]
    bin_inv_size: Float[Array, " 3"]
    bin_shape: Int32[Array, " 3"]
    bin_start: Int32[Array, " bins_and_one"]
    bin_cells: Int32[Array, " entries"]
    wall_index: Int32[Array, " cells_or_none"]
    wall_rows: Float[Array, " wall_values"]
    face_index: Int32[Array, " cells_or_none"]
    face_rows: Float[Array, " face_values"]
    nudge: Float[Array, " 1"]
    """A slip's step inside the wall's plane, as `BoundMeshWalls.apply_batch` has it."""
    generation: Int32[Array, " n"]
    keys: Int32[Array, "n 2"]
    """Each slot's raw key (its two uint32 words), for an inlet's draws."""
    step_index: Int32[Array, " steps"]
    """The global number of each step, for an inlet's draws."""
    outlet: Float[Array, " outlet_or_none"]
    """An inlet's outlet plane: point, outward normal, region lo and hi, tolerance (13)."""
    origin: Float[Array, "n_or_none 3"]
    origin_cell: Int32[Array, " n_or_none"]
    origin_point: Float[Array, "n_or_none 3"]
    origin_coords: Float[Array, "n_or_none 3"]
    inlet_vertices: Float[Array, "vertices 3"]
    inlet_simplices: Int32[Array, "simplices 3"]
    inlet_measure: Float[Array, " simplices"]
    inlet_cell: Int32[Array, " simplices"]
    inflow: Float[Array, "steps_or_none vertices"]
    """A `flux` inlet's inflow `max(u · inward, 0)` at its vertices at the end of each step."""
    due: Int32[Array, " steps_or_none"]
    """A `ContinuousInlet`'s releases due in this block in each step."""
    slot_kind: Int32[Array, " n_or_none"]
    """A `ContinuousInlet`'s slots: -1 padding, 0 free when not moving, 1 waiting for its own
    release time while not released."""
    remainder: Float[Array, "n 3"]
    """What rounding left out of each row's position (`Rows.remainder`)."""


class KernelResults(NamedTuple):
    """The kernel's results (`FLOWKIT_MESH_RESULTS`): each row after the steps, its position
    before the last one, and for a row it stopped the step (-1: none) and the fraction of it
    done."""

    x: Float[Array, "n 3"]
    status: Int32[Array, " n"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 3"]
    coords: Float[Array, "n 3"]
    before: Float[Array, "n 3"]
    stopped: Int32[Array, " n"]
    fraction: Float[Array, " n"]
    generation: Int32[Array, " n"]
    lost: Int32[Array, " 1"]
    """A `ContinuousInlet`'s releases that found no free slot."""
    remainder: Float[Array, "n 3"]


class KernelAttrs(NamedTuple):
    """The kernel's attributes (`FLOWKIT_MESH_ATTRS`), read by name."""

    newton_steps: int
    walk_steps: int
    tolerance: float
    active: int
    not_released: int
    out_of_domain: int
    absorbed: int
    nonfinite: int
    wall_face: int
    walls: int
    max_bounces: int
    inlet: int
    continuous: int
    locate: int
    """1: no steps; each row's first hint by its bin's search alone (`kernel_located`)."""


def refusals(pieces: RunPieces, dtype: np.dtype) -> list[str]:
    """What of this run on a `MeshField` the kernel does not step, with positions of `dtype` (on
    CPUs with the kernel built: `tracker.kernels.kernel_use`), each in a phrase; none when it
    takes the run: tracers stepped by an explicit Runge–Kutta method on a 3-D mesh of point data stored
    in the positions' precision, with no walls (`fk.Open`), `fk.MeshWalls`, or an
    `fk.InletOutlet` or `fk.ContinuousInlet` with either as its walls. Anything else (particle
    models, stochastic or adaptive integrators, cell data, 2-D meshes, other boundaries) takes
    the JAX step, which computes the same tracks."""
    field, boundary = cast(MeshField, pieces.field), pieces.boundary
    inlet = not isinstance(boundary, AbstractInlet) or boundary.mode in INLET_MODES
    checks = (
        (field.dim == 3, f"a {field.dim}-D mesh"),
        (not field.cell_values, "cell data"),
        (_kernel_walls(boundary) and inlet, f"the boundary {type(boundary).__name__}"),
        (all(kind in MESH.kinds for kind in field.kinds), f"cells of the kinds {sorted(field.kinds)}"),
    )
    stored = (field.values, field.affine_map, field.bin_origin)
    return [phrase for ok, phrase in checks if not ok] + seam.stepping_refusals(pieces, jnp.dtype(dtype), stored)


def _walls(boundary: AbstractBoundary) -> AbstractBoundary:
    """The walls of a run's boundary: an inlet's own, or the boundary itself."""
    return boundary.walls if isinstance(boundary, AbstractInlet) else boundary


def _kernel_walls(boundary: AbstractBoundary) -> bool:
    """Whether the kernel finishes steps at these walls (or an inlet's walls): none, or
    `MeshWalls` with their face table."""
    walls = _walls(boundary)
    return isinstance(walls, Open) or (isinstance(walls, BoundMeshWalls) and walls.kernel_faces is not None)


def kernel_steps(
    pieces: RunPieces,
    times: Times,
    carry: Carry,
    slots: Slots,
    steps: Int32[Array, " steps"],
    block_id: Int32[Array, ""],
    *,
    n_blocks: int,
) -> tuple[Carry, Float[Array, "n 3"]]:
    """The global `steps` of block `block_id` (of `n_blocks`) by the kernel, and each row's
    position before the last of them."""
    rows = carry.rows
    t, h = step_times(times, steps)
    release = seam.release_steps(rows, slots, times, t, h)
    inputs = _inputs(pieces, rows, slots, release, steps, t, h, block_id, n_blocks)
    out = _call(inputs, _attrs(pieces))
    hint = seam.hints_of(out, rows.hint)
    at = jnp.maximum(out.stopped, 0)  # a row the kernel stopped did so `fraction` into that step, as in `one_step`
    stopped_at = (t[at] + out.fraction.astype(t.dtype) * h[at]).astype(rows.exit_time.dtype)
    exit_time = jnp.where(out.stopped >= 0, stopped_at, rows.exit_time)
    generation = out.generation.astype(rows.generation.dtype)
    never = jnp.asarray(jnp.inf, exit_time.dtype) * jnp.sign(times.dt)  # a restarted row has not left
    exit_time = jnp.where((generation != rows.generation) & (out.stopped < 0), never, exit_time)
    status = out.status.astype(rows.status.dtype)
    carry = eqx.tree_at(
        lambda c: (c.rows.x, c.rows.status, c.rows.exit_time, c.rows.hint, c.rows.generation, c.rows.remainder, c.lost),
        carry,
        (out.x, status, exit_time, hint, generation, out.remainder, carry.lost + out.lost[0].astype(carry.lost.dtype)),
    )
    return carry, out.before


def _call(inputs: KernelInputs, attrs: KernelAttrs) -> KernelResults:
    """The kernel's results for these inputs and attributes (the target of the rows' precision)."""
    (n, _), dtype = inputs.x.shape, inputs.x.dtype
    vectors, reals, ints = (
        jax.ShapeDtypeStruct(shape, kind) for shape, kind in (((n, 3), dtype), ((n,), dtype), ((n,), jnp.int32))
    )
    shapes = KernelResults(
        x=vectors,
        status=ints,
        cell=ints,
        point=vectors,
        coords=vectors,
        before=vectors,
        stopped=ints,
        fraction=reals,
        generation=ints,
        lost=jax.ShapeDtypeStruct((1,), jnp.int32),
        remainder=vectors,
    )
    return seam.call(MESH, inputs, attrs, shapes)


def kernel_located(
    pieces: RunPieces, t0: TimeLike, x: Float[Array, "n 3"]
) -> tuple[Float[Array, "n 3"], Hints, Bool[Array, " n"], None]:
    """The seeds `x` (a mesh settles nothing at `t0`), each located by its bin's search alone, as
    `MeshField.locate_batch` locates points hinted nowhere: `(x, hints (exact), inside, None)` (a
    mesh has no land), by the kernel's search, so a run that the kernel steps compiles no JAX walk
    or search at all."""
    n, dtype = x.shape[0], x.dtype
    hint = pieces.field.hints(n, dtype)
    never = jnp.zeros(n, jnp.int32)
    rows = Rows(x, never, jnp.zeros(n, dtype), hint, {}, never, jnp.zeros_like(x))
    keys = jnp.zeros((n, 2), jnp.uint32)
    slots = Slots(t_release=jnp.zeros(n, dtype), keys=keys, origin=x, origin_hint=hint, index=never)
    none = jnp.zeros(0, dtype)
    inputs = _inputs(pieces, rows, slots, jnp.full(n, -1, jnp.int32), jnp.zeros(0, jnp.int32), none, none, 0, 1)
    out = _call(inputs, _attrs(pieces)._replace(locate=np.int64(1)))
    located = Hints(
        out.cell.astype(hint.cell.dtype), out.point.astype(hint.point.dtype), out.coords.astype(hint.coords.dtype)
    )
    return x, located.marked(True), out.cell >= 0, None


def _releases(boundary: AbstractBoundary, slots: Slots, t, h, block_id, n_blocks: int) -> dict:
    """A `ContinuousInlet`'s releases due in this block in each step (`share`: releases go to
    the blocks round-robin, as `BoundContinuousInlet.restart` deals them) and its slots' kinds;
    empty buffers for any other boundary."""
    if not isinstance(boundary, BoundContinuousInlet):
        return dict(due=jnp.zeros(0, jnp.int32), slot_kind=jnp.zeros(0, jnp.int32))

    def share(total):
        return jnp.maximum((total - block_id + n_blocks - 1) // n_blocks, 0)

    schedule = boundary.schedule
    released = jax.vmap(schedule.released_before)
    due = share(released(t + h)) - share(released(t))
    kind = jnp.where(slots.index < 0, -1, jnp.where(jnp.isfinite(slots.t_release), 1, 0))
    return dict(due=due.astype(jnp.int32), slot_kind=kind.astype(jnp.int32))


def _inputs(pieces: RunPieces, rows: Rows, slots: Slots, release, steps, t, h, block_id, n_blocks: int) -> KernelInputs:
    """Block `block_id`'s rows, its steps' times and the run's tables as the kernel reads them."""
    field, x, hint = cast(MeshField, pieces.field), rows.x, rows.hint
    dtype = x.dtype
    none = lambda kind=jnp.int32: jnp.zeros(0, kind)  # noqa: E731
    face_index, face_rows = _face_table(pieces, dtype)
    return KernelInputs(
        x=x,
        status=rows.status.astype(jnp.int32),
        cell=hint.cell.astype(jnp.int32),
        point=hint.point.astype(dtype),
        coords=hint.coords.astype(dtype),
        release=release,
        step_start=t.astype(dtype),
        step_length=h.astype(dtype),
        tableau=seam.tableau_rows(pieces.integrator, dtype),
        affine_map=field.affine_map,
        nodes=field.nodes,
        kind_of_cell=field.kind_of_cell if field.kind_of_cell is not None else none(),
        kind_code=jnp.asarray([seam.code(MESH, "kinds", k) for k in field.kinds], jnp.int32),
        neighbours=field.neighbours,
        values=field.values,
        times=field.times if field.times is not None else none(dtype),
        bin_origin=field.bin_origin,
        bin_inv_size=field.bin_inv_size,
        bin_shape=jnp.asarray(field.bin_shape, jnp.int32),
        bin_start=field.bin_start,
        bin_cells=field.bin_cells,
        wall_index=field.near_wall[0] if field.near_wall is not None else none(),
        wall_rows=field.near_wall[1].reshape(-1) if field.near_wall is not None else none(dtype),
        face_index=face_index,
        face_rows=face_rows,
        nudge=(64 * jnp.finfo(dtype).eps * jnp.max(field.bounds[1] - field.bounds[0]).astype(dtype)).reshape(1),
        generation=rows.generation.astype(jnp.int32),
        keys=jax.lax.bitcast_convert_type(jnp.asarray(slots.keys, jnp.uint32), jnp.int32),
        step_index=steps.astype(jnp.int32),
        **_inlet_inputs(pieces, slots, t + h, dtype),
        **_releases(pieces.boundary, slots, t, h, block_id, n_blocks),
        remainder=rows.remainder.astype(dtype),
    )


def _inlet_inputs(pieces: RunPieces, slots: Slots, ends, dtype) -> dict:
    """An inlet's buffers (empty ones for what its mode or a run without one needs not): its
    outlet's plane, the slots' origins and their hints (`grid`), the simplices covering the
    inlet (`random`, `flux`) and the inflow at their vertices at each step's end `ends` (`flux`);
    a `ContinuousInlet`'s releases are `_releases`'."""
    boundary, field = pieces.boundary, pieces.field
    vectors = lambda kind=dtype: jnp.zeros((0, 3), kind)  # noqa: E731
    buffers = dict(
        outlet=jnp.zeros(0, dtype),
        origin=vectors(),
        origin_cell=jnp.zeros(0, jnp.int32),
        origin_point=vectors(),
        origin_coords=vectors(),
        inlet_vertices=vectors(),
        inlet_simplices=vectors(jnp.int32),
        inlet_measure=jnp.zeros(0, dtype),
        inlet_cell=jnp.zeros(0, jnp.int32),
        inflow=jnp.zeros((0, 0), dtype),
    )
    if not isinstance(boundary, AbstractInlet):
        return buffers
    plane = cast(BoundInletOutlet | BoundContinuousInlet, boundary).outlet
    if plane is not None:
        tolerance = plane_tolerance(field.bounds, dtype).reshape(1)
        buffers["outlet"] = jnp.concatenate([plane.point, plane.normal, plane.lo, plane.hi, tolerance]).astype(dtype)
    if boundary.mode == "grid":
        hint = slots.origin_hint
        buffers.update(
            origin=slots.origin.astype(dtype),
            origin_cell=hint.cell.astype(jnp.int32),
            origin_point=hint.point.astype(dtype),
            origin_coords=hint.coords.astype(dtype),
        )
        return buffers
    surface = boundary.surface
    buffers.update(
        inlet_vertices=surface.vertices.astype(dtype),
        inlet_simplices=surface.simplices.astype(jnp.int32),
        inlet_measure=surface.measure.astype(dtype),
        inlet_cell=surface.cell.astype(jnp.int32),
    )
    if boundary.mode == "flux":
        speed = jax.vmap(lambda end: surface.normal_speed(field, pieces.args, end))(ends)
        buffers["inflow"] = speed.astype(dtype)
    return buffers


def _attrs(pieces: RunPieces) -> KernelAttrs:
    """The run's settings and Python's codes, as the kernel's attributes."""
    field, boundary = cast(MeshField, pieces.field), pieces.boundary
    bound = _walls(boundary)
    walls = _WALLS[bound.mode if isinstance(bound, BoundMeshWalls) else "open"]
    inlet = boundary.mode if isinstance(boundary, AbstractInlet) else "none"
    return KernelAttrs(
        newton_steps=np.int64(field.newton_steps),
        walk_steps=np.int64(field.walk_steps),
        tolerance=float(field.containment_tolerance()),
        **seam.status_codes(KernelAttrs),
        wall_face=np.int64(FaceKind.WALL),
        walls=np.int64(seam.code(MESH, "walls", walls)),
        max_bounces=np.int64(getattr(bound, "max_bounces", 0)),
        inlet=np.int64(seam.code(MESH, "inlets", inlet)),
        continuous=np.int64(isinstance(boundary, BoundContinuousInlet)),
        locate=np.int64(0),
    )


def _face_table(pieces: RunPieces, dtype) -> tuple:
    """The walls' face table (`BoundMeshWalls.face_table`), flattened; empty without walls."""
    boundary = _walls(pieces.boundary)
    if isinstance(boundary, BoundMeshWalls) and boundary.kernel_faces is not None:
        index, rows = boundary.kernel_faces
        return index, rows.astype(dtype).reshape(-1)
    return jnp.zeros(0, jnp.int32), jnp.zeros(0, dtype)


MESH = seam.Kernel(
    name="mesh",
    inputs=KernelInputs,
    results=KernelResults,
    attrs=KernelAttrs,
    kinds={kind.name: kind.nodes for kind in cells.KINDS.values() if kind.dim == 3},
    refusals=refusals,
    steps=kernel_steps,
    located=kernel_located,
    modes={"walls": tuple(dict.fromkeys(_WALLS.values())), "inlets": ("none", *INLET_MODES)},
    capacity={"map_columns": 3 + 3 * 3 + cells.box_columns(3)},
)
"""The mesh kernel as the seam declares and calls it."""
