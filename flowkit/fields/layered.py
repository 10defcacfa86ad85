"""Velocity on layers that follow the sea floor and the free surface (ROMS/CROCO s-levels,
TELEMAC-3D planes): a horizontal mesh located once per point, a column of levels per node."""

import dataclasses
from collections.abc import Mapping
from types import ModuleType
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Bool, Float, Int32

from .._custom_types import Args, ArrayInput, Bounds, Position, Positions, TimeLike, TimesLike, Velocity
from .._time import TimeOrigin
from . import cells as _cells, forcing
from .base import (
    SKIP,
    TIME_INVARIANT,
    AbstractSampledTogether,
    AbstractWithSeaFloor,
    Hints,
    built_by,
    node_rows,
    one_position,
    time_slices,
)
from .curvilinear import quad_cells
from .forcing import Forcings
from .grid import degrees_per_second
from .lookup import with_lookup
from .mesh import MeshField
from .sizes import axis_sizes, mesh_max_rate, shortest_edges


@built_by("from_arrays")
class LayeredField(AbstractWithSeaFloor, AbstractSampledTogether):
    """A 3-D velocity on terrain-following levels over a 2-D mesh of quadrilaterals (a model's
    curvilinear grid) or triangles (an unstructured model's mesh).

    A position is `(x, y, depth)`: `x, y` in degrees of longitude and latitude on the sphere
    (or metres of a projection), depth in metres below the moving free surface, positive down.
    Each mesh node holds a column: the depth of every level below the surface at that time, the
    velocity on every level (eastward, northward, downward; m/s) and the water depth (sea floor
    below the surface). A point is found in the horizontal mesh once, its column is the cell's
    shape-function mean of the node columns (linear in time between slices), and the velocity is
    linear in depth between the two levels around it, constant above the top level and below the
    bottom one (the values nearest the surface and the floor).

    Particles stay in the water: after each step the depth is kept between the surface (0) and
    the sea floor at the particle's place and time, and with no vertical velocity in the data a
    particle keeps its depth. A node of `land` has no velocity, and a point where the
    interpolated mask reaches 1/2 is on land (the tracker beaches particles there).

    One level and no vertical velocity is a depth-averaged model (ADCIRC, TELEMAC-2D, SCHISM's
    2-D output): positions are then `(x, y)`.

    **Made by `from_arrays`, from:**

    - `points`: `(P, 2)` horizontal node coordinates; `cells`: `(C, 3)` triangles or `(C, 4)`
      quadrilaterals in VTK's node order.
    - `depths`: `(T, P, K)` depth of each level below the surface, increasing with `k`
      (surface first), per time slice.
    - `velocity`: `(T, P, K, 2)` or `(T, P, K, 3)` (with the downward velocity), m/s.
    - `water_depth`: `(T, P)` sea floor below the surface.
    - `times`: `(T,)` increasing times, or None when `T = 1`.
    - `spherical`: positions in degrees (velocities converted at each particle's latitude).
    - `grid_shape`: the nodes' `(n_i, n_j)` when they are a logically rectangular grid in C
      order and `cells` are its `quad_cells`: points without a hint are then started at the
      cell an index lookup gives (`fields.lookup`), not searched for, and explicit Runge–Kutta
      methods step tracers in the grid's fractional indices (`grid_cells`, `fields.grid_chart`).
    - `land`: `(P,)` booleans; `time_origin`, `dtype` as for `GridField`.
    - `samples`: scalars to interpolate along tracks and for particle models and diffusivities,
      `{name: (T, P, K)}` on the levels (or `(T, P)`, the same on every level), interpolated as
      the velocity is; NaN off the mesh. Forcing fields (wind, waves) too, `{name: field}`.
    """

    surface: MeshField
    depths: Float[Array, "T P K"]
    """Each node's level depths below the surface, per time slice."""
    velocities: Float[Array, "T R 3"]
    """The velocity of each `(node, level)` row `node * K + level` (m/s; eastward, northward, downward)."""
    floor: Float[Array, "T P 1"]
    """The sea floor below the surface at each node."""
    cell_edges: Float[Array, " C"]
    """Each surface cell's shortest edge (metres on the sphere, else the points' units), what a
    step's Courant number is measured against (`cell_sizes`), tabulated once."""
    convex_cells: Int32[Array, " C"]
    """1 where a surface cell is a strictly convex quadrilateral (`cells.strictly_convex`), the
    ocean kernel's closed form for a point's coordinates there, else 0; tabulated once."""
    sample_table: Float[Array, "T R S"] | None
    times: Float[Array, " T"] | None
    land: Float[Array, " P"] | None
    bounds: Bounds
    levels: int = eqx.field(static=True)
    spherical: bool = eqx.field(static=True)
    time_origin: TimeOrigin | None = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True)
    dim: int = eqx.field(static=True)
    components: int = eqx.field(static=True)
    shared_location: ClassVar[bool] = True  # the surface's walk; settling moves depths only
    kernel: ClassVar[str | None] = "ocean"
    time_invariant: ClassVar[frozenset[str]] = TIME_INVARIANT | {"components", "land"}
    periodic: tuple[bool, ...] = eqx.field(static=True)
    forcings: Forcings | None
    sampled: tuple[str, ...] = eqx.field(static=True)
    grid_cells: tuple[int, int] | None = eqx.field(static=True, default=None)
    velocity_array: str = eqx.field(static=True, default="")
    """The file's variables the velocity was read from (`"u,v"`), for the run's record."""
    """The cells along each axis of a grid whose cells are `quad_cells(grid_shape)`, whose
    fractional indices explicit Runge–Kutta methods step tracers in (`fields.grid_chart`), or None."""

    @classmethod
    def from_arrays(
        cls,
        points: ArrayInput,
        cells: ArrayInput,
        depths: ArrayInput,
        velocity: ArrayInput,
        water_depth: ArrayInput,
        times: TimesLike | None = None,
        *,
        spherical: bool = True,
        grid_shape: tuple[int, int] | None = None,
        land: ArrayInput | None = None,
        samples: Mapping | None = None,
        time_origin: TimeOrigin | None = None,
        dtype: DTypeLike = "float32",
        **mesh_options,
    ) -> "LayeredField":
        """The field of the columns at the nodes of `points` and `cells`, checked and stored on
        the device (the arguments above; `mesh_options` go to `MeshField.from_arrays`)."""
        from .._dtypes import resolve

        dtype = resolve(dtype)
        points = np.asarray(points, np.float64)
        depths, velocity, water_depth = _checked_columns(points, depths, velocity, water_depth)
        n_times, n_points, n_levels = depths.shape
        times = _checked_times(times, n_times)
        if land is not None:
            land = np.asarray(land, bool).reshape(-1)
            velocity = np.where(land[None, :, None, None], 0.0, velocity)
        velocity = np.nan_to_num(velocity)
        surface = MeshField.from_arrays(points, cells, np.zeros_like(points), dtype=dtype, **mesh_options)
        if grid_shape is not None:
            surface = with_lookup(surface, tuple(grid_shape))
        dim = 2 if n_levels == 1 and not np.any(velocity[..., 2]) else 3
        lo, hi = points.min(axis=0), points.max(axis=0)
        top = max(float(np.nanmax(water_depth)), 1e-6)
        arrays, forcing_fields = forcing.split(samples)
        sampled, sample_table = _sample_table(arrays, depths.shape, dtype)
        field = cls(
            surface=surface,
            depths=jnp.asarray(depths, dtype),
            velocities=jnp.asarray(velocity.reshape(n_times, n_points * n_levels, 3), dtype),
            floor=jnp.asarray(water_depth[..., None], dtype),
            cell_edges=jnp.asarray(
                shortest_edges(np.asarray(surface.points, np.float64), np.asarray(surface.nodes), spherical, np), dtype
            ),
            convex_cells=jnp.asarray(_convex_cells(surface), jnp.int32),
            sample_table=sample_table,
            times=None if times is None else jnp.asarray(times, dtype),
            land=None if land is None or not land.any() else jnp.asarray(land, dtype),
            bounds=(jnp.asarray([*lo, 0.0][:dim], dtype), jnp.asarray([*hi, top][:dim], dtype)),
            levels=int(n_levels),
            spherical=bool(spherical),
            time_origin=time_origin,
            time_range=(-np.inf, np.inf) if times is None else (float(times[0]), float(times[-1])),
            dim=dim,
            components=dim,
            periodic=(False,) * dim,
            forcings=None,
            sampled=sampled,
            grid_cells=_grid_cells(cells, grid_shape),
        )
        return dataclasses.replace(
            field, forcings=forcing.made(field, forcing_fields, "LayeredField: samples", set(arrays))
        )

    def canonical_batch(self, x: Positions) -> Positions:
        return x  # columns hold their depths: `settle_batch` keeps them in the water

    def time_leaves(self) -> dict:
        return {}  # read whole, not streamed

    def value_components(self) -> int:
        return self.components

    def describe(self) -> str:
        return (
            f"{self.surface.points.shape[0]} columns of {self.levels} levels, {self.surface.n_cells} "
            f"cells{time_slices(self.times)}"
        )

    # -- columns ----------------------------------------------------------------------------

    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        return self.surface.hints(n, dtype, xp)

    def _place(self, x, hint):
        """Each row's horizontal cell: hints, whether it lies on the mesh, the cell's nodes and
        their shape-function weights."""
        hint, found = self.surface.locate(x[:, :2], hint)
        nodes, weights = self.surface.node_weights(jnp.maximum(hint.cell, 0), x[:, :2], hint.coords)
        return hint, found, nodes, weights

    # Depths, velocities and the floor are tables of their own, each gathered in whole rows: a
    # slice of one table holding them all was a copy of it in every evaluation (0.1 s a stage on
    # a 130 MB grid), and a gather of its columns ran 2.5x slower than these rows.

    def _floor(self, t, x, nodes, weights):
        """The sea floor below the surface at each row's place and time `(n,)`."""
        return node_rows(self.floor, self.times, jnp.asarray(t, x.dtype), nodes, weights)[:, 0].astype(x.dtype)

    def _floor_or_nan(self, t, x, found, nodes, weights):
        """`_floor` where a row lies on the mesh (`found`), NaN off it."""
        return jnp.where(found, self._floor(t, x, nodes, weights), jnp.nan)

    def _bracket(self, t, x, nodes, weights):
        """`(level, weight)`: per row of `x`, the level above it `(n,)` and the weight of the
        level below (None for one level). The levels' depths are the cell's interpolation of
        the node columns; between the two levels around the row a value is linear in depth,
        above the top and below the bottom level the nearest level's."""
        k_levels = self.levels
        if k_levels == 1:
            return jnp.zeros(x.shape[0], jnp.int32), None
        depth = node_rows(self.depths, self.times, t, nodes, weights).astype(x.dtype)
        below = jnp.clip(jnp.sum(depth <= x[:, 2:3], axis=1), 1, k_levels - 1)[:, None]
        d0, d1 = jnp.take_along_axis(depth, below - 1, axis=1), jnp.take_along_axis(depth, below, axis=1)
        weight = jnp.clip((x[:, 2:3] - d0) / jnp.maximum(d1 - d0, jnp.finfo(x.dtype).tiny), 0, 1)
        return below[:, 0] - 1, weight

    def _on_levels(self, table, t, nodes, weights, level, weight, dtype):
        """`table[T, node * K + level, c]` (the velocities, the samples) between the levels
        `_bracket` found. Only those two levels are gathered from each node (short rows, not
        whole columns: the gathers are the step's cost)."""
        rows = nodes * self.levels + level[:, None]
        upper = node_rows(table, self.times, t, rows, weights).astype(dtype)
        if weight is None:
            return upper
        return upper + weight * (node_rows(table, self.times, t, rows + 1, weights).astype(dtype) - upper)

    def _velocity(self, t, x, nodes, weights, bracket=None):
        """Velocity in m/s at each row's place, time and depth (between the levels `bracket`,
        `_bracket`'s, found here where not given)."""
        t = jnp.asarray(t, x.dtype)
        level, weight = self._bracket(t, x, nodes, weights) if bracket is None else bracket
        return self._on_levels(self.velocities, t, nodes, weights, level, weight, x.dtype)[:, : self.dim]

    def _converted(self, u, x):
        return degrees_per_second(u, x[:, 1]) if self.spherical else u

    # -- the field contract -----------------------------------------------------------------

    def velocity_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        u, _, _, hint = self.values_together(t, x, args, hint, samples=False, sea_floor=False)
        return u, hint

    def values_together(
        self, t: TimeLike, x: Positions, args: Args, hint: Hints, samples: bool, sea_floor: bool
    ) -> tuple[Positions, dict[str, Array], Float[Array, " n"] | None, Hints]:
        t = jnp.asarray(t, x.dtype)
        hint, found, nodes, weights = self._place(x, hint)
        bracket = self._bracket(t, x, nodes, weights)
        u = self._converted(self._velocity(t, x, nodes, weights, bracket), x)
        u = jnp.where((hint.cell == SKIP)[:, None], 0, u)
        sampled = self.with_forcings(t, x, self._sampled(t, x, found, nodes, weights, *bracket)) if samples else {}
        floor = self._floor_or_nan(t, x, found, nodes, weights) if sea_floor else None
        return u, sampled, floor, hint

    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        hint, _, nodes, weights = self._place(x, hint)
        return self._velocity(t, x, nodes, weights), hint

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        """Velocity at one point; NaN off the mesh."""
        x = one_position(x, self.dim).astype(self.velocities.dtype)[None]  # located in the field's precision
        _, found, nodes, weights = self._place(x, self.hints(1, x.dtype))
        return jnp.where(found[:, None], self._converted(self._velocity(t, x, nodes, weights), x), jnp.nan)[0]

    def sample_batch(self, t: TimeLike, x: Positions, hint: Hints) -> dict[str, Array]:
        if self.sample_table is None:
            return {}
        t = jnp.asarray(t, x.dtype)
        hint, found, nodes, weights = self._place(x, hint)
        return self._sampled(t, x, found, nodes, weights, *self._bracket(t, x, nodes, weights))

    def _sampled(self, t, x, found, nodes, weights, level, weight) -> dict[str, Array]:
        """The sampled arrays at each row's place and depth (NaN off the mesh)."""
        if self.sample_table is None:
            return {}
        on_levels = self._on_levels(self.sample_table, t, nodes, weights, level, weight, x.dtype)
        values = jnp.where(found[:, None], on_levels, jnp.nan)
        return {name: values[:, i] for i, name in enumerate(self.sampled)}

    def in_domain(self, x: Position) -> Bool[Array, ""]:
        x = jnp.asarray(x)[None]
        return self.surface.locate(x[:, :2], self.hints(1, x.dtype))[1][0]

    def locate_batch(self, x: Positions, hint: Hints | None) -> tuple[Hints, Bool[Array, " n"]]:
        return self.surface.locate(x[:, :2], hint)

    def settle_batch(
        self, t: TimeLike, x: Positions, hint: Hints | None, reflect: bool = False
    ) -> tuple[Positions, Hints | None]:
        """Depths kept between the surface and the sea floor at each row's place at time `t`:
        clamped (advection: a particle that reaches the surface stays there), or with `reflect`
        mirrored at both (a random walk, so that a well-mixed column stays mixed). The hints
        returned locate the rows (marked `exact`: the step's checks that follow locate nothing)."""
        if self.dim == 2:
            return x, hint
        hint, found, nodes, weights = self._place(x, hint)
        floor = self._floor(t, x, nodes, weights)
        z = x[:, 2]
        if reflect:
            z = jnp.abs(z)
            z = jnp.where(z > floor, 2 * floor - z, z)
        return x.at[:, 2].set(jnp.where(found, jnp.clip(z, 0, floor), x[:, 2])), hint.marked(True)

    def sea_floor_batch(self, t: TimeLike, x: Positions, hint: Hints) -> Float[Array, " n"]:
        _, found, nodes, weights = self._place(x, hint)
        return self._floor_or_nan(jnp.asarray(t, x.dtype), x, found, nodes, weights)

    def beached_batch(self, x: Positions, hint: Hints | None = None) -> Bool[Array, " n"] | None:
        if self.land is None:
            return None
        _, _, nodes, weights = self._place(x, self.hints(x.shape[0], x.dtype) if hint is None else hint)
        return jnp.sum(weights * self.land[nodes], axis=-1) >= 0.5

    def cell_sizes(self, x: Positions, hint: Hints) -> Float[Array, "n dim"]:
        """Horizontal sizes of each row's cell; depth is not counted (infinite size)."""
        sizes = axis_sizes(self.cell_edges[jnp.maximum(hint.cell, 0)], x[:, :2], self.spherical)
        return jnp.concatenate([sizes, jnp.full((x.shape[0], self.dim - 2), jnp.inf, sizes.dtype)], axis=1).astype(
            x.dtype
        )

    def max_courant_rate(self) -> float:
        k = self.levels
        velocity = np.asarray(self.velocities).reshape(self.velocities.shape[0], -1, k, 3)[..., :2]
        return mesh_max_rate(self.surface.points, self.surface.nodes, np.abs(velocity).max(axis=2), self.spherical)

    def water_depth(self, t: TimeLike, points) -> np.ndarray:
        """The sea floor below the surface at `points` `(n, 2 or 3)` and time `t` (host side:
        for seeding and checks); NaN off the mesh."""
        x = jnp.asarray(np.asarray(points, np.float64)[:, :2], self.depths.dtype)
        floor, found = _located_floor(self, jnp.asarray(t, x.dtype), x)
        return np.where(np.asarray(found), np.asarray(floor), np.nan)


@eqx.filter_jit
def _located_floor(field: LayeredField, t, x):
    _, found, nodes, weights = field._place(x, field.hints(x.shape[0], x.dtype))
    return field._floor(t, x, nodes, weights), found


def _convex_cells(surface: MeshField) -> np.ndarray:
    """`(C,)` whether each cell of `surface` is a strictly convex quadrilateral, judged on its
    stored box frame (`locator.affine_maps`; none on a mesh of triangles alone)."""
    table = np.asarray(surface.affine_map)
    if table.shape[1] == 2 + 2 * 2:
        return np.zeros(len(table), bool)
    return _cells.strictly_convex(table[:, 2 + 2 * 2 :])


def _grid_cells(cells: ArrayInput, grid_shape: tuple[int, int] | None) -> tuple[int, int] | None:
    """The cells along each axis of `grid_shape` when `cells` are its `quad_cells` (node order
    included: a cell's first coordinate runs along the grid's first axis), else None."""
    if grid_shape is None or len(grid_shape) != 2:
        return None
    same = np.array_equal(np.asarray(cells), quad_cells(tuple(grid_shape)))
    return (int(grid_shape[0]) - 1, int(grid_shape[1]) - 1) if same else None


def _checked_columns(points: np.ndarray, depths, velocity, water_depth):
    """`(depths (T, P, K), velocity (T, P, K, 3), water_depth (T, P))` in float64, their shapes
    checked against the `(P, 2)` points, a missing downward velocity 0."""
    depths, velocity, water_depth = (np.asarray(a, np.float64) for a in (depths, velocity, water_depth))
    n_times, n_levels = (depths.shape[0], depths.shape[2]) if depths.ndim == 3 else (0, 0)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"LayeredField: points must be (P, 2) horizontal coordinates, got {points.shape}")
    if depths.shape != (n_times, len(points), n_levels) or n_levels < 1:
        raise ValueError(f"LayeredField: depths must be (T, P, K) with P = {len(points)} nodes, got {depths.shape}")
    if velocity.shape[:3] != depths.shape or velocity.ndim != 4 or velocity.shape[3] not in (2, 3):
        raise ValueError(
            f"LayeredField: velocity must be (T, P, K, 2 or 3) matching depths {depths.shape}, got {velocity.shape}"
        )
    if water_depth.shape != depths.shape[:2]:
        raise ValueError(f"LayeredField: water_depth must be (T, P) = {depths.shape[:2]}, got {water_depth.shape}")
    if n_levels > 1 and np.any(np.diff(depths, axis=-1) < 0):
        raise ValueError("LayeredField: level depths must increase from the surface down at every node")
    if velocity.shape[3] == 2:
        velocity = np.concatenate([velocity, np.zeros(velocity.shape[:3] + (1,))], axis=-1)
    return depths, velocity, water_depth


def _checked_times(times: TimesLike | None, n_times: int) -> np.ndarray | None:
    """The slices' times, increasing, one per slice; None for a single slice without times."""
    if times is None:
        if n_times != 1:
            raise ValueError(f"LayeredField: {n_times} time slices need times")
        return None
    times = np.asarray(times, np.float64)
    if times.shape != (n_times,) or n_times < 2 or not np.all(np.diff(times) > 0):
        raise ValueError(f"LayeredField: times must be {n_times} increasing values, got {times}")
    return times


def _sample_table(samples: Mapping | None, shape: tuple[int, int, int], dtype) -> tuple[tuple[str, ...], Array | None]:
    """`(names, table)`: the samples `{name: (T, P, K) or (T, P)}` as one `(T, P * K, S)` table
    of `(node, level)` rows, as the velocity's levels are gathered."""
    if not samples:
        return (), None
    columns = []
    for name, values in samples.items():
        a = np.asarray(values, np.float64)
        a = np.broadcast_to(a[..., None], shape) if a.shape == shape[:2] else a
        if a.shape != shape:
            raise ValueError(f"LayeredField: samples[{name!r}] must be (T, P, K) = {shape} or (T, P), got {a.shape}")
        columns.append(a.reshape(shape[0], -1))
    return tuple(str(name) for name in samples), jnp.asarray(np.stack(columns, axis=-1), dtype)
