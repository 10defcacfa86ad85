"""Host-side construction of a mesh's point-location structures, in vectorised NumPy.

- `face_neighbours`: the cell across each face (or -1 on the mesh boundary), for walking.
- `bin_grid`: a uniform grid of bins over the mesh's box in which every cell is registered in
  **every** bin its bounding box overlaps. A point lies inside a cell only if it lies inside that
  cell's bounding box, so the bin holding a point lists every cell that can contain it: a search
  of one bin is complete (tested against brute force).
- `simplex_maps`: per-cell inverse affine maps of triangles and tetrahedra (barycentrics).
"""

import logging
from typing import NamedTuple

import numpy as np

from .. import native
from . import cells as _cells
from .cells import CellKind

_log = logging.getLogger("flowkit")


class BinGrid(NamedTuple):
    """Cells registered per bin, in compressed rows: bin `b` holds `cells[start[b]:start[b+1]]`."""

    origin: np.ndarray
    size: np.ndarray
    shape: tuple[int, ...]
    start: np.ndarray
    cells: np.ndarray


class MeshTopology(NamedTuple):
    """A mesh checked and prepared for point location, on the host (float64 points)."""

    points: np.ndarray
    nodes: np.ndarray
    """`(C, width)` node ids per cell in flowkit's node order; unused slots repeat node 0."""
    kind_index: np.ndarray
    kinds: tuple[CellKind, ...]
    neighbours: np.ndarray
    affine_map: np.ndarray
    """`affine_maps`: barycentrics of the simplices, Newton's starting point and box frame in the others."""
    grid: BinGrid
    single: bool
    """Whether the points are exactly float32 numbers (as most CFD files write them)."""


def mesh_topology(points, cells, cell_types=None, bin_scale: float = 0.75) -> MeshTopology:
    """Check a mesh (`MeshField`'s `points`, `cells`, `cell_types`) and build its location
    structures: face neighbours, bins, simplex maps."""
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] not in (2, 3) or len(points) == 0:
        raise ValueError(f"MeshField: points must have shape (P, 2) or (P, 3) with P > 0, got {points.shape}")
    if not np.all(np.isfinite(points)):
        raise ValueError(f"MeshField: {int(np.sum(~np.isfinite(points).all(axis=1)))} node coordinates are not finite")
    dim, n_points = points.shape[1], len(points)
    cells = np.asarray(cells)
    if cells.ndim != 2 or len(cells) == 0 or not np.issubdtype(cells.dtype, np.integer):
        raise ValueError(
            "MeshField: cells must be a non-empty (C, k) integer array of node ids, got shape "
            f"{cells.shape} and dtype {cells.dtype}"
        )
    n_nodes = np.sum(cells >= 0, axis=1)
    if cell_types is None:
        by_count = {
            3: {4: _cells.VTK_TETRA, 5: _cells.VTK_PYRAMID, 6: _cells.VTK_WEDGE, 8: _cells.VTK_HEXAHEDRON},
            2: {3: _cells.VTK_TRIANGLE, 4: _cells.VTK_QUAD},
        }[dim]
        unknown = sorted(set(np.unique(n_nodes).tolist()) - set(by_count))
        if unknown:
            raise ValueError(
                f"MeshField: cannot infer the type of cells with {unknown} nodes in {dim}-D; pass cell_types"
            )
        cell_types = np.vectorize(by_count.get, otypes=[np.int64])(n_nodes)
    cell_types = np.asarray(cell_types, dtype=np.int64)
    if cell_types.shape != (len(cells),):
        raise ValueError(f"MeshField: cell_types must have shape ({len(cells)},), got {cell_types.shape}")
    present = sorted(set(np.unique(cell_types).tolist()))
    unsupported = [t for t in present if t not in _cells.BY_VTK_TYPE]
    if unsupported:
        raise ValueError(
            f"MeshField: unsupported VTK cell types {unsupported}; linear cells only ({sorted(_cells.BY_VTK_TYPE)})"
        )
    kinds = tuple(dict.fromkeys(_cells.BY_VTK_TYPE[t] for t in present))
    if any(k.dim != dim for k in kinds):
        raise ValueError(f"MeshField: {dim}-D points need {dim}-D cells, got {[k.name for k in kinds]}")
    width = max(k.nodes for k in kinds)
    kind_index = np.zeros(len(cells), dtype=np.int64)
    direct = (
        len(present) == 1 and cells.shape[1] == width and list(kinds[0].vtk_types[present[0]]) == list(range(width))
    )
    nodes = cells.astype(np.int64) if direct else np.zeros((len(cells), width), dtype=np.int64)
    for t in present:
        kind = _cells.BY_VTK_TYPE[t]
        rows = np.flatnonzero(cell_types == t)
        if np.any(n_nodes[rows] != kind.nodes):
            raise ValueError(f"MeshField: cells of VTK type {t} ({kind.name}) need {kind.nodes} node ids each")
        if direct:  # one kind, in flowkit's node order already
            break
        order = list(kind.vtk_types[t])
        nodes[rows, : kind.nodes] = cells[np.ix_(rows, order)]
        nodes[rows, kind.nodes :] = cells[rows, :1]  # unused slots repeat node 0 (weight 0)
        kind_index[rows] = kinds.index(kind)
    if nodes.min() < 0 or nodes.max() >= n_points:
        raise ValueError(f"MeshField: node ids must lie in [0, {n_points}), got [{nodes.min()}, {nodes.max()}]")

    boxes = cell_boxes(points, nodes)
    usable = ~degenerate_cells(points, nodes, kind_index, kinds, boxes)
    grid = bin_grid(points, nodes, bin_scale=bin_scale, usable=usable, boxes=boxes)
    del boxes
    neighbours = face_neighbours(nodes, kind_index, kinds, max(len(k.faces) for k in kinds), usable)
    maps = affine_maps(points, nodes, kind_index, kinds)
    single = bool(np.array_equal(points.astype(np.float32).astype(np.float64), points))
    return MeshTopology(points, nodes, kind_index, kinds, neighbours, maps, grid, single)


def cell_measures(points: np.ndarray, nodes: np.ndarray, kind_index: np.ndarray, kinds: tuple[CellKind, ...]):
    """Each cell's volume (area in 2-D): the sum of its simplices' (`CellKind.simplices`); by
    the kernel's library for a mesh of simplices (`native.simplex_measures`)."""
    if len(kinds) == 1 and kinds[0].simplex and (measure := native.simplex_measures(points, nodes)) is not None:
        return measure
    measure = np.zeros(len(nodes))
    dim = points.shape[1]
    for k, kind in enumerate(kinds):
        rows = np.flatnonzero(kind_index == k) if len(kinds) > 1 else slice(None)
        for simplex in kind.simplices:
            corners = [points[nodes[rows, node]] for node in simplex]
            edges = [corner - corners[0] for corner in corners[1:]]
            if dim == 2:  # the determinant of the edges, written out (np.linalg.det is 5x slower)
                signed = edges[0][:, 0] * edges[1][:, 1] - edges[0][:, 1] * edges[1][:, 0]
            else:
                normal = np.cross(edges[1], edges[2])  # the dot written out: the kernel's library sums alike
                signed = edges[0][:, 0] * normal[:, 0] + edges[0][:, 1] * normal[:, 1] + edges[0][:, 2] * normal[:, 2]
            measure[rows] += np.abs(signed) / (2.0 if dim == 2 else 6.0)
    return measure


def degenerate_cells(
    points: np.ndarray,
    nodes: np.ndarray,
    kind_index: np.ndarray,
    kinds: tuple[CellKind, ...],
    boxes: tuple[np.ndarray, np.ndarray] | None = None,
):
    """Cells of no volume (area): zero-volume slivers, flat or collapsed cells, under 1e-9 of
    their bounding box's cube (`boxes`: `cell_boxes`, computed when not given). No point lies
    in one, and its faces would link cells wrongly: they are left out of point location
    (counted and named in the log)."""
    lo, hi = cell_boxes(points, nodes) if boxes is None else boxes
    extent = np.max(hi - lo, axis=1)
    flat = cell_measures(points, nodes, kind_index, kinds) <= 1e-9 * extent ** points.shape[1]
    if flat.any():
        _log.warning(
            "mesh: %d of %d cells have no volume (zero-volume, flat or collapsed; cell ids %s): left out of "
            "point location, so no particle is placed or walks through them",
            int(flat.sum()),
            len(nodes),
            ", ".join(map(str, np.flatnonzero(flat)[:5])) + (", ..." if flat.sum() > 5 else ""),
        )
    return flat


def cell_boxes(points: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell bounding boxes `(lo, hi)`, each `(C, dim)`. Unused node slots repeat node 0.
    By the kernel's library where it is built (`native.cell_boxes`)."""
    boxes = native.cell_boxes(points, nodes)
    if boxes is not None:
        return tuple(boxes)
    lo = points[nodes[:, 0]].copy()
    hi = lo.copy()
    for k in range(1, nodes.shape[1]):
        corner = points[nodes[:, k]]
        np.minimum(lo, corner, out=lo)
        np.maximum(hi, corner, out=hi)
    return lo, hi


def bin_grid(
    points: np.ndarray,
    nodes: np.ndarray,
    bin_scale: float = 0.75,
    max_bins: int = 2**24,
    usable=None,
    boxes: tuple[np.ndarray, np.ndarray] | None = None,
) -> BinGrid:
    """Register every cell in every bin its bounding box overlaps (`boxes`: the cells' `cell_boxes`,
    computed when not given).

    Bins are `bin_scale` times the mean cell extent along each axis (anisotropic meshes get
    anisotropic bins), capped at `max_bins` bins in all. Cells not `usable` (no volume) are in no bin.
    The kernel's library lists the bins' cells where it is built (`native.bin_cells`), NumPy
    (`_bin_cells`) where not: the same tables.
    """
    lo, hi = cell_boxes(points, nodes) if boxes is None else boxes
    origin = points.min(axis=0)
    extent = np.maximum(points.max(axis=0) - origin, 1e-300)
    size = np.maximum(bin_scale * np.mean(hi - lo, axis=0), extent * 1e-6)
    shape = np.maximum(np.ceil(extent / size).astype(np.int64), 1)
    while np.prod(shape) > max_bins:
        size *= 1.25
        shape = np.maximum(np.ceil(extent / size).astype(np.int64), 1)
    size = extent / shape  # bins tile the box exactly
    rows = np.arange(len(nodes), dtype=np.int32) if usable is None else np.flatnonzero(usable).astype(np.int32)
    tables = native.bin_cells(lo, hi, origin, size, rows, shape)
    if tables is None:
        first = np.clip(np.floor((lo - origin) / size).astype(np.int32), 0, shape - 1).astype(np.int32)
        last = np.clip(np.floor((hi - origin) / size).astype(np.int32), 0, shape - 1).astype(np.int32)
        tables = _bin_cells(first, last, rows, shape, len(nodes))
    start, cells = tables
    return BinGrid(origin, size, tuple(int(n) for n in shape), start, cells)


def _bin_cells(
    first: np.ndarray, last: np.ndarray, rows: np.ndarray, shape: np.ndarray, n_cells: int
) -> tuple[np.ndarray, np.ndarray]:
    """`(start, cells)`: each bin's cells, ascending, in NumPy (`native.bin_cells` without the
    kernel's library)."""
    key, counts = _overlap_keys(first[rows], (last - first + 1)[rows], shape, rows, n_cells)
    # unique keys (bin, cell): sorting their values is the stable order of the bins at a
    # fraction of an argsort's cost. The keys are written in place and sorted in place: the
    # brief's mesh registers 11 M entries, and building them from pieces made this the read's
    # peak of memory
    key.sort()
    np.remainder(key, n_cells, out=key)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), key.astype(np.int32)


def _overlap_keys(
    first: np.ndarray, span: np.ndarray, shape: np.ndarray, rows: np.ndarray, n_cells: int
) -> tuple[np.ndarray, np.ndarray]:
    """`(keys, counts)`: `flat bin * n_cells + cell` of every bin each cell's box overlaps
    (`first` bin and `span` bins per axis; `rows` the cells' ids), and each bin's count.

    Cells are grouped by their spans (few distinct ones: a cell's box reaches a bin or two
    past its first along each axis): a group's keys are its cells' first bins plus the
    group's offsets, one broadcast, written into the keys' array in place."""
    dim = first.shape[1]
    strides = np.cumprod([1, *shape[:0:-1]])[::-1].astype(np.int64)  # row-major over the bin axes
    base = (first.astype(np.int64) * strides).sum(axis=1)
    code = np.zeros(len(first), np.int64)
    for axis in range(dim):
        code = code * (int(span[:, axis].max()) + 1) + span[:, axis]
    groups, group_of, sizes = np.unique(code, return_inverse=True, return_counts=True)
    order = np.argsort(group_of.astype(np.int16) if len(groups) < 2**15 else group_of, kind="stable")
    key = np.empty(int(np.sum(sizes * np.prod(span[order[np.cumsum(sizes) - 1]], axis=1))), np.int64)
    counts = np.zeros(int(np.prod(shape)), np.int64)
    at, taken = 0, 0
    for size in sizes.tolist():
        members = order[taken : taken + size]
        taken += size
        reach = span[members[0]]
        offsets = np.zeros(1, np.int64)
        for axis in range(dim):
            offsets = (offsets[:, None] + strides[axis] * np.arange(reach[axis])).ravel()
        for chunk in range(0, size, max(1, 2**20 // len(offsets))):  # bounded temporaries
            part = members[chunk : chunk + max(1, 2**20 // len(offsets))]
            bins = base[part][:, None] + offsets
            counts += np.bincount(bins.ravel(), minlength=len(counts))
            block = key[at : at + bins.size].reshape(bins.shape)
            np.multiply(bins, np.int64(n_cells), out=block)
            block += rows[part][:, None]
            at += bins.size
    return key, counts


def bin_of(grid: BinGrid, x: np.ndarray) -> np.ndarray:
    """Flat bin index of each point (row-major over the bin axes; NumPy, for tests)."""
    idx = np.clip(np.floor((x - grid.origin) / grid.size).astype(np.int64), 0, np.asarray(grid.shape) - 1)
    flat = np.zeros(len(x), dtype=np.int64)
    for axis in range(x.shape[1]):
        flat = flat * grid.shape[axis] + idx[:, axis]
    return flat


def face_neighbours(
    nodes: np.ndarray, kind_index: np.ndarray, kinds: tuple[CellKind, ...], max_faces: int, usable=None
) -> np.ndarray:
    """`(C, max_faces)` id of the cell across each face, -1 on the boundary (and for unused slots).

    Faces are matched by their sorted node ids (packed into two integers per face); a face
    shared by exactly two cells links them. Cells not `usable` (no volume) link none.
    """
    base = np.int64(nodes.max()) + 2  # node ids and -1 (a triangle's missing fourth) fit base
    members = [np.flatnonzero((kind_index == k) & (True if usable is None else usable)) for k in range(len(kinds))]
    total = sum(len(cells) * len(kind.faces) for cells, kind in zip(members, kinds))
    width = max(len(face) for kind in kinds for face in kind.faces)
    # each face's sorted node ids packed into one key where they fit 62 bits (triangles of up to
    # 2**20 nodes), else two; filled in place: the lists of pieces and their concatenation
    # were half of the brief's mesh's peak of memory here
    packs = [width] if float(base) ** width < 2.0**62 else [2, width - 2]
    keys = [np.empty(total, np.int64) for _ in packs]
    owner, slot = np.empty(total, np.int32), np.empty(total, np.int8)
    at = 0
    for cells, kind in zip(members, kinds):
        corners = nodes if len(cells) == len(nodes) else nodes[cells]
        for f, face in enumerate(kind.faces):
            missing = [np.full(len(cells), -1, np.int64)] * (width - len(face))
            ids = iter(_sorted_columns([corners[:, i] for i in face] + missing))
            rows = slice(at, at + len(cells))
            for key, count in zip(keys, packs):
                packed = next(ids) + 1
                for _ in range(count - 1):
                    packed = packed * base + next(ids) + 1
                key[rows] = packed
            owner[rows], slot[rows] = cells, f
            at += len(cells)
    order = np.lexsort(keys[::-1]) if len(keys) > 1 else np.argsort(keys[0])
    same = np.ones(max(total - 1, 0), bool)
    for key in keys:
        ordered = key[order]
        same &= ordered[1:] == ordered[:-1]
        del ordered
    del keys
    pair = np.flatnonzero(same)
    first, second = order[pair], order[pair + 1]
    neighbours = np.full((len(nodes), max_faces), -1, dtype=np.int32)
    neighbours[owner[first], slot[first]] = owner[second]
    neighbours[owner[second], slot[second]] = owner[first]
    return neighbours


def _sorted_columns(columns: list[np.ndarray]) -> list[np.ndarray]:
    """Columns sorted row by row, ascending (a sorting network of element-wise min/max: for
    three or four columns much faster than `np.sort(axis=1)`)."""
    columns = list(columns)
    n = len(columns)
    for i in range(n):
        for j in range(n - 1 - i):
            a, b = columns[j], columns[j + 1]
            columns[j], columns[j + 1] = np.minimum(a, b), np.maximum(a, b)
    return columns


def in_precision(topology: MeshTopology, dtype) -> MeshTopology:
    """`topology` with its points as a field of `dtype` stores them (float32: rounded) and its
    cell table built from those. The table holds each cell's node 0 in `dtype` and its other
    nodes relative to it: from points still in float64, each cell's node 0 would round on its
    own, and neighbours would see their shared face apart by up to an ulp of the coordinate
    (on a grid in degrees, 1e-4 of a cell): a point there lies in neither, and is lost."""
    if np.dtype(dtype) != np.float32 or topology.single:
        return topology
    points = topology.points.astype(np.float32).astype(np.float64)
    maps = affine_maps(points, topology.nodes, topology.kind_index, topology.kinds)
    return topology._replace(points=points, affine_map=maps, single=True)


def device_tables(topology: MeshTopology, dtype) -> dict:
    """`MeshField`'s location fields from `topology` (as `in_precision` gives it), on the device
    in `dtype` (ids in int32)."""
    import jax.numpy as jnp

    grid = topology.grid
    return {
        "points": jnp.asarray(topology.points, dtype),
        "nodes": jnp.asarray(topology.nodes, jnp.int32),
        "kind_of_cell": jnp.asarray(topology.kind_index, jnp.int32) if len(topology.kinds) > 1 else None,
        "affine_map": jnp.asarray(topology.affine_map, dtype),
        "neighbours": jnp.asarray(topology.neighbours, jnp.int32),
        "bin_origin": jnp.asarray(grid.origin, dtype),
        "bin_inv_size": jnp.asarray(1.0 / grid.size, dtype),
        "bin_start": jnp.asarray(grid.start, jnp.int32),
        "bin_cells": jnp.asarray(grid.cells, jnp.int32),
        "bin_shape": grid.shape,
        "kinds": tuple(k.name for k in topology.kinds),
        # the geometry's precision (most CFD files: float32) sets location tolerances, whatever the queries'
        "geometry_eps": float(np.finfo(np.float32 if dtype == np.float32 or topology.single else np.float64).eps),
    }


def affine_maps(
    points: np.ndarray, nodes: np.ndarray, kind_index: np.ndarray, kinds: tuple[CellKind, ...]
) -> np.ndarray:
    """`(C, dim + dim*dim)`: per cell a point and a matrix `A` such that `A @ (x - point)` is
    affine in `x`: for simplices the barycentrics of nodes 1..d (`simplex_maps`); for the other
    kinds the map's linearisation at the cell centre (`point` the centre's image, `A` the
    inverse Jacobian there), whose `centre + A @ (x - point)` starts Newton one iteration on
    (within rounding of the exact coordinates in a parallelepiped).

    A mesh with non-simplex kinds has `cells.box_columns(dim)` more columns: the cell's `box_frame`,
    what Newton iterates on, so that a row's check gathers one row of this table instead of its
    node ids and then each node's coordinates (zeros in simplices)."""

    dim = points.shape[1]
    curved = not all(kind.simplex for kind in kinds)
    maps = np.zeros((len(nodes), dim + dim * dim + (_cells.box_columns(dim) if curved else 0)))
    for k, kind in enumerate(kinds):
        rows = np.flatnonzero(kind_index == k)
        cell_nodes = nodes[:, : kind.nodes] if len(rows) == len(nodes) else nodes[rows, : kind.nodes]
        if (
            kind.simplex
            and len(rows) == len(nodes)
            and (native_maps := native.simplex_maps(points, cell_nodes)) is not None
        ):
            maps[:, : dim + dim * dim] = native_maps  # the kernel's library: the same arithmetic, one pass
            continue
        if kind.simplex:  # in chunks: the maps' float64 temporaries were the topology's peak of memory
            for start in range(0, len(rows), 2**15):
                maps[rows[start : start + 2**15], : dim + dim * dim] = simplex_maps(
                    points, cell_nodes[start : start + 2**15]
                )
            continue
        weights, slopes = centre_slopes(kind)
        corners = points[cell_nodes]  # (rows, nodes, dim)
        jacobian = np.einsum("rka,kb->rab", corners, slopes)  # dx_a / dxi_b at the centre
        det = np.linalg.det(jacobian)
        ok = np.abs(det) > 1e-300
        inverse = np.zeros_like(jacobian)
        inverse[ok] = np.linalg.inv(jacobian[ok])
        maps[rows] = np.concatenate(
            [
                np.einsum("rka,k->ra", corners, weights),
                inverse.reshape(len(rows), dim * dim),
                _cells.box_frame(np.stack(_cells.as_box_corners(kind, list(corners.transpose(1, 0, 2))), axis=1)),
            ],
            axis=1,
        )
    return maps


def centre_slopes(kind: CellKind) -> tuple[np.ndarray, np.ndarray]:
    """A Newton kind's node weights `(nodes,)` and their derivatives `(nodes, dim)` at its
    centre, in NumPy: by central differences of ±1/4, exact for shape functions linear in each
    coordinate (every kind's is)."""
    centre = np.asarray(kind.centre, np.float64)
    step = 0.25 * np.eye(len(centre))
    return kind.shape(centre[None])[0], (kind.shape(centre + step) - kind.shape(centre - step)).T / 0.5


def simplex_maps(points: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`(C, dim + dim*dim)`: node 0 and the inverse of `[X1 - X0, ..., Xd - X0]` (row-major), so
    the barycentrics of nodes 1..d are `A @ (x - X0)`. Degenerate cells get a zero map.

    The inverse is the adjugate over the determinant (cross products in 3-D), in closed form."""
    dim = points.shape[1]
    x0 = points[nodes[:, 0]]
    e = [points[nodes[:, k]] - x0 for k in range(1, dim + 1)]  # the edge columns
    if dim == 3:
        rows = [np.cross(e[1], e[2]), np.cross(e[2], e[0]), np.cross(e[0], e[1])]
        det = e[0][:, 0] * rows[0][:, 0] + e[0][:, 1] * rows[0][:, 1] + e[0][:, 2] * rows[0][:, 2]  # as the library
    else:
        rows = [np.stack([e[1][:, 1], -e[1][:, 0]], axis=1), np.stack([-e[0][:, 1], e[0][:, 0]], axis=1)]
        det = e[0][:, 0] * e[1][:, 1] - e[0][:, 1] * e[1][:, 0]
    ok = np.abs(det) > 1e-300
    scale = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)[:, None]
    inverse = np.concatenate([r * scale for r in rows], axis=1)
    return np.concatenate([x0, inverse], axis=1)
