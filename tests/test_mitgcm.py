"""MITgcm's output as its users have it: the MDS run directory of MITgcm's `global_oce_cs32`
experiment (`tests/data/mitgcm`, a cubed sphere, as xmitgcm's tests keep it), and lat-lon,
Cartesian and mnc NetCDF runs written here in MITgcm's documented layouts."""

import tarfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import flowkit as fk

CS32 = Path(__file__).parent / "data" / "mitgcm" / "global_oce_cs32.tar.xz"
R = 6_371_000.0


@pytest.fixture(scope="module")
def cs32(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cs32")
    with tarfile.open(CS32) as archive:
        archive.extractall(folder, filter="data")
    return folder


def _mds(folder: Path, name: str) -> np.ndarray:
    return np.fromfile(folder / f"{name}.data", ">f4").astype(np.float64)


def _metres(got, lat) -> list[float]:
    return [got[0] * np.pi / 180 * R * np.cos(np.deg2rad(lat)), got[1] * np.pi / 180 * R]


def test_a_cubed_sphere_is_read_a_face_at_a_time(cs32):
    with pytest.raises(ValueError, match=r"a cubed sphere of 6 faces of 32 x 32; .* give face=0\.\.5"):
        fk.io.read(cs32)
    with pytest.raises(ValueError, match="face 2 holds a pole"):
        fk.io.read(cs32, face=2)
    with pytest.raises(ValueError, match="face=7"):
        fk.io.read(cs32, face=7)
    field = fk.io.read(cs32, face=3)  # across the dateline: unwrapped
    lo, hi = (np.asarray(b) for b in field.bounds)
    assert 135 < lo[0] < hi[0] < 225 and hi[2] == pytest.approx(5200.0)  # the sum of DRF


@pytest.mark.parametrize("j, i, level", [(16, 16, 0), (10, 25, 3), (24, 7, 1)])
def test_cs32_velocity_is_the_files_faces_at_the_tracer_point_turned_east(cs32, j, i, level):
    """By hand from the big-endian files: the mean of U's faces west (`i`) and east (`i + 1`) and
    of V's south (`j`) and north (`j + 1`) of tracer point `(j, i)` of face 0, turned by
    `AngleCS`, `AngleSN`; at iteration 72000 (t = 0) and 72020 (20 days of 86 400 s later)."""
    field = fk.io.read(cs32, face=0, dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 20 * 86400.0])
    grid = {n: _mds(cs32, n).reshape(6, 32, 32)[0] for n in ("XC", "YC", "AngleCS", "AngleSN")}
    depth = -_mds(cs32, "RC")[level]
    for k, iteration in enumerate(("0000072000", "0000072020")):
        u = _mds(cs32, f"U.{iteration}").reshape(15, 6, 32, 32)[level, 0]
        v = _mds(cs32, f"V.{iteration}").reshape(15, 6, 32, 32)[level, 0]
        uc, vc = 0.5 * (u[j, i] + u[j, i + 1]), 0.5 * (v[j, i] + v[j + 1, i])
        assert uc != 0 and vc != 0  # water
        cs, sn = grid["AngleCS"][j, i], grid["AngleSN"][j, i]
        east, north = cs * uc - sn * vc, sn * uc + cs * vc
        lat = grid["YC"][j, i]
        got = np.asarray(field(k * 20 * 86400.0, jnp.asarray([grid["XC"][j, i], lat, depth])))
        np.testing.assert_allclose(_metres(got, lat), [east, north], rtol=1e-5, atol=1e-9)


def test_an_xmitgcm_dataset_reads_as_the_run_directory(cs32):
    """xmitgcm's names (`drF`, `Z`, `CS`, `SN`; times as timedeltas when given `delta_t` alone)."""
    from flowkit.io.ocean.mitgcm import open_mds

    ds = open_mds(cs32)
    ds = ds.rename(DRF="drF", RC="Z", AngleCS="CS", AngleSN="SN").assign_coords(
        time=("time", np.array([72000, 72020]) * np.timedelta64(86400, "s"))
    )
    field, direct = fk.io.from_xarray(ds, face=0, dtype="float64"), fk.io.read(cs32, face=0, dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), np.asarray(direct.times))
    point = jnp.array([10.0, 5.0, 100.0])
    np.testing.assert_array_equal(np.asarray(field(86400.0, point)), np.asarray(direct(86400.0, point)))


def test_cs32_land_from_hfacc_and_twenty_days_keep_particles_in_water_and_moving(cs32):
    field = fk.io.read(cs32, face=0, dtype="float64")
    hfac = _mds(cs32, "hFacC").reshape(15, 6, 32, 32)[0, 0]
    xc, yc = (_mds(cs32, n).reshape(6, 32, 32)[0] for n in ("XC", "YC"))
    land = np.argwhere(hfac == 0)
    j, i = land[len(land) // 2]
    assert np.asarray(field.beached_batch(jnp.array([[xc[j, i], yc[j, i], 1.0]])))[0]
    seeds = fk.seeding.random_inside(200, field, key=jax.random.key(5))
    assert not np.asarray(field.beached_batch(jnp.asarray(seeds))).any()
    traj = fk.track(field, seeds[:, :2], 0.0, 20 * 86400.0, 6 * 3600.0, save_every=8, dtype="float64")
    assert np.all(traj.positions[0, :, 2] == 0)  # (lon, lat) seeds start at the surface
    active = traj.status[-1] == fk.Status.ACTIVE
    moved = np.hypot(*(traj.positions[-1, :, :2] - traj.positions[0, :, :2]).T)
    assert active.mean() > 0.8 and np.all(moved[active] > 0)


def _write_mds(folder: Path, name: str, values: np.ndarray, iteration: int | None = None, tiles: int = 1) -> None:
    """`values` `([z,] y, x)` as MITgcm writes MDS output: big-endian float32 with a `.meta`,
    in `tiles` tiles along x (`name.0000000010.001.001.data`, ...)."""
    stem = name if iteration is None else f"{name}.{iteration:010d}"
    shape = values.shape
    n_x = shape[-1] // tiles
    for t in range(tiles):
        part = values[..., t * n_x : (t + 1) * n_x]
        dims = [(shape[-1], t * n_x + 1, (t + 1) * n_x)] + [(n, 1, n) for n in shape[-2::-1]]
        tile = stem if tiles == 1 else f"{stem}.{t + 1:03d}.001"
        part.astype(">f4").tofile(folder / f"{tile}.data")
        dim_list = ",\n".join(f"   {a:5d}, {b:5d}, {c:5d}" for a, b, c in dims)
        text = f" nDims = [ {len(shape)} ];\n dimList = [\n{dim_list}\n ];\n"
        text += " dataprec = [ 'float32' ];\n nrecords = [ 1 ];\n"
        if iteration is not None:
            text += f" timeStepNumber = [ {iteration} ];\n"
        (folder / f"{tile}.meta").write_text(text)


def _lat_lon_run(folder: Path, *, cartesian: bool = False, tiles: int = 2, namelists: bool = True) -> dict:
    """A 20 x 10 run of 3 levels whose faces carry u = 0.1 + 0.01 x, v = -0.05 + 0.002 y (x, y
    in the grid's units), so that the centres' means are those expressions at the centres."""
    n_x, n_y = 20, 10
    spacing = 1000.0 if cartesian else 1.0
    x_faces = np.arange(n_x) * spacing
    y_faces = (0.0 if cartesian else 30.0) + np.arange(n_y) * spacing
    xc, yc = np.meshgrid(x_faces + spacing / 2, y_faces + spacing / 2)
    xg, yg = np.meshgrid(x_faces, y_faces)
    dxc = np.full((n_y, n_x), 1000.0 if cartesian else 111e3 * 0.8)
    hfac = np.ones((3, n_y, n_x))
    hfac[:, :, -1] = 0.0  # the east column is land: the domain closed there
    hfac[2, :3, :3] = 0.4  # partial cells
    for name, values in dict(XC=xc, YC=yc, XG=xg, YG=yg, DXC=dxc, hFacC=hfac).items():
        _write_mds(folder, name, values, tiles=tiles)
    _write_mds(folder, "RC", np.array([-5.0, -15.0, -30.0]).reshape(3, 1, 1))
    _write_mds(folder, "DRF", np.array([10.0, 10.0, 20.0]).reshape(3, 1, 1))
    flows = {}
    for iteration, scale in ((10, 1.0), (20, 2.0)):
        u = scale * np.broadcast_to(0.1 + 0.01 * xg / spacing, (3, n_y, n_x))
        v = scale * np.broadcast_to(-0.05 + 0.002 * yg / spacing, (3, n_y, n_x))
        _write_mds(folder, "U", u, iteration, tiles=tiles)
        _write_mds(folder, "V", v, iteration, tiles=tiles)
        flows[iteration] = scale
    if namelists:
        (folder / "data").write_text(" &PARM01\n # deltaT=1.,\n &\n &PARM03\n nIter0=0,\n deltaT=1200.,\n &\n")
        (folder / "data.cal").write_text(" &CAL_NML\n startDate_1=20200101,\n startDate_2=060000,\n &\n")
    return dict(xc=xc, yc=yc, spacing=spacing)


def test_a_lat_lon_run_in_tiles_is_joined_dated_by_its_calendar_and_averaged_to_its_centres(tmp_path):
    run = _lat_lon_run(tmp_path)
    field = fk.io.read(tmp_path, dtype="float64")
    assert field.spherical and field.time_origin.date == "2020-01-01T09:20:00"  # 06:00 + 10 x 1200 s
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 12000.0])
    for j, i in ((2, 3), (7, 12), (5, 0)):
        x, y = run["xc"][j, i], run["yc"][j, i]
        for k, scale in enumerate((1.0, 2.0)):
            got = np.asarray(field(k * 12000.0, jnp.asarray([x, y, 15.0])))
            np.testing.assert_allclose(
                _metres(got, y), [scale * (0.1 + 0.01 * x), scale * (-0.05 + 0.002 * y)], rtol=1e-5
            )
    lo, hi = (np.asarray(b) for b in field.bounds)
    assert hi[2] == pytest.approx(40.0)  # 10 + 10 + 20 m of water
    assert np.asarray(field.beached_batch(jnp.array([[run["xc"][4, -1], run["yc"][4, -1], 5.0]])))[0]


def test_a_cartesian_run_is_told_by_its_metrics_and_a_missing_time_step_is_refused(tmp_path):
    run = _lat_lon_run(tmp_path, cartesian=True, tiles=1, namelists=False)
    with pytest.raises(ValueError, match=r"no time step to date them .* give delta_t="):
        fk.io.read(tmp_path)
    field = fk.io.read(tmp_path, delta_t=600.0, dtype="float64")
    assert not field.spherical and field.time_origin is None
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 6000.0])
    x, y = run["xc"][3, 4], run["yc"][3, 4]
    got = np.asarray(field(0.0, jnp.asarray([x, y, 5.0])))
    np.testing.assert_allclose(got[:2], [0.1 + 0.01 * x / 1000, -0.05 + 0.002 * y / 1000], rtol=1e-6)


def test_mnc_netcdf_has_both_outer_faces_and_w_is_taken_downward_at_the_levels(tmp_path):
    """mnc's `U` on `Xp1` (n + 1 faces), `V` on `Yp1`, `W` on `Zl`, the grid file apart."""
    n_x, n_y = 8, 6
    xg, yg = np.arange(n_x + 1) * 1.0, 40.0 + np.arange(n_y + 1) * 1.0
    xc, yc = xg[:-1] + 0.5, yg[:-1] + 0.5
    times = np.array([3600.0, 7200.0])
    w_top = np.array([0.0, 2e-4, 1e-4])  # upward on each level's top
    state = xr.Dataset(
        {
            "U": (
                ("T", "Z", "Y", "Xp1"),
                np.broadcast_to(0.2 + 0.01 * xg, (2, 3, n_y, n_x + 1)).copy(),
                {"units": "m/s"},
            ),
            "V": (
                ("T", "Z", "Yp1", "X"),
                np.broadcast_to(0.1 + 0.0 * yg[:, None], (2, 3, n_y + 1, n_x)).copy(),
                {"units": "m/s"},
            ),
            "W": (
                ("T", "Zl", "Y", "X"),
                np.broadcast_to(w_top[:, None, None], (2, 3, n_y, n_x)).copy(),
                {"units": "m/s"},
            ),
        },
        coords={"T": ("T", times, {"units": "s", "long_name": "model_time"}), "iter": ("T", [3, 6])},
        attrs={"MITgcm_version": "checkpoint69a", "tile_number": 1},
    )
    grid = xr.Dataset(
        {
            "XC": (("Y", "X"), np.meshgrid(xc, yc)[0]),
            "YC": (("Y", "X"), np.meshgrid(xc, yc)[1]),
            "XG": (("Yp1", "Xp1"), np.meshgrid(xg, yg)[0]),
            "DXC": (("Y", "Xp1"), np.full((n_y, n_x + 1), 85e3)),
            "HFacC": (("Z", "Y", "X"), np.ones((3, n_y, n_x))),
            "drF": (("Z",), [10.0, 10.0, 10.0]),
            "RC": (("Z",), [-5.0, -15.0, -25.0]),
        },
        attrs={"MITgcm_version": "checkpoint69a"},
    )
    state.to_netcdf(tmp_path / "state.0000000000.t001.nc")
    grid.to_netcdf(tmp_path / "grid.t001.nc")
    field = fk.io.read([tmp_path / "state.0000000000.t001.nc", tmp_path / "grid.t001.nc"], dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 3600.0])
    for i, j in ((0, 0), (7, 5), (3, 2)):  # the outer columns too: both their faces are in the file
        got = np.asarray(field(0.0, jnp.asarray([xc[i], yc[j], 15.0])))
        np.testing.assert_allclose(_metres(got, yc[j]), [0.2 + 0.01 * xc[i], 0.1], rtol=1e-5)
        assert got[2] == pytest.approx(-0.5 * (2e-4 + 1e-4))


def test_mitgcm_refusals_name_the_directory_and_what_is_missing(tmp_path):
    _lat_lon_run(tmp_path, tiles=1)
    for path in tmp_path.glob("V.*"):
        path.unlink()
    with pytest.raises(ValueError, match=r"no MITgcm v velocity \(V or VVEL\)"):
        fk.io.read(tmp_path)
    llc = tmp_path / "llc"
    llc.mkdir()
    _write_mds(llc, "XC", np.zeros((13 * 2, 2)))
    _write_mds(llc, "YC", np.zeros((13 * 2, 2)))
    _write_mds(llc, "hFacC", np.ones((1, 13 * 2, 2)))
    _write_mds(llc, "U", np.zeros((1, 13 * 2, 2)), 1)
    _write_mds(llc, "V", np.zeros((1, 13 * 2, 2)), 1)
    with pytest.raises(ValueError, match="an LLC grid"):
        fk.io.read(llc)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"not an OpenFOAM case .* a MITgcm run \(no XC\.meta\)"):
        fk.io.read(tmp_path / "empty")


@pytest.mark.slow
def test_the_app_tracks_a_face_of_the_cubed_sphere(cs32, tmp_path):
    from test_apps import _run

    args = ["field=netcdf", f"field.path={cs32}", "field.face=1", "seeds=random", "seeds.n=50", "t1=432000"]
    result = _run([*args, f"hydra.run.dir={tmp_path}", "output=minimal"], cwd=tmp_path)
    assert "LayeredField" in result.stdout
    traj = fk.Trajectory.load(tmp_path / "trajectories.npz")
    assert traj.positions.shape[1] == 50 and np.all(np.isfinite(traj.positions[-1]))
