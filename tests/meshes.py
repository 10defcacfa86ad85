"""Small conforming meshes of every linear VTK cell kind, built from a jittered lattice, and
VTK's own answers on them (probe filter, per-cell interpolation) for the mesh tests."""

import jax
import jax.numpy as jnp
import numpy as np
import vtk
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

import flowkit as fk

TETRA, HEX, WEDGE, PYRAMID, VOXEL, TRIANGLE, QUAD = 10, 12, 13, 14, 11, 5, 9
CORNERS = [
    (0, 0, 0),
    (1, 0, 0),
    (1, 1, 0),
    (0, 1, 0),
    (0, 0, 1),
    (1, 0, 1),
    (1, 1, 1),
    (0, 1, 1),
]  # VTK hexahedron order
HEX_FACES = fk.datasets.HEXAHEDRON_FACES


def _hexes(shape):
    """`(H, 8)` lattice-hexahedron node ids in VTK order and each one's `(i, j, k)`."""
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    ijk = np.stack(np.meshgrid(*[np.arange(n - 1) for n in shape], indexing="ij"), axis=-1).reshape(-1, 3)
    nodes = np.stack([ids[ijk[:, 0] + a, ijk[:, 1] + b, ijk[:, 2] + c] for a, b, c in CORNERS], axis=1)
    return nodes, ijk


def mesh(kind: str, shape=(5, 4, 4), jitter=0.2, seed=3):
    """`(points, cells (-1 padded), cell_types)` of a conforming mesh of the box
    `[0, 2] x [0, 1] x [0, 1]` (2-D: `[0, 2] x [0, 1]`).

    `kind`: "tetra", "hexahedron" (non-planar faces from the jitter), "voxel" (no jitter),
    "wedge" (each hexahedron column split in two), "pyramid" (each hexahedron split into six
    around an added centre node), "mixed" (hexahedra, wedge columns, pyramids, and tetrahedra
    where a pyramid's base lies on the wall), "triangle", "quad" or "mixed2d".
    """
    if kind in ("triangle", "quad", "mixed2d"):
        return _mesh_2d(kind, shape[:2], jitter, seed)
    if kind == "tetra":
        points, tets = fk.datasets.jittered_tet_box(shape, (2.0, 1.0, 1.0), jitter, seed)
        return points, tets, np.full(len(tets), TETRA)
    points = fk.datasets.jittered_lattice(shape, (2.0, 1.0, 1.0), 0.0 if kind == "voxel" else jitter, seed)
    hexes, ijk = _hexes(shape)
    if kind == "hexahedron":
        return points, hexes, np.full(len(hexes), HEX)
    if kind == "voxel":
        return points, hexes[:, [0, 1, 3, 2, 4, 5, 7, 6]], np.full(len(hexes), VOXEL)
    wedge_column = {
        "wedge": np.ones(len(hexes), bool),
        "pyramid": np.zeros(len(hexes), bool),
        "mixed": (ijk[:, 0] + 2 * ijk[:, 1]) % 4 == 1,
    }[kind]
    split = {
        "wedge": np.zeros(len(hexes), bool),
        "pyramid": np.ones(len(hexes), bool),
        "mixed": ~wedge_column & (ijk.sum(axis=1) % 3 == 0),
    }[kind]
    blocks = [(HEX, hexes[~wedge_column & ~split])]
    w = hexes[wedge_column]
    # VTK's wedge: the right-hand normal of (0, 1, 2) points away from (3, 4, 5)
    blocks.append((WEDGE, np.concatenate([w[:, [0, 2, 1, 4, 6, 5]], w[:, [0, 3, 2, 4, 7, 6]]])))
    points, split_pyramids = fk.datasets.hexahedra_as_pyramids(points, hexes[split])
    pyramids, tets = [], []
    hi = np.asarray(shape) - 2  # the last hexahedron index per axis
    for f, on_face in enumerate(split_pyramids):
        axis, side = f // 2, f % 2
        on_wall = ijk[split][:, axis] == (hi[axis] if side else 0)
        if kind != "mixed":
            on_wall[:] = False
        pyramids.append(on_face[~on_wall])
        quad = on_face[on_wall]
        tets += [quad[:, [0, 1, 2, 4]], quad[:, [0, 2, 3, 4]]]
    blocks += [(PYRAMID, np.concatenate(pyramids)), (TETRA, np.concatenate(tets) if tets else np.zeros((0, 4), int))]
    blocks = [(t, b) for t, b in blocks if len(b)]
    cells, types = fk.fields.cells.merge_cells(blocks)
    order = np.random.default_rng(seed).permutation(len(cells))  # kinds interleaved, as CFD files have them
    return points, cells[order], types[order]


def _mesh_2d(kind, shape, jitter, seed):
    points = fk.datasets.jittered_lattice(shape, (2.0, 1.0), jitter, seed)
    ids = np.arange(len(points)).reshape(shape)
    ij = np.stack(np.meshgrid(*[np.arange(n - 1) for n in shape], indexing="ij"), axis=-1).reshape(-1, 2)
    quads = np.stack([ids[ij[:, 0] + a, ij[:, 1] + b] for a, b in [(0, 0), (1, 0), (1, 1), (0, 1)]], axis=1)
    split = {
        "triangle": np.ones(len(quads), bool),
        "quad": np.zeros(len(quads), bool),
        "mixed2d": ij.sum(axis=1) % 2 == 0,
    }[kind]
    blocks = [
        (QUAD, quads[~split]),
        (TRIANGLE, np.concatenate([quads[split][:, [0, 1, 2]], quads[split][:, [0, 2, 3]]])),
    ]
    cells, types = fk.fields.cells.merge_cells([(t, b) for t, b in blocks if len(b)])
    return points, cells, types


def velocity(points):
    """A smooth nonlinear flow (so interpolation is not exact and the cell matters)."""
    x = points[:, 0]
    y = points[:, 1]
    if points.shape[1] == 2:
        return np.stack([np.sin(2 * x) + y * y, np.cos(3 * y) * x], axis=1)
    z = points[:, 2]
    return np.stack([np.sin(2 * x) + y * z, np.cos(3 * y) * x, np.exp(z) - x * y], axis=1)


def probe_points(points, cells, cell_types, n_random=600, seed=0):
    """Random points in the padded box, copies of vertices, points on edges and faces and at
    cell centres, points 1e-9 from vertices, and points just outside the walls."""
    rng = np.random.default_rng(seed)
    lo, hi = points.min(axis=0), points.max(axis=0)
    pad = 0.1 * (hi - lo)
    chosen = rng.choice(len(cells), 80)
    nodes = [c[c >= 0] for c in cells[chosen]]
    edge = np.array([(points[n[0]] + points[n[1]]) / 2 for n in nodes])
    centre = np.array([points[n].mean(axis=0) for n in nodes])
    face = np.array([points[n[:3]].mean(axis=0) for n in nodes])
    vertex = points[rng.choice(len(points), 80)]
    near_vertex = vertex + rng.normal(size=vertex.shape) * 1e-9
    wall = lo + rng.uniform(size=(60, len(lo))) * (hi - lo)
    axis = rng.integers(0, len(lo), 60)
    side = rng.integers(0, 2, 60)
    wall[np.arange(60), axis] = np.where(side, hi[axis], lo[axis])
    outward = np.where(side, 1.0, -1.0)
    just_outside = []
    for offset in (1e-6, 1e-2):
        p = wall.copy()
        p[np.arange(60), axis] += outward * offset * (hi - lo)[axis]
        just_outside.append(p)
    random = lo - pad + rng.uniform(size=(n_random, len(lo))) * (hi - lo + 2 * pad)
    return np.concatenate([random, vertex, near_vertex, edge, face, centre, wall] + just_outside)


def vtk_probe(grid, x):
    """`vtkProbeFilter` (default settings) at the rows of `x`: `(values, valid)`."""
    pts = np.zeros((len(x), 3))
    pts[:, : x.shape[1]] = x
    poly = vtk.vtkPolyData()
    vtk_points = vtk.vtkPoints()
    vtk_points.SetData(numpy_to_vtk(pts, deep=True))
    poly.SetPoints(vtk_points)
    probe = vtk.vtkProbeFilter()
    probe.SetInputData(poly)
    probe.SetSourceData(grid)
    probe.Update()
    out = probe.GetOutput().GetPointData()
    values = vtk_to_numpy(out.GetArray("velocity")).reshape(len(x), -1)
    return values, vtk_to_numpy(out.GetArray("vtkValidPointMask")).astype(bool)


def vtk_in_cell(grid, x, cell_ids, node_values):
    """VTK's own interpolation of `node_values` at each row of `x` in the given cell
    (`vtkCell.EvaluatePosition`), and whether VTK says the point is inside that cell or on its
    surface (distance below 1e-12; VTK's strict tests reject some points on a face by rounding)."""
    out = np.zeros((len(x), node_values.shape[1]))
    inside = np.zeros(len(x), bool)
    closest, pcoords, dist2, sub = [0.0] * 3, [0.0] * 3, vtk.reference(0.0), vtk.reference(0)
    weights = [0.0] * 8
    for row, (point, cid) in enumerate(zip(x, cell_ids)):
        cell = grid.GetCell(int(cid))
        p = list(point) + [0.0] * (3 - len(point))
        inside[row] = cell.EvaluatePosition(p, closest, sub, pcoords, dist2, weights) == 1 or float(dist2) < 1e-24
        ids = [cell.GetPointId(i) for i in range(cell.GetNumberOfPoints())]
        out[row] = np.asarray(weights[: len(ids)]) @ node_values[ids]
    return out, inside


def brute_force_locate(field: fk.MeshField, points) -> np.ndarray:
    """Every cell containing each point, by testing all cells: `(n, C)` bool (the tests' reference;
    cost grows as points × cells)."""
    x = jnp.asarray(np.asarray(points), field.points.dtype)
    cells = jnp.arange(field.n_cells, dtype=jnp.int32)

    @jax.jit
    def one(p):
        return field._check(cells, jnp.broadcast_to(p, (field.n_cells, field.dim)))[0]

    return np.stack([np.asarray(one(p)) for p in x])


def channel_with_cylinder(radius=0.25, centre=(1.0, 0.5), shape=(81, 21)):
    """`(points, triangles)` of a 4 x 1 channel with the cells whose centres lie within `radius`
    of `centre` removed: a cylinder in cross-flow, a hole in the mesh."""
    nx, ny = shape
    x, y = np.meshgrid(np.linspace(0, 4, nx), np.linspace(0, 1, ny), indexing="ij")
    points = np.column_stack([x.ravel(), y.ravel()])
    index = np.arange(nx * ny).reshape(nx, ny)
    a, b, c, d = index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]
    cells = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return points, cells[np.linalg.norm(points[cells].mean(axis=1) - centre, axis=1) > radius]
