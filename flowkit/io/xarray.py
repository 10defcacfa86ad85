"""Ocean and atmosphere data in: NetCDF/zarr files and xarray Datasets, read by their CF metadata
into a `GridField` (or a `StreamedField` of one), on the host.

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

import glob
import logging
import math
from pathlib import Path

import numpy as np

from .._time import TimeOrigin
from ..fields.grid import GridField
from .stream import SliceSource

_log = logging.getLogger("flowkit")

SUFFIXES = (".nc", ".nc4", ".cdf", ".netcdf", ".zarr")
"""Paths read as NetCDF/zarr datasets by `fk.io.read`."""

_STANDARD = {
    "u": ("eastward_sea_water_velocity", "surface_eastward_sea_water_velocity", "eastward_sea_water_velocity_assuming_no_tide", "sea_water_x_velocity", "eastward_wind", "x_wind", "surface_geostrophic_eastward_sea_water_velocity"),
    "v": ("northward_sea_water_velocity", "surface_northward_sea_water_velocity", "northward_sea_water_velocity_assuming_no_tide", "sea_water_y_velocity", "northward_wind", "y_wind", "surface_geostrophic_northward_sea_water_velocity"),
    "w": ("upward_sea_water_velocity", "upward_air_velocity", "sea_water_z_velocity"),
}
_NAMES = {
    "u": ("u", "uo", "water_u", "uvel", "u_velocity", "vozocrtx", "ugos", "u10", "uas"),
    "v": ("v", "vo", "water_v", "vvel", "v_velocity", "vomecrty", "vgos", "v10", "vas"),
    "w": ("w", "wo", "water_w", "wvel", "w_velocity", "vovecrtz"),
}
_AXES = {
    "x": ({"X"}, ("longitude", "grid_longitude", "projection_x_coordinate"), ("degrees_east", "degree_east", "degree_e", "degrees_e"), ("lon", "longitude", "x", "nav_lon", "xc")),
    "y": ({"Y"}, ("latitude", "grid_latitude", "projection_y_coordinate"), ("degrees_north", "degree_north", "degree_n", "degrees_n"), ("lat", "latitude", "y", "nav_lat", "yc")),
    "z": ({"Z"}, ("depth", "height", "altitude", "ocean_sigma_coordinate", "model_level_number"), (), ("depth", "z", "lev", "level", "deptht", "height", "altitude")),
    "time": ({"T"}, ("time",), (), ("time", "t", "time_counter")),
}
_SPEED_UNITS = {"m s-1": 1.0, "m/s": 1.0, "m s**-1": 1.0, "m.s-1": 1.0, "meter second-1": 1.0, "meters/second": 1.0, "cm s-1": 0.01, "cm/s": 0.01, "mm s-1": 0.001}


def is_dataset_path(path) -> bool:
    """Whether `fk.io.read` opens `path` (a path, glob or list of paths) as NetCDF/zarr."""
    first = path[0] if isinstance(path, (list, tuple)) and path else path
    return isinstance(first, (str, Path)) and Path(str(first).rstrip("/")).suffix.lower() in SUFFIXES


def open_datasets(path) -> list:
    """Each file of `path` (a file, a glob, a list) opened lazily: only its metadata is read."""
    import xarray as xr

    if isinstance(path, (list, tuple)):
        files = [Path(p) for p in path]
    elif any(ch in str(path) for ch in "*?["):
        files = [Path(p) for p in sorted(glob.glob(str(path)))]
        if not files:
            raise FileNotFoundError(f"no files match {path}")
    else:
        files = [Path(path)]
    opened = []
    for file in files:
        if not file.exists():
            raise FileNotFoundError(f"dataset {file} does not exist")
        try:
            ds = xr.open_zarr(file, consolidated=None) if file.suffix.lower() == ".zarr" else xr.open_dataset(file)
        except Exception as err:  # noqa: BLE001 -- every engine's own error becomes one naming the file
            raise ValueError(f"{file}: cannot be opened as NetCDF/zarr ({type(err).__name__}: {err})") from None
        ds.attrs["flowkit_source"] = str(file)
        opened.append(ds)
    return opened


def read_cf(path, velocity=None, **options) -> GridField:
    """`fk.io.read` for NetCDF/zarr: the files of `path` as one time series (see `from_xarray`).
    `velocity`: `"u,v"` or `"u,v,w"` names the components."""
    names = dict(zip("uvw", velocity.split(","))) if isinstance(velocity, str) else {}
    return from_xarray(open_datasets(path), **names, **options)


def _attr(var, name) -> str:
    return str(var.attrs.get(name, "")).strip()


def _component(ds, which: str, given, dims) -> str | None:
    """The variable holding velocity component `which` ('u', 'v', 'w')."""
    if given is not None:
        if given not in ds:
            raise ValueError(f"{_where(ds)}: velocity variable {given!r} not in the dataset (it has {sorted(ds.data_vars)})")
        return given
    candidates = [n for n in ds.data_vars if ds[n].ndim >= 2 and (dims is None or set(ds[n].dims) == set(dims))]
    for standard in _STANDARD[which]:
        found = [n for n in candidates if _attr(ds[n], "standard_name") == standard]
        if len(found) > 1:
            raise ValueError(f"{_where(ds)}: variables {found} all have standard_name {standard!r}; pass {which}= to choose")
        if found:
            return found[0]
    for name in _NAMES[which]:
        found = [n for n in candidates if str(n).lower() == name]
        if found:
            return found[0]
    return None


def _axis(ds, dims, which: str, given) -> str | None:
    """The dimension of `dims` that is axis `which` ('x', 'y', 'z', 'time')."""
    if given is not None:
        if given not in dims:
            raise ValueError(f"{_where(ds)}: {which} dimension {given!r} is not among the velocity's dims {dims}")
        return given
    axis, standard, units, names = _AXES[which]
    for dim in dims:
        coord = ds[dim] if dim in ds.variables else None
        if coord is None:
            continue
        dated = np.issubdtype(coord.dtype, np.datetime64) or coord.dtype == object
        if _attr(coord, "axis").upper() in axis or _attr(coord, "standard_name") in standard or _attr(coord, "units").lower() in units or (which == "time" and dated):
            return dim
    for dim in dims:
        if str(dim).lower() in names:
            return dim
    return None


def _where(ds) -> str:
    return ds.attrs.get("flowkit_source", "from_xarray")


def from_xarray(
    ds,
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
    interpolation="linear",
    dtype="float32",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
) -> GridField:
    """A `GridField` from a structured `xarray.Dataset`, or a list of them along time (one per
    file), regular or rectilinear in lon/lat(/depth)/time, found from CF metadata.

    **Arguments:**

    - `u`, `v`, `w`: names of the velocity variables; found by `standard_name`, then by common
      names, when not given. A depth axis with more than one level gives 3-D tracking (`w` = 0
      if the data has none, logged).
    - `x`, `y`, `z`, `time`: dimension names; found by `axis`/`standard_name`/`units`, then by
      common names, when not given.
    - `spherical`: positions in degrees, velocities in m/s (cm/s converted), converted at each
      particle's latitude (`GridField(spherical=True)`); default: when the axes are longitude
      and latitude. Latitudes (and depths) stored descending are flipped; depth is positive
      down (the sign of an upward `w` follows), height positive up.
    - `periodic`: per axis; default: longitude is periodic (period 360) when it spans the globe,
      with or without its end column repeated.
    - land: NaN velocities in the first time step mark land nodes (or the zeros of the variable
      `mask`): they become zero velocity and particles whose step ends there are `BEACHED`.
      `land_value` instead replaces every NaN by that number (no land).
    - `stream`: `True` returns a `fk.io.StreamedField` read one time step at a time (each step
      read from its own file); `None` (default) streams only when the series would exceed
      `max_device_bytes`.

    **Raises:** `ValueError` naming the file and the variable for a missing velocity, axes it
    cannot tell, dimensions besides space and time, times that do not increase across files,
    latitudes outside [-90, 90].
    """
    import xarray as xr

    from .stream import StreamedField, choose_streaming

    datasets = list(ds) if isinstance(ds, (list, tuple)) else [ds]
    if not datasets or not all(isinstance(d, xr.Dataset) for d in datasets):
        raise TypeError(f"from_xarray: expected an xarray.Dataset or a list of them, got {type(ds).__name__}")
    first = datasets[0]
    u = _component(first, "u", u, None)
    if u is None:
        raise ValueError(f"{_where(first)}: no eastward velocity found (by standard_name or as u, uo, water_u, ...) among {sorted(first.data_vars)}; pass u= and v=")
    dims = tuple(first[u].dims)
    v = _component(first, "v", v, dims)
    if v is None:
        raise ValueError(f"{_where(first)}: no northward velocity found beside {u!r} among {sorted(first.data_vars)}; pass v=")
    xd, yd, td = _axis(first, dims, "x", x), _axis(first, dims, "y", y), _axis(first, dims, "time", time)
    zd = _axis(first, [d for d in dims if d not in (xd, yd, td)], "z", z)
    if xd is None or yd is None:
        raise ValueError(f"{_where(first)}: cannot tell the x and y dimensions of {u!r} (dims {dims}); pass x= and y=")
    if zd is not None and first.sizes[zd] == 1:
        datasets = [d.isel({zd: 0}) for d in datasets]
        zd = None
    if w is not None and zd is None:
        raise ValueError(f"{_where(first)}: w={w!r} given but {u!r} has no depth dimension with several levels (dims {dims}); pass z=")
    w = _component(first, "w", w, dims) if zd is not None else None
    if zd is not None and w is None:
        _log.info("from_xarray: %s has no vertical velocity: tracking in 3-D with w = 0", _where(first))
    spatial = [xd, yd] + ([zd] if zd is not None else [])
    extra = set(dims) - set(spatial) - {td, None}
    if extra:
        raise ValueError(f"{_where(first)}: {u!r} has dimensions {sorted(extra)} besides space and time; select them first (e.g. ds.isel(ensemble=0))")
    coords = [np.asarray(first[d].values, dtype=np.float64) if d in first.variables else np.arange(first.sizes[d], dtype=np.float64) for d in spatial]
    if spherical is None:
        spherical = _attr(first[xd], "units").lower() in _AXES["x"][2] or str(xd).lower() in ("lon", "longitude", "nav_lon")
    flips = [bool(len(c) > 1 and c[1] < c[0]) for c in coords]
    axes = [c[::-1] if f else c for c, f in zip(coords, flips)]
    sign_w = 1.0
    if zd is not None and spherical:
        positive = _attr(first[zd], "positive").lower() if zd in first.variables else ""
        down = positive == "down" or (not positive and _attr(first[zd], "standard_name") in ("depth", "")) if zd in first.variables else True
        sign_w = -1.0 if down else 1.0
    if periodic is None:
        lon = axes[0]
        h = lon[1] - lon[0]
        span = lon[-1] - lon[0]
        whole = spherical and len(lon) > 2 and (abs(span + h - 360) < 1e-3 * h or abs(span - 360) < 1e-3 * h)
        periodic = (360.0 if whole else False,) + (False,) * (len(axes) - 1)
        if whole:
            _log.info("from_xarray: longitude spans the globe: periodic with period 360")
    scale = _speed_scale(first[u]) if spherical else 1.0
    source = _Slices(datasets, [u, v] + ([w] if w is not None else []), spatial, td, flips, zd is not None and w is None, scale, sign_w)
    land = None
    if land_value is not None:
        source.fill = float(land_value)
    first_slice = source.read(0)["values"]  # read once: its NaN mark the land (GridField zeroes them)
    if land_value is None:
        land = np.isnan(first_slice).any(axis=-1) | (_land(first, mask, spatial, flips) if mask is not None else False)
        source.land = land if land.any() else None  # later slices are zeroed as they are read
        if land.any():
            _log.info("from_xarray: %d of %d nodes are land (NaN velocity%s)", int(land.sum()), land.size, f" or {mask} = 0" if mask else "")
    make = lambda data, times: GridField(data, axes, times=times, periodic=periodic, interpolation=interpolation, dtype=dtype, spherical=spherical, land=land, time_origin=source.origin)  # noqa: E731
    if source.times is None or len(source.times) == 1:
        return make(first_slice, None)
    slice_bytes = math.prod(len(a) for a in axes) * (len(axes)) * np.dtype(dtype).itemsize
    if choose_streaming(stream, len(source.times), slice_bytes, max_device_bytes, f"{_where(first)} ({u}, {v})"):
        return StreamedField(make(np.stack([first_slice, source.read(1)["values"]]), source.times[:2]), source, max_device_bytes)
    return make(np.stack([first_slice] + [source.read(k)["values"] for k in range(1, len(source.times))]), source.times)


def _speed_scale(var) -> float:
    units = _attr(var, "units")
    if not units:
        _log.info("from_xarray: %r has no units: taken as m/s", var.name)
        return 1.0
    if units not in _SPEED_UNITS:
        raise ValueError(f"{var.name!r} has units {units!r}; a velocity in m/s (or cm/s) is expected on a lon/lat grid")
    return _SPEED_UNITS[units]


def _land(ds, mask: str, spatial, flips) -> np.ndarray:
    """Land nodes from the zeros of the variable `mask` (same spatial dims as the velocity)."""
    if mask not in ds:
        raise ValueError(f"{_where(ds)}: mask variable {mask!r} not in the dataset (it has {sorted(ds.data_vars)})")
    var = ds[mask]
    other = [d for d in var.dims if d not in spatial]
    if set(spatial) - set(var.dims):
        raise ValueError(f"{_where(ds)}: mask {mask!r} has dims {var.dims}, not the velocity's {tuple(spatial)}")
    values = np.asarray(var.isel({d: 0 for d in other}).transpose(*spatial).values)
    for axis, flip in enumerate(flips):
        if flip:
            values = np.flip(values, axis)
    return values == 0


def _seconds(raw) -> np.ndarray:
    """Decoded CF times (datetime64 or cftime objects) as seconds since the first."""
    raw = np.asarray(raw)
    if np.issubdtype(raw.dtype, np.datetime64):
        return (raw - raw[0]) / np.timedelta64(1, "s")
    if raw.dtype == object:
        return np.array([(t - raw[0]).total_seconds() for t in raw], dtype=np.float64)
    return np.asarray(raw, dtype=np.float64) - float(raw[0])


class _Slices(SliceSource):
    """The velocity of one or more Datasets (consecutive in time) as `(n_x, n_y[, n_z], d)`
    slices in flowkit's layout: axes ascending, depth velocity positive down, speeds in m/s, land
    nodes 0 (or every NaN `fill`ed), read one time step at a time (`isel`: a lazily opened file
    reads only that step)."""

    def __init__(self, datasets, names, spatial, time_dim, flips, zero_w, scale, sign_w):
        self.description = f"variables {names} of {_where(datasets[0])}" + (f" and {len(datasets) - 1} more" if len(datasets) > 1 else "")
        self.names, self.spatial, self.time_dim, self.flips = names, spatial, time_dim, flips
        self.zero_w, self.scale, self.sign_w = zero_w, scale, sign_w
        self.land, self.fill = None, None
        self.times, self.origin = None, None
        if time_dim is None:
            if len(datasets) > 1:
                raise ValueError(f"{_where(datasets[0])}: several datasets but no time dimension to join them along")
            self.steps = [(datasets[0], None)]
            return
        self.steps = [(d, k) for d in datasets for k in range(d.sizes[time_dim])]
        raw = np.concatenate([np.asarray(d[time_dim].values) for d in datasets])
        self.times = _seconds(raw)
        if len(self.times) > 1 and not np.all(np.diff(self.times) > 0):
            bad = int(np.argmin(np.diff(self.times) > 0))
            raise ValueError(f"{_where(self.steps[bad + 1][0])}: times must increase across the files (step {bad + 1} at {raw[bad + 1]} does not follow {raw[bad]}); give the files in time order")
        var = datasets[0][time_dim]
        encoding = {**var.attrs, **var.encoding}
        first = raw[0]
        date = str(np.datetime_as_string(first, unit="s")) if isinstance(first, np.datetime64) else first.isoformat() if hasattr(first, "isoformat") else None
        if date is not None:
            self.origin = TimeOrigin(date.replace(" ", "T"), str(encoding.get("units", f"seconds since {date}")), str(encoding.get("calendar", getattr(first, "calendar", "standard")) or "standard"))

    def read(self, k: int) -> dict:
        ds, index = self.steps[k]
        if index is not None:
            ds = ds.isel({self.time_dim: index})
        data = np.stack([np.asarray(ds[n].transpose(*self.spatial).values, dtype=np.float64) for n in self.names], axis=-1) * self.scale
        if self.zero_w:
            data = np.concatenate([data, np.zeros_like(data[..., :1])], axis=-1)
        if len(self.spatial) == 3:
            data[..., 2] *= self.sign_w  # along the depth axis: positive down
        for axis, flip in enumerate(self.flips):
            if flip:
                data = np.flip(data, axis)
        if self.fill is not None:
            data = np.where(np.isnan(data), self.fill, data)
        elif self.land is not None:
            data = np.where(self.land[..., None], 0.0, data)
        return {"values": np.ascontiguousarray(data)}
