"""MOM6 output as its users have it (the FMS diag manager's NetCDF), read into a `LayeredField` on
the tracer (h) points, on the host.

- The files: the history files (`u` on `(Time, zl, yh, xq)`, `v` on `(Time, zl, yq, xh)`, the
  layer thicknesses `h`; or the CMOR names `uo`, `vo` remapped to depths `z_l`), given together
  with the static file (`ocean_static.nc`: `geolon`, `geolat`, `wet`, `sin_rot`, `cos_rot`),
  which is otherwise found beside them (`*static*.nc`) or given as `grid=`.
- The C-grid as MOM6 defines it: `u(I)` on the face east of h point `i` (`I = i + 1/2`); a
  symmetric grid also holds the west face of the first column (`xq` one longer than `xh`). Faces
  MOM6 leaves missing are land: no flow across them. `u` and `v`, along the grid's axes, are
  averaged to the h points and turned east and north by `cos_rot`, `sin_rot` (the clockwise
  angle of the grid's north from true north, as MOM6 writes it): `east = u cos + v sin`.
- The h points: the static file's `geolon`/`geolat`; without one, the nominal `xh`, `yh` (a
  spherical lat-lon grid, logged).
- The vertical: layers `zl` placed by their thicknesses `h` (a layer's centre lies below the
  layers above it and half its own thickness; a vanished layer takes the velocity above it), or
  the fixed depths `z_l` of remapped output (levels below the floor are missing: land there).
- Land: the static file's `wet`, else the columns whose faces are all missing.
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import attr, speed_scale, where
from ..cf_times import time_axis
from ..cgrid import below_floor, centred_velocity, layered_on_grid, step_faces
from ..checks import check_velocity, named
from .companion import grid_file

_log = logging.getLogger("flowkit")

_SIDE = "right"
"""MOM6's staggering (`cgrid.SIDES`): `u` on `xq[i]` east of `xh[i]` (non-symmetric; a symmetric grid's
extra first face makes its faces `outer`), `v` on `yq[j]` north of `yh[j]`."""

_NAMES = {"u": ("u", "uo", "ssu"), "v": ("v", "vo", "ssv")}
_VANISHED = 1e-3
"""A layer thinner than this (m) has vanished: its velocity is the one above it."""


def detect(datasets: list) -> bool:
    """Whether the datasets are MOM6's: h points `xh`, `yh` beside a face axis `xq` or `yq`."""
    return any({"xh", "yh"} <= set(ds.dims) and bool({"xq", "yq"} & set(ds.dims)) for ds in datasets)


def build(
    datasets: list, u: str | None = None, v: str | None = None, *, grid=None, dtype: DTypeLike = "float32"
) -> LayeredField:
    """A `LayeredField` from MOM6's files (see the module docstring); `u`, `v` name the velocity
    (default `u`, `v`, else `uo`, `vo`, else the surface `ssu`, `ssv`), `grid` the static file.

    **Raises:** `ValueError` naming the file and the variable for a missing velocity, native
    layers without their thickness `h`, a static file of another grid, or two velocities that
    could each be the one tracked.
    """
    data = [ds for ds in datasets if not _is_static(ds)]
    static = grid_file(
        "MOM6", data, [ds for ds in datasets if _is_static(ds)], grid, ("*static*.nc",), _is_static, "geolon, geolat"
    )
    u_name, v_name = (_velocity(data, which, given) for which, given in (("u", u), ("v", v)))
    sets = [ds for ds in data if u_name in ds.variables]
    source = where(sets[0])
    u_var = sets[0][u_name]
    time_dim = next((d for d in u_var.dims if d.lower() == "time"), None)
    level_dim = next((d for d in u_var.dims if d in ("zl", "z_l")), None)
    steps, times, origin = time_axis(sets, time_dim)
    lon, lat = _h_points(static, sets[0], source)
    cos, sin = _rotation(static, lon.shape)
    scale = speed_scale(u_var, source)
    if speed_scale(sets[0][v_name], source) != scale:
        raise ValueError(f"{source}: {u_name!r} and {v_name!r} have different units")
    velocity, depths, waters = [], [], []
    for k, (ds, index) in enumerate(steps):
        at = {} if index is None else {time_dim: index}
        faces = [step_faces(ds, name, time_dim, index) for name in (u_name, v_name)]
        for values, name in zip(faces, (u_name, v_name)):
            check_velocity(values, source, repr(name), k, None if times is None else float(times[k]))
        if k == 0:
            wet = np.moveaxis(_wet_levels(faces, lon.shape), 0, -1)
        centred = centred_velocity([np.nan_to_num(f) for f in faces], cos, -sin, [scale, scale], source, _SIDE)
        level_depths, water = _depths(ds, at, level_dim, lon.shape, source)
        if level_dim == "zl":
            centred = _over_vanished(centred, ds["h"].isel(at).values)
        velocity.append(centred)
        depths.append(level_depths)
        waters.append(water)
    n_wet = np.sum(np.cumprod(wet, axis=-1), axis=-1)
    land = n_wet == 0
    if static is not None and "wet" in static.variables:
        land = np.asarray(static["wet"].values).reshape(lon.shape) == 0
    velocity = [below_floor(values, np.where(land, 0, n_wet)) for values in velocity]
    _log.info(
        "MOM6: %s: %d x %d h points, %s, velocity %s+%s, %d time steps, %d land columns (%s)",
        source,
        *lon.shape,
        "surface"
        if level_dim is None
        else f"{depths[0].shape[-1]} {'layers (h)' if level_dim == 'zl' else 'z-levels'}",
        u_name,
        v_name,
        len(steps),
        int(land.sum()),
        "wet of the static file" if static is not None and "wet" in static.variables else "missing faces",
    )
    return named(layered_on_grid(lon, lat, depths, velocity, waters, land, times, origin, dtype), (u_name, v_name))


def _is_static(ds) -> bool:
    return "geolon" in ds.variables and not any(n in ds.variables for names in _NAMES.values() for n in names)


def _velocity(data: list, which: str, given: str | None) -> str:
    if given is not None:
        if not any(given in ds.variables for ds in data):
            raise ValueError(f"{where(data[0])}: no file holds {given!r}")
        return given
    found = [n for n in _NAMES[which] if any(n in ds.variables for ds in data)]
    if not found:
        raise ValueError(f"{where(data[0])}: no MOM6 {which} velocity ({', '.join(_NAMES[which])}) in the files")
    if len(found) > 1 and found[1] != "ss" + which:
        raise ValueError(
            f"{where(data[0])}: {found[0]!r} (layers) and {found[1]!r} (z-levels) could each be MOM6's {which} "
            "velocity; choose with velocity='u,v' or 'uo,vo'"
        )
    return found[0]


def _h_points(static, ds, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The h points' longitudes and latitudes `(yh, xh)`."""
    if static is not None and "geolon" in static.variables:
        lon, lat = (np.asarray(static[n].values, np.float64) for n in ("geolon", "geolat"))
        if lon.shape != (ds.sizes["yh"], ds.sizes["xh"]):
            raise ValueError(
                f"{source}: the static file's geolon is {lon.shape}; the output's h grid is "
                f"{(ds.sizes['yh'], ds.sizes['xh'])} (a static file of the same run is needed)"
            )
        return lon, lat
    _log.info("MOM6: %s: no static file: the nominal xh, yh taken as longitude and latitude", source)
    lon, lat = np.meshgrid(np.asarray(ds["xh"].values, np.float64), np.asarray(ds["yh"].values, np.float64))
    return lon, lat


def _rotation(static, shape) -> tuple[np.ndarray, np.ndarray]:
    if static is not None and "sin_rot" in static.variables:
        cos, sin = (np.asarray(static[n].values, np.float64).reshape(shape) for n in ("cos_rot", "sin_rot"))
        return cos, sin
    return np.ones(shape), np.zeros(shape)


def _wet_levels(faces: list[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Each level's water `(K, y, x)`: a face on either side that MOM6 wrote (not missing)."""
    wet = np.zeros((faces[0].shape[0],) + shape, bool)
    for values, axis in zip(faces, (2, 1)):
        written, n = np.isfinite(values), shape[axis - 1]
        after = np.take(written, np.arange(written.shape[axis] - n, written.shape[axis]), axis=axis)
        before = np.take(written, np.arange(-1, n - 1) if written.shape[axis] == n else np.arange(n), axis=axis)
        if written.shape[axis] == n:  # no face west (south) of the first column (row) in the file
            index = [slice(None)] * 3
            index[axis] = slice(0, 1)
            before[tuple(index)] = False
        wet |= after | before
    return wet


def _depths(ds, at: dict, level_dim, shape, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The levels' depths `(y, x, K)` (m, positive down) and the columns' water depth `(y, x)`."""
    if level_dim is None:
        return np.zeros(shape + (1,)), np.zeros(shape)
    if level_dim == "z_l":
        levels = np.asarray(ds["z_l"].values, np.float64)
        bottom = np.asarray(ds["z_i"].values, np.float64)[-1] if "z_i" in ds.variables else levels[-1]
        return np.broadcast_to(levels, shape + levels.shape).copy(), np.full(shape, bottom)
    if "h" not in ds.variables:
        raise ValueError(
            f"{source}: MOM6's layers 'zl' ({attr(ds['zl'], 'long_name') or 'layer coordinate'}) are placed by "
            "their thickness 'h', which the file lacks; write h with u and v, or give z-level output (uo, vo on z_l)"
        )
    h = np.moveaxis(np.nan_to_num(np.asarray(ds["h"].isel(at).values, np.float64)), 0, -1)
    centres = np.cumsum(h, axis=-1) - 0.5 * h + 1e-4 * np.arange(h.shape[-1])  # a vanished layer just below
    return centres, h.sum(axis=-1)


def _over_vanished(velocity: np.ndarray, h: np.ndarray) -> np.ndarray:
    """`velocity` `(y, x, K, C)` with each vanished layer holding the velocity of the layer above."""
    thin = np.moveaxis(np.nan_to_num(h) < _VANISHED, 0, -1)
    source = np.where(thin, 0, np.arange(thin.shape[-1]))
    source = np.maximum.accumulate(source, axis=-1)
    return np.take_along_axis(velocity, source[..., None], axis=2)
