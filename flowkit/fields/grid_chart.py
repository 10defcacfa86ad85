"""A layered field's curvilinear grid stepped in its fractional indices, as ROMS' own floats are.

On a logically rectangular grid (`quad_cells`, a `lookup`) a point's cell and its coordinates in
it are its fractional grid indices `X = (i + r, j + s)`: the cell is their floor, the coordinates
what remains. An integrator that steps `X` along $\\dot X = J(X)^{-1} u(x(X))$, with $x(X)$ the
cell's bilinear map (the one that interpolates the velocity) and $J$ its Jacobian, follows the
same flow as one stepping `x`, and locates each stage point by a floor instead of Newton's
iterations on the cell's map and walks across cells: a stage point is placed exactly, without
a tolerance, and the grid is left only where `X` leaves its index box. The step starts from
the hint of its first point (its cell and coordinates: exact indices), and its end is mapped
back to a position by the same bilinear map.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._custom_types import Args, Positions, TimeLike
from . import cells as _cells
from .base import SKIP, AbstractField, Hints
from .layered import LayeredField

Indices = Float[Array, "n dim"]
"""Rows of fractional grid indices `(i + r, j + s)`, then the position's depth."""


class GridChart(eqx.Module):
    """The fractional indices of a `LayeredField` over a grid of `cells[0] x cells[1]`
    quadrilaterals numbered as `quad_cells` numbers them (cell `a * cells[1] + b` between nodes
    `(a, b)`, `(a + 1, b)`, `(a + 1, b + 1)`, `(a, b + 1)`)."""

    field: LayeredField
    cells: tuple[int, int] = eqx.field(static=True)

    def indices(self, x: Positions, hint: Hints) -> Indices:
        """The rows of `x` as indices, from the cells and coordinates that locate them (located
        here where `hint` does not); rows `SKIP`ped (not moving) at the grid's first node.
        Differentiable in `x` through the inverse of the cell's map."""
        skip = hint.cell == SKIP
        hint = jax.lax.stop_gradient(self.field.locate_batch(x, hint)[0])
        cell = jnp.where(skip, 0, jnp.maximum(hint.cell, 0))
        coords = jnp.where(skip[:, None], 0, hint.coords).astype(x.dtype)
        corner = jnp.stack([cell // self.cells[1], cell % self.cells[1]], axis=1).astype(x.dtype)
        _, columns = self._map(cell, coords)
        moved = x[:, :2] - jax.lax.stop_gradient(x[:, :2])  # zero: the derivative of the inverse map
        turned = jnp.stack(_cells.solve_columns(columns, [moved[:, 0], moved[:, 1]]), axis=1)
        return jnp.concatenate([corner + coords + turned, x[:, 2:]], axis=1)

    def place(self, X: Indices) -> tuple[Positions, Hints, Bool[Array, " n"], list]:
        """`(x, hint, inside, columns)`: each row's position, its hint (the point NaN off the
        grid), whether it lies on the grid, and the columns of its cell's map's Jacobian there
        (`cells.solve_columns` inverts it). A row beyond the grid takes the edge cell beyond
        which it lies, whose map extrapolates."""
        n_i, n_j = self.cells
        tolerance = self.field.surface.containment_tolerance()
        corner, inside = [], jnp.ones(X.shape[0], bool)
        for a, n in ((0, n_i), (1, n_j)):
            corner.append(jnp.clip(jnp.floor(jnp.where(jnp.isnan(X[:, a]), 0, X[:, a])), 0, n - 1))
            inside = inside & (X[:, a] >= -tolerance) & (X[:, a] <= n + tolerance)
        cell = corner[0].astype(jnp.int32) * n_j + corner[1].astype(jnp.int32)
        coords = X[:, :2] - jnp.stack(corner, axis=1)
        y, columns = self._map(cell, coords)
        x = jnp.concatenate([y, X[:, 2:]], axis=1)
        point = jnp.where(inside[:, None], y, jnp.nan)
        return x, Hints(cell, jax.lax.stop_gradient(point), jax.lax.stop_gradient(coords)), inside, columns

    def locate(self, X: Indices) -> tuple[Hints, Bool[Array, " n"]]:
        """`locate_batch` of the rows' positions: their hints and whether they lie on the grid."""
        _, hint, inside, _ = self.place(X)
        return hint, inside

    def velocity(self, t: TimeLike, X: Indices, args: Args) -> Indices:
        """$\\dot X$: the field's velocity at each row's position, in indices per second."""
        x, hint, _, columns = self.place(X)
        u, _ = self.field.velocity_batch(t, x, args, hint.marked(True))
        along = _cells.solve_columns(columns, [u[:, 0], u[:, 1]])
        return jnp.concatenate([jnp.stack(along, axis=1), u[:, 2:]], axis=1)

    def _map(self, cell, coords) -> tuple[Float[Array, "n 2"], list]:
        """The bilinear map of each row's `cell` at `coords` and its Jacobian's columns, from
        `MeshField`'s cell table (its box frame: node 0, nodes 1-3 relative to it)."""
        surface = self.field.surface
        frame = surface.affine_map[cell, surface.dim * (surface.dim + 1) :].astype(coords.dtype)
        y, columns = _cells.box_map(frame, [coords[:, 0], coords[:, 1]])
        return jnp.stack(y, axis=1), columns


def chart_of(field: AbstractField) -> GridChart | None:
    """The chart of a `LayeredField` over a grid of `quad_cells` (`grid_cells`), else None."""
    if isinstance(field, LayeredField) and field.grid_cells is not None:
        return GridChart(field, field.grid_cells)
    return None
