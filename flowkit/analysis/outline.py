"""A mesh's outline in a picture's x–y plane: the boundary a CFD engineer recognises (walls,
openings, obstacles), drawn from the mesh's own boundary faces, and its patches named."""

from typing import TYPE_CHECKING

import numpy as np

from ..fields.base import AbstractField
from ..fields.mesh import MeshField
from ..fields.streamed import StreamedField

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FOLD_DEGREES = 30.0
"""Boundary edges where the surface turns by more than this are drawn (a box's edges, a pipe's
rims); smooth curved walls show only where they turn away from the view."""


def mesh_of(field: AbstractField | StreamedField | None) -> MeshField | None:
    """The `MeshField` behind `field` (a streamed series' template), or None for other fields."""
    field = getattr(field, "template", field)
    return field if isinstance(field, MeshField) else None


def outline_segments(mesh: MeshField) -> np.ndarray:
    """`(S, 2, 2)` x–y segments of the mesh's outline: in 2-D its boundary edges; in 3-D the edges
    of its boundary faces where the surface folds (`FOLD_DEGREES`) or turns away from a view
    down the z axis (its silhouette)."""
    import jax.numpy as jnp

    cell, face, nodes = mesh.boundary_faces()
    points = np.asarray(mesh.points, np.float64)
    if mesh.dim == 2:
        return points[nodes[:, :2]]
    _, normal = mesh.face_planes(jnp.asarray(cell, jnp.int32), jnp.asarray(face, jnp.int32))  # outward, unit
    normal = np.asarray(normal, np.float64)
    ends = np.stack([nodes, np.roll(nodes, -1, axis=1)], axis=-1).reshape(-1, 2)  # (4B, 2)
    face = np.repeat(np.arange(len(nodes)), 4)
    real = ends[:, 0] != ends[:, 1]
    ends, face = np.sort(ends[real], axis=1), face[real]
    edges, which, counts = np.unique(ends, axis=0, return_inverse=True, return_counts=True)
    order = np.argsort(which.ravel(), kind="stable")
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    shared = counts == 2
    a, b = face[order][first[shared]], face[order][first[shared] + 1]
    fold = np.sum(normal[a] * normal[b], axis=1) < np.cos(np.radians(FOLD_DEGREES))
    up = np.where(np.abs(normal[:, 2]) < 1e-6, 0.0, np.sign(normal[:, 2]))
    silhouette = up[a] * up[b] < 0
    drawn = np.concatenate([edges[shared][fold | silhouette], edges[counts == 1]])
    return points[drawn][:, :, :2]


def draw_outline(ax: "Axes", field: AbstractField | StreamedField | None) -> bool:
    """The mesh's outline (`outline_segments`) and the names of its planar patches at their
    centres (open ones in blue, walls in grey); False for a field that is not a mesh."""
    from matplotlib.collections import LineCollection

    mesh = mesh_of(field)
    if mesh is None:
        return False
    ax.add_collection(LineCollection(outline_segments(mesh), colors="0.25", linewidths=0.6, zorder=3))
    for name, region in mesh.regions.items():
        if "point" in region:
            colour = "tab:blue" if region.get("kind") == "open" else "0.3"
            inward = -np.asarray(region["normal"], np.float64)[:2] * 9  # points, off the edge into the domain
            ax.annotate(
                name.removeprefix("patch:"),
                tuple(np.asarray(region["point"], np.float64)[:2]),
                xytext=tuple(inward),
                textcoords="offset points",
                fontsize=7,
                color=colour,
                ha="center",
                va="center",
                rotation=90 if abs(inward[0]) > abs(inward[1]) else 0,
                zorder=6,
            )
    return True
