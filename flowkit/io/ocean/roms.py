"""ROMS and CROCO native output: the curvilinear Arakawa C-grid and the terrain-following
s-coordinate, read into a `LayeredField`, on the host.

- The grid (`lon_rho`, `lat_rho`, `h`, `mask_rho`, `angle`) comes from the history file, or
  from a separate grid file: given as `grid=`, or found beside the history file under the name
  its `grd_file` attribute gives.
- `u` (on `eta_u|eta_rho, xi_u`) and `v` (on `eta_v, xi_v|xi_rho`) are averaged to the rho
  points between their faces (ROMS' own `u2rho`/`v2rho`; a land face, NaN, is left out), then
  turned from the grid's xi/eta axes to east and north by `angle`.
- The depth of every level below the free surface comes from `h`, `zeta` (per time step),
  `hc`, `Cs_r` (CROCO: `Cs_rho`) and `s_rho` by `Vtransform` 1 or 2; a `w` on the `s_w`
  levels, when written, is averaged to the rho levels.
- `mask_rho` = 0 is land.
"""

import logging
from pathlib import Path

import numpy as np
from jax.typing import ArrayLike, DTypeLike

from ..._custom_types import PathLike
from ...diffusion import Profile
from ...fields.layered import LayeredField
from ..cf import InMetresPerSecond, where
from ..cf_times import time_axis
from ..cgrid import centred_velocity, grid_angle, layered_on_grid, to_centres
from ..checks import check_velocity, named
from .companion import model_grid

_log = logging.getLogger("flowkit")

_GRID = ("lon_rho", "lat_rho", "h")
_SIDE = "right"
"""ROMS' staggering (`cgrid.SIDES`): `u[i]` lies between `rho[i]` and `rho[i + 1]`, `v[j]` north of `rho[j]`."""
_METRES = ("x_rho", "y_rho")


_VELOCITIES = (("u", "v"), ("u_sur", "v_sur"), ("ubar", "vbar"))
"""The velocities a ROMS/CROCO file may hold, in the order they are taken: on the s-levels, at
the surface only, depth-averaged (the manual's `u`, `u_sur`, `ubar` on the u points)."""


def detect(datasets: list) -> bool:
    """Whether the first dataset is ROMS or CROCO native output: s-levels with stretching
    curves, or a velocity of `_VELOCITIES` on ROMS' staggered points (`xi_u`, `eta_v`), or on
    its rho points in a file that says it is ROMS's (its `type`, `title` or `history`: a subset
    that put every variable on the rho points)."""
    histories, _ = _split_grid(datasets)
    ds = histories[0]
    layered = "s_rho" in ds.dims and ("Cs_r" in ds.variables or "Cs_rho" in ds.variables)
    said = any("ROMS" in str(ds.attrs.get(key, "")) or "CROCO" in str(ds.attrs.get(key, "")) for key in _SAYS)
    for u, v in _VELOCITIES:
        if {u, v} <= set(ds.variables):
            dims = set(ds[u].dims) | set(ds[v].dims)
            if dims & {"xi_u", "eta_u", "xi_v", "eta_v"} or (said and {"xi_rho", "eta_rho"} & dims):
                return True
    return layered and "u" in ds.variables and "v" in ds.variables


_SAYS = ("type", "title", "history", "source")
"""The global attributes in which ROMS and CROCO name themselves."""


def _split_grid(datasets: list) -> tuple[list, object]:
    """The history files and the grid file among `datasets` (a file with the grid's variables
    and no `u`, given beside the histories in any order; None if none is)."""
    grids = [
        ds
        for ds in datasets
        if not any(u in ds.variables for u, _ in _VELOCITIES) and any(n in ds.variables for n in _GRID + _METRES)
    ]
    histories = [ds for ds in datasets if not any(ds is g for g in grids)]
    if len(grids) > 1 or not histories:
        return datasets, None
    return histories, (grids[0] if grids else None)


def build(datasets: list, grid=None, *, sample=(), dtype: DTypeLike = "float32") -> LayeredField:
    """A `LayeredField` from ROMS or CROCO history/average files (one Dataset or several
    consecutive in time) and, where they lack it, the model's grid file (`grid`: a path or an
    `xarray.Dataset`; default: the file the history's `grd_file` attribute names, beside it).

    Positions are longitude, latitude (degrees) and depth below the free surface (metres,
    positive down). `sample` names variables on the rho points to interpolate along tracks,
    for particle models and for diffusivities (`temp`, `salt`, `AKs`, `zeta`): on the s_rho
    levels, on the s_w levels (taken at the rho levels, the mean of the two around each, as
    `w` is) or 2-D (the same at every depth).

    **Raises:** `ValueError` naming the file and the variable for a missing grid variable or
    grid file, a `u`/`v` whose sizes are not those of faces between the rho points, or a
    `Vtransform` other than 1 or 2.
    """
    datasets, given = _split_grid(datasets)
    if given is not None and grid is not None:
        raise ValueError(f"{where(given)} is a grid file, and grid={grid!r} another: give one")
    history = datasets[0]
    grid_ds = _grid_dataset(history, given if grid is None else grid)
    sample = [sample] if isinstance(sample, str) else list(sample or ())

    def grid_var(name, required=True):
        for ds in (
            grid_ds,
            history,
        ):  # the grid file first: the model's own grid (often float64 where histories hold float32)
            if ds is not None and name in ds.variables:
                return ds[name]
        if required:
            grid_file = "a grid file" if grid_ds is None else f"the grid file {where(grid_ds)}"
            raise ValueError(
                f"{where(history)}: ROMS/CROCO variable {name!r} is in neither the history file nor {grid_file}; "
                "pass grid='..._grd.nc'"
            )
        return None

    rho = ("eta_rho", "xi_rho")
    lon, lat, spherical = _coordinates(grid_var, where(history))
    u_name, v_name = next((u, v) for u, v in _VELOCITIES if {u, v} <= set(history.variables))
    layered = u_name == "u" and "s_rho" in history["u"].dims
    h_var = grid_var("h", required=layered)
    h = None if h_var is None else _horizontal(h_var, rho, where(history))
    mask = grid_var("mask_rho", required=False)
    land = _horizontal(mask, rho, where(history)) == 0 if mask is not None else np.zeros(lon.shape, bool)
    angle_var = grid_var("angle", required=False)
    angle = _angle(angle_var, lon, lat, spherical, where(history))
    stretching = _stretching(history, grid_var, where(history)) if layered else None
    vertical = ("s_rho",) if layered else ()
    time_dim = next((d for d in history[u_name].dims if d not in vertical and not d.startswith(("eta", "xi"))), None)
    steps, times, origin = time_axis(datasets, time_dim)
    has_w = (
        layered
        and "w" in history.variables
        and "s_w" in history["w"].dims
        and history.sizes["s_w"] == history.sizes["s_rho"] + 1
    )
    _log_layout(where(history), stretching, (u_name, v_name), lon.shape, angle_var is not None, int(land.sum()), has_w)
    if layered:
        sliced = lambda step: _slice(step, h, angle, stretching, has_w)  # noqa: E731
    else:
        sliced = lambda step: _surface_slice(step, (u_name, v_name), lon.shape, h, angle)  # noqa: E731
    n_levels = len(stretching["s"]) if layered else 1
    depths, velocity, water, samples = _read_steps(
        steps, time_dim, times, (u_name, v_name), sliced, has_w, sample, n_levels, where(history)
    )
    if mask is None:
        land = _unmasked_land(grid_var, velocity, lon.shape, where(history), grid_ds)
    field = layered_on_grid(
        lon, lat, depths, velocity, water, land, times, origin, dtype, samples=samples, spherical=spherical
    )
    return named(field, (u_name, v_name, "w" if has_w else None))


def _read_steps(steps, time_dim, times, names, sliced, has_w: bool, sample, n_levels: int, source: str):
    """Each time step's level depths, velocity (m/s by its own file's units: east, north[,
    down]) and water depth (`sliced(step)`), and the sampled variables, as lists along time."""
    in_mps = InMetresPerSecond()
    depths: list[np.ndarray] = []
    velocity: list[np.ndarray] = []
    water: list[np.ndarray] = []
    samples: dict[str, list] = {name: [] for name in sample}
    for ds, k in steps:
        step = ds if k is None else ds.isel({time_dim: k})
        for name in names:  # NaN everywhere: no flow (its faces' mean would read as 0)
            check_velocity(step[name].values, source, repr(name), len(velocity), _time(times, len(velocity)))
        if in_mps.factor(ds, names[0]) != in_mps.factor(ds, names[1]):  # turned together: one factor
            raise ValueError(f"{where(ds)}: {names[0]!r} and {names[1]!r} have different units")
        d, u, bottom = sliced(step)
        u[..., :2] *= in_mps.factor(ds, names[0])
        if has_w:
            u[..., 2] *= in_mps.factor(ds, "w")
        depths.append(d)
        velocity.append(u)
        water.append(bottom)
        for name in sample:
            samples[name].append(_sampled(step, name, n_levels))
    return depths, velocity, water, samples


def _coordinates(grid_var, source: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """The rho points' `(x, y, spherical)`: `lon_rho`/`lat_rho` in degrees, or `x_rho`/`y_rho`
    in metres where the grid is Cartesian (the variable `spherical` false, as ROMS writes it:
    0 or 'F'; or no longitudes at all)."""
    rho = ("eta_rho", "xi_rho")
    flag = grid_var("spherical", required=False)
    value = None if flag is None else np.asarray(flag.values).reshape(-1)[0]
    value = value.decode() if isinstance(value, bytes) else value
    cartesian = value is not None and str(value).strip().lower() in ("0", "f", "false")
    if cartesian or grid_var("lon_rho", required=False) is None:
        if grid_var("x_rho", required=False) is not None:
            x, y = (_horizontal(grid_var(n), rho, source) for n in _METRES)
            _log.info("ROMS/CROCO: %s: a Cartesian grid: positions in metres (x_rho, y_rho)", source)
            return x, y, False
    lon, lat = (_horizontal(grid_var(n), rho, source) for n in _GRID[:2])
    return lon, lat, True


def _surface_slice(step, names: tuple[str, str], shape: tuple[int, int], h, angle):
    """One time step of a velocity without levels (`u_sur`, `ubar`): a single level at the
    surface `(eta, xi, 1)`, the velocity there `(eta, xi, 1, 2)` and the water depth (`h` and
    `zeta` where the file holds them; positions are 2-D)."""
    source = where(step)
    faces = [np.asarray(step[n].values, np.float64) for n in names]
    if any(f.ndim != 2 for f in faces):
        raise ValueError(
            f"{source}: {names[0]} and {names[1]} must be (eta, xi) per time step, got "
            f"{step[names[0]].dims} and {step[names[1]].dims}"
        )
    velocity = centred_velocity([f[None] for f in faces], np.cos(angle), np.sin(angle), [1.0], source, _SIDE)
    zeta = np.nan_to_num(np.asarray(step["zeta"].values, np.float64)) if "zeta" in step.variables else 0.0
    water = (np.ones(shape) if h is None else h) + zeta
    return np.zeros(shape + (1,)), velocity, water


def _grid_dataset(history, grid):
    """The model's grid file as a Dataset: `grid` when given, else the file `grd_file` names
    beside the history file when the history lacks the grid, else None."""
    import xarray as xr

    if isinstance(grid, xr.Dataset):
        return grid
    if grid is None:
        if _holds_grid(history):
            return None
        named = str(history.attrs.get("grd_file", "")).strip()
        source = history.attrs.get("flowkit_source")
        if not named or source is None:
            return None
        grid = Path(source).parent / Path(named).name
        if not grid.exists():
            raise FileNotFoundError(
                f"{source}: the grid is in {named!r} (its grd_file attribute), not found as {grid}; pass "
                f"grid='path/to/{Path(named).name}'"
            )
        _log.info("ROMS/CROCO: %s: grid read from %s (its grd_file attribute)", source, grid)
    grid = Path(grid)
    if not grid.exists():
        raise FileNotFoundError(f"grid file {grid} does not exist")
    return model_grid(grid, "ROMS/CROCO", _holds_grid, "lon_rho, lat_rho and h, or x_rho and y_rho")


def _holds_grid(ds) -> bool:
    return all(name in ds.variables for name in _GRID) or all(name in ds.variables for name in _METRES)


def _horizontal(var, dims, source) -> np.ndarray:
    """A 2-D grid variable as `(eta, xi)` float64, checked to lie on the rho points."""
    if tuple(var.dims) != dims:
        raise ValueError(
            f"{source}: ROMS/CROCO variable {var.name!r} has dims {var.dims}, expected the rho points {dims}"
        )
    return np.asarray(var.values, np.float64)


def _stretching(history, grid_var, source) -> dict:
    """The s-coordinate: `s` and `C` on the rho levels (bottom first), `hc` and `Vtransform`
    (the variable, else `s_rho`'s attribute, else its CF `standard_name`:
    `ocean_s_coordinate_g1` or `_g2`). A file cut without its stretching curve (`Cs_r`) is
    read on unstretched levels, `C = s`, whose depths need no `hc` (warned: the levels' true
    depths need the curve)."""
    s = np.asarray(history["s_rho"].values, np.float64)
    curve_name = next((n for n in ("Cs_r", "Cs_rho") if n in history.variables), None)
    vtransform = None
    if "Vtransform" in history.variables:
        vtransform = int(np.asarray(history["Vtransform"].values).reshape(-1)[0])
    elif "Vtransform" in history["s_rho"].attrs:
        vtransform = int(history["s_rho"].attrs["Vtransform"])
    else:
        standard = str(history["s_rho"].attrs.get("standard_name", ""))
        vtransform = {"ocean_s_coordinate_g1": 1, "ocean_s_coordinate_g2": 2}.get(standard)
        if vtransform is None:
            vtransform = 1
            _log.info("ROMS/CROCO: %s has no Vtransform: taken as 1 (ROMS' original transform)", source)
    if vtransform not in (1, 2):
        raise ValueError(f"{source}: Vtransform {vtransform} is not 1 or 2 (the transforms ROMS and CROCO define)")
    if curve_name is None:
        _log.warning(
            "ROMS/CROCO: %s has no stretching curve (Cs_r or Cs_rho): its s_rho levels are taken unstretched "
            "(C = s, the levels evenly spread over the water column); give the file with Cs_r and hc for their "
            "true depths",
            source,
        )
        return {"s": s, "C": s.copy(), "hc": 0.0, "vtransform": vtransform, "stretched": False}
    hc = history["hc"].values if "hc" in history.variables else history.attrs.get("hc")
    if hc is None:
        raise ValueError(
            f"{source}: no critical depth hc (variable or attribute): the s-levels' depths cannot be computed"
        )
    curve = np.asarray(history[curve_name].values, np.float64)
    if curve.shape != s.shape:
        raise ValueError(f"{source}: {curve_name} has {curve.size} values for {s.size} s_rho levels")
    hc = float(np.asarray(hc).reshape(-1)[0])
    return {"s": s, "C": curve, "hc": hc, "vtransform": vtransform, "stretched": True}


def level_heights(h: ArrayLike, zeta, s, curve, hc, vtransform) -> np.ndarray:
    """ROMS' z of each rho level `(K, ...)` above mean sea level (negative below) for bottom
    depths `h`, free surface `zeta` (both `(...)`) and the s-coordinate."""
    s, curve = (np.reshape(a, (-1,) + (1,) * np.ndim(h)) for a in (s, curve))
    if vtransform == 1:
        z0 = hc * s + (h - hc) * curve
        return z0 + zeta * (1 + z0 / h)
    z0 = (hc * s + h * curve) / (hc + h)
    return zeta + (zeta + h) * z0


def _slice(step, h, angle, stretching, has_w):
    """One time step: level depths below the surface `(eta, xi, K)` (surface first), the
    velocity there `(eta, xi, K, 2 or 3)` (east, north[, down]) and the water depth `(eta, xi)`."""
    source = where(step)
    n_eta, n_xi = h.shape
    zeta = np.nan_to_num(np.asarray(step["zeta"].values, np.float64)) if "zeta" in step.variables else np.zeros_like(h)
    u = np.asarray(step["u"].transpose("s_rho", ...).values, np.float64)
    v = np.asarray(step["v"].transpose("s_rho", ...).values, np.float64)
    if u.ndim != 3 or v.ndim != 3:
        raise ValueError(
            f"{source}: u and v must be (s_rho, eta, xi) per time step, got {step['u'].dims} and {step['v'].dims}"
        )
    if u.shape[1] != n_eta or v.shape[2] != n_xi:
        raise ValueError(
            f"{source}: u and v do not lie between the {n_eta} x {n_xi} rho points (dims "
            f"{step['u'].dims}, {step['v'].dims})"
        )
    east_north = centred_velocity([u, v], np.cos(angle), np.sin(angle), [1.0], source, _SIDE)  # (eta, xi, K, 2)
    z = level_heights(h, zeta, stretching["s"], stretching["C"], stretching["hc"], stretching["vtransform"])
    components = list(np.moveaxis(east_north, (3, 2), (0, 1)))  # east, north: each (K, eta, xi)
    if has_w:
        w = np.asarray(step["w"].transpose("s_w", ...).values, np.float64)
        components.append(-_wto_centres(w))  # upward on the s_w levels -> downward on the rho levels
    depth = zeta[None] - z  # below the free surface, positive down; level 0 is the deepest
    velocity = np.stack(components, axis=-1)
    return np.moveaxis(depth[::-1], 0, -1), np.moveaxis(velocity[::-1], 0, -2), h + zeta


def _time(times, k: int) -> float | None:
    return None if times is None else float(times[k])


def _log_layout(
    source: str, stretching: dict | None, names: tuple, shape: tuple, turned: bool, land: int, has_w: bool
) -> None:
    if stretching is None:
        levels = f"{'+'.join(names)} without levels (2-D)"
    else:
        unstretched = "" if stretching["stretched"] else ", unstretched"
        levels = (
            f"s-levels (Vtransform {stretching['vtransform']}, {len(stretching['s'])} levels, hc "
            f"{stretching['hc']:g} m{unstretched}), velocity {'+'.join(names)}"
        )
    _log.info(
        "ROMS/CROCO: %s: %s, C-grid faces averaged to the %d x %d rho points%s, %d land nodes%s",
        source,
        levels,
        *shape,
        ", rotated to east/north by 'angle'" if turned else "",
        land,
        "" if has_w or stretching is None else "; no w: particles keep their depth",
    )


def _angle(angle_var, x: np.ndarray, y: np.ndarray, spherical: bool, source: str) -> np.ndarray:
    """The grid's `angle` in radians at the rho points; where the files lack it, the xi axis's
    angle from the rho points' own coordinates (said in the log)."""
    if angle_var is None:
        if spherical:
            angle = grid_angle(x, y)
        else:
            angle = np.arctan2(np.gradient(y, axis=1), np.gradient(x, axis=1))
        _log.warning(
            "ROMS/CROCO: %s: no 'angle' in the history or grid file: the xi axis's angle to east is taken from "
            "%s (%.3g° to %.3g°)",
            source,
            "lon_rho/lat_rho" if spherical else "x_rho/y_rho",
            *np.rad2deg([angle.min(), angle.max()]),
        )
        return angle
    angle = _horizontal(angle_var, ("eta_rho", "xi_rho"), source)
    return np.deg2rad(angle) if str(angle_var.attrs.get("units", "")).lower().startswith("deg") else angle


def _unmasked_land(grid_var, velocity: list, shape: tuple, source: str, grid_ds) -> np.ndarray:
    """No `mask_rho`: land from `mask_u` and `mask_v` where the files hold them (a rho point is
    water when a face beside it is, ROMS making the face masks from mask_rho); else a run without
    masking, which has no land (said); but rho points where u and v are zero or NaN at every
    level and time look like land, and are refused."""
    faces = [grid_var(name, required=False) for name in ("mask_u", "mask_v")]
    if all(face is not None for face in faces):
        wet = [
            to_centres(np.asarray(face.values, np.float64), axis, shape[axis], face.name, source, _SIDE) > 0
            for face, axis in zip(faces, (1, 0))
        ]
        land = ~(wet[0] | wet[1])
        _log.warning(
            "ROMS/CROCO: %s: no 'mask_rho': land from 'mask_u' and 'mask_v' (%d land nodes)", source, int(land.sum())
        )
        return land
    still = np.all([np.all((v == 0) | np.isnan(v), axis=(-2, -1)) for v in velocity], axis=0)
    if still.any():
        grid_file = "a grid file" if grid_ds is None else f"the grid file {where(grid_ds)}"
        raise ValueError(
            f"{source}: no 'mask_rho' in the history file nor {grid_file}, but u and v are zero or NaN at every "
            f"level and time at {int(still.sum())} of {still.size} rho points (land): pass grid='..._grd.nc' "
            "holding mask_rho"
        )
    _log.warning(
        "ROMS/CROCO: %s: no 'mask_rho', 'mask_u' or 'mask_v': no land, as in a run without masking (pass grid= a "
        "file holding mask_rho if the model had land)",
        source,
    )
    return np.zeros(still.shape, bool)


def _wto_centres(values: np.ndarray) -> np.ndarray:
    """Values on the s_w levels (first axis) at the rho levels: the mean of the two around each."""
    return 0.5 * (values[:-1] + values[1:])


def _sampled(step, name: str, n_levels: int) -> np.ndarray:
    """One time step of the variable `name` on the rho points, `(eta, xi, K)` surface level
    first (s_w levels taken at the rho levels), or `(eta, xi)` for a 2-D variable."""
    if name not in step.variables:
        raise ValueError(
            f"{where(step)}: sample variable {name!r} is not in the file (it has {sorted(step.data_vars)})"
        )
    var = step[name]
    vertical = [d for d in var.dims if d in ("s_rho", "s_w")]
    if tuple(d for d in var.dims if d not in vertical) != ("eta_rho", "xi_rho"):
        raise ValueError(
            f"{where(step)}: sample variable {name!r} has dims {var.dims}; sampled variables lie on the rho "
            "points ((s_rho or s_w,) eta_rho, xi_rho)"
        )
    values = np.asarray(var.transpose(*vertical, "eta_rho", "xi_rho").values, np.float64)
    if not vertical:
        return values
    if vertical == ["s_w"]:
        if len(values) != n_levels + 1:
            raise ValueError(f"{where(step)}: {name!r} has {len(values)} s_w levels, expected {n_levels + 1}")
        values = _wto_centres(values)
    return np.moveaxis(values[::-1], 0, -1)  # level 0 is the deepest in the file


def column_profile(
    path: PathLike, variable: str = "AKs", lon: float | None = None, lat: float | None = None, grid=None
) -> Profile:
    """The `flowkit.diffusion.Profile` of a w-level variable (`AKs`, `AKt`, `AKv`) in the wet
    water column nearest to `(lon, lat)` (the domain's middle by default) of a ROMS/CROCO file:
    its depths below the free surface (from `h`, `zeta`, `hc`, `Cs_w`, `s_w`, `Vtransform`;
    `grid` a separate grid file), at the file's times (seconds from its first, as `fk.io.read`
    counts them)."""
    import xarray as xr

    history = xr.open_dataset(path)
    history.attrs["flowkit_source"] = str(path)
    source = str(path)
    if variable not in history.variables:
        raise ValueError(f"{source}: no variable {variable!r}; it holds {sorted(map(str, history.data_vars))}")
    var = history[variable]
    if var.ndim != 4 or var.dims[1] != "s_w" or var.dims[2:] != ("eta_rho", "xi_rho"):
        raise ValueError(
            f"{source}: {variable} has dims {var.dims}; expected (time, 's_w', 'eta_rho', 'xi_rho') (the w-levels)"
        )
    grid_ds = _grid_dataset(history, grid)
    g = history if grid_ds is None else grid_ds
    dims = ("eta_rho", "xi_rho")
    lon_rho, lat_rho = (_horizontal(g[name], dims, source) for name in ("lon_rho", "lat_rho"))
    h = _horizontal(g["h"], dims, source)
    wet = _horizontal(g["mask_rho"], dims, source) > 0.5 if "mask_rho" in g.variables else np.ones_like(h, bool)
    lon = float(np.mean(lon_rho)) if lon is None else lon
    lat = float(np.mean(lat_rho)) if lat is None else lat
    far = np.hypot((lon_rho - lon) * np.cos(np.deg2rad(lat)), lat_rho - lat)
    j, i = np.unravel_index(np.argmin(np.where(wet, far, np.inf)), far.shape)
    stretching = _stretching(history, None, source)
    s_w = np.asarray(history["s_w"].values, np.float64)
    if "Cs_w" not in history.variables:
        raise ValueError(f"{source}: no Cs_w: the depths of the w-levels cannot be computed")
    curve = np.asarray(history["Cs_w"].values, np.float64)
    n = var.shape[0]
    zeta = history["zeta"].values[:, j, i].astype(np.float64) if "zeta" in history.variables else np.zeros(n)
    z = np.stack(
        [level_heights(h[j, i], zeta[k], s_w, curve, stretching["hc"], stretching["vtransform"]) for k in range(n)]
    )
    times = history[var.dims[0]].values
    seconds = (times - times[0]) / np.timedelta64(1, "s") if np.issubdtype(times.dtype, np.datetime64) else None
    if seconds is None and n > 1:
        seconds = np.array([(t - times[0]).total_seconds() for t in times])
    return Profile(zeta[:, None] - z, np.asarray(var.values[:, :, j, i], np.float64), seconds if n > 1 else None)
