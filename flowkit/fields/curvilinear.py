"""An ocean model's curvilinear lon/lat grid (ROMS, NEMO, MITgcm regional grids) as a mesh in degrees."""

import math
from types import ModuleType
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Bool, Float

from .._custom_types import Args, ArrayInput, Bounds, Position, Positions, TimeLike, TimesLike, Velocity
from .._time import TimeOrigin
from .base import TIME_INVARIANT, Hints, built_by
from .forcing import Forcings
from .grid import degrees_per_second
from .located import AbstractMeshField
from .lookup import with_lookup
from .mesh import MeshField
from .sizes import axis_sizes, mesh_max_rate, shortest_edges


@built_by("from_arrays")
class CurvilinearField(AbstractMeshField):
    """Velocity in m/s on a logically rectangular grid whose nodes have 2-D longitudes and
    latitudes, `lon[i, j]`, `lat[i, j]` (degrees), optionally over depth levels (metres,
    positive down): a `MeshField` of quadrilaterals (hexahedra with depth) in degrees, its
    `mesh`, so a
    point is found and interpolated exactly as on a `.vts` mesh, bilinear in each cell's own
    parametric coordinates.

    Velocities are converted to degrees per second at the particle's own latitude, as on a
    spherical `GridField`. Longitudes are unwrapped along the grid, so a regional grid may cross
    the dateline (positions then run past 180°); a global grid's seam and north fold are not
    joined.

    **Made by `from_arrays`, from:**

    - `lon`, `lat`: `(n_i, n_j)` node coordinates in degrees.
    - `values`: `(n_i, n_j[, n_k], C)` or `(T, n_i, n_j[, n_k], C)` with `times` (or the nodes
      flattened in C order): eastward and northward (and downward) velocity in m/s; `fk.io.read`
      rotates grid-relative components by the file's `angle` first.
    - `depth`: `(n_k,)` increasing depths for a 3-D grid.
    - `land`: `(n_i, n_j[, n_k])` booleans, true at land nodes: their values become 0, and a
      point where the interpolated mask reaches 1/2 is on land (the tracker beaches particles
      there, as on a `GridField`).
    - `time_origin`, `dtype`: as for `GridField`.
    """

    mesh: MeshField
    land: Float[Array, " P"] | None
    bounds: Bounds
    dim: int = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True)
    periodic: tuple[bool, ...] = eqx.field(static=True)
    time_origin: TimeOrigin | None = eqx.field(static=True)
    grid_shape: tuple[int, ...] = eqx.field(static=True)
    forcings: Forcings | None
    velocity_array: str = eqx.field(static=True, default="")
    """The file's variables the velocity was read from (`"uo,vo"`), for the run's record."""
    spherical: ClassVar[bool] = True
    shared_location: ClassVar[bool] = False
    kernel: ClassVar[str | None] = None  # the mesh kernel takes MeshField's own tables only
    time_invariant: ClassVar[frozenset[str]] = TIME_INVARIANT | {"land"}

    @classmethod
    def from_arrays(
        cls,
        lon: ArrayInput,
        lat: ArrayInput,
        values: ArrayInput,
        times: TimesLike | None = None,
        *,
        depth: ArrayInput | None = None,
        land: ArrayInput | None = None,
        time_origin: TimeOrigin | None = None,
        dtype: DTypeLike = "float32",
        **mesh_options,
    ) -> "CurvilinearField":
        """The field of `values` on the grid `lon`, `lat` (`depth`), checked and stored on the
        device (the arguments above; `mesh_options` go to `MeshField.from_arrays`)."""
        points, shape, depth = grid_points(lon, lat, depth)
        values = np.asarray(values, np.float64)
        lead = () if times is None else (len(np.asarray(times)),)
        if values.shape not in (lead + shape + (len(shape),), lead + (math.prod(shape), len(shape))):
            raise ValueError(
                f"CurvilinearField: values must have shape {lead + shape + (len(shape),)} ((times,) "
                f"nodes, components), got {values.shape}"
            )
        values = values.reshape(lead + (-1, len(shape)))
        if land is not None:
            land = np.asarray(land, bool)
            if land.shape not in (shape, (math.prod(shape),)):
                raise ValueError(f"CurvilinearField: land must have the grid's shape {shape}, got {land.shape}")
            land = land.reshape(-1)
            values = np.where(land[:, None], 0.0, values)
        mesh = MeshField.from_arrays(points, quad_cells(shape), values, times=times, dtype=dtype, **mesh_options)
        mesh = with_lookup(mesh, shape, depth)
        return cls(
            mesh=mesh,
            land=None if land is None or not land.any() else jnp.asarray(land, mesh.values.dtype),
            bounds=mesh.bounds,
            dim=mesh.dim,
            time_range=mesh.time_range,
            periodic=mesh.periodic,
            time_origin=time_origin,
            grid_shape=shape,
            forcings=None,
        )

    def as_mesh(self) -> MeshField:
        return self.mesh

    @property
    def times(self):  # its mesh's, which streaming replaces (a leaf of `eqx.tree_at`, unannotated)
        return self.mesh.times

    def time_leaves(self) -> dict:
        return self.mesh.time_leaves()

    def value_components(self) -> int:
        return self.dim

    def describe(self) -> str:
        return self.mesh.describe()

    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        return self.mesh.hints(n, dtype, xp)

    def locate_batch(self, x: Positions, hint: Hints | None) -> tuple[Hints, Bool[Array, " n"]]:
        return self.mesh.locate(x, hint)

    def sample_batch(self, t: TimeLike, x: Positions, hint: Hints) -> dict[str, Array]:
        return self.mesh.sample_batch(t, x, hint)

    def in_domain(self, x: Position) -> Bool[Array, ""]:
        return self.mesh.in_domain(x)

    def velocity_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        u, hint = self.data_batch(t, x, args, hint)
        return degrees_per_second(u, x[:, 1]), hint

    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        return self.mesh.velocity_batch(t, x, args, hint)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        x = jnp.asarray(x)
        return degrees_per_second(self.mesh(t, x, args), x[1])

    def beached_batch(self, x: Positions, hint: Hints | None = None) -> Bool[Array, " n"] | None:
        if self.land is None:
            return None
        if hint is None:
            hint, _ = self.mesh.locate(x, self.hints(x.shape[0], x.dtype))
        nodes, weights = self.mesh.node_weights(jnp.maximum(hint.cell, 0), x, hint.coords)
        return jnp.sum(weights * self.land[nodes], axis=-1) >= 0.5

    def cell_sizes(self, x: Positions, hint: Hints) -> Float[Array, "n dim"]:
        edge = shortest_edges(self.mesh.points, self.mesh.nodes[jnp.maximum(hint.cell, 0)], spherical=True)
        return axis_sizes(edge, x, spherical=True).astype(x.dtype)

    def max_courant_rate(self) -> float:
        return mesh_max_rate(self.mesh.points, self.mesh.nodes, self.mesh.values, spherical=True)


def grid_points(lon: ArrayInput, lat: ArrayInput, depth: ArrayInput | None):
    """`(points (n_i * n_j[* n_k], 2 or 3), shape, depth)`: the nodes of a lon/lat grid (and its
    depth levels), longitudes unwrapped along the grid so that a regional grid may cross the dateline."""
    lon, lat = np.asarray(lon, np.float64), np.asarray(lat, np.float64)
    if lon.ndim != 2 or lon.shape != lat.shape or min(lon.shape) < 2:
        raise ValueError(
            "CurvilinearField: lon and lat must be 2-D arrays of one shape, at least 2 x 2, got "
            f"{lon.shape} and {lat.shape}"
        )
    if np.nanmax(np.abs(lat)) > 90 or not (np.isfinite(lon).all() and np.isfinite(lat).all()):
        raise ValueError("CurvilinearField: latitudes must be finite and within [-90, 90], longitudes finite")
    lon = np.unwrap(np.unwrap(lon, period=360.0, axis=0), period=360.0, axis=1)  # continuous across the dateline
    points = np.stack([lon, lat], axis=-1)
    if depth is None:
        return points.reshape(-1, 2), lon.shape, None
    depth = np.asarray(depth, np.float64)
    if depth.ndim != 1 or len(depth) < 2 or not np.all(np.diff(depth) > 0):
        raise ValueError(f"CurvilinearField: depth must be 1-D, increasing, with at least 2 levels, got {depth}")
    shape = lon.shape + (len(depth),)
    points = np.concatenate(
        [np.repeat(points[:, :, None], len(depth), axis=2), np.broadcast_to(depth, shape)[..., None]], axis=-1
    )
    return points.reshape(-1, 3), shape, depth


def quad_cells(shape: tuple[int, ...]) -> np.ndarray:
    """Quadrilaterals (hexahedra over depth levels) between the nodes of a logically rectangular
    grid of `shape`, numbered in C order, in VTK's node order."""
    index = np.arange(math.prod(shape)).reshape(shape)
    ni, nj = shape[0] - 1, shape[1] - 1
    if len(shape) == 2:
        corners = [index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]]
        return np.stack([c.reshape(-1) for c in corners], axis=-1).reshape(ni * nj, 4)
    top = [index[:-1, :-1, :-1], index[1:, :-1, :-1], index[1:, 1:, :-1], index[:-1, 1:, :-1]]
    bottom = [index[:-1, :-1, 1:], index[1:, :-1, 1:], index[1:, 1:, 1:], index[:-1, 1:, 1:]]
    return np.stack([c.reshape(-1) for c in top + bottom], axis=-1)
