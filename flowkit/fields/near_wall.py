"""The wall-normal velocity beside no-slip walls, as continuity has it.

At a no-slip wall the velocity and its tangential derivatives vanish, so incompressibility
makes the wall-normal velocity grow as the square of the distance from the wall, `u_n ~ y²`.
Linear shape functions give a wall cell `u_n = v₁ y/h` instead (`v₁` at its far nodes, height
`h`): tracers then close in on the wall as `e^{-ct}` and pile up on it, which no incompressible
flow does. Multiplying the normal component by `y/h` in the cells that have a face on a
no-slip wall gives `u_n = v₁ (y/h)²`: exact for a field quadratic at the wall, and equal to the
interpolation at the cell's far side. Tangential components are left as interpolated.

A face is a no-slip wall where the run's boundary makes it a wall and the data's velocity is
zero at all its nodes at every time (up to roundoff of the largest speed); walls whose data
slide (symmetry planes, moving lids, cell data averaged onto the nodes) are left alone.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

NO_SLIP = 1e-6
"""A wall face's nodes are at rest where their speed is below this fraction of the data's
largest speed, at every time."""


def wall_table(mesh, walls: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`(index (C,), rows (W, F, dim + 2))`: the cells with a face among `walls` (`(B,)` bool over
    `mesh.boundary_faces()`) whose nodes are at rest, each one's row (-1: none) of per-face
    outward unit normal `n`, plane offset `n·c` and the cell's height `h` above the plane (zeros,
    `h = 0`, for its other faces). None where no such face exists."""
    cell, face, nodes = mesh.boundary_faces()
    values = np.asarray(mesh.values, np.float64)  # (T, P, dim): node values; cell data has none at the wall
    if mesh.cell_values or not walls.any():
        return None
    speed = np.linalg.norm(values, axis=-1)
    at_rest = speed[:, nodes].max(axis=(0, 2)) <= NO_SLIP * max(float(speed.max()), np.finfo(np.float64).tiny)
    chosen = walls & at_rest
    if not chosen.any():
        return None
    cell, face = cell[chosen], face[chosen]
    centre, normal = (
        np.asarray(a, np.float64) for a in mesh.face_planes(jnp.asarray(cell, jnp.int32), jnp.asarray(face, jnp.int32))
    )
    offset = np.sum(normal * centre, axis=1)
    ids = np.asarray(mesh.nodes)[cell]  # (W, k), -1 past a smaller kind's nodes
    corners = np.asarray(mesh.points, np.float64)[np.maximum(ids, 0)]
    height = np.where(ids >= 0, offset[:, None] - np.einsum("wkd,wd->wk", corners, normal), -np.inf).max(axis=1)
    walled, row = np.unique(cell, return_inverse=True)
    index = np.full(mesh.n_cells, -1, np.int32)
    index[walled] = np.arange(len(walled), dtype=np.int32)
    rows = np.zeros((len(walled), np.asarray(mesh.neighbours).shape[1], mesh.dim + 2))
    rows[row.ravel(), face] = np.column_stack([normal, offset, height])
    return index, rows


def near_wall_velocity(
    index: Int[Array, " C"],
    rows: Float[Array, "W F k"],
    cell: Int[Array, " n"],
    x: Float[Array, "n dim"],
    u: Float[Array, "n dim"],
) -> Float[Array, "n dim"]:
    """`u` at the rows of `x` (in `cell`) with its component along each no-slip wall face of the
    cell (`wall_table`) scaled by `y/h` (`y` the distance inside that face's plane, clipped to
    [0, h])."""
    at = index[cell]
    table = jnp.where((at >= 0)[:, None, None], rows[jnp.maximum(at, 0)], 0).astype(u.dtype)  # (n, F, dim + 2)
    dim = u.shape[1]
    for f in range(table.shape[1]):
        normal, offset, height = table[:, f, :dim], table[:, f, dim], table[:, f, dim + 1]
        inside = offset - jnp.sum(normal * x, axis=1)
        scale = jnp.where(height > 0, jnp.clip(inside / jnp.where(height > 0, height, 1), 0, 1), 1)
        u = u - ((1 - scale) * jnp.sum(u * normal, axis=1))[:, None] * normal
    return u
