"""The linear cell kinds of VTK: node order, faces, shape functions, parametric inversion.

Every kind maps parametric coordinates `xi` to space with its own shape functions
(`x = sum_i N_i(xi) X_i`), exactly as VTK's cell classes do. A point is inside a cell when every
entry of `violations(xi)` is `<= 0`; entry `f` is positive when the point lies beyond face `f`
(listed in `faces` in the same order), which is where the locator walks next.

Simplices (triangles, tetrahedra) are affine: `xi` are barycentric coordinates from a per-cell
inverse map stored on the device. The others (quad, hexahedron, wedge, pyramid) are inverted by
Newton steps from the cell centre, as VTK's `EvaluatePosition` does, each row stopping once it
has converged.
"""

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp

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


def _quad_shape(xi):
    r, s = xi[..., 0], xi[..., 1]
    return jnp.stack([(1 - r) * (1 - s), r * (1 - s), r * s, (1 - r) * s], axis=-1)


def _hex_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    rm, sm, tm = 1 - r, 1 - s, 1 - t
    return jnp.stack([rm * sm * tm, r * sm * tm, r * s * tm, rm * s * tm, rm * sm * t, r * sm * t, r * s * t, rm * s * t], axis=-1)


def _wedge_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    u = 1 - r - s
    return jnp.stack([u * (1 - t), r * (1 - t), s * (1 - t), u * t, r * t, s * t], axis=-1)


def _pyramid_shape(xi):
    r, s, t = xi[..., 0], xi[..., 1], xi[..., 2]
    rm, sm, tm = 1 - r, 1 - s, 1 - t
    return jnp.stack([rm * sm * tm, r * sm * tm, r * s * tm, rm * s * tm, t], axis=-1)


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


TRIANGLE = CellKind("triangle", 2, 3, ((1, 2), (0, 2), (0, 1)), {VTK_TRIANGLE: (0, 1, 2)}, simplex=True)
QUAD = CellKind("quad", 2, 4, ((0, 3), (1, 2), (0, 1), (3, 2)), {VTK_QUAD: (0, 1, 2, 3), VTK_PIXEL: (0, 1, 3, 2)}, simplex=False, shape=_quad_shape, violations=_box_violations, centre=(0.5, 0.5))
TETRA = CellKind("tetra", 3, 4, ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2)), {VTK_TETRA: (0, 1, 2, 3)}, simplex=True)
HEXAHEDRON = CellKind(
    "hexahedron", 3, 8,
    ((0, 3, 7, 4), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7)),
    {VTK_HEXAHEDRON: tuple(range(8)), VTK_VOXEL: (0, 1, 3, 2, 4, 5, 7, 6)},
    simplex=False, shape=_hex_shape, violations=_box_violations, centre=(0.5, 0.5, 0.5),
)
WEDGE = CellKind(
    "wedge", 3, 6, ((0, 2, 5, 3), (0, 1, 4, 3), (1, 2, 5, 4), (0, 1, 2), (3, 4, 5)),
    {VTK_WEDGE: tuple(range(6))}, simplex=False, shape=_wedge_shape, violations=_wedge_violations, centre=(1 / 3, 1 / 3, 0.5),
)
PYRAMID = CellKind(
    "pyramid", 3, 5, ((0, 3, 4), (1, 2, 4), (0, 1, 4), (2, 3, 4), (0, 1, 2, 3)),
    {VTK_PYRAMID: tuple(range(5))}, simplex=False, shape=_pyramid_shape, violations=_pyramid_violations, centre=(0.5, 0.5, 0.2),
)

KINDS: dict[str, CellKind] = {k.name: k for k in (TRIANGLE, QUAD, TETRA, HEXAHEDRON, WEDGE, PYRAMID)}
BY_VTK_TYPE: dict[int, CellKind] = {t: k for k in KINDS.values() for t in k.vtk_types}


def simplex_weights(lam):
    """Barycentric weights of all `d + 1` nodes from the `d` coordinates of nodes 1..d."""
    return jnp.concatenate([1 - jnp.sum(lam, axis=-1, keepdims=True), lam], axis=-1)


def solve_small(jac, rhs):
    """Solve `jac @ y = rhs` for batches of 2×2 or 3×3 systems by Cramer's rule (one fused kernel;
    LAPACK's batched solve is far slower for millions of tiny systems). Singular systems give 0."""
    d = jac.shape[-1]
    if d == 2:
        a, b, c, e = jac[..., 0, 0], jac[..., 0, 1], jac[..., 1, 0], jac[..., 1, 1]
        det = a * e - b * c
        safe = jnp.where(det == 0, 1, det)
        y = jnp.stack([e * rhs[..., 0] - b * rhs[..., 1], a * rhs[..., 1] - c * rhs[..., 0]], axis=-1)
        return jnp.where((det == 0)[..., None], 0, y / safe[..., None])
    cols = [jac[..., :, i] for i in range(3)]
    det = jnp.sum(cols[0] * jnp.cross(cols[1], cols[2]), axis=-1)
    safe = jnp.where(det == 0, 1, det)
    y = jnp.stack(
        [
            jnp.sum(rhs * jnp.cross(cols[1], cols[2]), axis=-1),
            jnp.sum(cols[0] * jnp.cross(rhs, cols[2]), axis=-1),
            jnp.sum(cols[0] * jnp.cross(cols[1], rhs), axis=-1),
        ],
        axis=-1,
    )
    return jnp.where((det == 0)[..., None], 0, y / safe[..., None])


def newton_coords(kind: CellKind, corners, target, steps: int, xi=None, done=None):
    """Parametric coordinates of `target` in cells with node coordinates `corners[..., nodes, dim]`,
    and whether Newton converged there.

    Coordinates are relative to node 0 (so float32 keeps its precision far from the origin).
    At most `steps` Newton iterations start from `xi` (default: the cell centre); a row stops
    as soon as its update falls below `sqrt(eps)` (quadratic convergence leaves it at rounding
    level), and the loop ends when every row has stopped (rows marked `done` never start), so a
    well-shaped cell costs 2-3 iterations, not `steps`. Iterates are kept in a band around the
    cell so points far outside still give a usable walking direction. A point counts as
    converged when the map reproduces it to `sqrt(eps)` of the cell's size: an unconverged
    iterate can land inside the unit cell for a point that is not in the cell.
    """
    import jax

    dim = kind.dim
    rel = corners - corners[..., :1, :]
    d = target - corners[..., 0, :]
    if xi is None:
        xi = jnp.broadcast_to(jnp.asarray(kind.centre, target.dtype), d.shape)
    axes = [jnp.broadcast_to(jnp.eye(dim, dtype=xi.dtype)[j], xi.shape) for j in range(dim)]
    small = jnp.sqrt(jnp.finfo(d.dtype).eps)

    def newton_step(xi):
        n = kind.shape(xi)
        dn = jnp.stack([jax.jvp(kind.shape, (xi,), (e,))[1] for e in axes], axis=-1)  # (..., nodes, dim)
        residual = jnp.einsum("...k,...kd->...d", n, rel) - d
        jac = jnp.einsum("...kd,...ke->...de", rel, dn)
        return jnp.clip(xi - solve_small(jac, residual), -2.0, 3.0)

    if steps == 1:
        xi = newton_step(xi)
    else:  # a loop, not unrolled steps: the program stays small and compiles fast for every kind

        def more(carry):
            i, _, stopped = carry
            return (i < steps) & ~jnp.all(stopped)

        def iterate(carry):
            i, xi, stopped = carry
            new = newton_step(xi)
            settled = jnp.max(jnp.abs(new - xi), axis=-1) <= small
            return i + 1, jnp.where(stopped[..., None], xi, new), stopped | settled

        stopped = jnp.zeros(d.shape[:-1], bool) if done is None else done
        _, xi, _ = jax.lax.while_loop(more, iterate, (jnp.asarray(0), xi, stopped))
    miss = jnp.max(jnp.abs(jnp.einsum("...k,...kd->...d", kind.shape(xi), rel) - d), axis=-1)
    size = jnp.max(jnp.abs(rel), axis=(-2, -1))
    return xi, miss <= small * size
