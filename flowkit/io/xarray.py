"""Structured xarray/NetCDF data in (as a GridField), trajectories out in the CF layout.

xarray never reaches the compiled program: `from_xarray` converts once, on the host.
"""

import math

import numpy as np

from ..fields.grid import GridField
from .stream import SliceSource

_X_NAMES = ("lon", "longitude", "x", "nav_lon", "xc")
_Y_NAMES = ("lat", "latitude", "y", "nav_lat", "yc")
_Z_NAMES = ("depth", "z", "lev", "level", "deptht", "height")
_T_NAMES = ("time", "t", "time_counter")
EARTH_RADIUS = 6_371_000.0


def _find(dims, names, what, given):
    if given is not None:
        if given not in dims:
            raise ValueError(f"from_xarray: {what} dimension {given!r} is not among the velocity's dims {dims}")
        return given
    for dim in dims:
        if dim.lower() in names:
            return dim
    return None


def from_xarray(
    ds, u: str = "u", v: str = "v", w: str | None = None, *, x=None, y=None, z=None, time=None, spherical=None, land_value=None, periodic=False, interpolation="linear", dtype="float32", stream: bool | None = None, max_device_bytes: int | None = None
) -> GridField:
    """A `GridField` from a structured `xarray.Dataset` (regular or rectilinear lon/lat/depth/time).

    **Arguments:**

    - `u`, `v`, `w`: names of the velocity variables (`w` optional, for 3-D).
    - `x`, `y`, `z`, `time`: dimension names, found automatically (`lon`/`longitude`/`x`,
      `lat`/`latitude`/`y`, `depth`/`z`/`lev`, `time`) when not given.
    - `spherical`: when true (default: the x/y dimensions are named lon/lat), positions are in
      degrees and velocities in m/s are converted to degrees per second with the Earth's radius
      ($u/(R\\cos\\varphi)$, $v/R$); `w` stays in m/s.
    - `land_value`: NaN (land, masked cells) stays NaN by default, so a particle that reaches it
      gets status `NONFINITE`; a number replaces it (e.g. 0 for no-flow land).
    - `stream`: `True` returns a `fk.io.StreamedField` that `fk.track` reads one time step
      at a time (`ds.isel(time=k)`: open the data lazily, e.g. `xr.open_dataset`/`open_zarr`);
      `None` (default) streams only when the series would exceed `max_device_bytes`.
    - Datetime times become seconds since the first time (stored in `field_time_origin`).
    """
    import xarray as xr

    from .stream import StreamedField, choose_streaming

    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"from_xarray: expected an xarray.Dataset, got {type(ds).__name__}")
    names = [u, v] + ([w] if w is not None else [])
    missing = [n for n in names if n not in ds]
    if missing:
        raise ValueError(f"from_xarray: variables {missing} not in the dataset (it has {sorted(ds.data_vars)})")
    dims = tuple(ds[u].dims)
    xd, yd = _find(dims, _X_NAMES, "x", x), _find(dims, _Y_NAMES, "y", y)
    zd, td = _find(dims, _Z_NAMES, "z", z), _find(dims, _T_NAMES, "time", time)
    if xd is None or yd is None:
        raise ValueError(f"from_xarray: cannot tell the x and y dimensions of {u!r} (dims {dims}); pass x= and y=")
    if w is not None and zd is None:
        raise ValueError(f"from_xarray: w given but no depth dimension among {dims}; pass z=")
    spatial = [xd, yd] + ([zd] if w is not None else [])
    extra = set(dims) - set(spatial) - ({td} if td else set())
    if extra:
        raise ValueError(f"from_xarray: {u!r} has dimensions {sorted(extra)} besides space and time; select them first (e.g. ds.isel(depth=0))")
    axes = [np.asarray(ds[d].values, dtype=np.float64) for d in spatial]
    if spherical is None:
        spherical = xd.lower() in ("lon", "longitude", "nav_lon") and yd.lower() in ("lat", "latitude", "nav_lat")
    source = _XarraySlices(ds, names, spatial, td, axes[1] if spherical else None, land_value)
    if source.times is not None and len(source.times) == 1:
        return GridField(source.read(0)["values"], axes, periodic=periodic, interpolation=interpolation, dtype=dtype)
    make = lambda data, times: GridField(data, axes, times=times, periodic=periodic, interpolation=interpolation, dtype=dtype)  # noqa: E731
    if source.times is None:
        return make(source.convert(ds), None)
    slice_bytes = math.prod(len(a) for a in axes) * len(names) * np.dtype(dtype).itemsize
    if choose_streaming(stream, len(source.times), slice_bytes, max_device_bytes, f"from_xarray({', '.join(names)})"):
        return StreamedField(make(np.stack([source.read(0)["values"], source.read(1)["values"]]), source.times[:2]), source, max_device_bytes)
    return make(source.convert(ds), source.times)


class _XarraySlices(SliceSource):
    """Velocity variables of a Dataset as `(n_x, n_y[, n_z], d)` slices in flowkit's units,
    one time step at a time (`isel`, so a lazily opened file reads only that step)."""

    def __init__(self, ds, names, spatial, time_dim, latitudes, land_value):
        self.description = f"xarray variables {names}"
        self.ds, self.names, self.spatial, self.time_dim = ds, names, spatial, time_dim
        self.latitudes, self.land_value = latitudes, land_value
        self.times = None
        if time_dim:
            raw = ds[time_dim].values
            self.times = (raw - raw[0]) / np.timedelta64(1, "s") if np.issubdtype(raw.dtype, np.datetime64) else np.asarray(raw, dtype=np.float64)

    def convert(self, ds) -> np.ndarray:
        """`ds`'s velocity (all its times first, if it has a time dimension) stacked as
        components and converted: degrees per second on a sphere, land filled if asked."""
        order = ([self.time_dim] if self.time_dim in ds[self.names[0]].dims else []) + self.spatial
        data = np.stack([np.asarray(ds[n].transpose(*order).values, dtype=np.float64) for n in self.names], axis=-1)
        if self.latitudes is not None:
            lat = np.deg2rad(self.latitudes)
            shape = (1,) * (data.ndim - 1 - len(self.spatial)) + (1, lat.size) + (1,) * (len(self.spatial) - 2)
            data[..., 0] = data[..., 0] / (EARTH_RADIUS * np.cos(lat).reshape(shape)) * 180 / np.pi
            data[..., 1] = data[..., 1] / EARTH_RADIUS * 180 / np.pi
        if self.land_value is not None:
            data = np.where(np.isnan(data), float(self.land_value), data)
        return data

    def read(self, k: int) -> dict:
        return {"values": self.convert(self.ds.isel({self.time_dim: k}))}
