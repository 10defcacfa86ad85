"""NEMO's own output (`tests/data/nemo`: ORCA025 5-day means of the North Sea, U and V grid
files apart, `coordinates.nc` beside them), read with one `fk.io.read` as NEMO's users have it."""

import shutil
from pathlib import Path

import jax
import numpy as np
import pytest
import xarray as xr

import flowkit as fk
from flowkit.io.cgrid import grid_angle

NEMO = Path(__file__).parent / "data" / "nemo"
FILES = sorted(str(p) for p in NEMO.glob("ORCA*.nc"))
R = 6_371_000.0


@pytest.fixture(scope="module")
def field():
    return fk.io.read(FILES, dtype="float64")


def _raw(name: str) -> xr.Dataset:
    return xr.open_dataset(NEMO / name, decode_times=False)


def test_nemo_files_open_unrenamed_on_the_models_calendar(field):
    assert isinstance(field, fk.fields.LayeredField) and field.spherical and field.levels == 75
    assert field.time_origin.date == "2000-01-02T12:00:00"  # time_counter: the 5-day mean's centre
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 5 * 86400.0])
    lo, hi = (np.asarray(b) for b in field.bounds)
    grid = _raw("coordinates.nc")
    assert lo[1] == pytest.approx(grid.gphit.values.min()) and lo[1] > 48  # no latitude 0 from eliminated processors
    assert hi[0] == pytest.approx(grid.glamt.values.max())


@pytest.mark.parametrize("j, i, level", [(40, 20, 0), (30, 10, 5), (50, 30, 12)])
def test_velocity_is_the_files_faces_at_the_t_point_turned_east(field, j, i, level):
    """By hand: the mean of the two U faces (west `i - 1`, east `i`) and the two V faces (south
    `j - 1`, north `j`) of T point `(j, i)`, turned by the grid's angle to east and north."""
    grid = _raw("coordinates.nc")
    lon, lat = float(grid.glamt.values[0, j, i]), float(grid.gphit.values[0, j, i])
    for t_index, (u_name, v_name) in enumerate(
        [
            ("ORCA025-N06_20000104d05U.nc", "ORCA025-N06_20000104d05V.nc"),
            ("ORCA025-N06_20000109d05U.nc", "ORCA025-N06_20000109d05V.nc"),
        ]
    ):
        uo, vo = _raw(u_name).uo.values[0, level], _raw(v_name).vo.values[0, level]
        u = 0.5 * (uo[j, i - 1] + uo[j, i])
        v = 0.5 * (vo[j - 1, i] + vo[j, i])
        assert u != 0 and v != 0  # water
        angle = grid_angle(grid.glamt.values[0], grid.gphit.values[0])[j, i]
        east, north = np.cos(angle) * u - np.sin(angle) * v, np.sin(angle) * u + np.cos(angle) * v
        depth = float(_raw(u_name).depthu.values[level])
        got = np.asarray(field(t_index * 5 * 86400.0, jax.numpy.asarray([lon, lat, depth])))
        metres = [got[0] * np.pi / 180 * R * np.cos(np.deg2rad(lat)), got[1] * np.pi / 180 * R]
        np.testing.assert_allclose(metres, [east, north], rtol=1e-5, atol=1e-8)


def test_land_is_land_and_a_day_keeps_particles_in_water_and_moving(field):
    seeds = fk.seeding.random_inside(300, field, key=jax.random.key(3))
    assert not np.asarray(field.beached_batch(jax.numpy.asarray(seeds))).any()
    traj = fk.track(field, seeds[:, :2], 0.0, 86400.0, 1800.0, save_every=4, dtype="float64")
    assert np.all(traj.positions[0, :, 2] == 0)  # (lon, lat) seeds start at the surface
    status = traj.status[-1]
    moved = np.hypot(*(traj.positions[-1, :, :2] - traj.positions[0, :, :2]).T)
    active = status == fk.Status.ACTIVE
    assert active.mean() > 0.9 and np.all(moved[active] > 0)
    assert not np.isin(status, [fk.Status.BEACHED]).all()
    uos = _raw("ORCA025-N06_20000104d05U.nc").uos.values[0]
    land = (uos == 0) & np.roll(uos == 0, 1, axis=1)  # a T point whose west and east faces are still
    grid = _raw("coordinates.nc")
    j, i = np.argwhere(land[1:-1, 1:-1] & np.isfinite(uos[1:-1, 1:-1]))[0] + 1
    assert np.asarray(
        field.beached_batch(jax.numpy.array([[grid.glamt.values[0, j, i], grid.gphit.values[0, j, i], 1.0]]))
    )[0]


def test_without_the_grid_file_eliminated_processors_are_refused_and_t_points_found_from_u(tmp_path):
    for path in FILES:
        shutil.copy(path, tmp_path)
    with pytest.raises(ValueError, match=r"05U\.nc: nav_lon = nav_lat = 0 at \d+ points .*grid='mesh_mask\.nc'"):
        fk.io.read(sorted(tmp_path.glob("*.nc")))
    west = tmp_path / "west"
    west.mkdir()
    for path in FILES:  # the columns west of the eliminated processors: no grid file needed
        xr.open_dataset(path, decode_times=False).isel(x=slice(0, 25)).to_netcdf(west / Path(path).name)
    field = fk.io.read(sorted(str(p) for p in west.glob("*.nc")), dtype="float64")
    grid = _raw("coordinates.nc").isel(x=slice(0, 25))
    points = np.asarray(field.surface.points).reshape(25, 60, 2)  # x first  # x first
    np.testing.assert_allclose(points[1:, :, 0], grid.glamt.values[0].T[1:], atol=2e-3)
    np.testing.assert_allclose(points[1:, :, 1], grid.gphit.values[0].T[1:], atol=2e-3)


def test_nemo_refusals_name_the_file_and_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match=r"no V grid file \(depthv: vo, vomecrty\) among ORCA025-N06_20000104d05U\.nc"):
        fk.io.read(FILES[0])
    u_first, v_second = FILES[0], FILES[3]
    with pytest.raises(ValueError, match=r"'vo' is not given at the times of 'uo'"):
        fk.io.read([u_first, v_second])
    with pytest.raises(ValueError, match=r"NEMO output is read by its own conventions; periodic does not apply"):
        fk.io.read(FILES, periodic=True)
    both = tmp_path / "both.nc"
    xr.open_dataset(FILES[0], decode_times=False).assign(
        speed=lambda d: d.uo.assign_attrs(long_name="sea_water_x_velocity")
    ).to_netcdf(both)
    with pytest.raises(ValueError, match=r"'uo', 'speed' could each be NEMO's u velocity; name one"):
        fk.io.read([str(both), FILES[1]])


def _w_file(u_path: Path, folder: Path, units: str = "m/s") -> np.ndarray:
    """A W grid file beside the U file as NEMO writes it: `wo` (upward) on the tops of the T
    levels, `depthw` from 0; here `1e-5 k` m/s on the k-th top (in `units`: m/s or mm/s).
    Returns `depthw`."""
    u = xr.open_dataset(u_path, decode_times=False)
    levels = u.depthu.values.astype(np.float64)
    tops = np.concatenate([[0.0], 0.5 * (levels[:-1] + levels[1:])]).astype(np.float32)
    per_metre = {"m/s": 1.0, "mm/s": 1e3}[units]
    wo = np.broadcast_to((per_metre * 1e-5 * np.arange(len(tops)))[None, :, None, None], u.uo.shape)
    w = u[["time_counter_bounds"]].assign(
        wo=(("time_counter", "depthw", "y", "x"), wo.astype(np.float32), {"long_name": "vertical", "units": units}),
    )
    w = w.assign_coords(depthw=("depthw", tops, {"units": "m", "positive": "down"}))
    w.to_netcdf(folder / u_path.name.replace("U.nc", "W.nc"))
    return tops


def test_a_w_file_is_taken_at_the_t_levels_positive_down_and_a_mesh_mask_gives_land_and_partial_steps(tmp_path):
    for path in FILES + [str(NEMO / "coordinates.nc")]:
        shutil.copy(path, tmp_path)
    tops = [_w_file(Path(p), tmp_path) for p in FILES if p.endswith("U.nc")][0]
    plain = fk.io.read(sorted(str(p) for p in tmp_path.glob("ORCA*[UV].nc")), dtype="float64")
    field = fk.io.read(sorted(str(p) for p in tmp_path.glob("ORCA*.nc")), dtype="float64")
    grid = _raw("coordinates.nc")
    j, i, level = 40, 20, 5
    levels = _raw(Path(FILES[0]).name).depthu.values.astype(np.float64)
    x = jax.numpy.asarray([grid.glamt.values[0, j, i], grid.gphit.values[0, j, i], levels[level]])
    assert float(field(0.0, x)[2]) == pytest.approx(-0.5e-5 * (2 * level + 1), rel=1e-5)  # upward in the file
    np.testing.assert_allclose(np.asarray(field(0.0, x)[:2]), np.asarray(plain(0.0, x)[:2]), rtol=1e-12)
    for p in FILES:  # W in mm/s (U and V in m/s): each component in its own units
        if p.endswith("U.nc"):
            _w_file(Path(p), tmp_path, units="mm/s")
    in_mm = fk.io.read(sorted(str(p) for p in tmp_path.glob("ORCA*.nc")), dtype="float64")
    np.testing.assert_allclose(np.asarray(in_mm(0.0, x)), np.asarray(field(0.0, x)), rtol=1e-6)
    # a mesh mask: land where tmask is 0, the floor the sum of e3t_0 over the wet levels (partial steps)
    uo = _raw(Path(FILES[0]).name).uo.values[0]
    vo = _raw(Path(FILES[1]).name).vo.values[0]
    moving = lambda a: np.nan_to_num(a) != 0  # noqa: E731
    wet = moving(uo) | np.roll(moving(uo), 1, axis=2) | moving(vo) | np.roll(moving(vo), 1, axis=1)
    thickness = np.diff(np.concatenate([tops, [levels[-1] + 1.0]]))
    e3t = np.broadcast_to(thickness[:, None, None], wet.shape).copy()
    bottom = np.argmin(np.cumprod(wet, axis=0), axis=0) - 1
    e3t[bottom, np.arange(60)[:, None], np.arange(60)[None]] *= 0.5  # the deepest wet cell half full
    mask = xr.Dataset(
        {
            "tmask": (("t", "z", "y", "x"), wet[None].astype(np.int8)),
            "e3t_0": (("t", "z", "y", "x"), e3t[None]),
            "glamt": (("t", "y", "x"), grid.glamt.values),
            "gphit": (("t", "y", "x"), grid.gphit.values),
        }
    )
    mask.to_netcdf(tmp_path / "mesh_mask.nc")
    (tmp_path / "coordinates.nc").unlink()
    masked = fk.io.read(sorted(str(p) for p in tmp_path.glob("ORCA*.nc")), dtype="float64")
    np.testing.assert_array_equal(np.asarray(masked.land), (~wet[0]).T.reshape(-1))  # x first
    assert np.mean(np.asarray(masked.land) == np.asarray(plain.land)) > 0.98  # NEMO's zeros: the same land
    column = np.asarray([[grid.glamt.values[0, j, i], grid.gphit.values[0, j, i]]])
    assert masked.water_depth(0.0, column)[0] == pytest.approx(np.sum(np.where(wet[:, j, i], e3t[:, j, i], 0)))
