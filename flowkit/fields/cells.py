"""The linear cell kinds of VTK: node order, faces, shape functions, parametric inversion.

Every kind maps parametric coordinates `xi` to space with its own shape functions
(`x = sum_i N_i(xi) X_i`), exactly as VTK's cell classes do. A point is inside a cell when every
entry of `violations(xi)` is `<= 0`; entry `f` is positive when the point lies beyond face `f`
(listed in `faces` in the same order), which is where the locator walks next.

Simplices (triangles, tetrahedra) are affine: `xi` are barycentric coordinates from a per-cell
inverse map stored on the device. The others (quad, hexahedron, wedge, pyramid) are inverted by
Newton steps from the cell centre, as VTK's `EvaluatePosition` does, each row stopping once it
has converged. A wedge's or pyramid's map is a hexahedron's on virtual corners (`box_corners`),
in the same parametric coordinates, so the Newton steps of a mixed mesh are one loop of one map.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Positions

# VTK cell type ids (vtkCellType.h)
VTK_TRIANGLE, VTK_PIXEL, VTK_QUAD = 5, 8, 9
VTK_TETRA, VTK_VOXEL, VTK_HEXAHEDRON, VTK_WEDGE, VTK_PYRAMID = 10, 11, 12, 13, 14


@dataclass(frozen=True, eq=False)
class CellKind:
    """One kind of linear cell (VTK may store it under several type ids, e.g. voxel as hexahedron)."""

    name: str
    dim: int
    nodes: int
    faces: tuple[tuple[int, ...], ...]
    vtk_types: dict[int, tuple[int, ...]]
    """VTK type id -> permutation taking VTK's node order to this kind's node order."""
    simplex: bool
    shape: Callable | None = None
    """`shape(xi[..., dim]) -> N[..., nodes]` (Newton kinds only; simplices use barycentrics)."""
    violations: Callable | None = None
    centre: tuple[float, ...] = ()
    box_corners: tuple[tuple[int, ...], ...] = ()
    """Newton kinds: the corners of the hexahedron (quad in 2-D) whose multilinear map is this
    kind's map in the same parametric coordinates; `(a,)` is node `a`, `(a, b, c)` the virtual
    point `X_a + X_b - X_c` (a wedge's triangles completed to parallelograms, whose bilinear
    term vanishes; a pyramid's apex repeated). One Newton loop then serves every kind."""
    simplices: tuple[tuple[int, ...], ...] = ()
    """Simplices (node ids) that tile the cell: the sum of their sizes is its volume (area)."""


def _stacked(parts):
    """`parts` stacked along a new last axis: in NumPy for NumPy coordinates (the host's cell
    tables: no JAX dispatch, no compile), else in JAX."""
    return np.stack(parts, axis=-1) if all(isinstance(p, np.ndarray) for p in parts) else jnp.stack(parts, axis=-1)


def _quad_shape(xi):
    r, s = xi[..., 0], xi[..., 1]
    return _stacked([(1 - r) * (1 - s), r * (1 - s), r * s, (1 - r) * s])


def _hex_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    rm, sm, tm = 1 - r, 1 - s, 1 - t
    return _stacked(
        [rm * sm * tm, r * sm * tm, r * s * tm, rm * s * tm, rm * sm * t, r * sm * t, r * s * t, rm * s * t]
    )


def _wedge_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    u = 1 - r - s
    return _stacked([u * (1 - t), r * (1 - t), s * (1 - t), u * t, r * t, s * t])


def _pyramid_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    rm, sm, tm = 1 - r, 1 - s, 1 - t
    return _stacked([rm * sm * tm, r * sm * tm, r * s * tm, rm * s * tm, t])


def _box_violations(xi):
    return jnp.stack([v for i in range(xi.shape[-1]) for v in (-xi[..., i], xi[..., i] - 1)], axis=-1)


def _wedge_violations(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    return jnp.stack([-r, -s, r + s - 1, -t, t - 1], axis=-1)


def _pyramid_violations(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    # Beyond the apex (t > 1) the map folds back over the cell, so r and s look inside: every
    # triangular face counts as violated there (by at least t - 1), the most violated first.
    beyond = t - 1
    triangles = jnp.stack([-r, r - 1, -s, s - 1], axis=-1) + jnp.maximum(beyond, 0)[..., None]
    return jnp.concatenate([jnp.maximum(triangles, beyond[..., None]), -t[..., None]], axis=-1)


TRIANGLE = CellKind(
    "triangle", 2, 3, ((1, 2), (0, 2), (0, 1)), {VTK_TRIANGLE: (0, 1, 2)}, simplex=True, simplices=((0, 1, 2),)
)
QUAD = CellKind(
    "quad",
    2,
    4,
    ((0, 3), (1, 2), (0, 1), (3, 2)),
    {VTK_QUAD: (0, 1, 2, 3), VTK_PIXEL: (0, 1, 3, 2)},
    simplex=False,
    shape=_quad_shape,
    violations=_box_violations,
    centre=(0.5, 0.5),
    box_corners=((0,), (1,), (2,), (3,)),
    simplices=((0, 1, 2), (0, 2, 3)),
)
TETRA = CellKind(
    "tetra",
    3,
    4,
    ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2)),
    {VTK_TETRA: (0, 1, 2, 3)},
    simplex=True,
    simplices=((0, 1, 2, 3),),
)
HEXAHEDRON = CellKind(
    "hexahedron",
    3,
    8,
    ((0, 3, 7, 4), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7)),
    {VTK_HEXAHEDRON: tuple(range(8)), VTK_VOXEL: (0, 1, 3, 2, 4, 5, 7, 6)},
    simplex=False,
    shape=_hex_shape,
    violations=_box_violations,
    centre=(0.5, 0.5, 0.5),
    box_corners=tuple((i,) for i in range(8)),
    simplices=((0, 1, 3, 4), (1, 2, 3, 6), (1, 4, 5, 6), (3, 4, 6, 7), (1, 3, 4, 6)),
)
WEDGE = CellKind(
    "wedge",
    3,
    6,
    ((0, 2, 5, 3), (0, 1, 4, 3), (1, 2, 5, 4), (0, 1, 2), (3, 4, 5)),
    {VTK_WEDGE: tuple(range(6))},
    simplex=False,
    shape=_wedge_shape,
    violations=_wedge_violations,
    centre=(1 / 3, 1 / 3, 0.5),
    box_corners=((0,), (1,), (1, 2, 0), (2,), (3,), (4,), (4, 5, 3), (5,)),
    simplices=((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5)),
)
PYRAMID = CellKind(
    "pyramid",
    3,
    5,
    ((0, 3, 4), (1, 2, 4), (0, 1, 4), (2, 3, 4), (0, 1, 2, 3)),
    {VTK_PYRAMID: tuple(range(5))},
    simplex=False,
    shape=_pyramid_shape,
    violations=_pyramid_violations,
    centre=(0.5, 0.5, 0.2),
    box_corners=((0,), (1,), (2,), (3,), (4,), (4,), (4,), (4,)),
    simplices=((0, 1, 2, 4), (0, 2, 3, 4)),
)

KINDS: dict[str, CellKind] = {k.name: k for k in (TRIANGLE, QUAD, TETRA, HEXAHEDRON, WEDGE, PYRAMID)}
BY_VTK_TYPE: dict[int, CellKind] = {t: k for k in KINDS.values() for t in k.vtk_types}
BOX: dict[int, CellKind] = {2: QUAD, 3: HEXAHEDRON}
"""The Newton kind of each dimension: every other kind's map is its map on `box_corners`."""


def as_box_corners(kind: CellKind, corners: Sequence) -> list:
    """The corners of `kind`'s box map (`BOX[kind.dim]`) from its own node coordinates
    `corners[i]` (any arrays supporting + and -), in the box kind's node order."""
    out = []
    for slot in kind.box_corners:
        point = corners[slot[0]]
        if len(slot) == 3:
            point = point + corners[slot[1]] - corners[slot[2]]
        out.append(point)
    return out


def simplex_weights(lam):
    """Barycentric weights of all `d + 1` nodes from the `d` coordinates of nodes 1..d."""
    return jnp.concatenate([1 - jnp.sum(lam, axis=-1, keepdims=True), lam], axis=-1)


def located_simplex_weights(maps: Float[Array, "n m"], x: Positions, lam: Float[Array, "n dim"]):
    """Node weights of `x` in its simplex from the barycentrics `lam` the locator found there
    (no second gather of the cell's map); differentiable in `x` and `maps` as
    `simplex_weights(barycentric(maps, x))` is."""
    import jax

    @jax.custom_jvp
    def weights(maps, x, lam):
        return simplex_weights(lam)

    @weights.defjvp
    def weights_jvp(primals, tangents):
        maps, x, lam = primals
        d_maps, d_x, _ = tangents
        _, d_weights = jax.jvp(lambda m, y: simplex_weights(barycentric(m, y)), (maps, x), (d_maps, d_x))
        return simplex_weights(lam), d_weights

    return weights(maps, x, jax.lax.stop_gradient(lam))


def solve_columns(columns, rhs):
    """Solve `J y = rhs` row by row for 2x2 or 3x3 `J` given as lists of per-row columns (each
    entry an `(n,)` array), by Cramer's rule on scalars; singular systems give 0."""
    if len(rhs) == 2:
        (a, c), (b, e) = columns
        det = a * e - b * c
        y = [e * rhs[0] - b * rhs[1], a * rhs[1] - c * rhs[0]]
    else:

        def cross(u, v):
            return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]

        def dot(u, v):
            return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]

        c0, c1, c2 = columns
        k12 = cross(c1, c2)
        det = dot(c0, k12)
        y = [dot(rhs, k12), dot(c0, cross(rhs, c2)), dot(c0, cross(c1, rhs))]
    safe = jnp.where(det == 0, 1, det)
    return [jnp.where(det == 0, 0, v / safe) for v in y]


def _jacobian_columns(kind: CellKind, xi, rel):
    """Shape-function values at `xi` (list of `(n,)` coordinates) and the columns of the map's
    Jacobian `dx/dxi`, with node coordinates `rel[k][a]` (each `(n,)`) relative to node 0 (`rel[0]`
    None)."""
    import jax

    dim = kind.dim
    n_k = _shape_list(kind, xi)
    units = [tuple(jnp.ones_like(v) if b == a else jnp.zeros_like(v) for b, v in enumerate(xi)) for a in range(dim)]
    dn = [jax.jvp(lambda *q: _shape_list(kind, q), tuple(xi), unit)[1] for unit in units]
    columns = [[sum(rel[k][a] * dn[b][k] for k in range(1, kind.nodes)) for a in range(dim)] for b in range(dim)]
    return n_k, columns


def box_map(frame, xi):
    """`(x, columns)`: the box map (quad, hexahedron) of the `box_frame` rows `frame` at the
    coordinates `xi` (a list of `(n,)` arrays), per component, and its Jacobian's columns
    `dx/dxi` (for `solve_columns`)."""
    kind = BOX[len(xi)]
    dim = kind.dim
    rel = [None] + [[frame[:, dim * k + a] for a in range(dim)] for k in range(1, kind.nodes)]
    n_k, columns = _jacobian_columns(kind, xi, rel)
    return [frame[:, a] + sum(n_k[k] * rel[k][a] for k in range(1, kind.nodes)) for a in range(dim)], columns


def _shape_list(kind: CellKind, xi):
    """`kind.shape` on a list of coordinate arrays, as a list of node weights."""
    w = kind.shape(jnp.stack(list(xi), axis=-1))
    return [w[..., k] for k in range(kind.nodes)]


def box_columns(dim: int) -> int:
    """Columns of a `box_frame`: node 0, the other nodes relative to it, the cell's size."""
    return dim * BOX[dim].nodes + 1


def box_frame(corners: np.ndarray) -> np.ndarray:
    """`(n, box_columns)` of corners `(n, nodes, dim)` (host side): node 0, nodes 1.. relative to
    node 0 (in the corners' precision, float64 for a mesh's table, so that float32 keeps them
    exact far from the origin), and the largest of those offsets' components (the scale of the
    convergence test)."""
    rel = corners[:, 1:] - corners[:, :1]
    size = np.max(np.abs(rel), axis=(1, 2))
    return np.concatenate([corners[:, 0], rel.reshape(len(corners), -1), size[:, None]], axis=1)


def strictly_convex(frame: np.ndarray) -> np.ndarray:
    """`(n,)` whether each quadrilateral of 2-D `box_frame` rows `frame` turns the same way,
    strictly, at each of its corners (host side, in the frame's own precision: what the
    ocean kernel solves a point's coordinates in closed form on). False for a triangle's
    frame of zeros."""
    x = [np.zeros(len(frame), frame.dtype)] + [frame[:, 2 * k] for k in range(1, 4)]
    y = [np.zeros(len(frame), frame.dtype)] + [frame[:, 2 * k + 1] for k in range(1, 4)]
    turns = [
        (x[j] - x[i]) * (y[k] - y[j]) - (y[j] - y[i]) * (x[k] - x[j])
        for i, j, k in ((i, (i + 1) % 4, (i + 2) % 4) for i in range(4))
    ]
    return np.all([turn > 0 for turn in turns], axis=0) | np.all([turn < 0 for turn in turns], axis=0)


def newton_coords(kind: CellKind, frame, target, steps: int, xi=None, done=None):
    """Parametric coordinates of `target` (`(n, dim)`) in cells of `kind` given by their
    `box_frame` rows `frame`, and whether Newton converged there.

    Coordinates are relative to node 0 (so float32 keeps its precision far from the origin).
    At most `steps` Newton iterations start from `xi` (default: the cell centre); a row stops
    as soon as its update falls below `sqrt(eps)` (quadratic convergence leaves it at rounding
    level), and the loop ends when every row has stopped (rows marked `done` never start), so a
    well-shaped cell costs 2-4 iterations, not `steps`. Iterates are kept in a band around the
    cell so points far outside still give a usable walking direction. A point counts as
    converged when the map reproduces it to `sqrt(eps)` of the cell's size: an unconverged
    iterate can land inside the unit cell for a point that is not in the cell.

    The arithmetic is written per component, on `(n,)` arrays: on XLA's CPU backend an
    iteration over `(n, nodes, dim)` arrays is slower (the small minor axes defeat
    vectorisation), and iterations unrolled in straight-line code far slower (XLA fuses them
    and recomputes each iterate per use), so the iterations stay in a `while_loop`.
    """
    import jax

    dim = kind.dim
    rel = [None] + [[frame[:, dim * k + a] for a in range(dim)] for k in range(1, kind.nodes)]
    d = [target[:, a] - frame[:, a] for a in range(dim)]
    if xi is None:
        xi = [jnp.full(target.shape[:1], kind.centre[a], target.dtype) for a in range(dim)]
    else:
        xi = [xi[:, a] for a in range(dim)]
    small = jnp.sqrt(jnp.finfo(target.dtype).eps)

    def newton_step(xi):
        n_k, columns = _jacobian_columns(kind, xi, rel)
        residual = [sum(n_k[j] * rel[j][a] for j in range(1, kind.nodes)) - d[a] for a in range(dim)]
        delta = solve_columns(columns, residual)
        return [jnp.clip(v - e, -2.0, 3.0) for v, e in zip(xi, delta)]

    if steps == 1:
        xi = newton_step(xi)
    else:

        def more(carry):
            i, _, stopped = carry
            return (i < steps) & ~jnp.all(stopped)

        def iterate(carry):
            i, xi, stopped = carry
            new = newton_step(xi)
            change = jnp.abs(new[0] - xi[0])
            for a in range(1, dim):
                change = jnp.maximum(change, jnp.abs(new[a] - xi[a]))
            return i + 1, [jnp.where(stopped, v, w) for v, w in zip(xi, new)], stopped | (change <= small)

        stopped = jnp.zeros(target.shape[:1], bool) if done is None else done
        _, xi, _ = jax.lax.while_loop(more, iterate, (jnp.asarray(0), xi, stopped))
    residual = _residual(kind, xi, rel, d)
    miss = jnp.abs(residual[0])
    for a in range(1, dim):
        miss = jnp.maximum(miss, jnp.abs(residual[a]))
    return jnp.stack(xi, axis=-1), miss <= small * frame[:, -1]


def _residual(kind: CellKind, xi, rel, d):
    """`x(xi) - target` of `kind`'s map, per component (node coordinates relative to node 0:
    `rel[0]` is None)."""
    n_k = _shape_list(kind, xi)
    return [sum(n_k[k] * rel[k][a] for k in range(1, kind.nodes)) - d[a] for a in range(kind.dim)]


def isoparametric_weights(kind: CellKind, corners, target, xi):
    """Node weights `shape(xi)` of `target` in its cell, `xi` being its converged coordinates;
    differentiable in `target` and `corners` through the inverse map (implicit function
    theorem), without another Newton step in the forward pass."""
    import jax

    @jax.custom_jvp
    def weights(corners, target, xi):
        return kind.shape(xi)

    @weights.defjvp
    def weights_jvp(primals, tangents):
        corners, target, xi = primals
        d_corners, d_target, _ = tangents
        dim = kind.dim
        coords = [xi[:, a] for a in range(dim)]
        rel = [None] + [[corners[:, k, a] - corners[:, 0, a] for a in range(dim)] for k in range(1, kind.nodes)]
        n_k, columns = _jacobian_columns(kind, coords, rel)
        # x(xi) = sum_k N_k(xi) X_k, so J dxi = dx - sum_k N_k(xi) dX_k
        moved = [d_target[:, a] - sum(n_k[k] * d_corners[:, k, a] for k in range(kind.nodes)) for a in range(dim)]
        d_xi = solve_columns(columns, moved)
        _, d_weights = jax.jvp(lambda q: kind.shape(q), (xi,), (jnp.stack(d_xi, axis=-1),))
        return kind.shape(xi), d_weights

    return weights(corners, target, jax.lax.stop_gradient(xi))


def merge_cells(blocks: Sequence[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """`(cells, cell_types)` of a mixed mesh from `[(vtk_type, (C_k, k) node ids), ...]`."""
    if len(blocks) == 1:  # not copied
        return blocks[0][1], np.full(len(blocks[0][1]), blocks[0][0])
    width = max(b.shape[1] for _, b in blocks)
    cells = np.concatenate([np.pad(b, ((0, 0), (0, width - b.shape[1])), constant_values=-1) for _, b in blocks])
    types = np.concatenate([np.full(len(b), t) for t, b in blocks])
    return cells, types


def chosen(per_kind: list[list], pick: list) -> list:
    """Entry by entry, each row's own kind's value from `[values of kind 0, of kind 1, ...]`
    (`pick[k]`: the rows of kind `k`; `[None]` for a single kind)."""
    out = per_kind[0]
    for mask, values in zip(pick[1:], per_kind[1:]):
        out = [jnp.where(mask[:, None] if v.ndim > 1 else mask, v, o) for v, o in zip(values, out)]
    return out


def barycentric(maps: Float[Array, "n m"], x: Positions) -> Float[Array, "n dim"]:
    """`A @ (x - point)` for each row of `x` with its cell's `affine_maps` row (in a simplex the
    barycentrics of nodes 1..d; elsewhere Newton's starting offset from the centre)."""
    return linear(maps, x - maps[:, : x.shape[1]])


def linear(maps: Float[Array, "n m"], d: Float[Array, "n dim"]) -> Float[Array, "n dim"]:
    """`A @ d` for each row with its cell's `affine_maps` matrix, written per component: XLA's
    CPU backend runs the same `einsum` as a batched matrix product, slower at a few thousand
    rows."""
    dim = d.shape[1]
    return jnp.stack([sum(maps[:, dim + i * dim + j] * d[:, j] for j in range(dim)) for i in range(dim)], axis=1)
