"""The faces of a `MeshField`'s cells: their planes (walls, inlets) and the mesh's boundary."""

from typing import Any, Protocol, runtime_checkable

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from . import cells as _cells


@runtime_checkable
class CellTable(Protocol):
    """What the faces are read from: a `MeshField`'s points, cells and their kinds."""

    points: Any
    nodes: Any
    neighbours: Any
    kind_of_cell: Any
    kinds: tuple[str, ...]

    @property
    def dim(self) -> int: ...

    @property
    def n_cells(self) -> int: ...


def face_table(kinds: tuple[str, ...], n_faces: int) -> np.ndarray:
    """`(K, F, 4)` local node indices of each kind's faces (a triangle repeats its last node, an
    edge in 2-D its ends; unused face slots repeat face 0)."""
    table = np.zeros((len(kinds), n_faces, 4), dtype=np.int64)
    for k, name in enumerate(kinds):
        kind_faces = _cells.KINDS[name].faces
        for f in range(n_faces):
            face = kind_faces[f if f < len(kind_faces) else 0]
            table[k, f] = list(face) + [face[-1]] * (4 - len(face))
    return table


def face_planes(
    mesh: CellTable, cell: Int[Array, " n"], face: Int[Array, " n"]
) -> tuple[Float[Array, "n dim"], Float[Array, "n dim"]]:
    """`(centre, normal)` of face `face` of each `cell`: a point on it and its outward unit normal
    (a quad's from its diagonals, so a warped quad gets its mean plane)."""
    table = jnp.asarray(face_table(mesh.kinds, mesh.neighbours.shape[1]), jnp.int32)
    kind = jnp.zeros_like(cell) if mesh.kind_of_cell is None else mesh.kind_of_cell[cell]
    local = table[kind, face]  # (n, 4)
    nodes = jnp.take_along_axis(mesh.nodes[cell], local, axis=1)
    corners = mesh.points[nodes]  # (n, 4, dim)
    centre = jnp.mean(corners, axis=1)
    if mesh.dim == 2:
        edge = corners[:, 1] - corners[:, 0]
        normal = jnp.stack([edge[:, 1], -edge[:, 0]], axis=-1)
    else:
        normal = jnp.cross(corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1])
    inward = jnp.mean(mesh.points[mesh.nodes[cell]], axis=1) - centre  # toward a point inside the cell
    normal = jnp.where(jnp.sum(normal * inward, axis=1, keepdims=True) > 0, -normal, normal)
    return centre, normal / jnp.linalg.norm(normal, axis=1, keepdims=True)


def boundary_faces(mesh: CellTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The faces on the mesh boundary (host side): `(cell, face, nodes)` with `nodes` the `(B, 4)`
    node ids of each face (padded as in `face_planes`)."""
    neighbours = np.asarray(mesh.neighbours)
    kind = np.zeros(mesh.n_cells, np.int64) if mesh.kind_of_cell is None else np.asarray(mesh.kind_of_cell)
    real = np.array([[f < len(_cells.KINDS[name].faces) for f in range(neighbours.shape[1])] for name in mesh.kinds])
    cell, face = np.nonzero((neighbours < 0) & real[kind])
    local = face_table(mesh.kinds, neighbours.shape[1])[kind[cell], face]
    return cell, face, np.take_along_axis(np.asarray(mesh.nodes)[cell], local, axis=1)
