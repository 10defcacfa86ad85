"""Structured xarray/NetCDF data in (as a GridField), trajectories out in the CF layout.

xarray never reaches the compiled program: `from_xarray` converts once, on the host.
"""

import numpy as np

from ..fields.grid import GridField

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


def from_xarray(ds, u: str = "u", v: str = "v", w: str | None = None, *, x=None, y=None, z=None, time=None, spherical=None, land_value=None, periodic=False, interpolation="linear", dtype="float32") -> GridField:
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
    - Datetime times become seconds since the first time (stored in `field_time_origin`).
    """
    import xarray as xr

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
    order = ([td] if td else []) + spatial
    data = np.stack([np.asarray(ds[n].transpose(*order).values, dtype=np.float64) for n in names], axis=-1)
    axes = [np.asarray(ds[d].values, dtype=np.float64) for d in spatial]
    if spherical is None:
        spherical = xd.lower() in ("lon", "longitude", "nav_lon") and yd.lower() in ("lat", "latitude", "nav_lat")
    if spherical:
        lat = np.deg2rad(axes[1])
        shape = (1,) * (data.ndim - 1 - len(spatial)) + (1, lat.size) + (1,) * (len(spatial) - 2)
        data[..., 0] = data[..., 0] / (EARTH_RADIUS * np.cos(lat).reshape(shape)) * 180 / np.pi
        data[..., 1] = data[..., 1] / EARTH_RADIUS * 180 / np.pi
    if land_value is not None:
        data = np.where(np.isnan(data), float(land_value), data)
    times = None
    if td:
        raw = ds[td].values
        if np.issubdtype(raw.dtype, np.datetime64):
            times = (raw - raw[0]) / np.timedelta64(1, "s")
        else:
            times = np.asarray(raw, dtype=np.float64)
    if times is not None and len(times) == 1:
        data, times = data[0], None
    return GridField(data, axes, times=times, periodic=periodic, interpolation=interpolation, dtype=dtype)
