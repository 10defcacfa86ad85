"""Host-side construction of a mesh's point-location structures, in vectorised NumPy.

- `face_neighbours`: the cell across each face (or -1 on the mesh boundary), for walking.
- `bin_grid`: a uniform grid of bins over the mesh's box in which every cell is registered in
  **every** bin its bounding box overlaps. A point lies inside a cell only if it lies inside that
  cell's bounding box, so the bin holding a point lists every cell that can contain it: a search
  of one bin is complete (tested against brute force).
- `simplex_maps`: per-cell inverse affine maps of triangles and tetrahedra (barycentrics).
"""

from typing import NamedTuple

import numpy as np

from .cells import CellKind


class BinGrid(NamedTuple):
    """Cells registered per bin, in compressed rows: bin `b` holds `cells[start[b]:start[b+1]]`."""

    origin: np.ndarray
    size: np.ndarray
    shape: tuple[int, ...]
    start: np.ndarray
    cells: np.ndarray


def cell_boxes(points: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell bounding boxes `(lo, hi)`, each `(C, dim)`. Unused node slots repeat node 0."""
    lo = points[nodes[:, 0]].copy()
    hi = lo.copy()
    for k in range(1, nodes.shape[1]):
        corner = points[nodes[:, k]]
        np.minimum(lo, corner, out=lo)
        np.maximum(hi, corner, out=hi)
    return lo, hi


def bin_grid(points: np.ndarray, nodes: np.ndarray, bin_scale: float = 0.75, max_bins: int = 2**24) -> BinGrid:
    """Register every cell in every bin its bounding box overlaps.

    Bins are `bin_scale` times the mean cell extent along each axis (anisotropic meshes get
    anisotropic bins), capped at `max_bins` bins in all.
    """
    lo, hi = cell_boxes(points, nodes)
    dim = points.shape[1]
    origin = points.min(axis=0)
    extent = np.maximum(points.max(axis=0) - origin, 1e-300)
    size = np.maximum(bin_scale * np.mean(hi - lo, axis=0), extent * 1e-6)
    shape = np.maximum(np.ceil(extent / size).astype(np.int64), 1)
    while np.prod(shape) > max_bins:
        size *= 1.25
        shape = np.maximum(np.ceil(extent / size).astype(np.int64), 1)
    size = extent / shape  # bins tile the box exactly
    first = np.clip(np.floor((lo - origin) / size).astype(np.int64), 0, shape - 1)
    last = np.clip(np.floor((hi - origin) / size).astype(np.int64), 0, shape - 1)
    span = last - first + 1
    per_cell = np.prod(span, axis=1)
    cell = np.repeat(np.arange(len(nodes), dtype=np.int64), per_cell)
    local = np.arange(len(cell), dtype=np.int64) - np.repeat(np.cumsum(per_cell) - per_cell, per_cell)
    flat = np.zeros(len(cell), dtype=np.int64)
    for axis in range(dim):  # row-major bin index, last axis fastest (as `bin_of`)
        s = span[cell, axis]
        flat = flat * shape[axis] + first[cell, axis] + local % s
        local //= s
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return BinGrid(origin, size, tuple(int(n) for n in shape), start, cell[order])


def bin_of(grid: BinGrid, x: np.ndarray) -> np.ndarray:
    """Flat bin index of each point (row-major over the bin axes; NumPy, for tests)."""
    idx = np.clip(np.floor((x - grid.origin) / grid.size).astype(np.int64), 0, np.asarray(grid.shape) - 1)
    flat = np.zeros(len(x), dtype=np.int64)
    for axis in range(x.shape[1]):
        flat = flat * grid.shape[axis] + idx[:, axis]
    return flat


def face_neighbours(nodes: np.ndarray, kind_index: np.ndarray, kinds: tuple[CellKind, ...], max_faces: int) -> np.ndarray:
    """`(C, max_faces)` id of the cell across each face, -1 on the boundary (and for unused slots).

    Faces are matched by their sorted node ids; a face shared by exactly two cells links them.
    """
    rows, owners, slots = [], [], []
    for k, kind in enumerate(kinds):
        cells = np.flatnonzero(kind_index == k)
        for f, face in enumerate(kind.faces):
            key = np.sort(nodes[np.ix_(cells, face)], axis=1)
            if key.shape[1] < 4:
                key = np.concatenate([np.full((len(cells), 4 - key.shape[1]), -1, key.dtype), key], axis=1)
            rows.append(key)
            owners.append(cells)
            slots.append(np.full(len(cells), f))
    keys = np.concatenate(rows)
    owner = np.concatenate(owners)
    slot = np.concatenate(slots)
    order = np.lexsort(keys.T[::-1])
    keys, owner, slot = keys[order], owner[order], slot[order]
    same = np.all(keys[1:] == keys[:-1], axis=1)
    pair = np.flatnonzero(same)
    neighbours = np.full((len(nodes), max_faces), -1, dtype=np.int64)
    neighbours[owner[pair], slot[pair]] = owner[pair + 1]
    neighbours[owner[pair + 1], slot[pair + 1]] = owner[pair]
    return neighbours


def simplex_maps(points: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`(C, dim + dim*dim)`: node 0 and the inverse of `[X1 - X0, ..., Xd - X0]` (row-major), so
    the barycentrics of nodes 1..d are `A @ (x - X0)`. Degenerate cells get a zero map."""
    dim = points.shape[1]
    x0 = points[nodes[:, 0]]
    edges = np.stack([points[nodes[:, k]] - x0 for k in range(1, dim + 1)], axis=-1)  # (C, dim, dim)
    det = np.linalg.det(edges)
    ok = np.abs(det) > 1e-300
    inverse = np.zeros_like(edges)
    inverse[ok] = np.linalg.inv(edges[ok])
    return np.concatenate([x0, inverse.reshape(len(nodes), dim * dim)], axis=1)
