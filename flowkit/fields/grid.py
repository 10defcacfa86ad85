"""Velocity data on a structured grid: uniform or rectilinear axes, steady or a time series."""

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import (
    Args,
    ArrayInput,
    Bounds,
    HostOrDevice,
    PeriodicLike,
    Position,
    Positions,
    TimeLike,
    TimesLike,
)
from .._time import TimeOrigin
from . import forcing
from .base import (
    TIME_INVARIANT,
    AbstractField,
    Hints,
    built_by,
    one_position,
    plain_locate_batch,
    plain_velocity_batch,
    time_slices,
    time_weights,
)
from .grid_inputs import (
    check_options,
    check_spherical,
    checked_axes,
    checked_land,
    checked_periodic,
    checked_series,
    is_uniform,
    longitude_origin,
    one_period,
    sample_tables,
)

EARTH_RADIUS = 6_371_000.0
"""Metres (the mean radius, as Parcels and OpenDrift use)."""
_DEGREES = 180 / math.pi


def degrees_per_second(u, lat):
    """Velocities `(..., dim)` in m/s as degrees of longitude and latitude per second at latitudes
    `lat` `(...)` (cos kept above 1e-6, so the poles divide by no zero); depth stays in m/s."""
    cos_lat = jnp.maximum(jnp.cos(jnp.deg2rad(lat)), 1e-6)
    return u.at[..., 0].multiply(_DEGREES / (EARTH_RADIUS * cos_lat)).at[..., 1].multiply(_DEGREES / EARTH_RADIUS)


def metres_per_second(u, lat) -> np.ndarray:
    """The inverse of `degrees_per_second`, on the host: velocities `(..., dim)` in degrees of
    longitude and latitude per second at latitudes `lat` `(...)` as m/s east and north (float64);
    depth stays in m/s."""
    metres = np.array(u, np.float64)
    metres[..., :2] *= EARTH_RADIUS / _DEGREES
    metres[..., 0] *= np.cos(np.deg2rad(np.asarray(lat, np.float64)))
    return metres


@built_by("from_arrays")
class GridField(AbstractField):
    """Velocity sampled on a 2-D or 3-D structured grid, multilinear in space, linear in time.

    The values live on the device as one array `values[T, n_1, ..., n_dim, dim]` (`T = 1` when
    steady), gathered as whole velocity vectors per grid corner. Uniform axes are indexed by
    arithmetic, rectilinear (non-uniform) ones by binary search.

    Outside the grid: on a periodic axis positions wrap (the axis holds `n` nodes spanning one
    period `n * h`, without a repeated end node). On other axes `in_domain` is false; the tracker
    marks a particle that ends a step there `OUT_OF_DOMAIN` (or hands it to a boundary) and never
    extrapolates a trajectory. Within one step, an RK stage point just past the edge sees the
    edge value (a zero-gradient ghost layer), the usual convention for wall-bounded data.

    **Made by `from_arrays`, from:**

    - `data`: `(n_1, ..., n_dim, C)` for a steady field or `(T, n_1, ..., n_dim, C)` with
      `times`; NumPy or JAX input. A velocity has `C = dim` components; other quantities
      (pressure, temperature, ...) any `C`, for sampling along trajectories.
    - `axes`: one strictly increasing 1-D coordinate array per spatial axis.
    - `times`: strictly increasing times of the `T` slices, or `None` for a steady field.
    - `periodic`: per axis (or one for all) `True`, `False`, or the period. A periodic axis
      holds one period of nodes: with `True`, its `n` nodes span the period `n * h`; with the
      period stated (`periodic=2π`, `360.0`), an axis that spans the period itself ends with a
      repeat of its first node (`np.linspace(0, 2π, 129)`), which is dropped with a log line.
      Decided from the coordinates, within the round-off of the precision they were written in
      (a float32 axis's steps may differ by its round-off and still be uniform).
    - `interpolation`: `"linear"` (multilinear) or `"nearest"`.
    - `dtype`: storage precision (`"float32"` default).
    - `spherical`: axes are longitude and latitude in degrees (then depth in metres, positive
      down) and velocities are in m/s: the field returns degrees per second, converting at the
      particle's own latitude ($u/(R\\cos\varphi)$, $v/R$; $\\cos\varphi$ kept above 1e-6, so the
      poles divide by no zero). Positions are kept in one period of longitude, and a step over
      a pole comes down the other side (`canonical_batch`).
    - `land`: `(n_1, ..., n_dim)` booleans, true at land nodes. Their values are replaced by 0
      (no NaN enters a step: coasts are no-slip), and a point where the multilinear
      interpolation of the mask reaches 1/2 is on land: the tracker stops a particle whose step
      ends there with status `BEACHED`, at its last wet position.
    - `time_origin`: the calendar date of time 0 (`fk.io.read` sets it for dated data), so
      `fk.track` takes dates for `t0`/`t1`.
    - `staggering`: `"A"` (every component at the nodes) or `"C"`, an Arakawa C-grid (NEMO,
      MITgcm, ROMS): the axes are the cell faces, and component `c` of node `(i, j[, k])` is the
      velocity normal to the face at `axes[c][i_c]`, centred in the cell that starts at the
      node along the other axes (the last node of those axes holds nothing). Inside a cell each
      component is linear between its two faces and constant across, as Parcels does for
      C-grids: a uniform flow is exact, a divergence-free one stays divergence-free. On a
      sphere the meridional flux is kept (`v cos φ`). `land` then marks cells (the node that
      starts each), and NaN face values are 0.
    - `coast`: what the velocity does in a cell with a whole edge on land (A-grids with `land`):
      `"noslip"` (default: linear to zero at the coast), `"freeslip"` (the velocity along the
      coast keeps its value from the water edge) or `"partialslip"` (half of it at the coast),
      as Parcels' interpolation methods of those names do. The velocity across the coast still
      goes to zero.
    - `samples`: further arrays at the nodes, `{name: (n_1, ..., n_dim[, c])}`, or with a leading
      time axis for a series (temperature, wind, salinity), interpolated like the velocity for
      `Trajectory.samples` and for particle models that read them (NaN outside the grid); or
      other fields, on their own grids and times (`{"wind": fk.io.read(wind_file)}`: see
      `flowkit.fields.forcing`).
    """

    values: Float[Array, "T ..."]
    axes: tuple[Float[Array, " _n"], ...]
    origin: Float[Array, " dim"]
    inv_spacing: Float[Array, " dim"]
    times: Float[Array, " T"] | None
    bounds: Bounds
    dim: int = eqx.field(static=True)
    components: int = eqx.field(static=True)
    shape: tuple[int, ...] = eqx.field(static=True)
    uniform: tuple[bool, ...] = eqx.field(static=True)
    periodic: tuple[bool, ...] = eqx.field(static=True)
    interpolation: str = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True)
    land: Float[Array, "..."] | None
    shared_location: ClassVar[bool] = False
    kernel: ClassVar[str | None] = "grid"
    time_invariant: ClassVar[frozenset[str]] = TIME_INVARIANT | {
        "components",
        "shape",
        "axes",
        "land",
        "on_land",
    }
    spherical: bool = eqx.field(static=True)
    longitude_origin: float = eqx.field(static=True)
    time_origin: TimeOrigin | None = eqx.field(static=True)
    staggering: str = eqx.field(static=True)
    coast: str = eqx.field(static=True)
    sample_tables: dict
    scalar_samples: tuple[str, ...] = eqx.field(static=True)
    forcings: forcing.Forcings | None
    velocity_array: str = eqx.field(static=True, default="")
    """The file's variables the velocity was read from (`"uo,vo"`), for the run's record."""

    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        return Hints.unknown(n, 0, dtype, xp)  # a grid locates by arithmetic: nothing to carry

    def locate_batch(self, x: Positions, hint: Hints | None) -> tuple[Hints, Bool[Array, " n"]]:
        return plain_locate_batch(self, x, hint)

    def velocity_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        return plain_velocity_batch(self, t, x, args, hint)

    def settle_batch(
        self, t: TimeLike, x: Positions, hint: Hints | None, reflect: bool = False
    ) -> tuple[Positions, Hints | None]:
        return self.canonical_batch(x), hint

    def time_leaves(self) -> dict:
        return {"values": self.values}

    def value_components(self) -> int:
        return self.components

    def describe(self) -> str:
        return f"{self.shape}{time_slices(self.times)}"

    @classmethod
    def from_arrays(
        cls,
        data: ArrayInput,
        axes: Sequence,
        times: TimesLike | None = None,
        periodic: PeriodicLike = False,
        interpolation: str = "linear",
        dtype: DTypeLike = "float32",
        *,
        spherical: bool = False,
        land: ArrayInput | None = None,
        time_origin: TimeOrigin | None = None,
        staggering: str = "A",
        samples: dict | None = None,
        coast: str = "noslip",
    ) -> "GridField":
        """The field of `data` on `axes`, checked and stored on the device (the arguments above)."""
        from .._dtypes import resolve

        dtype = resolve(dtype)
        np_axes = checked_axes(axes)
        shape = tuple(ax.shape[0] for ax in np_axes)
        periodic, periods = checked_periodic(periodic, np_axes)
        check_options(interpolation, coast, staggering)
        data, times = checked_series(np.asarray(data), times, shape)
        land = checked_land(land, shape)
        if land is not None and staggering != "C":
            data = np.where(land[None, ..., None], 0.0, data)
        if staggering == "C":
            data = np.nan_to_num(data, nan=0.0)
        check_spherical(spherical, np_axes)
        samples, forcing_fields = forcing.split(samples)
        extra, scalar_samples = sample_tables(samples, data.shape[0], shape, times is not None)
        np_axes, data, land, extra = one_period(np_axes, periodic, periods, data, land, extra)
        shape = tuple(ax.shape[0] for ax in np_axes)
        spacing = np.array([(ax[-1] - ax[0]) / (len(ax) - 1) for ax in np_axes])  # the mean step (float32 round-off)
        hi = np.array([ax[0] + n * h if p else ax[-1] for ax, n, h, p in zip(np_axes, shape, spacing, periodic)])
        lo = np.array([ax[0] for ax in np_axes])
        field = cls(
            values=jnp.asarray(data, dtype),
            axes=tuple(jnp.asarray(ax, dtype) for ax in np_axes),
            origin=jnp.asarray(lo, dtype),
            inv_spacing=jnp.asarray(1.0 / spacing, dtype),
            times=None if times is None else jnp.asarray(times, dtype),
            bounds=(jnp.asarray(lo, dtype), jnp.asarray(hi, dtype)),
            dim=len(np_axes),
            components=int(data.shape[-1]),
            shape=shape,
            uniform=tuple(is_uniform(ax) for ax in np_axes),
            periodic=periodic,
            interpolation=interpolation,
            time_range=(-math.inf, math.inf) if times is None else (float(times[0]), float(times[-1])),
            land=None if land is None or not land.any() else jnp.asarray(land, dtype),
            spherical=bool(spherical),
            longitude_origin=longitude_origin(np_axes[0]) if spherical and periodic[0] else float(lo[0]),
            time_origin=time_origin,
            staggering=staggering,
            coast=coast,
            sample_tables={name: jnp.asarray(table, dtype) for name, table in extra.items()},
            scalar_samples=scalar_samples,
            forcings=None,
        )
        return dataclasses.replace(
            field, forcings=forcing.made(field, forcing_fields, "GridField: samples", set(extra))
        )

    @classmethod
    def from_function(
        cls,
        fn: Callable,
        axes: Sequence,
        times: TimesLike | None = None,
        periodic: PeriodicLike = False,
        interpolation: str = "linear",
        dtype: DTypeLike = "float32",
        args: Args = None,
    ) -> "GridField":
        """Sample `fn(t, x, args) -> u` (one point, e.g. an analytic field) at every grid node.

        A steady field is sampled at `t = 0` when `times` is None.
        """
        np_axes = [np.asarray(ax, dtype=np.float64) for ax in axes]
        mesh = np.stack(np.meshgrid(*np_axes, indexing="ij"), axis=-1)
        points = jnp.asarray(mesh.reshape(-1, len(np_axes)))
        sample = jax.jit(jax.vmap(lambda t, x: fn(t, x, args), in_axes=(None, 0)))
        ts = [0.0] if times is None else list(np.asarray(times, dtype=np.float64))
        slices = [np.asarray(sample(jnp.asarray(t, points.dtype), points)).reshape(mesh.shape) for t in ts]
        data = slices[0] if times is None else np.stack(slices)
        return cls.from_arrays(data, np_axes, times, periodic, interpolation, dtype)

    def cell_sizes(self, x: Positions, hint: Hints | None = None) -> Float[Array, "n dim"]:
        sizes = []
        for i in range(self.dim):
            if self.uniform[i]:
                sizes.append(jnp.full(x.shape[:1], 1 / self.inv_spacing[i]))
            else:
                ax = self.axes[i]
                k = jnp.clip(jnp.searchsorted(ax, x[:, i], side="right") - 1, 0, self.shape[i] - 2)
                sizes.append(ax[k + 1] - ax[k])
        return jnp.stack(sizes, axis=1).astype(x.dtype)

    def max_courant_rate(self) -> float | None:
        """Per node, each component over the smaller of its two spacings along its axis (on
        the sphere in metres: longitudes at the node's latitude, within 89.5° of the equator)."""
        if self.components != self.dim:
            return None
        worst = 0.0
        for i in range(self.dim):
            ax = np.asarray(self.axes[i], np.float64)
            step = np.diff(ax) if not self.periodic[i] else np.full(len(ax), 1 / float(self.inv_spacing[i]))
            size = np.minimum(np.concatenate([step[:1], step]), np.concatenate([step, step[-1:]]))[: len(ax)]
            size = size.reshape([-1 if a == i else 1 for a in range(self.dim)])
            if self.spherical and i < 2:
                lat = np.asarray(self.axes[1], np.float64).reshape([-1 if a == 1 else 1 for a in range(self.dim)])
                size = (
                    size
                    * EARTH_RADIUS
                    * np.pi
                    / 180
                    * (np.maximum(np.cos(np.deg2rad(lat)), np.cos(np.deg2rad(89.5))) if i == 0 else 1.0)
                )
            speed = np.abs(np.asarray(self.values[..., i])).max(axis=0)
            worst = max(worst, float(np.nanmax(speed / size)))
        return worst

    def in_domain(self, x: Position) -> Bool[Array, ""]:
        lo, hi = self.bounds
        inside = jnp.asarray(True)
        for i in range(self.dim):
            if not self.periodic[i]:
                inside = inside & (x[i] >= lo[i]) & (x[i] <= hi[i])
        return inside

    def _corner_indices(self, x) -> tuple[Int[Array, " dim"], Int[Array, " dim"], Float[Array, " dim"]]:
        """Lower nodes, upper nodes and upper-node weights along every axis, as `(dim,)` vectors.

        Uniform axes are computed together in one vector expression (one fused kernel when
        batched); only rectilinear axes need a per-axis binary search.
        """
        n = jnp.asarray(self.shape, jnp.int32)
        periodic = np.array(self.periodic)
        s = (x - self.origin) * self.inv_spacing
        nf = n.astype(s.dtype)
        s = jnp.where(periodic, s - nf * jnp.floor(s / nf), s)  # float-mod wrap into [0, n)
        f = jnp.floor(s)
        lower = jnp.where(periodic, jnp.minimum(f, nf - 1), jnp.clip(f, 0, nf - 2)).astype(jnp.int32)
        w = jnp.where(periodic, s - f, jnp.clip(s - lower.astype(s.dtype), 0, 1))
        upper = jnp.where(periodic & (lower == n - 1), 0, lower + 1)
        for i in range(self.dim):
            if not self.uniform[i]:
                ax = self.axes[i]
                lo_i = jnp.clip(jnp.searchsorted(ax, x[i], side="right") - 1, 0, self.shape[i] - 2).astype(jnp.int32)
                w_i = jnp.clip((x[i] - ax[lo_i]) / (ax[lo_i + 1] - ax[lo_i]), 0, 1)
                lower, upper, w = lower.at[i].set(lo_i), upper.at[i].set(lo_i + 1), w.at[i].set(w_i)
        return lower, upper, w

    def _multilinear(self, table, corners, lead=()):
        """`table[*lead, i_1, ..., i_dim]` interpolated between the `corners` (per axis: lower
        and upper node, upper weight): whole rows gathered per corner, `2**dim` of them."""
        total = None
        for corner in range(2**self.dim):
            idx = list(lead)
            weight = None
            for axis, (i0, i1, w) in enumerate(corners):
                upper = (corner >> (self.dim - 1 - axis)) & 1
                idx.append(i1 if upper else i0)
                wa = w if upper else 1 - w
                weight = wa if weight is None else weight * wa
            term = weight * table[tuple(idx)]
            total = term if total is None else total + term
        return total

    def _corners(self, x):
        lower, upper, w = self._corner_indices(x)
        if self.interpolation == "nearest":
            w = jnp.where(w >= 0.5, 1, 0).astype(w.dtype)
        return [(lower[i], upper[i], w[i]) for i in range(self.dim)]

    def _faces(self, table, corners, lead=(), cos_lat=None):
        """A C-grid's velocity: component `c` linear between its two faces along axis `c`,
        constant across (the cell's own row along the other axes); on a sphere the meridional
        component interpolates the flux `v cos φ` of its two faces (then divided by the
        particle's `cos_lat`)."""
        lower = [i0 for i0, _, _ in corners]
        out = []
        for c, (i0, i1, w) in enumerate(corners):
            w0, w1 = 1 - w, w
            if c == 1 and cos_lat is not None:
                lat = self.axes[1]
                w0 = w0 * jnp.cos(jnp.deg2rad(lat[i0])) / cos_lat
                w1 = w1 * jnp.cos(jnp.deg2rad(lat[i1])) / cos_lat
            upper = lower[:c] + [i1] + lower[c + 1 :]
            out.append(w0 * table[(*lead, *lower, c)] + w1 * table[(*lead, *upper, c)])
        return jnp.stack(out)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Float[Array, " c"]:
        x = one_position(x, self.dim)
        u = self._data_value(t, x)
        if self.spherical:  # m/s to degrees per second at the particle's own latitude
            u = degrees_per_second(u, x[1])
        return u.astype(x.dtype)

    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Array, Hints]:
        return jax.vmap(self._data_value, in_axes=(None, 0))(t, x).astype(x.dtype), hint

    def _data_value(self, t: TimeLike, x: Position) -> Float[Array, " c"]:
        """The value at one point in the data's units (m/s on a sphere)."""
        corners = self._corners(x)
        it, wt = time_weights(self.times, jnp.asarray(t, x.dtype))
        cos_lat = jnp.maximum(jnp.cos(jnp.deg2rad(x[1])), 1e-6) if self.spherical else None
        if self.staggering == "C":
            sample = lambda lead: self._faces(self.values, corners, lead, cos_lat)  # noqa: E731
        else:
            sample = lambda lead: self._multilinear(self.values, corners, lead)  # noqa: E731
        u = sample((it,))
        if self.times is not None:
            if self.interpolation == "nearest":
                wt = jnp.where(wt >= 0.5, 1, 0).astype(wt.dtype)
            u = (1 - wt) * u + wt * sample((it + 1,))
        if self.coast != "noslip" and self.land is not None:
            u = u * self._slip_factors(corners).astype(u.dtype)
        return u

    def sample_batch(self, t: TimeLike, x: Float[HostOrDevice, "n dim"], hint: Hints | None = None) -> dict[str, Array]:
        """The `samples` at the rows of `x` (NaN outside the grid)."""
        if not self.sample_tables:
            return {}

        def one(x):
            corners = self._corners(x)
            it, wt = time_weights(self.times, jnp.asarray(t, x.dtype))
            out = {}
            for name, table in self.sample_tables.items():
                value = self._multilinear(table, corners, (it,))
                if self.times is not None:
                    value = (1 - wt) * value + wt * self._multilinear(table, corners, (it + 1,))
                value = jnp.where(self.in_domain(x), value, jnp.nan).astype(x.dtype)
                out[name] = value[0] if name in self.scalar_samples else value
            return out

        return jax.vmap(one)(x)

    def _slip_factors(self, corners):
        """Per component, the factor that turns the no-slip interpolation of a cell with a whole
        edge on land into free or partial slip (Parcels' `freeslip`/`partialslip`): along a land
        edge at the low side of axis `a` the components tangent to it are divided by the weight
        `w_a` of the water side (free) or scaled by `(1 + w_a) / (2 w_a)` (partial), and likewise
        at the high side with `1 - w_a`."""
        factors = []
        for c in range(self.dim):
            f = jnp.asarray(1.0)
            for a, (_, _, w) in enumerate(corners[:2]):
                if a == c:
                    continue  # across the edge: still zero at the coast
                for side, weight in ((0, w), (1, 1 - w)):
                    edge = [(i0, i1) for i0, i1, _ in corners]
                    edge[a] = (edge[a][side],)
                    nodes = [self.land[idx] for idx in itertools.product(*edge)]
                    on_land = functools.reduce(jnp.logical_and, [n >= 0.5 for n in nodes])
                    safe = jnp.maximum(weight, 1e-6)
                    scale = 1 / safe if self.coast == "freeslip" else (1 + safe) / (2 * safe)
                    f = f * jnp.where(on_land, scale, 1.0)
            factors.append(f)
        return jnp.stack(factors)

    def on_land(self, x: Position) -> Bool[Array, ""]:
        """Whether `x` lies on land (the interpolated land mask reaches 1/2); never without a mask."""
        if self.land is None:
            return jnp.asarray(False)
        corners = self._corners(jnp.asarray(x))
        if self.staggering == "C":  # land marks whole cells
            return self.land[tuple(i0 for i0, _, _ in corners)] >= 0.5
        return self._multilinear(self.land, corners) >= 0.5

    def beached_batch(self, x: Positions, hint: Hints | None = None):
        return None if self.land is None else jax.vmap(self.on_land)(x)

    def canonical_batch(self, x: Positions) -> Positions:
        """On a sphere: latitudes past a pole folded back (longitude turned by 180°), longitudes
        of a global grid wrapped into its one period; elsewhere `x` itself."""
        if not self.spherical:
            return x
        lon, lat = x[:, 0], x[:, 1]
        over = jnp.where(lat > 90, 180 - lat, jnp.where(lat < -90, -180 - lat, lat))
        lon = jnp.where(over != lat, lon + 180, lon)
        if self.periodic[0]:  # into [-180, 180) or [0, 360) as the data's longitudes lie
            period = (self.bounds[1][0] - self.bounds[0][0]).astype(x.dtype)
            lon = self.longitude_origin + jnp.mod(lon - self.longitude_origin, period)
        return x.at[:, 0].set(lon).at[:, 1].set(over)
