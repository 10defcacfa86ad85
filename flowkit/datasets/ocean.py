"""The ocean and atmosphere samples: daily global currents and the wind over the same days, as
model products write them (NetCDF, CF metadata); and the app's ocean field."""

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from .._custom_types import Files, PathLike
from ..fields.analytic import Uniform
from ..fields.layered import LayeredField
from ._cache import cache_root, generated


def write_ocean_sample(folder: PathLike, days: int = 10, start: str = "2024-01-01", resolution: float = 1.0) -> Path:
    """Daily global 1° surface currents as an ocean model product writes them: one NetCDF4
    file per day (`glo_cur_YYYYMMDD.nc`, written by xarray with h5netcdf), CF metadata
    (`standard_name`s, `units`, time in `days since` on the standard calendar), cell-centred
    longitudes -179.5…179.5 and latitudes, float32 velocities in m/s, land as NaN (a continent
    over [-20°, 40°] × [-35°, 35°] and Antarctica south of 75°S). The flow: a zonal jet
    `0.4 cos(lat)` with a meander `0.15 sin(3 lon) cos(lat)` northward that swings with a
    10-day period. `resolution`: the grid spacing in degrees (benchmarks write 1/4° and 1/12°).
    Returns the folder."""
    import xarray as xr

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    h = float(resolution)
    lon = -180 + h * (np.arange(round(360 / h)) + 0.5)
    lat = -90 + h * (np.arange(round(180 / h)) + 0.5)
    lam, phi = np.meshgrid(np.deg2rad(lon), np.deg2rad(lat))
    land = ((lon[None, :] >= -20) & (lon[None, :] <= 40) & (np.abs(lat[:, None]) <= 35)) | (lat[:, None] < -75)
    origin = np.datetime64(start, "D")
    for day in range(days):
        swing = np.cos(2 * np.pi * day / 10.0)
        u = 0.4 * np.cos(phi)
        v = 0.15 * np.sin(3 * lam) * np.cos(phi) * swing
        u, v = (np.where(land, np.nan, a)[None].astype(np.float32) for a in (u, v))
        attrs = lambda name, long: {"standard_name": name, "long_name": long, "units": "m s-1"}  # noqa: E731
        ds = xr.Dataset(
            {
                "uo": (("time", "latitude", "longitude"), u, attrs("eastward_sea_water_velocity", "Eastward velocity")),
                "vo": (
                    ("time", "latitude", "longitude"),
                    v,
                    attrs("northward_sea_water_velocity", "Northward velocity"),
                ),
            },
            coords={
                "time": (
                    "time",
                    [float(day)],
                    {"standard_name": "time", "units": f"days since {start}", "calendar": "standard", "axis": "T"},
                ),
                "latitude": ("latitude", lat, {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"}),
                "longitude": ("longitude", lon, {"standard_name": "longitude", "units": "degrees_east", "axis": "X"}),
            },
            attrs={"Conventions": "CF-1.8", "title": "flowkit sample: global surface currents (synthetic)"},
        )
        ds.to_netcdf(folder / f"glo_cur_{str(origin + day).replace('-', '')}.nc", engine="h5netcdf")
    return folder


def write_wind_sample(path: PathLike, days: int = 10, start: str = "2024-01-01") -> Path:
    """The wind over the ocean sample's days, as an atmosphere reanalysis writes it (ERA5's
    NetCDF): global 1° on longitudes 0…359 and latitudes descending 90…-90 (float32), 6-hourly
    times in `hours since 1900-01-01`, 10 m winds `u10`/`v10` (`eastward_wind`,
    `northward_wind`) packed as int16 with `scale_factor`/`add_offset`. The wind: westerlies
    `8 cos(lat)` m/s with a northward part `3 sin(2 lon)` that turns with a 4-day period."""
    import xarray as xr

    lon = np.arange(0.0, 360.0, 1.0, dtype=np.float32)
    lat = np.arange(90.0, -91.0, -1.0, dtype=np.float32)
    origin = np.datetime64(start, "h")
    hours = np.arange(0, days * 24 + 1, 6)
    epoch = int((origin - np.datetime64("1900-01-01T00", "h")).astype(int))
    t, phi, lam = np.meshgrid(hours / 24.0, np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    u = 8 * np.cos(phi) + 2 * np.cos(2 * np.pi * t / 4)
    v = 3 * np.sin(2 * lam) * np.cos(2 * np.pi * t / 4)
    attrs = lambda name, long: {"standard_name": name, "long_name": long, "units": "m s**-1"}  # noqa: E731
    dims = ("time", "latitude", "longitude")
    ds = xr.Dataset(
        {
            "u10": (dims, u.astype(np.float32), attrs("eastward_wind", "10 metre U wind component")),
            "v10": (dims, v.astype(np.float32), attrs("northward_wind", "10 metre V wind component")),
        },
        coords={
            "longitude": ("longitude", lon, {"units": "degrees_east", "long_name": "longitude"}),
            "latitude": ("latitude", lat, {"units": "degrees_north", "long_name": "latitude"}),
            "time": ("time", (epoch + hours).astype(np.int32), {"units": "hours since 1900-01-01 00:00:00.0"}),
        },
        attrs={"Conventions": "CF-1.6", "title": "flowkit sample: 10 m wind (synthetic, ERA5's layout)"},
    )
    packing = {"dtype": "int16", "scale_factor": 0.001, "add_offset": 0.0, "_FillValue": -32767}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path, encoding={"u10": packing, "v10": packing}, format="NETCDF3_64BIT")
    return path


def sample_wind(cache_dir: PathLike | None = None) -> str:
    """The embedded wind sample (`write_wind_sample`), generated on first use; returns its path."""
    folder = generated(cache_root(cache_dir) / "era5_wind_v1", lambda f: write_wind_sample(f / "era5_wind.nc"))
    return str(folder / "era5_wind.nc")


def sample_ocean(cache_dir: PathLike | None = None) -> str:
    """The embedded ocean sample (`write_ocean_sample`), generated on first use into the cache
    directory; returns the glob of its daily files."""
    folder = generated(cache_root(cache_dir) / "glo_cur_v1", write_ocean_sample)
    return str(folder / "glo_cur_*.nc")


def ocean_field(
    path: Files | None = None,
    velocity: str | None = None,
    *,
    mask: str | None = None,
    land_value: float | None = None,
    sample: Sequence[str] | None = None,
    coast: str = "noslip",
    grid: str | None = None,
    face: int | None = None,
    delta_t: float | None = None,
    dtype: DTypeLike = "float32",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
    samples: Mapping[str, Mapping] | None = None,
):
    """A field from NetCDF/zarr ocean or atmosphere data (`flowkit.io.read`: a file, a glob of
    daily files, a list; ROMS/CROCO with its `grid` file; TELEMAC `.slf`; a MITgcm run directory,
    with `face` (a cubed sphere's) and `delta_t` (its time step, where no namelist says)), or the embedded ocean
    sample (`sample_ocean`) when `path` is None. `samples`: forcing fields by name, each the
    options of its own `flowkit.io.read` (`{"wind": {"path": "era5.nc"}}`; a `path` of
    `"sample"` is the embedded wind, `sample_wind`); entries whose `path` is None are left out."""
    from ..io.read import read

    options = {} if mask is None else {"mask": mask}
    if land_value is not None:
        options["land_value"] = land_value
    if coast != "noslip":
        options["coast"] = coast
    for name, value in (("grid", grid), ("face", face), ("delta_t", delta_t)):
        if value is not None:
            options[name] = value
    forcings = {}
    for name, given in (samples or {}).items():
        given = dict(given or {})
        where = given.pop("path", None)
        if where is not None:
            forcings[name] = read(sample_wind() if where == "sample" else where, **given)
    if forcings:
        options["samples"] = forcings
    return read(
        sample_ocean() if path is None else path,
        velocity,
        sample=sample,
        dtype=dtype,
        stream=stream,
        max_device_bytes=max_device_bytes,
        **options,
    )


def still_sea(
    wind: float = 8.0, depth: float = 200.0, centre: tuple[float, float] = (4.0, 60.0), size: float = 4.0
) -> LayeredField:
    """Still water `depth` metres deep over a lon/lat square of `size` degrees about `centre`,
    under a steady east `wind` (m/s, the forcing `"wind"`): where a particle model's own physics
    (oil's weathering, windage) is all there is to see."""
    lon, lat = centre
    half = size / 2
    points = np.array([[lon - half, lat - half / 2], [lon + half, lat - half / 2], [lon + half, lat + half / 2],
                       [lon - half, lat + half / 2]])  # fmt: skip
    depths = np.broadcast_to(np.linspace(0, depth, 11), (1, 4, 11))
    return LayeredField.from_arrays(
        points, [[0, 1, 2, 3]], depths, np.zeros((1, 4, 11, 3)), np.full((1, 4), depth), spherical=True,
        samples={"wind": Uniform([wind, 0.0])},
    )  # fmt: skip
