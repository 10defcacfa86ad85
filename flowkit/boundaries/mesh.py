"""Walls of an unstructured mesh: what a particle does when its step would leave through a face.

The step's end point is located by the mesh's own walk; for a point outside, the walk stops in
the boundary cell it left through, and the most violated face of that cell is the wall it
crossed. Its plane (centre and outward normal) comes from the face's nodes. No search over
faces or cells happens: the geometry is the walk's.
"""

import enum
import logging
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import Positions, ScalarLike
from .._status import Status
from ..fields.base import AbstractField, Hints, select
from ..fields.mesh import AbstractMeshField, MeshField
from ..fields.near_wall import wall_table
from .base import AbstractWalls, AbstractWallsConfig, mirrored
from .modes import wall_mode
from .regions import Plane, plane_tolerance, region

MESH_MODES = ("reflect", "slip", "absorb", "stick")

_log = logging.getLogger("flowkit")


class FaceKind(enum.IntEnum):
    """A face's kind in the walls' face table (`BoundMeshWalls.face_table`)."""

    INTERIOR = 0
    WALL = 1
    OPENING = 2


class BoundMeshWalls(AbstractWalls):
    """`MeshWalls` bound to a mesh: its open regions resolved into planes."""

    mode: str = eqx.field(static=True)
    open: tuple[Plane, ...]
    max_bounces: int = eqx.field(static=True)
    open_faces: Bool[Array, "C F"] | None = None
    kernel_faces: tuple[Int[Array, " C"], Float[Array, "B F 7"]] | None = None  # `face_table`, for the mesh kernel

    def _wall(self, field, hint, x, outside):
        """For the rows `outside` the mesh: the face their walk stopped at (`hint.cell`), its
        plane, and whether it is a wall (a boundary face on no open region)."""
        cell, mesh = hint.cell, field.as_mesh()
        face, across = mesh.exit_face(cell, x, ~outside)
        centre, normal = mesh.face_planes(jnp.maximum(cell, 0), face)
        return centre, normal, (across < 0) & ~self._opened(field, jnp.maximum(cell, 0), face, centre, normal)

    def _opened(self, field, cell, face, centre, normal):
        """Whether each boundary face (`cell`, local `face`, its plane) is open: on an open
        region, or among the faces the flow leaves through."""
        tolerance = plane_tolerance(field.bounds, centre.dtype)
        is_open = jnp.zeros(cell.shape[0], bool)
        for opening in self.open:
            is_open = is_open | opening.holds(centre, normal, tolerance)
        if self.open_faces is not None:
            is_open = is_open | self.open_faces[cell, face]
        return is_open

    def _boundary(self, field: MeshField) -> tuple[np.ndarray, ...]:
        """`(cell, face, centre, normal, open)` of each of the mesh's boundary faces, on the host."""
        cell, face = (jnp.asarray(a, jnp.int32) for a in field.boundary_faces()[:2])
        centre, normal = field.face_planes(cell, face)
        is_open = self._opened(field, cell, face, centre, normal)
        return tuple(np.asarray(a) for a in (cell, face, centre, normal, is_open))

    def face_table(self, field: MeshField) -> tuple[np.ndarray, np.ndarray]:
        """`(index (C,), rows (B, F, 7))`: each cell with a boundary face, its row (-1: none) of
        per-face centre, outward unit normal and `FaceKind` as `_wall` finds them: what the mesh
        kernel reads to finish a step that leaves the mesh."""
        cell, face, centre, normal, is_open = self._boundary(field)
        bounded, row = np.unique(cell, return_inverse=True)
        index = np.full(field.n_cells, -1, np.int32)
        index[bounded] = np.arange(len(bounded), dtype=np.int32)
        rows = np.zeros((len(bounded), np.asarray(field.neighbours).shape[1], 7))
        rows[row.ravel(), face] = np.column_stack([centre, normal, np.where(is_open, FaceKind.OPENING, FaceKind.WALL)])
        return index, rows

    def near_wall_field(self, field: MeshField) -> MeshField:
        """`field` with its no-slip walls' table (`fields.near_wall`): beside the faces these
        walls keep closed whose data are at rest, the tracker's normal velocity grows as the
        square of the distance, and tracers do not pile up on them."""
        if self.kernel_faces is not None:  # the kinds `face_table` found at bind, in `boundary_faces` order
            cell, face = field.boundary_faces()[:2]
            index, rows = (np.asarray(a) for a in self.kernel_faces)
            is_open = rows[index[cell], face, 6] == FaceKind.OPENING
        else:
            is_open = self._boundary(field)[4]
        table = wall_table(field, ~is_open)
        if table is None:
            return field
        index, rows = table
        _log.info(
            "walls: %d faces are no-slip (the data at rest on them): the normal velocity in their cells "
            "grows as the distance squared, as continuity has it",
            int(np.count_nonzero(rows[..., -1] > 0)),
        )
        near = (jnp.asarray(index), jnp.asarray(rows, field.values.dtype))
        return eqx.tree_at(lambda f: f.near_wall, field, near, is_leaf=lambda leaf: leaf is None)

    def apply_batch(
        self,
        field: AbstractField,
        x_prev: Positions,
        x_next: Positions,
        status: Int[Array, " n"],
        hint: Hints,
        inside: Bool[Array, " n"],
    ):
        active = status == Status.ACTIVE
        if self.mode in ("absorb", "stick"):
            centre, normal, wall = self._wall(field, hint, x_next, active & ~inside)
            hit = active & ~inside & wall
            step = x_next - x_prev
            along = jnp.sum(step * normal, axis=1)
            s = jnp.clip(jnp.sum((centre - x_prev) * normal, axis=1) / jnp.where(along == 0, 1, along), 0, 1)
            x = jnp.where(hit[:, None], x_prev + s[:, None] * step, x_next)
            absorbed = jnp.asarray(Status.ABSORBED, status.dtype)
            return x, jnp.where(hit, absorbed, status), hint, inside | hit

        nudge = 64 * jnp.finfo(x_next.dtype).eps * jnp.max(field.bounds[1] - field.bounds[0]).astype(x_next.dtype)

        def bounce(carry):
            i, x, found, inside, hit, pending, escaped = carry
            centre, normal, wall = self._wall(field, found, x, pending)
            depth = jnp.sum((x - centre) * normal, axis=1, keepdims=True)
            moved = x - (2 * depth if self.mode == "reflect" else depth + nudge) * normal
            turn = pending & wall
            x = jnp.where(turn[:, None], moved, x)
            found, inside = field.locate_batch(x, found)
            return i + 1, x, found, inside, hit | turn, turn & ~inside, escaped | (pending & ~wall)

        def more(carry):
            return (carry[0] < self.max_bounces) & jnp.any(carry[5])

        pending = active & ~inside
        none = jnp.zeros_like(inside)
        _, x, found, inside, hit, _, escaped = jax.lax.while_loop(
            more, bounce, (0, x_next, hint, inside, none, pending, none)
        )
        stuck = (
            hit & ~inside & ~escaped
        )  # still outside after the bounces, and not through an opening: stay where the step began
        return jnp.where(stuck[:, None], x_prev, x), status, select(stuck, hint, found), inside | stuck

    def turn_velocity(self, x_step: Positions, x: Positions, v: Positions, restitution: ScalarLike):
        if self.mode not in ("reflect", "slip"):
            return v
        push = x_step - x  # along the outward normal of the wall the step crossed
        normal = push / jnp.maximum(jnp.linalg.norm(push, axis=1, keepdims=True), jnp.finfo(v.dtype).tiny)
        return mirrored(v, normal, restitution if self.mode == "reflect" else 0.0)


class MeshWalls(AbstractWallsConfig):
    """The walls of a `MeshField`'s domain.

    - `reflect`: specular reflection on the wall's plane (the displacement beyond the wall is
      mirrored); repeated, up to `max_bounces` times, while the mirrored point is still outside
      (corners, a second wall).
    - `slip`: the point is projected onto the wall (just inside): the particle slides along it.
    - `absorb` / `stick`: the particle stops where its step met the wall, status `ABSORBED`.

    Faces on an `open` region (a side name, a `Plane`, or `{point, normal[, lo, hi]}`) are not
    walls: particles leave through them and are marked `OUT_OF_DOMAIN`. `"outflow"` among them
    opens every boundary face through which the data's flow leaves (`outflow_faces`). A reflected or slipped
    particle still outside after `max_bounces` (a step much longer than the cells, or a
    non-convex corner) stays where its step began.
    """

    mode: str = eqx.field(static=True)
    open: tuple[Plane | str | dict, ...]
    max_bounces: int = eqx.field(static=True)

    def __init__(self, mode: str = "reflect", open: Sequence = (), max_bounces: int = 4):
        self.mode = wall_mode(mode, MESH_MODES, "MeshWalls: mode")
        self.open = tuple([open] if isinstance(open, (str, Plane)) else open)
        self.max_bounces = int(max_bounces)

    def bind(self, field: AbstractField) -> BoundMeshWalls:
        if not isinstance(field, AbstractMeshField):
            raise TypeError(
                f"MeshWalls needs a MeshField, got {type(field).__name__}; for a box use "
                "fk.Reflective/fk.Absorbing(bounds)"
            )
        planes = tuple(region(spec, field) for spec in self.open if spec != "outflow")
        mesh = field.as_mesh()
        bound = BoundMeshWalls(
            self.mode, planes, self.max_bounces, outflow_faces(mesh) if "outflow" in self.open else None
        )
        if type(mesh) is not MeshField or mesh.dim != 3:
            return bound
        index, rows = bound.face_table(mesh)
        faces = (jnp.asarray(index), jnp.asarray(rows, mesh.values.dtype))
        return eqx.tree_at(lambda b: b.kernel_faces, bound, faces, is_leaf=lambda leaf: leaf is None)


def outflow_faces(mesh, threshold: float = 0.05, angle: float = 30.0) -> Bool[Array, "C F"]:
    """Per cell and local face, whether it is a boundary face the flow leaves through: the
    velocity there, averaged over the face's nodes and the data's times, leaves at least
    `angle` degrees off the face with a normal component above `threshold` times the median
    speed of the data. Wall nodes of cell-centred solvers (Fluent, CGNS) carry the mean of their
    cells, so a wall's velocity is small and mostly along it: such faces stay walls. Logged with
    the area of the open and the wall faces."""
    cell, face, nodes = mesh.boundary_faces()
    centre, normal = (
        np.asarray(a, np.float64) for a in mesh.face_planes(jnp.asarray(cell, jnp.int32), jnp.asarray(face, jnp.int32))
    )
    values = np.asarray(mesh.values, np.float64).mean(axis=0)  # (P or C, dim): the data's mean flow
    at_face = values[cell] if mesh.cell_values else values[nodes].mean(axis=1)
    speed = np.median(np.linalg.norm(values, axis=1))
    outward = np.sum(at_face * normal, axis=1)
    leaving = (outward > threshold * max(speed, np.finfo(np.float64).tiny)) & (
        outward > np.sin(np.radians(angle)) * np.linalg.norm(at_face, axis=1)
    )
    corners = np.asarray(mesh.points, np.float64)[nodes]
    if mesh.dim == 2:
        area = np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1)
    else:
        area = 0.5 * np.linalg.norm(np.cross(corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1]), axis=1)
    _log.info(
        "boundary: %d faces the flow leaves through are open (area %.4g), %d are walls (area %.4g)",
        leaving.sum(),
        area[leaving].sum(),
        (~leaving).sum(),
        area[~leaving].sum(),
    )
    table = np.zeros(tuple(mesh.neighbours.shape), bool)
    table[cell, face] = leaving
    return jnp.asarray(table)
