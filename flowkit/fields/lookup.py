"""The cell of a logically rectangular grid that a point lies in, guessed without a search.

An ocean model's curvilinear grid is a mesh of quadrilaterals (hexahedra over depth levels)
numbered as `quad_cells` numbers them. A point with no hint (a seed, a forcing evaluated from
scratch, a probe) would be searched for in the mesh's bins, trying cell after cell. Here the
nodes' fractional grid indices `(i + xi, j + eta)` are tabulated once on a regular grid over
the box, so a point's indices are a bilinear interpolation away: its cell is then checked
and walked on from as any hinted location is, which keeps the result exact (the table only
decides where the search starts).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._custom_types import Positions
from .base import Hints


class IndexLookup(eqx.Module):
    """Fractional grid indices tabulated over the grid's horizontal box (`table[a, b] = (i, j)`
    at the table node `origin + (a, b) / inv_size`), and the depth `levels` of a 3-D grid."""

    origin: Float[Array, " 2"]
    inv_size: Float[Array, " 2"]
    table: Float[Array, "a b 2"]
    levels: Float[Array, " K"] | None
    shape: tuple[int, ...] = eqx.field(static=True)

    def cells(self, x: Positions) -> Int[Array, " n"]:
        """The cell each row of `x` most likely lies in (clamped to the grid)."""
        s = (x[:, :2] - self.origin.astype(x.dtype)) * self.inv_size.astype(x.dtype)
        width = self.table.shape[1]
        corner = jnp.clip(jnp.floor(s).astype(jnp.int32), 0, jnp.asarray(self.table.shape[:2]) - 2)
        f = jnp.clip(s - corner, 0, 1)
        flat, k = self.table.reshape(-1, 2), corner[:, 0] * width + corner[:, 1]  # rows of a flat table: 2.5x faster
        near = flat[k] + f[:, :1] * (flat[k + width] - flat[k])
        far = flat[k + 1] + f[:, :1] * (flat[k + width + 1] - flat[k + 1])
        index = near + f[:, 1:] * (far - near)
        i = jnp.clip(jnp.floor(index[:, 0]).astype(jnp.int32), 0, self.shape[0] - 2)
        j = jnp.clip(jnp.floor(index[:, 1]).astype(jnp.int32), 0, self.shape[1] - 2)
        cell = i * (self.shape[1] - 1) + j
        if self.levels is None:
            return cell
        k = jnp.searchsorted(self.levels.astype(x.dtype), x[:, 2], side="right") - 1
        return cell * (self.shape[2] - 1) + jnp.clip(k, 0, self.shape[2] - 2).astype(jnp.int32)

    def started(self, x: Positions, hint: Hints) -> Hints:
        """`hint` with its rows located nowhere yet (cell -1) started at their guessed cell;
        hinted rows (RK stages, steps) cost nothing here."""
        unknown = hint.cell == -1
        return jax.lax.cond(
            jnp.any(unknown),
            lambda: eqx.tree_at(lambda h: h.cell, hint, jnp.where(unknown, self.cells(x), hint.cell)),
            lambda: hint,
        )


def index_lookup(mesh, shape: tuple[int, ...], levels=None, per_cell: float = 1.0, max_nodes: int = 2**18):
    """The `IndexLookup` of `mesh` (a `MeshField` of `quad_cells(shape)`; `levels`: the depths
    of a 3-D grid's third index), with about `per_cell` table nodes per grid cell along each
    axis of the cells' mean extent. Table nodes outside the grid take the indices of the
    nearest one inside. None when no table node lies in the grid."""
    from scipy.spatial import cKDTree

    points = np.asarray(mesh.points, np.float64).reshape(*shape, -1)
    horizontal = points[:, :, 0, :2] if len(shape) == 3 else points
    lo, hi = horizontal.reshape(-1, 2).min(axis=0), horizontal.reshape(-1, 2).max(axis=0)
    corners = [horizontal[:-1, :-1], horizontal[1:, :-1], horizontal[1:, 1:], horizontal[:-1, 1:]]
    extent = np.maximum((np.maximum.reduce(corners) - np.minimum.reduce(corners)).reshape(-1, 2).mean(axis=0), 1e-12)
    count = np.maximum(np.ceil((hi - lo) / extent * per_cell).astype(int) + 1, 2)
    while math.prod(count) > max_nodes:
        count = np.maximum(count // 2, 2)
    size = np.maximum(hi - lo, 1e-12) / (count - 1)
    axes = [lo[a] + size[a] * np.arange(count[a]) for a in range(2)]
    index, found = grid_indices(horizontal, np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2))
    if not found.any():
        return None
    # each table node outside the grid takes the indices of the nearest one inside, by table
    # position (a k-d tree of the inside ones: scipy.spatial, as grid_indices; ndimage's
    # distance transform was 0.4 s of import in a first read)
    nodes = np.stack(np.meshgrid(*(np.arange(n) for n in count), indexing="ij"), axis=-1).reshape(-1, 2)
    inside = np.flatnonzero(found)
    nearest = inside[cKDTree(nodes[inside]).query(nodes, workers=-1)[1]]
    table = index[nearest].reshape(*count, 2)
    dtype = mesh.points.dtype
    return IndexLookup(
        jnp.asarray(lo, dtype),
        jnp.asarray(1.0 / size, dtype),
        jnp.asarray(table, dtype),
        None if levels is None else jnp.asarray(levels, dtype),
        tuple(int(n) for n in shape),
    )


def grid_indices(nodes: np.ndarray, x: np.ndarray, tolerance: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Fractional grid indices `(i + xi, j + eta)` of the points `x` `(n, 2)` in the grid of
    `nodes` `(n_i, n_j, 2)`, bilinear in each cell, and whether each lies in the grid (host
    side, float64). Each point is tried in the cells around its nearest node, first the one
    the grid's local axes there point to, by Newton."""
    from scipy.spatial import cKDTree

    n_i, n_j = nodes.shape[:2]
    _, nearest = cKDTree(nodes.reshape(-1, 2)).query(x, workers=-1)
    i0, j0 = nearest // n_j, nearest % n_j
    axis_i = nodes[np.minimum(i0 + 1, n_i - 1), j0] - nodes[np.maximum(i0 - 1, 0), j0]
    axis_j = nodes[i0, np.minimum(j0 + 1, n_j - 1)] - nodes[i0, np.maximum(j0 - 1, 0)]
    d = x - nodes[i0, j0]
    det = axis_i[:, 0] * axis_j[:, 1] - axis_i[:, 1] * axis_j[:, 0]
    toward = np.stack(
        [d[:, 0] * axis_j[:, 1] - d[:, 1] * axis_j[:, 0], axis_i[:, 0] * d[:, 1] - axis_i[:, 1] * d[:, 0]]
    )
    step = (toward * np.sign(det) < 0).astype(int)  # 1 where the point lies before the node along the axis
    index = np.zeros((len(x), 2))
    found = np.zeros(len(x), bool)
    for flip_i, flip_j in ((0, 0), (1, 0), (0, 1), (1, 1)):
        rows = np.flatnonzero(~found)
        i = np.clip(i0[rows] - (step[0, rows] ^ flip_i), 0, n_i - 2)
        j = np.clip(j0[rows] - (step[1, rows] ^ flip_j), 0, n_j - 2)
        xi = _bilinear_inverse(nodes[i, j], nodes[i + 1, j], nodes[i + 1, j + 1], nodes[i, j + 1], x[rows])
        inside = np.all((xi >= -tolerance) & (xi <= 1 + tolerance), axis=1)
        index[rows[inside]] = np.stack([i, j], axis=1)[inside] + xi[inside]
        found[rows[inside]] = True
    return index, found


def _bilinear_inverse(p00, p10, p11, p01, x, steps: int = 6) -> np.ndarray:
    """Parametric coordinates of `x` in the bilinear quads `p00 p10 p11 p01` (rows), by Newton
    from the centre; rows whose map is singular come back far outside."""
    b, c, d = p10 - p00, p01 - p00, p11 - p10 - p01 + p00
    xi = np.full((len(x), 2), 0.5)
    for _ in range(steps):
        r = p00 + b * xi[:, :1] + c * xi[:, 1:] + d * xi[:, :1] * xi[:, 1:] - x
        ju, jv = b + d * xi[:, 1:], c + d * xi[:, :1]
        det = ju[:, 0] * jv[:, 1] - ju[:, 1] * jv[:, 0]
        det = np.where(np.abs(det) > 1e-300, det, np.inf)
        delta = np.stack([jv[:, 1] * r[:, 0] - jv[:, 0] * r[:, 1], ju[:, 0] * r[:, 1] - ju[:, 1] * r[:, 0]], axis=1)
        xi = np.clip(xi - delta / det[:, None], -2.0, 3.0)
    return xi


def with_lookup(mesh, shape: tuple[int, ...], levels=None):
    """`mesh` (a `MeshField` of `quad_cells(shape)`) with its `IndexLookup`."""
    return eqx.tree_at(lambda m: m.lookup, mesh, index_lookup(mesh, shape, levels), is_leaf=lambda v: v is None)
