"""TELEMAC Selafin (`.slf`) results, read with `xarray-selafin`, onto the unstructured path.

- 2-D results (TELEMAC-2D): the triangles and the depth-averaged `U`, `V` become a `MeshField`.
- 3-D results (TELEMAC-3D): prisms between the vertical planes. With the planes' elevations
  (`Z`, per node and time step) they become a `LayeredField` on the triangles: depth below the
  free surface (the top plane), `W` (upward) turned positive down. A file without `Z` holds no
  vertical geometry: one plane (the top one, or `plane=`) is tracked in 2-D, with a log line.

Coordinates are the mesh's own (metres of its projection), times seconds since the first step;
the date is kept when the file states one (TELEMAC writes 1900-01-01 when none was set).
"""

import logging
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from ..._time import TimeOrigin
from ...fields.layered import LayeredField
from ...fields.mesh import MeshField
from ..cf import where

_log = logging.getLogger("flowkit")

_UNSET_DATE = (1900, 1, 1, 0, 0, 0)


def detect(datasets: list) -> bool:
    """Whether the dataset is a Selafin file opened by `xarray-selafin` (its triangles in `ikle2`)."""
    return "ikle2" in datasets[0].attrs


def build(
    datasets: list,
    u: str | None = None,
    v: str | None = None,
    w: str | None = None,
    *,
    plane: int | None = None,
    dtype: DTypeLike = "float32",
) -> MeshField | LayeredField:
    """The velocity of a Selafin file (see the module docstring). `u`, `v` (and `w`) name the
    variables by their Selafin ids (default `U`, `V`, `W`); `plane` picks the plane of a 3-D
    file without elevations (default: the top one, the surface)."""
    if len(datasets) > 1:
        raise ValueError(f"{where(datasets[0])}: a Selafin file holds its own time series; give one file")
    ds = datasets[0]
    path = where(ds)
    names = [u or "U", v or "V"] + ([w] if w else [])
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(
            f"{path}: Selafin variables {missing} not found (it holds {sorted(ds.data_vars)}); name "
            "them with velocity='U,V'"
        )
    triangles = np.asarray(ds.attrs["ikle2"], np.int64) - 1  # Fortran numbering
    points = np.column_stack([np.asarray(ds.x.values, np.float64), np.asarray(ds.y.values, np.float64)])
    times, origin = _times(ds)
    series = times if len(times) > 1 else None

    def flat(chosen=None):  # the 2-D field of the file, or of one of its planes
        data = np.stack([_values(ds, n) if chosen is None else _values(ds, n)[:, chosen] for n in names[:2]], axis=-1)
        return MeshField.from_arrays(
            points, triangles, data if series is not None else data[0], times=series, dtype=dtype
        )

    if "plan" not in ds.dims:
        _log.info(
            "TELEMAC: %s: 2-D, %d triangles, %d nodes, %d time steps",
            path,
            len(triangles),
            len(points),
            len(times),
        )
        return flat()
    n_planes = ds.sizes["plan"]
    if "Z" not in ds.data_vars:
        chosen = n_planes - 1 if plane is None else int(plane)
        if not 0 <= chosen < n_planes:
            raise ValueError(f"{path}: plane={plane} is not one of its {n_planes} planes (0 = bottom)")
        surface = " (the surface)" if chosen == n_planes - 1 else ""
        _log.warning(
            "TELEMAC: %s is 3-D (%d planes) but holds no plane elevations (ELEVATION Z): tracked in 2-D on plane %d%s",
            path,
            n_planes,
            chosen,
            surface,
        )
        return flat(chosen)
    elevation = _values(ds, "Z")  # (T, plane, node), the bottom plane first
    depths = np.moveaxis(elevation[:, -1:] - elevation[:, ::-1], 1, -1)  # below the top plane, surface first
    components = [_values(ds, n)[:, ::-1] for n in names[:2]]
    w = names[2] if len(names) > 2 else ("W" if "W" in ds.data_vars else None)
    if w is not None:
        components.append(-_values(ds, w)[:, ::-1])
    velocity_table = np.moveaxis(np.stack(components, axis=-1), 1, 2)  # (T, node, plane, C)
    _log.info(
        "TELEMAC: %s: 3-D, %d prisms' columns of %d planes over %d nodes, %d time steps%s",
        path,
        len(triangles),
        n_planes,
        len(points),
        len(times),
        "" if w else "; no W: particles keep their depth",
    )
    water = elevation[:, -1] - elevation[:, 0]
    options = dict(times=series, spherical=False, time_origin=origin, dtype=dtype)
    return LayeredField.from_arrays(points, triangles, depths, velocity_table, water, **options)


def opened(path: Path):
    """The Selafin file's dataset, loaded (the file is small beside its mesh work) and closed."""
    import xarray as xr

    if not path.exists():
        raise FileNotFoundError(f"Selafin file {path} does not exist")
    try:
        with xr.open_dataset(path, engine="selafin") as ds:
            loaded = ds.load()
    except Exception as err:  # noqa: BLE001 -- the reader's own error becomes one naming the file
        raise ValueError(f"{path}: cannot be read as a TELEMAC Selafin file ({type(err).__name__}: {err})") from None
    loaded.attrs["flowkit_source"] = str(path)
    return loaded


def _values(ds, name: str) -> np.ndarray:
    """Variable `name` as `(T, [plane,] node)`, with a time axis always."""
    array = np.asarray(ds[name].values, np.float64)
    return array if "time" in ds[name].dims else array[None]


def _times(ds):
    """Seconds since the first step and its date (None when the file states none)."""
    if "time" not in ds.dims:
        return np.zeros(1), None
    raw = np.asarray(ds.time.values)
    seconds = (raw - raw[0]) / np.timedelta64(1, "s")
    start = tuple(int(v) for v in ds.attrs.get("date_start", _UNSET_DATE))
    if start == _UNSET_DATE:
        return seconds, None
    date = str(np.datetime_as_string(raw[0].astype("datetime64[s]")))
    return seconds, TimeOrigin(date, f"seconds since {date}", "standard")
