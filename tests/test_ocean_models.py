"""Real ocean model output (`../shared/data/ocean-real`, OpenDrift's public test files): ROMS and
CROCO s-levels on curvilinear C-grids, read with one `fk.io.read` and checked against values
computed by hand from each file's own variables."""

import glob
import shutil

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from helpers import columns
from test_vtk import SHARED

import flowkit as fk
from flowkit.io.ocean.roms import level_heights

OCEAN = SHARED / "ocean-real"
needs_ocean = pytest.mark.skipif(
    not (OCEAN / "Nordic_subset.nc").exists(), reason="../shared/data/ocean-real is not beside this checkout"
)
R = 6_371_000.0


def _by_hand(ds, grid, k_time, j, i):
    """At rho point (j, i): the depth of every level below the surface (surface first) and the
    east/north velocity there, from the file's own variables: u and v averaged between their
    faces, turned by `angle`, depths by the file's Vtransform."""
    u = ds.u.isel({ds.u.dims[0]: k_time}).values.astype(float)
    v = ds.v.isel({ds.v.dims[0]: k_time}).values.astype(float)
    u_rho = 0.5 * (u[:, j, i - 1] + u[:, j, i])
    v_rho = 0.5 * (v[:, j - 1, i] + v[:, j, i])
    angle = float(grid.angle.values[j, i])
    east = np.cos(angle) * u_rho - np.sin(angle) * v_rho
    north = np.sin(angle) * u_rho + np.cos(angle) * v_rho
    h = float(grid.h.values[j, i])
    zeta = float(ds.zeta.isel({ds.zeta.dims[0]: k_time}).values[j, i])
    curve = ds.Cs_r.values if "Cs_r" in ds else ds.Cs_rho.values
    hc = float(ds.hc.values) if "hc" in ds else float(ds.attrs["hc"])
    z = level_heights(h, zeta, ds.s_rho.values.astype(float), curve.astype(float), hc, int(ds.Vtransform.values))
    return (zeta - z)[::-1], east[::-1], north[::-1], h + zeta


@eqx.filter_jit
def _evaluate(field, t, x):
    return field(t, x)


def _metres_per_second(field, t, x):
    u = np.asarray(_evaluate(field, jnp.asarray(t), jnp.asarray(x, float)))
    return np.array([u[0] * np.pi / 180 * R * np.cos(np.deg2rad(x[1])), u[1] * np.pi / 180 * R, u[2]])


@needs_ocean
@pytest.mark.parametrize("case", ["nordic", "croco"])
def test_c_grid_s_levels_equal_values_computed_by_hand(case):
    if case == "nordic":
        ds = xr.open_dataset(OCEAN / "Nordic_subset.nc")
        field, grid, times = fk.io.read(OCEAN / "Nordic_subset.nc", dtype="float64"), ds, (0.0, 86400.0)
    else:
        ds, grid = xr.open_dataset(OCEAN / "croco_his.nc"), xr.open_dataset(OCEAN / "croco_grd.nc")
        field, times = fk.io.read(OCEAN / "croco_his.nc", grid=OCEAN / "croco_grd.nc", dtype="float64"), (0.0, 259200.0)
    assert isinstance(field, fk.fields.LayeredField) and field.dim == 3
    np.testing.assert_allclose(np.asarray(field.times)[: len(times)], times)
    water = np.argwhere(grid.mask_rho.values[1:-1, 1:-1] == 1) + 1
    for j, i in water[:: max(1, len(water) // 5)][:5]:
        x0 = [float(grid.lon_rho.values[j, i]), float(grid.lat_rho.values[j, i])]
        for k_time, t in enumerate(times):
            depths, east, north, bottom = _by_hand(ds, grid, k_time, j, i)
            for k in (0, len(depths) // 2, len(depths) - 1):  # at a level: that level's velocity
                got = _metres_per_second(field, t, x0 + [depths[k]])
                np.testing.assert_allclose(got[:2], [east[k], north[k]], rtol=1e-9, atol=1e-12)
            if len(depths) > 1:  # between two levels: linear in depth
                mid = 0.25 * depths[0] + 0.75 * depths[1]
                got = _metres_per_second(field, t, x0 + [mid])
                np.testing.assert_allclose(
                    got[:2], [0.25 * east[0] + 0.75 * east[1], 0.25 * north[0] + 0.75 * north[1]], rtol=1e-9, atol=1e-12
                )
            got = _metres_per_second(field, t, x0 + [bottom + 50.0])  # below the floor: the deepest level's value
            np.testing.assert_allclose(got[:2], [east[-1], north[-1]], rtol=1e-9, atol=1e-12)
    # a land point (mask_rho = 0) beaches a seed placed there
    j, i = np.argwhere(grid.mask_rho.values[1:-1, 1:-1] == 0)[0] + 1
    land = [float(grid.lon_rho.values[j, i]), float(grid.lat_rho.values[j, i]), 0.0]
    traj = fk.track(field, np.array([land, x0 + [1.0]]), 0.0, 3600.0, 600.0)
    assert traj.status[0, 0] == fk.Status.BEACHED and traj.status[-1, 1] in (fk.Status.ACTIVE, fk.Status.BEACHED)


@needs_ocean
def test_particles_track_at_the_surface_and_at_depth_and_stay_in_the_water():
    field = fk.io.read(OCEAN / "Nordic_subset.nc")
    rng = np.random.default_rng(1)
    n = 300
    ds = xr.open_dataset(OCEAN / "Nordic_subset.nc")
    j, i = rng.integers(1, 20, n), rng.integers(1, 30, n)  # inside the rotated grid: between interior rho points
    lon = 0.5 * (ds.lon_rho.values[j, i] + ds.lon_rho.values[j + 1, i + 1])
    lat = 0.5 * (ds.lat_rho.values[j, i] + ds.lat_rho.values[j + 1, i + 1])
    seeds = np.column_stack([lon, lat, np.tile([0.0, 30.0, 300.0], n // 3)])
    bottom_at_seeds = field.water_depth(0.0, seeds)
    traj = fk.track(field, seeds, 0.0, 40 * 3600.0, 3600.0, save_every=10)
    wet = traj.status[0] == fk.Status.ACTIVE
    assert wet.sum() > 150
    moved = np.hypot(*(traj.positions[-1, :, :2] - traj.positions[0, :, :2]).T)
    surface, deep = wet & (seeds[:, 2] == 0), wet & (seeds[:, 2] == 30)
    assert np.median(moved[surface]) > 0.02 and np.median(moved[deep]) > 0.005
    assert not np.allclose(
        traj.positions[-1, surface][:50, :2], traj.positions[-1, deep][:50, :2]
    )  # sheared: depth matters
    # no w: depths are kept, but where the sea floor rises above a particle (then it follows the floor)
    assert np.all(traj.positions[:, surface, 2] == 0)
    kept = traj.positions[:, deep, 2]
    assert np.all(np.diff(kept, axis=0) <= 1e-4) and np.all(kept <= 30.0) and np.mean(kept[-1] == 30.0) > 0.7
    # a seed below the sea floor starts on it, and stays at or above it
    floor = wet & (seeds[:, 2] == 300.0) & (bottom_at_seeds < 290.0)
    assert floor.sum() > 20
    np.testing.assert_allclose(traj.positions[0, floor, 2], bottom_at_seeds[floor], rtol=1e-5)
    # The floor is kept at the particle's place in the grid's fractional indices, which float32
    # holds more finely than the positions saved in degrees (4e-6 degrees, about 0.4 m): the
    # floor at a saved position may lie that much further along the slope, a few millimetres.
    for k in range(traj.positions.shape[0]):
        floor_now = field.water_depth(traj.times[k], traj.positions[k])
        moving = floor & (traj.status[k] == fk.Status.ACTIVE)  # (a beached one stays where it was wet)
        assert np.all(traj.positions[k, moving, 2] <= floor_now[moving] * (1 + 1e-5) + 1e-2)


@needs_ocean
def test_daily_files_equal_the_single_file():
    single = fk.io.read(OCEAN / "Nordic_subset.nc", dtype="float64")
    daily = fk.io.read(str(OCEAN / "Nordic_subset_day*.nc"), dtype="float64")
    assert sorted(glob.glob(str(OCEAN / "Nordic_subset_day*.nc")))[0].endswith("day1.nc")
    np.testing.assert_array_equal(np.asarray(daily.times), np.asarray(single.times))
    np.testing.assert_array_equal(columns(daily), columns(single))
    assert daily.time_origin == single.time_origin
    seeds = np.array([[14.0, 67.5, 0.0], [13.5, 67.3, 20.0]])
    a = fk.track(single, seeds, 0.0, 172800.0, 3600.0, dtype="float64")
    b = fk.track(daily, seeds, 0.0, 172800.0, 3600.0, dtype="float64")
    np.testing.assert_array_equal(a.positions, b.positions)


@needs_ocean
def test_croco_grid_file_given_found_from_grd_file_or_named_when_missing(tmp_path):
    given = fk.io.read(OCEAN / "croco_his.nc", grid=OCEAN / "croco_grd.nc", dtype="float64")
    # a history file without the grid, naming its grid file as CROCO writes it (CROCO_FILES/croco_grd.nc)
    his = xr.open_dataset(OCEAN / "croco_his.nc").drop_vars(
        ["h", "lon_rho", "lat_rho", "angle", "mask_rho", "lon_u", "lat_u", "lon_v", "lat_v"], errors="ignore"
    )
    his.to_netcdf(tmp_path / "croco_his.nc")
    with pytest.raises(
        FileNotFoundError,
        match=r"croco_his.nc: the grid is in 'CROCO_FILES/croco_grd.nc' \(its grd_file attribute\), not "
        r"found as .*; pass grid=",
    ):
        fk.io.read(tmp_path / "croco_his.nc")
    shutil.copy(OCEAN / "croco_grd.nc", tmp_path / "croco_grd.nc")
    found = fk.io.read(tmp_path / "croco_his.nc", dtype="float64")
    np.testing.assert_allclose(
        columns(found), columns(given), rtol=1e-6, atol=1e-9
    )  # float32 lon/lat in the history, float64 in the grid file
    with pytest.raises(ValueError, match="CF gridded output is read by its own conventions; grid does not apply"):
        fk.io.read(tmp_path / "croco_grd.nc", grid=tmp_path / "croco_grd.nc")
    # the grid file among the paths, in either order (the app's field.path=[his,grd])
    for paths in ([OCEAN / "croco_grd.nc", OCEAN / "croco_his.nc"], [OCEAN / "croco_his.nc", OCEAN / "croco_grd.nc"]):
        listed = fk.io.read(paths, dtype="float64")
        np.testing.assert_array_equal(columns(listed), columns(given))
    with pytest.raises(ValueError, match="croco_grd.nc is a grid file, and grid=.* another: give one"):
        fk.io.read([OCEAN / "croco_his.nc", OCEAN / "croco_grd.nc"], grid=OCEAN / "croco_grd.nc")


def _damaged(tmp_path, name, change):
    """A copy of OpenDrift's Nordic ROMS file with `change` applied (encodings dropped)."""
    ds = xr.open_dataset(OCEAN / "Nordic_subset.nc")
    for var in ds.variables.values():
        var.encoding.clear()
    path = tmp_path / f"{name}.nc"
    change(ds).to_netcdf(path)
    return path


@needs_ocean
def test_a_damaged_roms_file_is_mended_from_its_own_grid_or_refused(tmp_path, caplog):
    """Each of the ROMS damage cases that once ran silently wrong: no `angle` (the xi axis's
    angle from lon_rho/lat_rho), no `mask_rho` (land from mask_u and mask_v; no mask at all is
    said), `u` all NaN (refused), speeds in km/h (converted) or in unknown units (refused)."""
    import warnings

    warnings.simplefilter("ignore", xr.SerializationWarning)
    whole = fk.io.read(OCEAN / "Nordic_subset.nc", dtype="float64")
    ds = xr.open_dataset(OCEAN / "Nordic_subset.nc")
    inner = np.zeros(ds.h.shape, bool)
    inner[2:-2, 2:-2] = True
    water = np.argwhere(inner & (ds.mask_rho.values == 1) & (ds.h.values > 50))
    points = [(float(ds.lon_rho[j, i]), float(ds.lat_rho[j, i]), 5.0) for j, i in water[:: len(water) // 4][:4]]
    reference = np.array([_metres_per_second(whole, 3600.0, x) for x in points])
    with caplog.at_level("WARNING", logger="flowkit"):
        no_angle = fk.io.read(_damaged(tmp_path, "angle", lambda d: d.drop_vars("angle")), dtype="float64")
    assert "no 'angle' in the history or grid file: the xi axis's angle to east is taken from lon_rho" in caplog.text
    speeds = np.array([_metres_per_second(no_angle, 3600.0, x) for x in points])
    a, b = speeds[:, :2], reference[:, :2]
    turned = np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], np.sum(a * b, axis=1))
    assert np.all(np.abs(np.rad2deg(turned)) < 0.3)  # the computed angle is within 0.15° of the file's (0.3 m/s speeds)
    no_mask = fk.io.read(_damaged(tmp_path, "mask", lambda d: d.drop_vars("mask_rho")), dtype="float64")
    np.testing.assert_array_equal(np.asarray(no_mask.land), np.asarray(whole.land))
    assert int(np.asarray(whole.land).sum()) == 185
    caplog.clear()
    with caplog.at_level("WARNING", logger="flowkit"):
        fk.io.read(_damaged(tmp_path, "masks", lambda d: d.drop_vars(["mask_rho", "mask_u", "mask_v", "mask_psi"])))
    assert "no 'mask_rho', 'mask_u' or 'mask_v': no land, as in a run without masking" in caplog.text
    with pytest.raises(ValueError, match=r"nan\.nc: velocity 'u' is NaN everywhere at time step 0"):
        fk.io.read(_damaged(tmp_path, "nan", lambda d: d.assign(u=d.u * np.nan)))

    def in_kmh(d):
        d = d.assign(u=d.u * 3.6, v=d.v * 3.6)
        d.u.attrs["units"] = d.v.attrs["units"] = "km/h"
        return d

    kmh = fk.io.read(_damaged(tmp_path, "kmh", in_kmh), dtype="float64")
    converted = np.array([_metres_per_second(kmh, 3600.0, x) for x in points])
    np.testing.assert_allclose(converted, reference, rtol=1e-5, atol=1e-7)

    def in_metres(d):  # a length, not a speed (furlong/fortnight is one: pint converts it)
        d.u.attrs["units"] = d.v.attrs["units"] = "m"
        return d

    with pytest.raises(ValueError, match=r"velocity 'u' has units 'm', which is not a speed"):
        fk.io.read(_damaged(tmp_path, "metres", in_metres))
