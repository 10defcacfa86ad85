"""MITgcm output as its users have it, read into a `LayeredField` on the tracer points, on the host.

- The files: a run directory of MDS binaries (`U.0000072000.data` beside its `.meta`, global or
  one file per tile, with the grid's `XC`, `YC`, `hFacC`, `RC`, `DRF`, `AngleCS`, `AngleSN`),
  opened by `open_mds`; the NetCDF of MITgcm's mnc package (`state.*.nc` with `U` on `Xp1`, `V`
  on `Yp1`, and `grid.*.nc` with `HFacC`, `drF`); or a Dataset `xmitgcm.open_mdsdataset` made.
- The C-grid as MITgcm defines it: `U(i)` on the face west of tracer point `i`, `V(j)` south of
  it, `W(k)` on the top of level `k`, upward. Indices wrap (a MITgcm domain is periodic where land
  does not close it), so the face east of the last point is the first. `U` and `V` are averaged to
  the tracer points and turned east and north by `AngleCS`, `AngleSN` (a spherical-polar grid
  writes none: its axes are east and north).
- The geometry from the grid's own metrics: spherical (`XC`, `YC` in degrees) where `DXC` is
  about 111 km per degree of `XC`, Cartesian (metres) where it equals the spacing of `XC`. A
  cubed sphere (`6 n × n`) is read one face at a time (`face=`; the faces around the poles are
  refused); LLC grids are refused.
- Levels: `-RC` below the surface; land and partial cells from `hFacC` (a column's depth is the
  sum of `DRF hFacC` over its wet levels).
- Times: the iteration times MITgcm's clock step, `deltaTClock` (else `deltaTtracer`, `deltaT`)
  of the run's `data` namelist, else that of a diagnostics or pickup `.meta` (`timeInterval`
  over its iteration), else `delta_t=`; dated from `data.cal`'s `startDate_1`/`startDate_2` when the run
  used the calendar.
"""

import logging
import re
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import speed_scale, where
from ..cf_times import time_axis
from ..cgrid import below_floor, centred_velocity, grid_angle, layered_on_grid, step_faces, z_columns
from ..checks import check_velocity, named

_log = logging.getLogger("flowkit")

_MNC_DIMS = {"T": "time", "Z": "k", "Zl": "k_l", "Y": "j", "Yp1": "j_g", "X": "i", "Xp1": "i_g"}
"""mnc NetCDF's dimensions by the names `open_mds` (and xmitgcm) give them."""
_SIDE = "left"
"""MITgcm's staggering (`cgrid.SIDES`): `U(i)` on `XG(i)`, the face west of `XC(i)`; `V(j)` south of `YC(j)`."""
_RENAMED = {"HFacC": "hFacC", "drF": "DRF", "CS": "AngleCS", "SN": "AngleSN", "Z": "RC"}
"""mnc's and xmitgcm's names of MDS's grid variables."""
_VELOCITY = {"u": ("U", "UVEL"), "v": ("V", "VVEL"), "w": ("W", "WVEL")}
"""Per component: a snapshot's name and the diagnostics package's."""


def detect(datasets: list) -> bool:
    """Whether the datasets are MITgcm's: the grid's `hFacC` (`HFacC` in mnc) beside tracer and
    face dimensions (`i`, `i_g`; mnc's `X`, `Xp1`), or mnc's `MITgcm_version` attribute."""
    return any(
        "MITgcm_version" in ds.attrs
        or (({"hFacC", "HFacC"} & set(ds.variables)) and ({"i_g", "Xp1", "XG"} & set(ds.dims)))
        for ds in datasets
    )


def build(
    datasets: list,
    u: str | None = None,
    v: str | None = None,
    w: str | None = None,
    *,
    face: int | None = None,
    dtype: DTypeLike = "float32",
) -> LayeredField:
    """A `LayeredField` from MITgcm's output (see the module docstring); `u`, `v`, `w` name the
    velocity (default `U`, `V`, `W`, else the diagnostics' `UVEL`, `VVEL`, `WVEL`), `face` the
    face of a cubed sphere.

    **Raises:** `ValueError` naming the file and the variable for a missing grid variable or
    velocity, snapshots beside diagnostics without a choice, a cubed sphere without `face`, an
    LLC grid, or a face around a pole.
    """
    ds = _merged(datasets)
    source = where(ds)
    names = [_velocity(ds, which, given, which != "w") for which, given in zip("uvw", (u, v, w))]
    names = [n for n in names if n is not None]
    grid = {name: _grid(ds, name, source) for name in ("XC", "YC")}
    tiles = _faces(grid["XC"].shape, face, source)
    xc, yc = (tiles(grid[n]) for n in ("XC", "YC"))
    spherical = _spherical(ds, xc, tiles, source)
    if spherical and _encloses_pole(ds, tiles, xc):
        raise ValueError(f"{source}: face {face} holds a pole, where longitude and latitude do not serve; take another")
    levels = -np.asarray(ds["RC"].values, np.float64).reshape(-1) if "RC" in ds.variables else np.zeros(1)
    hfac = tiles(np.asarray(_grid(ds, "hFacC", source), np.float64).reshape((len(levels),) + grid["XC"].shape))
    wet = np.moveaxis(np.nan_to_num(hfac) > 0, 0, -1)
    water = None
    if "DRF" in ds.variables:
        water = np.sum(np.asarray(ds["DRF"].values, np.float64).reshape(-1, 1, 1) * np.nan_to_num(hfac), axis=0)
    land, water, n_wet = z_columns(wet, levels, water)
    cos, sin = _rotation(ds, xc, yc, spherical, tiles)
    time_dim = "time" if "time" in ds[names[0]].dims else None
    steps, times, origin = time_axis([ds], time_dim)
    scales = [speed_scale(ds[n], source) for n in names]
    velocity = []
    for k, (_, index) in enumerate(steps):
        faces = []
        for name in names:
            values = step_faces(ds, name, time_dim, index)
            check_velocity(values, source, repr(name), k, None if times is None else float(times[k]))
            faces.append(_wrapped(tiles(values), ds[name].dims, xc.shape, face is not None))
        velocity.append(below_floor(centred_velocity(faces, cos, sin, scales, source, _SIDE), n_wet))
    _log.info(
        "MITgcm: %s: %d x %d tracer points%s (%s), %d z-levels, velocity %s, %d time steps, %d land columns%s",
        source,
        *xc.shape,
        "" if face is None else f" of face {face}",
        "degrees" if spherical else "metres",
        len(levels),
        "+".join(names),
        len(steps),
        int(land.sum()),
        "" if len(names) > 2 else "; no W: particles keep their depth",
    )
    depths = np.broadcast_to(levels, xc.shape + levels.shape)
    n = len(steps)
    field = layered_on_grid(
        xc, yc, [depths] * n, velocity, [water] * n, land, times, origin, dtype, spherical=spherical
    )
    return named(field, names)


def _merged(datasets: list):
    """One dataset in MDS's names (`i`, `i_g`, ..., `hFacC`, `DRF`, `RC`) from mnc's or xmitgcm's."""
    import xarray as xr

    renamed = []
    for ds in datasets:
        ds = ds.rename({d: c for d, c in _MNC_DIMS.items() if d in ds.dims and c not in ds.dims})
        ds = ds.rename({n: c for n, c in _RENAMED.items() if n in ds.variables and c not in ds.variables})
        renamed.append(ds)
    merged = renamed[0] if len(renamed) == 1 else xr.merge(renamed, compat="override", join="override")
    merged.attrs["flowkit_source"] = where(datasets[0])
    return merged


def _velocity(ds, which: str, given: str | None, required: bool) -> str | None:
    """The variable of component `which`: `given`, else MITgcm's snapshot or diagnostics name."""
    if given is not None:
        if given not in ds.variables:
            raise ValueError(f"{where(ds)}: no variable {given!r} (it has {sorted(ds.data_vars)})")
        return given
    found = [n for n in _VELOCITY[which] if n in ds.variables]
    if len(found) > 1:
        raise ValueError(
            f"{where(ds)}: both {found[0]!r} (snapshots) and {found[1]!r} (diagnostics) hold MITgcm's {which}; "
            "choose with velocity='U,V' or 'UVEL,VVEL'"
        )
    if not found and required:
        raise ValueError(
            f"{where(ds)}: no MITgcm {which} velocity ({' or '.join(_VELOCITY[which])}) among {sorted(ds.data_vars)}"
        )
    return found[0] if found else None


def _grid(ds, name: str, source: str) -> np.ndarray:
    if name not in ds.variables:
        raise ValueError(f"{source}: MITgcm grid variable {name!r} is missing (write the grid with the output)")
    values = np.asarray(ds[name].values, np.float64)
    if name in ("XC", "YC") and values.ndim == 1:  # xmitgcm's swapped lat-lon coordinates
        other = np.asarray(ds["YC" if name == "XC" else "XC"].values)
        values = np.meshgrid(values, other)[0] if name == "XC" else np.meshgrid(other, values)[1]
    if name in ("XC", "YC") and not np.all(np.isfinite(values)):
        raise ValueError(
            f"{source}: {name!r} is not finite at {int(np.sum(~np.isfinite(values)))} points (tiles MITgcm "
            "left out as land); write the grid of the whole domain"
        )
    return values


def _faces(shape: tuple[int, ...], face: int | None, source: str):
    """A function taking arrays `(..., y, x)` of the grid's `shape` to the tracked tile: the whole
    grid, or face `face` of a cubed sphere (its faces stacked along y, MDS's layout)."""
    n_y, n_x = shape[-2:]
    if n_y == 13 * n_x:
        raise ValueError(
            f"{source}: an LLC grid ({n_x} x {n_y}); flowkit reads lat-lon, Cartesian and curvilinear grids"
        )
    if n_y == 6 * n_x and face is None:
        raise ValueError(
            f"{source}: a cubed sphere of 6 faces of {n_x} x {n_x}; flowkit tracks one face at a time: give face=0..5"
        )
    if face is None:
        return lambda a: a
    if n_y != 6 * n_x or not 0 <= face < 6:
        raise ValueError(f"{source}: face={face}, but the grid ({n_x} x {n_y}) is not a cubed sphere of faces 0..5")
    return lambda a: a[..., face * n_x : (face + 1) * n_x, :]


def _spherical(ds, xc: np.ndarray, tiles, source: str) -> bool:
    """Whether `XC` is in degrees: `DXC` (metres between the points) against `XC`'s own spacing."""
    if "DXC" in ds.variables and xc.shape[1] > 1:
        dxc = tiles(np.asarray(ds["DXC"].values, np.float64).reshape(-1, ds["DXC"].shape[-1]))[:, 1 : xc.shape[1]]
        spacing = np.abs(np.diff(xc, axis=1))
        ratio = np.nanmedian(dxc / np.where(spacing > 0, spacing, np.nan))
        return bool(ratio > 100.0)
    spherical = bool(np.all(np.abs(xc) <= 540.0))
    _log.info("MITgcm: %s: no DXC: XC taken in %s by its range", source, "degrees" if spherical else "metres")
    return spherical


def _encloses_pole(ds, tiles, xc: np.ndarray) -> bool:
    """Whether the tile's outer ring of corners (`XG`, else the tracer points) winds round a pole."""
    ring_of = tiles(np.asarray(ds["XG"].values, np.float64)) if "XG" in ds.variables else xc
    ring_of = ring_of[: xc.shape[0], : xc.shape[1]]
    ring = np.concatenate([ring_of[0], ring_of[1:, -1], ring_of[-1, ::-1][1:], ring_of[::-1, 0][1:]])
    turns = np.sum((np.diff(ring) + 180.0) % 360.0 - 180.0) / 360.0
    return bool(abs(turns) > 0.5)


def _rotation(ds, xc, yc, spherical: bool, tiles) -> tuple[np.ndarray, np.ndarray]:
    """The cosine and sine of the grid's angle to east: `AngleCS`, `AngleSN`, else from the points."""
    if "AngleCS" in ds.variables and "AngleSN" in ds.variables:
        cos, sin = (tiles(np.asarray(ds[n].values, np.float64)) for n in ("AngleCS", "AngleSN"))
        return cos, sin
    if not spherical:
        return np.ones_like(xc), np.zeros_like(xc)
    angle = grid_angle(xc, yc)
    return np.cos(angle), np.sin(angle)


def _wrapped(values: np.ndarray, dims: tuple, shape: tuple[int, int], face: bool) -> np.ndarray:
    """A face variable `(K, y, x)` with the faces on both sides of every tracer point of `shape`:
    mnc's `Xp1`/`Yp1` hold them; MDS's `U` (`V`) lacks the east (north) one, which wraps to the
    first (on a face of a cubed sphere it lies on the next face: NaN, left out)."""
    axis = 2 if "i_g" in dims else 1 if "j_g" in dims else None
    if axis is None or values.shape[axis] != shape[axis - 1]:
        return values
    edge = np.take(values, [0], axis=axis)
    return np.concatenate([values, np.full_like(edge, np.nan) if face else edge], axis=axis)


_NAMELIST = r"(?im)^[^#\n]*?\b{key}\s*=\s*'?([-+0-9.eEdD:]+)"


def open_mds(directory: Path | str, delta_t: float | None = None):
    """The MDS output of a MITgcm run directory as an `xarray.Dataset` in memory, in xmitgcm's
    dimension names (`time`, `k`, `k_l`, `j`, `j_g`, `i`, `i_g`): the grid (`XC`, `YC`, `XG`,
    `YG`, `DXC`, `RC`, `DRF`, `hFacC`, `AngleCS`, `AngleSN`) and each velocity (`U`, `V`, `W`,
    `UVEL`, ... alone or in a diagnostics file's `fldList`) at every iteration written.

    **Raises:** `ValueError` naming the directory for no grid or velocity files, iterations
    without a time step to date them (`delta_t=`), a `.data` file of the wrong size.
    """
    import xarray as xr

    directory = Path(directory)
    if not is_run_directory(directory):
        raise ValueError(f"{directory}: no MITgcm grid (XC.meta) in the directory; write the grid with the output")
    variables: dict = {}
    for name, dims in _GRID_DIMS.items():
        if _metas(directory, name):
            record = _read_mds(directory, name)[0]
            if len(dims) == 1:
                record = record.reshape(-1)
            elif record.ndim < len(dims):  # a one-level run writes its 3-D grid as 2-D (nDims = 2)
                record = record.reshape((1,) * (len(dims) - record.ndim) + record.shape)
            variables[name] = (dims, record)
    fields = _velocity_records(directory)
    if not fields:
        raise ValueError(f"{directory}: no MITgcm velocity files (U.*.data, UVEL.*.data or a diagnostics fldList)")
    iterations = sorted(set.intersection(*(set(by_iter) for by_iter in fields.values())))
    steady = len(iterations) == 1  # one iteration: a steady field
    for name, by_iter in fields.items():
        dims = ("time", "k_l" if name in _VELOCITY["w"] else "k", *_FACE_DIMS.get(name, ("j", "i")))
        records = np.stack([by_iter[it] for it in iterations])
        variables[name] = (dims[steady:], records[0] if steady else records, {"units": "m s-1"})
    coords = {} if steady else {"iter": ("time", np.asarray(iterations))}
    if not steady:
        coords["time"] = ("time", *_times(directory, np.asarray(iterations), delta_t))
    ds = xr.Dataset(variables, coords=coords)
    ds = xr.decode_cf(ds) if "time" in ds.coords else ds
    ds.attrs["flowkit_source"] = str(directory)
    return ds


_GRID_DIMS = {
    "XC": ("j", "i"),
    "YC": ("j", "i"),
    "XG": ("j_g", "i_g"),
    "YG": ("j_g", "i_g"),
    "DXC": ("j", "i_g"),
    "AngleCS": ("j", "i"),
    "AngleSN": ("j", "i"),
    "RC": ("k",),
    "DRF": ("k",),
    "hFacC": ("k", "j", "i"),
}
_FACE_DIMS = {"U": ("j", "i_g"), "UVEL": ("j", "i_g"), "V": ("j_g", "i"), "VVEL": ("j_g", "i")}


def is_run_directory(directory: Path) -> bool:
    """Whether `directory` holds a MITgcm run's MDS output: its grid's `XC.meta` (or its tiles')."""
    return bool(_metas(directory, "XC"))


def _metas(directory: Path, stem: str) -> list[Path]:
    """The `.meta` files of one MDS output (`stem`: `XC`, `U.0000072000`): global, else per tile."""
    return sorted(directory.glob(f"{stem}.meta")) or sorted(directory.glob(f"{stem}.[0-9]*.[0-9]*.meta"))


def _velocity_records(directory: Path) -> dict[str, dict[int, np.ndarray]]:
    """Each velocity variable's records `(K, y, x)` by iteration: from its own files
    (`U.0000000010.data`) and from diagnostics files that list it."""
    found: dict[str, dict[int, np.ndarray]] = {}
    for meta_path in sorted(directory.glob("*.[0-9]*.meta")):
        parts = meta_path.name.split(".")
        if len(parts) not in (3, 5) or not parts[1].isdigit():
            continue
        if len(parts) == 5 and parts[2:4] != ["001", "001"]:
            continue  # a tile other than the first: read with it
        prefix, iteration = parts[0], int(parts[1])
        names = _meta(meta_path).get("fldList") or [prefix]
        wanted = [n for n in names if any(n in pair for pair in _VELOCITY.values())]
        if not wanted:
            continue
        records = _read_mds(directory, f"{prefix}.{parts[1]}")
        per_field = records.reshape(len(names), -1, *records.shape[-2:])
        for name in wanted:
            found.setdefault(name, {})[iteration] = per_field[names.index(name)]
    return found


def _meta(path: Path) -> dict[str, list[str]]:
    """An MDS `.meta` file's entries: `name = [ values ];` and `fldList = { 'A' 'B' };`."""
    text = path.read_text()
    meta = {
        k: v.replace("'", " ").replace(",", " ").split() for k, v in re.findall(r"(\w+)\s*=\s*\[(.*?)\];", text, re.S)
    }
    meta.update(
        {
            k: [s.strip() for s in re.findall(r"'([^']*)'", v)]
            for k, v in re.findall(r"(\w+)\s*=\s*\{(.*?)\};", text, re.S)
        }
    )
    return meta


def _read_mds(directory: Path, stem: str) -> np.ndarray:
    """The records `(R, [z,] y, x)` of one MDS output (`stem`: `XC`, `U.0000072000`), its tiles
    (`stem.001.001.data`, ...) placed by their `dimList`; a tile not written is NaN."""
    metas = _metas(directory, stem)
    joined = None
    for meta_path in metas:
        meta = _meta(meta_path)
        dims = np.asarray(meta["dimList"], np.int64).reshape(-1, 3)[::-1]  # slowest first: size, first, last
        precision = {"float32": ">f4", "float64": ">f8"}[meta["dataprec"][0].lower()]
        shape = (int(meta["nrecords"][0]), *(dims[:, 2] - dims[:, 1] + 1))
        data_path = meta_path.with_suffix(".data")
        data = np.fromfile(data_path, precision)
        if data.size != np.prod(shape):
            raise ValueError(f"{data_path}: {data.size} values where its .meta says {shape}")
        if joined is None:
            joined = np.full((shape[0], *dims[:, 0]), np.nan)
        joined[(slice(None), *(slice(a - 1, b) for a, b in dims[:, 1:]))] = data.reshape(shape)
    assert joined is not None
    return joined


def _times(directory: Path, iterations: np.ndarray, delta_t: float | None) -> tuple[np.ndarray, dict]:
    """The model times of `iterations` (s) and their CF attributes: iteration × the clock's step,
    dated from `data.cal` when the run used the calendar."""
    if delta_t is None:
        delta_t, said = _clock_step(directory)
        _log.info("MITgcm: %s: time step %g s (%s)", directory, delta_t, said)
    seconds = iterations * float(delta_t)
    cal = directory / "data.cal"
    start = _namelist(directory / "data", "startTime")
    if cal.exists() and (date := _namelist(cal, "startDate_1")) is not None:
        clock = f"{int(_namelist(cal, 'startDate_2') or 0):06d}"
        day = f"{int(date):08d}"
        since = f"{day[:4]}-{day[4:6]}-{day[6:]} {clock[:2]}:{clock[2:4]}:{clock[4:]}"
        return seconds - (start or 0.0), {"units": f"seconds since {since}"}
    return seconds, {"units": "s", "long_name": "model time"}


def _clock_step(directory: Path) -> tuple[float, str]:
    """MITgcm's clock step: `deltaTClock`, `deltaTtracer` or `deltaT` of `data`, else the model
    time a `.meta` file gives with its `timeStepNumber` (the end of a diagnostics file's
    `timeInterval`, or a pickup's own time: MITgcm writes `myTime` there), less `startTime`,
    over that iteration."""
    for key in ("deltaTClock", "deltaTtracer", "deltaT"):
        value = _namelist(directory / "data", key)
        if value:
            return value, f"{key} of {directory / 'data'}"
    start = _namelist(directory / "data", "startTime") or 0.0
    for meta_path in sorted(directory.glob("*.meta")):
        meta = _meta(meta_path)
        if meta.get("timeInterval") and meta.get("timeStepNumber") and int(meta["timeStepNumber"][0]) > 0:
            step = (float(meta["timeInterval"][-1]) - start) / int(meta["timeStepNumber"][0])
            return step, f"the timeInterval of {meta_path.name} at iteration {int(meta['timeStepNumber'][0])}"
    raise ValueError(
        f"{directory}: the output's iterations have no time step to date them (no 'data' namelist with "
        "deltaT, no diagnostics or pickup .meta with a timeInterval); give delta_t= (the run's deltaT, s)"
    )


def _namelist(path: Path, key: str) -> float | None:
    if not path.exists():
        return None
    text = re.sub(r"(?m)^\s*#.*$", "", path.read_text())
    found = re.search(_NAMELIST.format(key=key), text)
    return float(found[1].lower().replace("d", "e")) if found else None
