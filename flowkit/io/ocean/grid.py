"""CF gridded data (the last row of the table): regular, rectilinear or curvilinear grids in
lon/lat(/depth)/time or projected x/y, found from their CF metadata, into a `GridField` or a
`CurvilinearField` (or a `StreamedField` of one), on the host.

What is found from the metadata, each with an override:

- the velocity components by `standard_name` (`eastward_sea_water_velocity`,
  `northward_wind`, `upward_sea_water_velocity`, ...), else by common names (`u`, `uo`,
  `water_u`, `U`, ...);
- the axes by `axis`, `units` and `standard_name` (longitude in `degrees_east`, latitude,
  depth or height, time), else by common names;
- time as seconds since the first time step, its date and calendar kept as the field's
  `time_origin` (any CF calendar, through cftime);
- a global longitude axis (with or without a repeated end column) is periodic;
- land: NaN velocities in the first time step (or zeros of a `mask` variable) mark land nodes,
  which become zero velocity and make the tracker beach particles there.

xarray never reaches the compiled program: slices are converted once, here.
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.base import AbstractField
from ...fields.curvilinear import CurvilinearField
from ...fields.grid import GridField
from ...fields.streamed import SliceSource, StreamedField
from ..cf import AXES, Layout, attr, axis_of, component, layout_of, speed_scale, where
from ..cf_times import time_axis
from ..checks import check_velocity, named
from ..series import conformed

_log = logging.getLogger("flowkit")


def detect(datasets: list) -> bool:
    """Every dataset the models before this row leave is read as CF gridded data."""
    return True


def build(
    datasets: list,
    u: str | None = None,
    v: str | None = None,
    w: str | None = None,
    *,
    x=None,
    y=None,
    z=None,
    time=None,
    spherical=None,
    land_value=None,
    mask: str | None = None,
    periodic=None,
    interpolation: str = "linear",
    dtype: DTypeLike = "float32",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
    sample=None,
    coast: str = "noslip",
) -> AbstractField | StreamedField:
    """The field of CF gridded `datasets` (consecutive in time); the options are
    `fk.io.from_xarray`'s."""
    first = datasets[0]
    u, v = _velocity_names(first, u, v)
    td = axis_of(first, tuple(first[u].dims), "time", time)
    layout = layout_of(first, u, v, w, x, y, z, td)
    if len(layout.names) > 2 and layout.staggering == "A" and w is None and layout.dims[2] is None:
        _log.info("%s has no vertical velocity: tracking in 3-D with w = 0", where(first))
    spherical, sign_w = _sphere(first, layout, spherical)
    periodic = _periodic(layout, spherical, periodic)
    sample = _checked_sample(first, layout, sample, stream)
    scale = speed_scale(first[u], where(first)) if spherical else 1.0
    source = _Slices(datasets, layout, td, scale, sign_w, sample, dtype)
    if land_value is not None:
        source.fill = float(land_value)
    first_slice = source.read(0)["values"]  # read once: its NaN mark the land (GridField zeroes them)
    land = None if land_value is not None else _land_of(source, first, layout, mask, first_slice)
    options = dict(periodic=periodic, interpolation=interpolation, coast=coast, dtype=dtype)
    make = _maker(first, layout, spherical, land, source.origin, options)
    field = _assembled(make, source, first_slice, sample, stream, max_device_bytes, f"{where(first)} ({u}, {v})")
    return named(field, layout.names)


def _velocity_names(first, u: str | None, v: str | None) -> tuple[str, str]:
    """The eastward and northward velocity variables: as given, else by CF metadata and common names."""
    u = component(first, "u", u, None)
    if u is None:
        raise ValueError(
            f"{where(first)}: no eastward velocity found (by standard_name or as u, uo, water_u, ...) "
            f"among {sorted(first.data_vars)}; pass u= and v="
        )
    v = component(first, "v", v, tuple(first[u].dims)) or component(first, "v", v, None)
    if v is None:
        raise ValueError(
            f"{where(first)}: no northward velocity found beside {u!r} among {sorted(first.data_vars)}; pass v="
        )
    return u, v


def _sphere(first, layout, spherical) -> tuple[bool, float]:
    """Whether positions are lon/lat (default: when the axes are), and the sign that makes `w`
    positive down on a sphere's depth axis (-1 where the axis is depth, positive down)."""
    if spherical is None and layout.lonlat is not None:
        spherical = True
    if spherical is None:
        xd = layout.dims[0][0]
        lonlike = str(xd).lower() in ("lon", "longitude", "nav_lon")
        spherical = (attr(first[xd], "units").lower() in AXES["x"][2] or lonlike) if xd in first.variables else False
    zd = layout.dims[0][2] if len(layout.axes) == 3 else None
    if zd is None or not spherical:
        return bool(spherical), 1.0
    if zd not in first.variables:
        return True, -1.0
    positive = attr(first[zd], "positive").lower()
    down = positive == "down" or (not positive and attr(first[zd], "standard_name") in ("depth", ""))
    return True, -1.0 if down else 1.0


def _periodic(layout, spherical: bool, periodic):
    """Per axis: default, longitude periodic with period 360 when it spans the globe (its end
    column repeated or not); a curvilinear grid is never periodic."""
    if periodic is not None:
        return periodic
    if layout.lonlat is not None:
        return False
    lon = layout.axes[0]
    h, span = lon[1] - lon[0], lon[-1] - lon[0]
    whole = spherical and len(lon) > 2 and (abs(span + h - 360) < 1e-3 * h or abs(span - 360) < 1e-3 * h)
    if whole:
        _log.info("CF: longitude spans the globe: periodic with period 360")
    return (360.0 if whole else False,) + (False,) * (len(layout.axes) - 1)


def _checked_sample(first, layout, sample, stream) -> list[str]:
    """The sampled variables' names, each on the velocity's grid (regular A-grids in memory)."""
    sample = [sample] if isinstance(sample, str) else list(sample or ())
    for name in sample:
        if name not in first.data_vars:
            raise ValueError(
                f"{where(first)}: sample variable {name!r} not in the dataset (it has {sorted(first.data_vars)})"
            )
        if set(layout.dims[0]) - set(first[name].dims):
            raise ValueError(
                f"{where(first)}: sample variable {name!r} has dims {first[name].dims}, not the "
                f"velocity's grid {layout.dims[0]}"
            )
    if sample and (layout.staggering != "A" or layout.lonlat is not None or stream):
        raise ValueError(
            f"{where(first)}: sample= is read on regular A-grids held in memory (stream=False); this "
            f"grid is {'curvilinear' if layout.lonlat is not None else layout.staggering + '-grid'}"
            f"{', streamed' if stream else ''}"
        )
    return sample


def _land_of(source, first, layout, mask: str | None, first_slice: np.ndarray) -> np.ndarray:
    """The land nodes (cells on a C-grid): NaN velocity in the first slice, or `mask` = 0; later
    slices are zeroed there as they are read."""
    land = layout.land(first_slice, _land(first, mask, layout) if mask is not None else None)
    source.land = land if land.any() and layout.staggering == "A" else None
    source.fill = 0.0 if layout.staggering == "C" else None  # a C-grid's NaN faces carry no flux
    if land.any():
        what = "nodes" if layout.staggering == "A" else "cells"
        wet = f" or {mask} = 0" if mask else ""
        _log.info("CF: %d of %d %s are land (NaN velocity%s)", int(land.sum()), land.size, what, wet)
    return land


def _maker(first, layout, spherical: bool, land, origin, options: dict):
    """`make(data, times, samples=None)`: the field of these slices, a `GridField` or, on a
    curvilinear grid, a `CurvilinearField`."""
    axes = layout.axes
    if layout.lonlat is None:
        grid = dict(options, spherical=spherical, land=land, time_origin=origin, staggering=layout.staggering)
        return lambda data, times, samples=None: GridField.from_arrays(data, axes, times=times, samples=samples, **grid)
    periodic, interpolation, coast = options["periodic"], options["interpolation"], options["coast"]
    if not spherical or periodic or interpolation != "linear":
        raise ValueError(
            f"{where(first)}: a curvilinear grid is tracked on the sphere, linear in each cell, not "
            f"periodic; got spherical={spherical}, periodic={periodic}, interpolation={interpolation!r}"
        )
    if coast != "noslip":
        raise ValueError(
            f"{where(first)}: coast={coast!r} is implemented on regular A-grids; this grid is "
            "curvilinear (no slip at its coasts)"
        )
    depth = axes[2] if len(axes) == 3 else None

    def make(data, times, samples=None):
        return CurvilinearField.from_arrays(
            *layout.lonlat, data, times, depth=depth, land=land, time_origin=origin, dtype=options["dtype"]
        )

    return make


def _assembled(make, source, first_slice, sample: list[str], stream, max_device_bytes, description: str):
    """The field of all of `source`'s slices: held in memory, or streamed (`StreamedField`)
    when asked or when the series would exceed `max_device_bytes`."""
    from ...fields.streamed import choose_streaming

    n = 1 if source.times is None else len(source.times)
    if sample:  # the samples ride with the velocity, slice by slice, held in memory
        slices = [source.read(k) for k in range(n)]
        if n == 1:
            return make(first_slice, None, slices[0]["samples"])
        samples = {name: np.stack([p["samples"][name] for p in slices]) for name in sample}
        return make(np.stack([p["values"] for p in slices]), source.times, samples)
    if n == 1:
        return make(first_slice, None)
    slice_bytes = first_slice.size * np.dtype(source.dtype).itemsize
    if choose_streaming(stream, n, slice_bytes, max_device_bytes, description):
        template = make(np.stack([first_slice, source.read(1)["values"]]), source.times[:2])
        return StreamedField(template, source, max_device_bytes)
    series = np.empty((n,) + first_slice.shape, first_slice.dtype)
    series[0] = first_slice
    for k in range(1, n):
        source.read(k, out=series[k])
    return make(series, source.times)


def _land(ds, mask: str, layout: Layout) -> np.ndarray:
    """Land from the zeros of the variable `mask`: on the velocity's nodes (A-grid) or on the
    cell centres (C-grid)."""
    if mask not in ds:
        raise ValueError(f"{where(ds)}: mask variable {mask!r} not in the dataset (it has {sorted(ds.data_vars)})")
    var = ds[mask]
    names = [axis_of(ds, var.dims, a, None) for a in "xyz"[: len(layout.axes)]]
    if None in names:
        raise ValueError(
            f"{where(ds)}: mask {mask!r} has dims {var.dims}: cannot find the velocity's "
            f"{len(layout.axes)} spatial axes in them"
        )
    values = np.asarray(var.isel({d: 0 for d in var.dims if d not in names}).transpose(*names).values)
    if layout.staggering == "A":
        return values[np.ix_(*layout.takes[0])] == 0
    centres = [layout.takes[1][0], layout.takes[0][1]] + ([layout.takes[0][2]] if len(names) == 3 else [])
    land = values[np.ix_(*[np.maximum(t, 0) for t in centres])] == 0
    for a, t in enumerate(centres):
        land[(slice(None),) * a + (t < 0,)] = False
    return land


def _in_order(var, dims) -> np.ndarray:
    """`var`'s values with its axes in the order `dims`: read as stored, transposed in NumPy (a
    lazily transposed variable goes through xarray's vectorised indexing: 2 s a slice at 1/12°)."""
    return np.transpose(np.asarray(var.values), [var.dims.index(d) for d in dims])


def _taken(values, takes) -> np.ndarray:
    """`values[takes]` per axis: a view where every axis is taken in order or reversed (regular
    grids, descending latitudes), a gather otherwise (-1: a node that starts no cell, any value)."""
    simple = []
    for t in takes:
        n = len(t)
        if np.array_equal(t, np.arange(n)):
            simple.append(slice(None))
        elif np.array_equal(t, np.arange(n)[::-1]):
            simple.append(slice(None, None, -1))
        else:
            return values[np.ix_(*[np.maximum(t, 0) for t in takes])]
    return values[tuple(simple)]


class _Slices(SliceSource):
    """The velocity of one or more Datasets (consecutive in time) as `(n_x, n_y[, n_z], d)`
    slices in flowkit's layout (`Layout`): axes ascending, depth velocity positive down, speeds
    in m/s, land nodes 0 (or every NaN `fill`ed), read one time step at a time (`isel`: a lazily
    opened file reads only that step)."""

    def __init__(self, datasets, layout: Layout, time_dim, scale, sign_w, sample=(), dtype="float64"):
        self.description = f"variables {layout.names} of {where(datasets[0])}" + (
            f" and {len(datasets) - 1} more" if len(datasets) > 1 else ""
        )
        self.layout, self.time_dim = layout, time_dim
        self.scale, self.sign_w = scale, sign_w
        self.sample = tuple(sample)
        self.dtype = np.dtype(dtype)
        self.land, self.fill = None, None
        datasets = [datasets[0]] + [conformed(d, datasets[0], layout.names, layout.dims) for d in datasets[1:]]
        self.steps, self.times, self.origin = time_axis(datasets, time_dim)
        self.files = [d.encoding["source"] for d in datasets if d.encoding.get("source")]  # opened from files

    def read(self, k: int, out=None) -> dict:
        """Slice `k` as `{"values", "samples"}`, in `self.dtype`; written into `out` when given
        (a slice of a preallocated series: no copy per slice)."""
        ds, index = self.steps[k]
        if index is not None:
            ds = ds.isel({self.time_dim: index})
        shape = tuple(len(a) for a in self.layout.axes)
        flat = self.layout.lonlat is not None  # a curvilinear grid is a mesh: values per node
        data = np.empty(shape + (len(shape),), self.dtype) if out is None or flat else out
        for c, (name, dims, takes) in enumerate(zip(self.layout.names, self.layout.dims, self.layout.takes)):
            if dims is None:
                data[..., c] = 0  # no vertical velocity: w = 0
                continue
            var = ds[name]
            var = var.isel({d: 0 for d in var.dims if d not in dims})  # a single depth level
            data[..., c] = _taken(_in_order(var, dims), takes)
            for axis, t in enumerate(takes):
                if (t < 0).any():
                    data[(slice(None),) * axis + (t < 0, ..., c)] = np.nan  # nodes that start no cell
        check_velocity(data, where(ds), self.layout.names, k, float(self.times[k]) if self.times is not None else None)
        if self.scale != 1:
            data *= self.scale
        if self.layout.angle is not None:  # grid-relative components to eastward and northward
            cos, sin = (a[..., None] if len(shape) == 3 else a for a in self.layout.angle)
            data[..., 0], data[..., 1] = (
                cos * data[..., 0] - sin * data[..., 1],
                sin * data[..., 0] + cos * data[..., 1],
            )
        if len(shape) == 3:
            data[..., 2] *= self.sign_w  # along the depth axis: positive down
        if self.fill is not None:
            np.copyto(data, self.dtype.type(self.fill), where=np.isnan(data))
        elif self.land is not None:
            data[self.land.reshape(data.shape[:-1])] = 0  # (a curvilinear grid's land comes flat, per node)
        if flat:
            data = data.reshape(-1, data.shape[-1])
            if out is not None:
                out[...] = data
                data = out
        samples = {}
        for name in self.sample:  # on the velocity's own nodes (an A-grid)
            var = ds[name]
            dims = self.layout.dims[0]
            var = var.isel({d: 0 for d in var.dims if d not in dims})
            samples[name] = _taken(_in_order(var, dims), self.layout.takes[0]).astype(self.dtype)
        return {"values": data, "samples": samples}
