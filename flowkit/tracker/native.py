"""A save interval's steps through the CPU mesh kernel (`flowkit.native`), where it applies.

The kernel carries each group of particles of a block through all of the interval's steps
before the next group, so that their cells stay in cache from stage to stage and step to
step; a pass of XLA kernels over the whole block per stage cannot keep them there. It takes
the steps whose points lie in the mesh, which is nearly all of them, and finishes those that
end outside it as the run's boundary does: without walls (`fk.Open`) the row leaves
(`OUT_OF_DOMAIN`); under `fk.MeshWalls` it leaves through an opening, or a wall stops it
(`absorb`, `stick`) or turns it back (`reflect`, `slip`), from the walls' face table
(`BoundMeshWalls.kernel_faces`); a step ending not finite stops it (`NONFINITE`). A step it
cannot finish (another boundary, a row with no cell) it leaves undone; with `finish`, from that step
on the row is stepped here by `one_step`, in compact batches, with the rest of the block held:
walls, openings and statuses stay in one place. Without `finish` those rows are counted, and
the run takes the chunk again with it (`TrackRun`): a program without the JAX step compiles in
a third of the time, and runs whose particles stay inside never need the other.
"""

from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from .. import native
from .._status import Status
from ..boundaries.box import Open
from ..boundaries.mesh import BoundMeshWalls
from ..fields.base import Hints
from ..fields.mesh import MeshField
from ..integrators.runge_kutta import AbstractRungeKutta
from ..particles.base import is_tracer
from .pieces import RunPieces, Slots, Times
from .step import is_due, jax_steps, step_times

KIND_CODES = {"tetra": 0, "hexahedron": 1, "wedge": 2, "pyramid": 3}
"""The kernel's code of each 3-D cell kind (`mesh_chunk.cc`, `enum Kind`)."""


def applies(pieces: RunPieces, dtype) -> bool:
    """Whether the kernel takes the steps of this run, with positions of `dtype`, where the
    devices are CPUs and the kernel is built (`TrackRun` checks those):
    tracers stepped by an explicit Runge–Kutta method on a 3-D `MeshField` of point data stored
    in the positions' precision, under a boundary that leaves steps ending inside the mesh as
    they are. Anything else (particle models, stochastic or adaptive integrators, cell data,
    2-D meshes, inlets) takes the JAX step, which computes the same tracks."""
    field, dtype = pieces.field, jnp.dtype(dtype)
    return (
        dtype.name in native.TARGETS
        and type(field) is MeshField
        and field.dim == 3
        and not field.cell_values
        and field.values.dtype == dtype
        and field.affine_map.dtype == dtype
        and field.bin_origin.dtype == dtype
        and all(kind in KIND_CODES for kind in field.kinds)
        and isinstance(pieces.integrator, AbstractRungeKutta)
        and not pieces.integrator.stochastic
        and is_tracer(pieces.particles)
        and pieces.boundary.passes_inside
        and not pieces.boundary.restarts
    )


def kernel_steps(
    pieces: RunPieces, times: Times, carry: tuple, slots: Slots, steps, block_id, *, n_blocks, given, finish: bool
):
    """The global `steps` of a block (`carry` as `one_step`'s), each row's position before the
    last of them, and how many rows were left unfinished: the kernel's steps, then (`finish`)
    `one_step` from where it stopped for the rows it left. Without `finish` those rows stay
    where the kernel left them, counted: the caller runs the steps again with `finish`."""
    field = cast(MeshField, pieces.field)  # as `applies` checked
    x, status, exit_time, hint, variables, generation, lost = carry
    dtype = x.dtype
    t, h = step_times(times, steps)
    due = (status == Status.NOT_RELEASED)[:, None] & jax.vmap(
        lambda end: is_due(end, slots.t_release, times.dt), out_axes=1
    )(t + h)
    release = jnp.where(jnp.any(due, axis=1), jnp.argmax(due, axis=1), -1).astype(jnp.int32)
    n = x.shape[0]
    row = lambda width, kind=dtype: jax.ShapeDtypeStruct((n, width) if width else (n,), kind)  # noqa: E731
    call = jax.ffi.ffi_call(
        native.TARGETS[jnp.dtype(dtype).name],
        (row(3), row(0, jnp.int32), row(0, jnp.int32), row(3), row(3), row(0, jnp.int32), row(3))
        + (row(0, jnp.int32), row(0)),
    )
    walls, faces = _walls(pieces, dtype)
    x, status_k, cell, point, coords, resume, before, stopped, fraction = call(
        x,
        status.astype(jnp.int32),
        hint.cell.astype(jnp.int32),
        hint.point.astype(dtype),
        hint.coords.astype(dtype),
        release,
        t.astype(dtype),
        h.astype(dtype),
        jnp.asarray(_tableau(cast(AbstractRungeKutta, pieces.integrator).tableau), dtype),
        field.affine_map,
        field.nodes,
        field.kind_of_cell if field.kind_of_cell is not None else jnp.zeros(0, jnp.int32),
        jnp.asarray([KIND_CODES[k] for k in field.kinds], jnp.int32),
        field.neighbours,
        field.values,
        field.times if field.times is not None else jnp.zeros(0, dtype),
        field.bin_origin,
        field.bin_inv_size,
        jnp.asarray(field.bin_shape, jnp.int32),
        field.bin_start,
        field.bin_cells,
        field.near_wall[0] if field.near_wall is not None else jnp.zeros(0, jnp.int32),
        field.near_wall[1].reshape(-1) if field.near_wall is not None else jnp.zeros(0, dtype),
        *faces,
        # a slip's step inside the wall's plane, as BoundMeshWalls.apply_batch has it
        (64 * jnp.finfo(dtype).eps * jnp.max(field.bounds[1] - field.bounds[0]).astype(dtype)).reshape(1),
        newton_steps=np.int64(field.newton_steps),
        walk_steps=np.int64(field.walk_steps),
        tolerance=float(field._tolerance()),
        active=np.int64(Status.ACTIVE),
        not_released=np.int64(Status.NOT_RELEASED),
        out_of_domain=np.int64(Status.OUT_OF_DOMAIN),
        absorbed=np.int64(Status.ABSORBED),
        nonfinite=np.int64(Status.NONFINITE),
        walls=np.int64(walls),
        max_bounces=np.int64(getattr(pieces.boundary, "max_bounces", 0)),
    )
    hint = Hints(cell.astype(hint.cell.dtype), point.astype(hint.point.dtype), coords.astype(hint.coords.dtype))
    at = jnp.maximum(stopped, 0)  # a row the kernel stopped did so `fraction` into that step, as in `one_step`
    exit_time = jnp.where(stopped >= 0, (t[at] + fraction.astype(t.dtype) * h[at]).astype(exit_time.dtype), exit_time)
    carry = (x, status_k.astype(status.dtype), exit_time, hint, variables, generation, lost)
    left = resume < steps.shape[0]
    if not finish:
        return carry, before, jnp.sum(left, dtype=jnp.int32)

    finished = lambda c, b: _finished(pieces, times, c, b, slots, steps, resume, left, block_id, n_blocks, given)  # noqa: E731
    carry, before = jax.lax.cond(jnp.any(left), finished, lambda c, b: (c, b), carry, before)
    return carry, before, jnp.zeros((), jnp.int32)


def _finished(
    pieces: RunPieces, times: Times, carry, before, slots: Slots, steps, resume, left, block_id, n_blocks, given
):
    """The rows `left` by the kernel stepped by `one_step` from their `resume` step on (held
    before it), in compact batches of at most a sixteenth of the block."""
    n, count = carry[0].shape[0], steps.shape[0]
    batch = min(n, max(64, n // 16))
    lost = carry[6]

    def body(loop):
        left, carry, before = loop
        rows = jnp.nonzero(left, size=batch, fill_value=n)[0]
        take = lambda tree: jax.tree.map(lambda a: a[jnp.minimum(rows, n - 1)], tree)  # noqa: E731
        start = jnp.where(rows == n, count, take(resume))  # padding is held throughout
        rows_carry, rows_before = jax_steps(
            pieces,
            times,
            take(carry[:6]) + (lost,),
            take(slots),
            steps,
            block_id,
            n_blocks=n_blocks,
            given=given,
            start=start,
            before=take(before),
        )
        put = lambda a, v: a.at[rows].set(v, mode="drop")  # noqa: E731
        carry = jax.tree.map(put, carry[:6], rows_carry[:6]) + (lost,)
        return put(left, False), carry, put(before, rows_before)

    _, carry, before = jax.lax.while_loop(lambda loop: jnp.any(loop[0]), body, (left, carry, before))
    return carry, before


_WALLS = {None: -1, "open": 0, "reflect": 1, "slip": 2, "absorb": 3, "stick": 3}
"""The kernel's code of what an end outside the mesh meets (`mesh_chunk.cc`, `enum Walls`):
the JAX step decides (-1), no walls, or `MeshWalls`' mode."""


def _walls(pieces: RunPieces, dtype) -> tuple[int, tuple]:
    """The kernel's `walls` code and the walls' face table (`BoundMeshWalls.face_table`; empty
    without walls) for the run's boundary."""
    boundary = pieces.boundary
    none = (jnp.zeros(0, jnp.int32), jnp.zeros(0, dtype))
    if isinstance(boundary, Open):
        return _WALLS["open"], none
    if isinstance(boundary, BoundMeshWalls) and boundary.kernel_faces is not None:
        index, rows = boundary.kernel_faces
        return _WALLS[boundary.mode], (index, rows.astype(dtype).reshape(-1))
    return _WALLS[None], none


def _tableau(tableau) -> np.ndarray:
    """`(rows, rows + 1)`: the stage matrix with the weights as its last row, the nodes (1 for
    the end point) as the last column: one row per point the kernel locates."""
    stages = tableau.b.shape[0]
    table = np.zeros((stages + 1, stages + 2))
    table[:stages, :stages] = tableau.a
    table[stages, :stages] = tableau.b
    table[:stages, -1] = tableau.c
    table[stages, -1] = 1.0
    return table
