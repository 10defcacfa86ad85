"""Model output on projected grids, written as met.no's AROME and Arctic20 files are: x/y
projection coordinates, 2-D longitude and latitude, grid-relative `x_wind`/`y_wind` (or
`x_sea_water_velocity`) with a `grid_mapping`, float32, land as NaN over depth levels."""

import numpy as np
import pyproj
import pytest
import xarray as xr
from helpers import APP_CACHE

import flowkit as fk

R = 6_371_000.0
LAMBERT = {
    "grid_mapping_name": "lambert_conformal_conic",
    "standard_parallel": [63.0, 63.0],
    "longitude_of_central_meridian": 15.0,
    "latitude_of_projection_origin": 63.0,
    "earth_radius": R,
}


def _lambert_winds(path, east=10.0, north=0.0, mapping=True):
    """A 2.5 km Lambert grid west of the central meridian (where grid x turns far from east)
    holding a uniform wind of (`east`, `north`) m/s, given as grid-relative components."""
    crs = pyproj.CRS.from_cf(LAMBERT)
    x = np.arange(-700e3, -350e3, 2500.0, dtype=np.float32)
    y = np.arange(-230e3, 145e3, 2500.0, dtype=np.float32)
    xx, yy = np.meshgrid(x.astype(float), y.astype(float))
    lon, lat = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True).transform(xx, yy)
    # the direction of east in grid coordinates, from the projection (independent of flowkit)
    forward = pyproj.Transformer.from_crs(crs.geodetic_crs, crs, always_xy=True)
    ex, ey = forward.transform(lon + 1e-4, lat)
    nx, ny = forward.transform(lon, lat + 1e-4)
    e = np.stack([ex - xx, ey - yy]) / np.hypot(ex - xx, ey - yy)
    n = np.stack([nx - xx, ny - yy]) / np.hypot(nx - xx, ny - yy)
    u_grid, v_grid = east * e + north * n
    times = np.array(["2016-01-14T00", "2016-01-14T06", "2016-01-14T12"], dtype="datetime64[ns]")
    wind = lambda a: np.repeat(a[None].astype(np.float32), 3, axis=0)  # noqa: E731
    attrs = {"units": "m/s", "grid_mapping": "projection_lambert"} if mapping else {"units": "m/s"}
    ds = xr.Dataset(
        {
            "x_wind_10m": (("time", "y", "x"), wind(u_grid), {"standard_name": "x_wind", **attrs}),
            "y_wind_10m": (("time", "y", "x"), wind(v_grid), {"standard_name": "y_wind", **attrs}),
        },
        coords={
            "time": times,
            "x": ("x", x, {"standard_name": "projection_x_coordinate", "units": "m"}),
            "y": ("y", y, {"standard_name": "projection_y_coordinate", "units": "m"}),
            "longitude": (("y", "x"), lon, {"standard_name": "longitude", "units": "degree_east"}),
            "latitude": (("y", "x"), lat, {"standard_name": "latitude", "units": "degree_north"}),
        },
    )
    if mapping:
        ds["projection_lambert"] = xr.DataArray(np.int32(0), attrs=LAMBERT)
    ds.to_netcdf(path)
    return path


@pytest.mark.parametrize("mapping", [True, False])
def test_grid_relative_winds_on_a_lambert_grid_are_turned_to_east_and_north(tmp_path, mapping):
    field = fk.io.read(_lambert_winds(tmp_path / "arome.nc", mapping=mapping), dtype="float64")
    seeds = np.array([[2.5, 62.0], [3.0, 63.0], [2.0, 61.5]])
    traj = fk.track(field, seeds, 0.0, 6 * 3600.0, 600.0, dtype="float64")
    assert (traj.status == fk.Status.ACTIVE).all()
    # due east along the parallel: 216 km in 6 h; unturned grid components would head ~9° off east
    np.testing.assert_allclose(traj.positions[-1, :, 1], seeds[:, 1], atol=2e-4 if mapping else 5e-4)
    expected = seeds[:, 0] + np.rad2deg(10.0 * 6 * 3600.0 / (R * np.cos(np.deg2rad(seeds[:, 1]))))
    np.testing.assert_allclose(traj.positions[-1, :, 0], expected, atol=2e-4 if mapping else 5e-4)


def test_a_lambert_grid_wind_drives_windage_over_currents_on_another_grid(tmp_path):
    """An AROME-like wind (grid-relative components on a 2.5 km Lambert grid, turned to east and
    north by the reader) as the forcing of currents on a regular 1/2° grid: windage adds 3 % of
    the uniform 10 m/s east wind, as one field holding the sum does. The wind's curvilinear grid
    locates the particles afresh at every stage (its index lookup starts them at their cell)."""
    wind = fk.io.read(_lambert_winds(tmp_path / "arome.nc"), dtype="float64")
    lon, lat = np.linspace(0, 10, 21), np.linspace(60, 66, 13)
    current = np.zeros((21, 13, 2))
    current[..., 0], current[..., 1] = -0.05, 0.1
    field = fk.GridField.from_arrays(current, [lon, lat], spherical=True, samples={"wind": wind}, dtype="float64")
    reference = fk.GridField.from_arrays(current + [0.3, 0.0], [lon, lat], spherical=True, dtype="float64")
    seeds = np.array([[2.5, 62.0], [3.0, 63.0], [5.0, 62.5]])
    ours = fk.track(field, seeds, 0.0, 6 * 3600.0, 600.0, particles=fk.particles.Windage(0.03), dtype="float64")
    theirs = fk.track(reference, seeds, 0.0, 6 * 3600.0, 600.0, dtype="float64")
    assert (ours.status == fk.Status.ACTIVE).all()
    np.testing.assert_allclose(ours.samples["wind"][-1], [[10.0, 0.0]] * 3, atol=2e-3)
    np.testing.assert_allclose(ours.positions[-1], theirs.positions[-1], atol=1e-5)


def _arctic_like(path):
    """A polar-stereographic ocean file on z-levels (as met.no's Arctic20): X/Y in km, 2-D
    float32 lon/lat, `x_sea_water_velocity` on (time, depth, Y, X), land NaN at some columns."""
    crs = pyproj.CRS.from_cf(
        {
            "grid_mapping_name": "polar_stereographic",
            "straight_vertical_longitude_from_pole": 58.0,
            "latitude_of_projection_origin": 90.0,
            "standard_parallel": 60.0,
            "earth_radius": R,
        }
    )
    x = np.arange(-1971.0, -171.0, 20.0, dtype=np.float32)
    y = np.arange(-1757.0, -750.0, 20.0, dtype=np.float32)
    xx, yy = np.meshgrid(x.astype(float) * 1000, y.astype(float) * 1000)
    lon, lat = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True).transform(xx, yy)
    depth = np.array([0.0, 10.0, 50.0, 200.0], np.float32)
    u = np.full((2, len(depth), len(y), len(x)), 0.1, np.float32)
    u[:, :, :5, :5] = np.nan  # a land corner
    mapping = {"grid_mapping": "polar_stereographic", "units": "meter second-1"}
    ds = xr.Dataset(
        {
            "u": (("time", "depth", "Y", "X"), u, {"standard_name": "x_sea_water_velocity", **mapping}),
            "v": (
                ("time", "depth", "Y", "X"),
                np.where(np.isnan(u), np.nan, 0).astype(np.float32),
                {"standard_name": "y_sea_water_velocity", **mapping},
            ),
            "polar_stereographic": (
                (),
                np.int8(0),
                {
                    "grid_mapping_name": "polar_stereographic",
                    "straight_vertical_longitude_from_pole": 58.0,
                    "latitude_of_projection_origin": 90.0,
                    "standard_parallel": 60.0,
                    "earth_radius": R,
                },
            ),
        },
        coords={
            "time": np.array(["2016-02-01T12", "2016-02-02T12"], dtype="datetime64[ns]"),
            "depth": ("depth", depth, {"positive": "down", "units": "meters", "standard_name": "depth"}),
            "X": ("X", x, {"standard_name": "projection_x_coordinate", "units": "km"}),
            "Y": ("Y", y, {"standard_name": "projection_y_coordinate", "units": "km"}),
            "longitude": (("Y", "X"), lon.astype(np.float32), {"standard_name": "longitude", "units": "degrees_east"}),
            "latitude": (("Y", "X"), lat.astype(np.float32), {"standard_name": "latitude", "units": "degrees_north"}),
        },
    )
    ds.to_netcdf(path)
    return path, lon, lat


def test_z_levels_on_a_projected_grid_with_land_open_and_track(tmp_path):
    """The layout that raised a raw numpy IndexError: a later time step's land mask was applied
    flat to a 3-D slice."""
    path, lon, lat = _arctic_like(tmp_path / "arctic.nc")
    field = fk.io.read(path, dtype="float64")
    assert isinstance(field, fk.fields.CurvilinearField) and field.dim == 3
    j, i = 25, 45
    seeds = np.array([[lon[j, i], lat[j, i], 5.0], [lon[2, 2], lat[2, 2], 5.0]])
    traj = fk.track(field, seeds, 0.0, 86400.0, 3600.0, dtype="float64")
    assert traj.status[0, 1] == fk.Status.BEACHED and traj.status[-1, 0] == fk.Status.ACTIVE
    # 0.1 m/s along grid x for a day: 8.64 km, whichever way x points there
    moved = (
        np.hypot(
            (traj.positions[-1, 0, 0] - seeds[0, 0]) * np.cos(np.deg2rad(seeds[0, 1])),
            traj.positions[-1, 0, 1] - seeds[0, 1],
        )
        * np.pi
        / 180
        * R
    )
    np.testing.assert_allclose(moved, 8640.0, rtol=2e-3)


@pytest.mark.parametrize("grid", ["arctic z-levels", "lambert wind"])
def test_the_app_draws_its_pictures_on_a_projected_grid(tmp_path, grid):
    """The track app on a polar-stereographic z-level ocean and on a Lambert wind grid (where
    its pictures once asked for 200 GB): every picture is drawn and listed in the summary, with
    the data's own times and the default step."""
    import json

    from hydra import compose, initialize_config_dir
    from test_configs import CONF

    from flowkit.config import run_track

    path = _arctic_like(tmp_path / "arctic.nc")[0] if grid == "arctic z-levels" else _lambert_winds(tmp_path / "a.nc")
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            config_name="track",
            overrides=["field=netcdf", f"field.path={path}", "seeds=random", "seeds.n=200", "progress=false"]
            + ["output.vtp=false", "output.clouds=false", APP_CACHE],
        )
    run_track(cfg, output_dir=tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    pictures = ["trajectories.png", "snapshot.png", "density.png"]
    assert set(pictures) <= set(summary["files"])
    assert all((tmp_path / "run" / name).stat().st_size > 20_000 for name in pictures)
    assert summary["t1"] - summary["t0"] == {"arctic z-levels": 86400.0, "lambert wind": 43200.0}[grid]
