"""POP (the Parallel Ocean Program, CESM's ocean) history files, read into a `LayeredField` on
the model's U points, on the host.

- The B-grid as POP's reference manual defines it: `UVEL` and `VVEL` both at the U points (the
  north-east corners of the T cells), `ULONG`/`ULAT` (some files: `ULON`), in the units the file
  says (cm/s as POP writes them), turned from the grid's axes to east and north by `ANGLE`
  (radians, at the U points: `u cos a - v sin a`, `u sin a + v cos a`).
- z-levels: `z_t`, the depths of the levels' middles (cm as POP writes them, converted by their
  units); land from `KMU` (the wet levels of each U column) where the file holds it, else
  from the velocity's missing values; the floor is the bottom of the deepest wet level (`dz`).
- Times: the `time` axis (POP's `days since 0000-01-01`, `noleap`); a file written without one
  (a time-mean, a single snapshot) is a steady field when alone, and joined to others by its
  scalar `time`; files with no time at all are refused in one line naming them.
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import attr, length_scale, speed_scale, where
from ..cf_times import time_axis
from ..cgrid import below_floor, layered_on_grid, z_columns
from ..checks import check_velocity, named

_log = logging.getLogger("flowkit")


def detect(datasets: list) -> bool:
    """Whether the datasets are POP's: `UVEL` and `VVEL` on `nlat`, `nlon`."""
    ds = datasets[0]
    return {"UVEL", "VVEL"} <= set(ds.variables) and {"nlat", "nlon"} <= set(ds["UVEL"].dims)


def build(datasets: list, u: str | None = None, v: str | None = None, *, dtype: DTypeLike = "float32") -> LayeredField:
    """A `LayeredField` from POP history files (see the module docstring); `u`, `v` name the
    velocity (default `UVEL`, `VVEL`).

    **Raises:** `ValueError` naming the file for a missing grid variable, velocities of
    different units, several files without times.
    """
    u, v = u or "UVEL", v or "VVEL"
    datasets = _dated(datasets)
    first = datasets[0]
    source = where(first)
    for name in (u, v):
        if name not in first.variables:
            raise ValueError(f"{source}: POP output without {name!r} (it holds {sorted(map(str, first.data_vars))})")
    lon = _grid(first, ("ULONG", "ULON"), source)
    lat = _grid(first, ("ULAT",), source)
    angle = _grid(first, ("ANGLE",), source, required=False)
    if angle is None:
        angle = np.zeros(lon.shape)
        _log.warning("POP: %s has no ANGLE: its grid's axes are taken as east and north", source)
    scale = speed_scale(first[u], source)
    if speed_scale(first[v], source) != scale:
        raise ValueError(f"{source}: {u!r} and {v!r} have different units")
    level_dim = next((d for d in first[u].dims if d.startswith("z_")), None)
    levels, bottoms = _levels(first, level_dim, source)
    time_dim = "time" if "time" in first[u].dims else None
    steps, times, origin = time_axis(datasets, time_dim)
    cos, sin = np.cos(angle), np.sin(angle)
    velocity = []
    for k, (ds, index) in enumerate(steps):
        step = ds if index is None else ds.isel({time_dim: index})
        faces = []
        for name in (u, v):
            values = np.asarray(step[name].values, np.float64).reshape((len(levels),) + lon.shape)
            check_velocity(values, where(ds), repr(name), k, None if times is None else float(times[k]))
            faces.append(values)
        grid_u, grid_v = faces
        east, north = cos * grid_u - sin * grid_v, sin * grid_u + cos * grid_v
        velocity.append(scale * np.moveaxis(np.stack([east, north], axis=-1), 0, 2))  # (y, x, K, 2)
    wet = _wet(first, velocity[0], len(levels))
    land, water, n_wet = z_columns(wet, levels, bottoms[np.maximum(wet.sum(axis=-1), 1) - 1])
    filled = [below_floor(np.nan_to_num(values), n_wet) for values in velocity]
    _log.info(
        "POP: %s: %d x %d U points (B-grid), %d z-levels, velocity %s+%s (%s), %d time steps, %d land columns (%s)",
        source,
        *lon.shape,
        len(levels),
        u,
        v,
        attr(first[u], "units") or "m/s",
        len(steps),
        int(land.sum()),
        "KMU" if "KMU" in first.variables else "missing values",
    )
    n = len(steps)
    depths = np.broadcast_to(levels, lon.shape + levels.shape)
    field = layered_on_grid(lon, lat, [depths] * n, filled, [water] * n, land, times, origin, dtype)
    return named(field, (u, v))


def _dated(datasets: list) -> list:
    """The files in time order; those written without a time axis joined by their scalar
    `time`, a lone one kept as it is (steady)."""
    if all("time" in ds.dims for ds in datasets) or len(datasets) == 1:
        return datasets
    undated = [where(ds) for ds in datasets if "time" not in ds.variables]
    if undated:
        raise ValueError(
            f"POP: {', '.join(undated)}: written without a time, so the files cannot be put in time order; "
            "give one file, or files with their time"
        )
    return [ds.expand_dims("time") if "time" not in ds.dims else ds for ds in datasets]


def _grid(ds, names: tuple[str, ...], source: str, required: bool = True) -> np.ndarray | None:
    """A 2-D grid variable `(nlat, nlon)` by the first of `names` the file holds."""
    name = next((n for n in names if n in ds.variables), None)
    if name is None:
        if required:
            raise ValueError(f"{source}: POP output without {' or '.join(names)} (the U points' grid)")
        return None
    values = np.asarray(ds[name].values, np.float64)
    return values.reshape(values.shape[-2:])


def _levels(ds, level_dim, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The levels' middle depths and their bottoms (m, positive down); one level at the surface
    for a 2-D velocity."""
    if level_dim is None:
        return np.zeros(1), np.ones(1)
    if level_dim not in ds.variables:
        raise ValueError(f"{source}: POP's level axis {level_dim!r} has no depths")
    levels = np.asarray(ds[level_dim].values, np.float64) * length_scale(ds[level_dim], source)
    if "dz" in ds.variables and ds["dz"].shape == levels.shape:
        bottoms = np.cumsum(np.asarray(ds["dz"].values, np.float64) * length_scale(ds["dz"], source))
    else:
        middles = np.concatenate([[0.0], 0.5 * (levels[1:] + levels[:-1])])
        bottoms = np.concatenate([middles[1:], [2 * levels[-1] - middles[-1]]])
    return levels, bottoms


def _wet(ds, velocity: np.ndarray, n_levels: int) -> np.ndarray:
    """Each U column's wet levels `(y, x, K)`: `KMU` of them, else where the velocity is given."""
    if "KMU" in ds.variables:
        kmu = np.asarray(ds["KMU"].values).reshape(velocity.shape[:2])
        return np.arange(n_levels)[None, None, :] < kmu[..., None]
    return np.all(np.isfinite(velocity), axis=-1)
