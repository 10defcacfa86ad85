"""NEMO output as its users have it (XIOS or IOIPSL NetCDF), read into a `LayeredField` on the
model's T points, on the host.

- The files: the U, V (and W) grid files apart, each variable on its own depth axis (`depthu`,
  `depthv`, `depthw`) and `time_counter`, given together in any order (a list or a glob); the
  grid file beside them (`mesh_mask*.nc`, `coordinates*.nc` or `domain_cfg*.nc`, or `grid=`).
- The C-grid as NEMO defines it: `U(j, i)` on the face east of `T(j, i)`, `V(j, i)` north of it,
  `W(k)` on the top of level `k`. `u` and `v` are averaged to the T points (a face NaN, as on an
  eliminated land processor, left out; a land face is 0, as NEMO writes it), then turned from the
  grid's i/j axes to east and north by the grid's angle (from `glamt`/`gphit`). Parcels'
  `FieldSet.from_nemo` interpolates the same faces inside the cells of the F points.
- The T points: `glamt`/`gphit` of the grid file; without one, the middle of the U points along
  i (each U file's `nav_lon`/`nav_lat` is `glamu`/`gphiu`), refused where an eliminated land
  processor left `nav_lon = nav_lat = 0`.
- Land: `tmask` of a mesh mask (the water depth the sum of `e3t_0` over the wet levels: partial
  steps); else from NEMO's exact zeros: a level is water where a face beside it moves. Land is
  never still water: particles that reach it beach.
- z-levels: depths below the surface (`depthu`, positive down); a W file's `wo` (upward) is
  taken at the T levels, positive down; without one particles keep their depth.
"""

import logging
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import InMetresPerSecond, attr, where
from ..cf_times import time_axis
from ..cgrid import below_floor, centred_velocity, grid_angle, layered_on_grid, step_faces, z_columns
from ..checks import check_velocity, named
from ..series import same_grid
from .companion import grid_file

_log = logging.getLogger("flowkit")

_COMPONENTS = {
    "u": (("sea_water_x_velocity", "eastward_sea_water_velocity"), ("uo", "vozocrtx", "uos", "sozocrtx", "ssu")),
    "v": (("sea_water_y_velocity", "northward_sea_water_velocity"), ("vo", "vomecrty", "vos", "somecrty", "ssv")),
    "w": (("upward_sea_water_velocity",), ("wo", "vovecrtz")),
}
"""Per component: the names NEMO's `standard_name`/`long_name` give it, and its variable names."""
_STAGGERED = {"u": "depthu", "v": "depthv", "w": "depthw"}
_SIDE = "right"
"""NEMO's staggering (`cgrid.SIDES`): `U(j, i)` on the face east of `T(j, i)`, `V(j, i)` north of it."""
_GRID_FILES = ("mesh_mask*.nc*", "coordinates*.nc*", "domain_cfg*.nc*")


def detect(datasets: list) -> bool:
    """Whether the datasets are NEMO output: `nav_lon` with a staggered depth axis (`depthu`,
    `depthv`, `depthw`) or XIOS's `nav_model = grid_U/V/W`."""
    return any(_is_nemo(ds) for ds in datasets)


def _is_nemo(ds) -> bool:
    if "nav_lon" not in ds.variables:
        return False
    return any(d in ds.dims for d in _STAGGERED.values()) or attr(ds["nav_lon"], "nav_model") in (
        "grid_U",
        "grid_V",
        "grid_W",
    )


def build(
    datasets: list,
    u: str | None = None,
    v: str | None = None,
    w: str | None = None,
    *,
    grid=None,
    dtype: DTypeLike = "float32",
) -> LayeredField:
    """A `LayeredField` from NEMO's grid files (see the module docstring); `u`, `v`, `w` name
    the velocity variables (default: by their `standard_name`/`long_name`, else `uo`/`vozocrtx`,
    ...; 3-D before surface-only), `grid` the mesh mask or coordinates file.

    **Raises:** `ValueError` naming the file and the variable for a missing U or V file,
    velocity, or grid variable; U and V files of different times or depths; a grid file of
    another shape; eliminated land processors without a grid file.
    """
    data = [ds for ds in datasets if not _is_grid(ds)]
    strangers = [where(ds) for ds in data if not _of_nemo(ds)]
    if strangers:
        raise ValueError(
            f"{', '.join(strangers)}: not NEMO output (no nav_lon, time_counter or NEMO depth axis) nor a NEMO grid "
            f"file, given with {where(next(ds for ds in data if _of_nemo(ds)))}; give the run's files only"
        )
    grid_ds = grid_file(
        "NEMO", data, [ds for ds in datasets if _is_grid(ds)], grid, _GRID_FILES, _is_grid, "glamt/gphit or tmask"
    )
    u_name, u_sets = _component(data, "u", u)
    v_name, v_sets = _component(data, "v", v)
    w_name, w_sets = _component(data, "w", w, required=False) if u_sets[0][u_name].ndim == 4 else (None, [])
    for sets, which in ((u_sets, "U"), (v_sets, "V"), (w_sets, "W")):
        same_grid(sets, ("nav_lon", "nav_lat"), f"NEMO's {which} files")
    source = where(u_sets[0])
    time_dim = next((d for d in u_sets[0][u_name].dims if d.startswith("time")), None)
    u_steps, times, origin = time_axis(u_sets, time_dim)
    readers = [(u_steps, u_name)]
    for sets, name in ((v_sets, v_name), (w_sets, w_name)):
        if sets:
            steps, _, _ = time_axis(sets, time_dim)
            if not np.array_equal(_dates(sets, time_dim), _dates(u_sets, time_dim)):
                raise ValueError(
                    f"{where(sets[0])}: {name!r} is not given at the times of {u_name!r} ({source}); give the U, V "
                    "and W files of the same times"
                )
            readers.append((steps, name))
    lon, lat = _centres(grid_ds, u_sets[0][u_name], source)
    angle = grid_angle(lon, lat)
    levels = _levels(u_sets[0][u_name], v_sets[0][v_name], source)
    in_mps = InMetresPerSecond()  # each file by its own units
    velocity = []
    for k in range(len(u_steps)):
        faces = []
        for steps, name in readers:
            ds, index = steps[k]
            values = step_faces(ds, name, time_dim, index)
            check_velocity(values, where(ds), repr(name), k, None if times is None else float(times[k]))
            faces.append(in_mps(ds, name, values))
        velocity.append(centred_velocity(faces, np.cos(angle), np.sin(angle), [1.0] * 3, source, _SIDE))
    land, water, wet_levels = _water(grid_ds, velocity, levels, source)
    filled = [below_floor(values, wet_levels) for values in velocity]
    _log.info(
        "NEMO: %s: %d x %d T points, %d z-levels, %d time steps, %d land columns (%s)%s",
        source,
        *lon.shape,
        len(levels),
        len(u_steps),
        int(land.sum()),
        "from exact zeros" if grid_ds is None or "tmask" not in grid_ds.variables else f"tmask of {where(grid_ds)}",
        "" if w_name else "; no W: particles keep their depth",
    )
    n = len(u_steps)
    depths = np.broadcast_to(levels, lon.shape + levels.shape)
    field = layered_on_grid(lon, lat, [depths] * n, filled, [water] * n, land, times, origin, dtype)
    return named(field, (u_name, v_name, w_name))


def _of_nemo(ds) -> bool:
    """Whether `ds` is one of a NEMO run's output files (a grid U, V, W or T file)."""
    return (
        "nav_lon" in ds.variables
        or "time_counter" in ds.dims
        or any(d in ds.dims for d in (*_STAGGERED.values(), "deptht"))
    )


def _dates(sets: list, time_dim) -> np.ndarray:
    return np.concatenate([np.asarray(ds[time_dim].values) for ds in sets]) if time_dim else np.zeros(0)


def _is_grid(ds) -> bool:
    """A mesh mask, coordinates or domain file: the grid's own coordinates or masks."""
    return "glamt" in ds.variables or "tmask" in ds.variables


def _component(data: list, which: str, given: str | None, required: bool = True) -> tuple[str | None, list]:
    """The variable of component `which` and the datasets holding it: `given`, else the one
    whose `standard_name`/`long_name` or name NEMO gives it (on levels before surface-only)."""
    if given is not None:
        sets = [ds for ds in data if given in ds.variables]
        if not sets:
            raise ValueError(f"{where(data[0])}: no file holds {given!r} (the files: {_files(data)})")
        return given, sets
    meanings, names = _COMPONENTS[which]
    found: dict[str, list] = {}
    for ds in data:
        for name, var in ds.data_vars.items():
            if name in names or attr(var, "standard_name") in meanings or attr(var, "long_name") in meanings:
                found.setdefault(str(name), []).append(ds)
    layered = [name for name, sets in found.items() if any(d.startswith("depth") for d in sets[0][name].dims)]
    choice = layered or list(found)
    if len(choice) > 1:
        raise ValueError(
            f"{where(data[0])}: {', '.join(map(repr, choice))} could each be NEMO's {which} velocity; name one "
            f"with velocity='u,v' ({which}=)"
        )
    if not choice:
        if not required:
            return None, []
        raise ValueError(
            f"{where(data[0])}: no {which.upper()} grid file ({_STAGGERED[which]}: {', '.join(names[:2])}) among "
            f"{_files(data)}; give NEMO's U and V files together"
        )
    return choice[0], found[choice[0]]


def _files(data: list) -> str:
    return ", ".join(Path(where(ds)).name for ds in data)


def _horizontal(var, shape: tuple[int, int] | None, source: str) -> np.ndarray:
    """A grid variable as `(y, x)` float64 (its singleton time or level axes dropped)."""
    values = np.asarray(var.values, np.float64)
    values = values.reshape(values.shape[-2:]) if values.size == np.prod(values.shape[-2:]) else values
    if values.ndim != 2 or (shape is not None and values.shape != shape):
        raise ValueError(
            f"{source}: NEMO grid variable {var.name!r} has shape {var.shape}; the velocity's grid is {shape} "
            "(a grid file of the same domain and cut is needed)"
        )
    return values


def _centres(grid_ds, u_var, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The T points' longitudes and latitudes `(y, x)`: the grid file's `glamt`/`gphit`, else
    the middle of the U points (`nav_lon`/`nav_lat` of the U file) along i."""
    shape = tuple(u_var.shape[-2:])
    if grid_ds is not None and "glamt" in grid_ds.variables:
        return _horizontal(grid_ds["glamt"], shape, where(grid_ds)), _horizontal(
            grid_ds["gphit"], shape, where(grid_ds)
        )
    lon = np.unwrap(np.asarray(u_var["nav_lon"].values, np.float64), period=360.0, axis=1)
    lat = np.asarray(u_var["nav_lat"].values, np.float64)
    eliminated = (lon == 0) & (lat == 0)
    if eliminated.any():
        raise ValueError(
            f"{source}: nav_lon = nav_lat = 0 at {int(eliminated.sum())} points (land processors NEMO eliminated): "
            "their places are in the grid file; pass grid='mesh_mask.nc' or 'coordinates.nc'"
        )
    _log.info("NEMO: %s: no grid file: T points midway between the U points", source)
    middle = lambda a: np.concatenate([1.5 * a[:, :1] - 0.5 * a[:, 1:2], 0.5 * (a[:, :-1] + a[:, 1:])], axis=1)  # noqa: E731
    return middle(lon), middle(lat)


def _levels(u_var, v_var, source: str) -> np.ndarray:
    """The T levels' depths (m, positive down): the U variable's depth axis; `[0]` at the surface."""
    axes = [next((var[d] for d in var.dims if d.startswith("depth")), None) for var in (u_var, v_var)]
    if axes[0] is None:
        return np.zeros(1)
    levels = np.asarray(axes[0].values, np.float64)
    if axes[1] is None or not np.allclose(np.asarray(axes[1].values, np.float64), levels):
        raise ValueError(f"{source}: {u_var.name!r} and {v_var.name!r} are not on the same z-levels")
    return levels


def _water(grid_ds, velocity: list[np.ndarray], levels: np.ndarray, source: str):
    """`(land, water depth, wet levels)` per column `(y, x)`: from a mesh mask's `tmask` (and
    `e3t_0`: partial steps), else from NEMO's zeros (a level is wet where it moves at some time)."""
    if grid_ds is not None and "tmask" in grid_ds.variables:
        tmask = np.asarray(grid_ds["tmask"].values).reshape((-1,) + velocity[0].shape[2:3] + velocity[0].shape[:2])[0]
        wet = tmask > 0
        if "e3t_0" in grid_ds.variables:
            e3t = np.asarray(grid_ds["e3t_0"].values, np.float64).reshape(tmask.shape)
            water = np.sum(np.where(wet, e3t, 0.0), axis=0)
        else:
            water = None
        wet = np.moveaxis(wet, 0, -1)
    else:
        wet = np.any([np.any(v[..., :2] != 0, axis=-1) for v in velocity], axis=0)
        water = None
    return z_columns(wet, levels, water)
