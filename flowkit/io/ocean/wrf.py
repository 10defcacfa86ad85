"""WRF output (`wrfout_d0*` NetCDF, as the WRF ARW User's Guide describes it) read into a
`LayeredField` of the 10 m wind on the model's mass points, on the host: what a drift model
takes from an atmosphere run.

- The grid: `XLONG`/`XLAT` of the mass points. A moving nest (its coordinates change from
  step to step, by whole cells) is read where it covered every time step (logged). The wind
  components `U10`, `V10` lie on those points
  (the model-level `U`, `V`, `W` lie on staggered grids, `west_east_stag`,
  `south_north_stag`, `bottom_top_stag`, and on eta levels: they are not read).
- Earth-relative winds: WRF writes its winds along the grid's axes. They are turned to east
  and north by `COSALPHA`/`SINALPHA` where the file holds them (`u cos a - v sin a`,
  `v cos a + u sin a`), else by the projection of `MAP_PROJ`: Lambert conformal (1) and polar
  stereographic (2) by their cone factor from `TRUELAT1`, `TRUELAT2` and the longitude's
  distance from `STAND_LON` (wrf-python's `uvmet`); Mercator (3) and lat-lon (6, unrotated)
  grids are aligned with east and north already.
- Times: the `Times` strings (`2005-08-28_12:00:00`), dated on the standard calendar; several
  files are joined in time order.

The domain has no land (the wind blows over everything); a particle that reaches the edge of
the grid leaves it (`OUT_OF_DOMAIN`).
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import speed_scale, where
from ..cf_times import time_axis
from ..cgrid import layered_on_grid
from ..checks import check_velocity, named

_log = logging.getLogger("flowkit")

_PROJECTIONS = {0: "ideal", 1: "Lambert conformal", 2: "polar stereographic", 3: "Mercator", 6: "lat-lon"}


def detect(datasets: list) -> bool:
    """Whether the datasets are WRF output: `Times` and `XLAT`/`XLONG` on WRF's `south_north`,
    `west_east` dimensions."""
    ds = datasets[0]
    return "Times" in ds.variables and "XLAT" in ds.variables and {"south_north", "west_east"} <= set(ds.dims)


def build(datasets: list, u: str | None = None, v: str | None = None, *, dtype: DTypeLike = "float32") -> LayeredField:
    """The 10 m wind of WRF files (one or several consecutive in time) as a 2-D field on
    longitude and latitude; `u`, `v` name the components (default `U10`, `V10`).

    **Raises:** `ValueError` naming the file for a missing wind, a wind off the mass points
    (the model-level `U`, `V`), a moving nest, a projection WRF does not define.
    """
    datasets = sorted((_dated(ds) for ds in datasets), key=lambda ds: ds["Time"].values[0])
    first = datasets[0]
    source = where(first)
    u, v = u or "U10", v or "V10"
    for name in (u, v):
        if name not in first.variables:
            raise ValueError(f"{source}: WRF output without {name!r} (it holds {sorted(map(str, first.data_vars))})")
        if tuple(first[name].dims[-2:]) != ("south_north", "west_east"):
            raise ValueError(
                f"{source}: WRF variable {name!r} lies on {first[name].dims}; flowkit reads the wind on the mass "
                "points (south_north, west_east): U10, V10"
            )
    steps, times, origin = time_axis(datasets, "Time")
    grids = _grids(steps)
    (rows, cols), offsets = _common_window(grids, source)
    lon, lat = (c[rows, cols] for c in grids[0])
    scale = speed_scale(first[u], source)
    velocity = []
    for k, ((ds, index), (dj, di)) in enumerate(zip(steps, offsets)):
        step = ds.isel(Time=index)
        window = (slice(rows.start - dj, rows.stop - dj), slice(cols.start - di, cols.stop - di))
        grid_u, grid_v = (np.asarray(step[name].values, np.float64)[window] * scale for name in (u, v))
        cos, sin, turned = _rotation(step, lon, lat, window)
        for name, values in ((u, grid_u), (v, grid_v)):
            check_velocity(values, where(ds), repr(name), k, float(times[k]))
        east, north = cos * grid_u - sin * grid_v, sin * grid_u + cos * grid_v
        velocity.append(np.stack([east, north], axis=-1)[:, :, None])
    _log.info(
        "WRF: %s: %d x %d mass points (%s), velocity %s+%s (10 m wind)%s, %d time steps",
        source,
        *lon.shape,
        _PROJECTIONS.get(int(first.attrs.get("MAP_PROJ", -1)), f"MAP_PROJ {first.attrs.get('MAP_PROJ')}"),
        u,
        v,
        f", turned to east/north by {turned}" if turned else "",
        len(steps),
    )
    flat = np.zeros(lon.shape + (1,))
    field = layered_on_grid(
        lon,
        lat,
        [flat] * len(steps),
        velocity,
        [np.ones(lon.shape)] * len(steps),
        np.zeros(lon.shape, bool),
        times,
        origin,
        dtype,
    )
    return named(field, (u, v))


def _dated(ds):
    """`ds` with its `Times` strings as the `Time` coordinate (datetime64)."""
    raw = np.asarray(ds["Times"].values)
    text = [
        t.decode() if isinstance(t, bytes) else "".join(np.asarray(t).astype(str)) for t in raw.reshape(len(raw), -1)
    ]
    try:
        dates = np.array([np.datetime64(t.strip().replace("_", "T"), "s") for t in text])
    except ValueError:
        raise ValueError(f"{where(ds)}: WRF Times {text[:2]} are not dates YYYY-MM-DD_hh:mm:ss") from None
    dated = ds.assign_coords(Time=("Time", dates))
    dated.attrs = ds.attrs
    return dated


def _grids(steps) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each time step's `(XLONG, XLAT)` of the mass points `(south_north, west_east)`."""

    def at(ds, index, name) -> np.ndarray:
        var = ds[name]
        return np.asarray((var.isel(Time=index) if "Time" in var.dims else var).values, np.float64)

    return [(at(ds, index, "XLONG"), at(ds, index, "XLAT")) for ds, index in steps]


def _common_window(grids, source: str) -> tuple[tuple[slice, slice], list[tuple[int, int]]]:
    """Where the grids of every step overlap: the window of the first step's grid that each
    holds, and each step's offset `(dj, di)` in cells from it. A fixed domain's offsets are 0; a
    moving nest (WRF moves it by whole cells of its parent) keeps the part it covered at every
    time (said in the log), or is refused where no part was."""
    lon0, lat0 = grids[0]
    offsets = [_offset(grids[0], grid, source) for grid in grids]
    n_y, n_x = lon0.shape
    j0, i0 = max(0, *(dj for dj, _ in offsets)), max(0, *(di for _, di in offsets))
    j1, i1 = min(n_y, *(n_y + dj for dj, _ in offsets)), min(n_x, *(n_x + di for _, di in offsets))
    if j1 - j0 < 2 or i1 - i0 < 2:
        raise ValueError(
            f"{source}: a moving nest whose grids share no cells over the {len(grids)} time steps; read fewer times"
        )
    if any(offsets):
        _log.warning(
            "WRF: %s: a moving nest (its grid moves by up to %d x %d cells): the wind is read where it covered "
            "every time step, %d x %d of its %d x %d mass points",
            source,
            max(abs(dj) for dj, _ in offsets),
            max(abs(di) for _, di in offsets),
            j1 - j0,
            i1 - i0,
            n_y,
            n_x,
        )
    return (slice(j0, j1), slice(i0, i1)), offsets


def _offset(reference, grid, source: str) -> tuple[int, int]:
    """`(dj, di)` such that `grid`'s mass point `[j, i]` is `reference`'s `[j + dj, i + di]`:
    a point of the reference (its middle, else a corner) found among the grid's, the overlap
    then checked point by point."""
    mine, theirs = np.stack(reference), np.stack(grid)  # (lon, lat) on the points
    n_y, n_x = mine.shape[1:]
    for j, i in ((n_y // 2, n_x // 2), (0, 0), (0, n_x - 1), (n_y - 1, 0), (n_y - 1, n_x - 1)):
        far = np.hypot(*(theirs - mine[:, j, i, None, None]))
        jg, ig = np.unravel_index(np.argmin(far), far.shape)
        dj, di = int(j - jg), int(i - ig)
        a = mine[:, max(dj, 0) : n_y + min(dj, 0), max(di, 0) : n_x + min(di, 0)]
        b = theirs[:, max(-dj, 0) : n_y - max(dj, 0), max(-di, 0) : n_x - max(di, 0)]
        if a.shape == b.shape and a.size and np.allclose(a, b, rtol=0, atol=1e-3):
            return dj, di
    raise ValueError(f"{source}: the grids of its time steps are not one lattice (XLONG/XLAT): another domain")


def _rotation(
    step, lon: np.ndarray, lat: np.ndarray, window: tuple[slice, slice]
) -> tuple[np.ndarray, np.ndarray, str]:
    """The cosine and sine of the grid's x axis's angle to east at the mass points `lon`,
    `lat` (the `window` of one time step's grid), and what they came from ("" where the grid
    is aligned with east)."""
    ds = step
    if "COSALPHA" in ds.variables and "SINALPHA" in ds.variables:
        cos, sin = (np.asarray(ds[n].values, np.float64)[window] for n in ("COSALPHA", "SINALPHA"))
        return cos, sin, "COSALPHA/SINALPHA"
    projection = int(ds.attrs.get("MAP_PROJ", -1))
    if projection in (0, 3, 6):  # ideal, Mercator and lat-lon grids run along east and north
        return np.ones(lon.shape), np.zeros(lon.shape), ""
    if projection not in (1, 2):
        raise ValueError(
            f"{where(ds)}: WRF MAP_PROJ {projection} is none of WRF's projections (1 Lambert, 2 polar, 3 Mercator, "
            "6 lat-lon) and the file has no COSALPHA/SINALPHA to turn its winds to east and north"
        )
    true1, true2 = (np.deg2rad(float(ds.attrs[k])) for k in ("TRUELAT1", "TRUELAT2"))
    if projection == 2:
        cone = 1.0
    elif abs(true1 - true2) > 1e-6:
        cone = (np.log(np.cos(true1)) - np.log(np.cos(true2))) / (
            np.log(np.tan(np.pi / 4 - abs(true1) / 2)) - np.log(np.tan(np.pi / 4 - abs(true2) / 2))
        )
    else:
        cone = np.sin(abs(true1))
    far = (lon - float(ds.attrs["STAND_LON"]) + 180.0) % 360.0 - 180.0
    alpha = np.deg2rad(far * cone) * np.where(lat < 0, -1.0, 1.0)  # grid north's angle east of true north
    return np.cos(alpha), -np.sin(alpha), f"the {_PROJECTIONS[projection]} projection (cone {cone:.4f})"
