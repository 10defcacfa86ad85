"""Conformance over the corpus of real model and solver output (`../shared/data/real`, files as
their models wrote them, published by other groups): each opens with `fk.io.read(path)` and no
options; its times are the file's own; seeds drawn in its domain lie in moving water; a short
run keeps every particle finite and in the water; and at 20 or more points its velocity equals
the file's own values, computed here from the raw arrays with xarray, NumPy, h5py or VTK's
readers (never through flowkit's), to 1e-5 m/s where the data lie on the points.

Where a model's grid is turned from east (ROMS, NEMO), the reference turns it by the bearing
of the grid's own lines (pyproj's geodesics, not flowkit's finite differences): speeds agree to
1e-5 m/s, directions within 1°.
"""

import dataclasses
import glob
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import flowkit as fk
from flowkit.seeding import in_flow

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="the corpus ../shared/data/real is not beside this checkout")
R = 6_371_000.0  # flowkit's sphere (fields.grid.EARTH_RADIUS)


@dataclasses.dataclass(frozen=True)
class Reference:
    """What the file itself says: its times (seconds since its first), and the velocity
    (east, north; m/s) at `points` (the field's coordinates) at time `t` (seconds)."""

    times: np.ndarray | None
    t: float
    points: np.ndarray
    velocity: np.ndarray
    turned: bool = False  # a grid turned from east: compare speeds and directions
    read: dict = dataclasses.field(default_factory=dict)  # options of the value check's read (not of the default one)


def _seconds(values) -> np.ndarray:
    values = np.asarray(values)
    return (values - values[0]) / np.timedelta64(1, "s")


def _bearing_angle(lon_a, lat_a, lon_b, lat_b) -> np.ndarray:
    """The angle (radians, counter-clockwise from east) of the geodesic from a to b."""
    import pyproj

    azimuth, _, _ = pyproj.Geod(ellps="WGS84").inv(lon_a, lat_a, lon_b, lat_b)
    return np.deg2rad(90.0 - azimuth)


def _turned(angle, u, v) -> np.ndarray:
    return np.column_stack([np.cos(angle) * u - np.sin(angle) * v, np.sin(angle) * u + np.cos(angle) * v])


def _every(mask: np.ndarray, n: int = 40) -> np.ndarray:
    """About `n` indices `(k, 2)` spread over the true entries of a 2-D mask."""
    found = np.argwhere(mask)
    return found[:: max(1, len(found) // n)][:n]


def roms_doppio() -> Reference:
    """ROMS 3.7 (DOPPIO), staggered C-grid, cut without Cs_r: u2rho/v2rho at rho points of the
    top s-level (whose depth, unstretched, is -(h + zeta) s_rho), turned by the xi lines' bearing."""
    ds = xr.open_dataset(REAL / "roms_doppio/ROMS3D_00.nc")
    k = 3
    u, v = (ds[n].isel(ocean_time=k).values[-1].astype(float) for n in ("u", "v"))
    inner = np.zeros(ds.h.shape, bool)
    inner[1:-1, 1:-1] = True
    faces = np.zeros(ds.h.shape, bool)  # the four faces of a rho point in the water
    faces[1:-1, 1:-1] = np.isfinite(u[1:-1, :-1] + u[1:-1, 1:] + v[:-1, 1:-1] + v[1:, 1:-1])
    j, i = _every(inner & faces & (ds.mask_rho.values == 1) & (ds.h.values > 20)).T
    u_rho, v_rho = 0.5 * (u[j, i - 1] + u[j, i]), 0.5 * (v[j - 1, i] + v[j, i])
    lon, lat = ds.lon_rho.values, ds.lat_rho.values
    angle = _bearing_angle(lon[j, i - 1], lat[j, i - 1], lon[j, i + 1], lat[j, i + 1])
    water = ds.h.values[j, i] + ds.zeta.isel(ocean_time=k).values[j, i]
    points = np.column_stack([lon[j, i], lat[j, i], -water * float(ds.s_rho.values[-1])])
    return Reference(_seconds(ds.ocean_time.values), k * 3600.0, points, _turned(angle, u_rho, v_rho), turned=True)


def nemo() -> Reference:
    """NEMO ORCA025 U and V files: the T point between its faces (U east, V north of it) at
    the first z-level, turned by the bearing of the i lines through the T points."""
    files = sorted(glob.glob(str(REAL / "nemo_orca025_northsea/ORCA025-N06_*[UV].nc")))
    u_ds = xr.open_dataset(files[0])
    v_ds = xr.open_dataset(files[1])
    grid = xr.open_dataset(REAL / "nemo_orca025_northsea/coordinates.nc", decode_times=False)
    lon, lat = (grid[n].values.reshape(grid[n].shape[-2:]).astype(float) for n in ("glamt", "gphit"))
    u, v = u_ds.uo.values[0, 0].astype(float), v_ds.vo.values[0, 0].astype(float)
    moving = np.zeros(u.shape, bool)
    moving[1:-1, 1:-1] = (
        (u[1:-1, 1:-1] != 0) & (u[1:-1, :-2] != 0) & (v[1:-1, 1:-1] != 0) & (v[:-2, 1:-1] != 0)
    ) & np.isfinite(u[1:-1, 1:-1] + u[1:-1, :-2] + v[1:-1, 1:-1] + v[:-2, 1:-1])
    j, i = _every(moving).T
    u_t, v_t = 0.5 * (u[j, i - 1] + u[j, i]), 0.5 * (v[j - 1, i] + v[j, i])
    angle = _bearing_angle(lon[j, i - 1], lat[j, i - 1], lon[j, i + 1], lat[j, i + 1])
    points = np.column_stack([lon[j, i], lat[j, i], np.full(len(j), float(u_ds.depthu.values[0]))])
    u_times = [xr.open_dataset(f).time_counter.values[0] for f in files[::2]]
    return Reference(_seconds(u_times), 0.0, points, _turned(angle, u_t, v_t), turned=True)


def _mds(name: str) -> np.ndarray:
    directory = REAL / "mitgcm_barotropic_gyre/barotropic_gyre"
    meta = (directory / f"{name}.meta").read_text()
    precision = ">f8" if "float64" in meta else ">f4"
    values = np.fromfile(directory / f"{name}.data", precision).astype(float)
    return values.reshape(60, 60) if values.size == 3600 else values


def mitgcm() -> Reference:
    """MITgcm's barotropic gyre (MDS, one level, Cartesian): U on the west face of each tracer
    cell, V on its south face, averaged to the centre, at iteration 10 (deltaT 1200 s)."""
    u, v, xc, yc, hfac = (_mds(n) for n in ("U.0000000010", "V.0000000010", "XC", "YC", "hFacC"))
    inner = np.zeros(u.shape, bool)
    inner[1:-2, 1:-2] = True
    j, i = _every(inner & (hfac > 0) & (np.roll(hfac, -1, 0) > 0) & (np.roll(hfac, -1, 1) > 0)).T
    velocity = np.column_stack([0.5 * (u[j, i] + u[j, i + 1]), 0.5 * (v[j, i] + v[j + 1, i])])
    points = np.column_stack([xc[j, i], yc[j, i], np.full(len(j), -float(_mds("RC")[0]))])  # the level's middle
    return Reference(np.array([0.0, 12000.0]), 12000.0, points, velocity)


def wrf() -> Reference:
    """WRF 3.8.1 (Mercator, a moving nest): U10, V10 at the mass points of the first step's
    grid that every later step's grid also holds (Mercator: grid axes are east and north)."""
    from scipy.spatial import cKDTree

    ds = xr.open_dataset(REAL / "wrf_katrina/ci_test_file.nc")
    lon, lat = ds.XLONG.values[0].astype(float), ds.XLAT.values[0].astype(float)
    held = np.ones(lon.shape, bool)
    for k in range(1, ds.sizes["Time"]):
        later = np.column_stack([ds.XLONG.values[k].ravel(), ds.XLAT.values[k].ravel()])
        distance, _ = cKDTree(later).query(np.column_stack([lon.ravel(), lat.ravel()]))
        held &= (distance < 1e-3).reshape(lon.shape)
    j, i = _every(held).T
    velocity = np.column_stack([ds.U10.values[0][j, i], ds.V10.values[0][j, i]]).astype(float)
    times = np.array([np.datetime64(t.decode().replace("_", "T")) for t in ds.Times.values])
    return Reference(_seconds(times), 0.0, np.column_stack([lon[j, i], lat[j, i]]), velocity)


def schism_2d() -> Reference:
    """SCHISM 2-D in four files of shuffled names: `dahv` at the nodes, from the file whose
    own times hold the chosen one (sorted here by each file's times)."""
    files = sorted(glob.glob(str(REAL / "schism2d_random_order/*.nc")))
    datasets = sorted((xr.open_dataset(f) for f in files), key=lambda ds: ds.time.values[0])
    times = np.concatenate([ds.time.values for ds in datasets])
    ds = datasets[2]
    k = 5
    x, y = ds.SCHISM_hgrid_node_x.values, ds.SCHISM_hgrid_node_y.values
    nodes = np.arange(0, len(x), len(x) // 40)
    velocity = ds.dahv.values[k][nodes].astype(float)
    return Reference(_seconds(times), float(_seconds(times)[24 * 2 + k]), np.column_stack([x, y])[nodes], velocity)


def schism_3d() -> Reference:
    """SCHISM v10 combined output: `hvel` of the top level at the nodes, at the free surface."""
    ds = xr.open_dataset(REAL / "schism_v10/demo_hindcast_schisim3D_00.nc")
    k = 6
    x, y = ds.SCHISM_hgrid_node_x.values, ds.SCHISM_hgrid_node_y.values
    nodes = np.arange(0, len(x), len(x) // 40)
    velocity = ds.hvel.values[k][nodes, -1].astype(float)
    points = np.column_stack([x[nodes], y[nodes], np.zeros(len(nodes))])
    return Reference(_seconds(ds.time.values), float(_seconds(ds.time.values)[k]), points, velocity)


def fvcom() -> Reference:
    """FVCOM (NOAA SFBOFS): the element velocity `u`, `v` of the top sigma layer at the
    element centres (`lonc`, `latc`), at that layer's depth there (sigma times the water column,
    h + zeta averaged over the element's nodes)."""
    ds = xr.open_dataset(REAL / "fvcom_sfbofs/tri_grid_example-FVCOM.nc")
    times = np.array(
        [np.datetime64(t.decode().strip()[:19]) for t in ds.Times.values]
    )  # exact, as `time` in float32 days is not
    k = 4
    faces = np.arange(0, ds.sizes["nele"], ds.sizes["nele"] // 40)
    corners = ds.nv.values[:, faces].T - 1
    water = (ds.h.values + ds.zeta.values[k])[corners].mean(axis=1)
    sigma = ds.siglay.values[0][corners].mean(axis=1)
    points = np.column_stack([ds.lonc.values[faces], ds.latc.values[faces], -sigma * water])
    velocity = np.column_stack([ds.u.values[k, 0, faces], ds.v.values[k, 0, faces]]).astype(float)
    return Reference(_seconds(times), k * 3600.0, points, velocity)


def dflowfm() -> Reference:
    """Delft3D-FM (hexagons): `mesh2d_ucx`, `mesh2d_ucy` at the model's face points
    (`mesh2d_face_x`, `_y`) that lie inside their faces, away from the sides (shapely)."""
    import shapely

    ds = xr.open_dataset(REAL / "dflowfm_simplebox_hex7/simplebox_hex7_map.nc")
    k = 12
    table = ds.mesh2d_face_nodes.values
    start = int(ds.mesh2d_face_nodes.attrs.get("start_index", 0))
    x, y = ds.mesh2d_node_x.values, ds.mesh2d_node_y.values
    fx, fy = ds.mesh2d_face_x.values, ds.mesh2d_face_y.values
    inside = []
    for f, row in enumerate(table):
        corners = row[np.isfinite(row)].astype(int) - start
        polygon = shapely.Polygon(np.column_stack([x[corners], y[corners]]))
        point = shapely.Point(fx[f], fy[f])
        if polygon.contains(point) and polygon.exterior.distance(point) > 0.05 * np.sqrt(polygon.area):
            inside.append(f)
    faces = np.asarray(inside)[:: max(1, len(inside) // 40)]
    velocity = np.column_stack([ds.mesh2d_ucx.values[k, faces], ds.mesh2d_ucy.values[k, faces]])
    return Reference(
        _seconds(ds.time.values), float(_seconds(ds.time.values)[k]), np.column_stack([fx, fy])[faces], velocity
    )


def adcirc() -> Reference:
    """ADCIRC (quarter annulus): `u-vel`, `v-vel` at wet nodes."""
    ds = xr.open_dataset(REAL / "adcirc_quarterannular/fort.64.nc", drop_variables=["neta", "nvel"])
    k = 300
    u, v = ds["u-vel"].values[k], ds["v-vel"].values[k]
    nodes = np.flatnonzero(np.isfinite(u) & np.isfinite(v))
    points = np.column_stack([ds.x.values[nodes], ds.y.values[nodes]])
    return Reference(
        _seconds(ds.time.values), float(_seconds(ds.time.values)[k]), points, np.column_stack([u, v])[nodes]
    )


def era5() -> Reference:
    """ERA5 (grib_to_netcdf, packed int16, latitudes descending): u10, v10 at grid nodes."""
    ds = xr.open_dataset(REAL / "era5_grib_to_netcdf/ERA5_regional_test_data.nc")
    lon, lat = np.meshgrid(ds.longitude.values, ds.latitude.values)
    j, i = _every(np.ones(lon.shape, bool)).T
    velocity = np.column_stack([ds.u10.values[1][j, i], ds.v10.values[1][j, i]]).astype(float)
    return Reference(_seconds(ds.time.values), 3600.0, np.column_stack([lon[j, i], lat[j, i]]), velocity)


def glorys() -> Reference:
    """GLORYS12 (CMEMS, NaN land): uo, vo at wet nodes of its second depth."""
    ds = xr.open_dataset(REAL / "glorys12_na/GLORYS_NA_2012.nc")
    u, v = ds.uo.values[0, 1].astype(float), ds.vo.values[0, 1].astype(float)
    lon, lat = np.meshgrid(ds.longitude.values, ds.latitude.values)
    j, i = _every(np.isfinite(u) & np.isfinite(v)).T
    points = np.column_stack([lon[j, i], lat[j, i], np.full(len(j), float(ds.depth.values[1]))])
    return Reference(_seconds(ds.time.values), 0.0, points, np.column_stack([u[j, i], v[j, i]]))


def mom6() -> Reference:
    """MOM6 (non-symmetric C-grid, two isopycnal layers): u on the q points east of each h
    point, v north of it, averaged to the h point, at the middle of the top layer (its
    thickness h halved)."""
    ds = xr.open_dataset(REAL / "mom6_prog/prog__0001_006.nc", decode_times=False)
    k = 1
    u, v, h = ds.u.values[k, 0].astype(float), ds.v.values[k, 0].astype(float), ds.h.values[k].astype(float)
    inner = np.zeros(u.shape, bool)
    inner[1:-1, 1:-1] = True
    j, i = _every(inner & (h[0] > 1) & (h[1] > 1)).T
    lon, lat = np.meshgrid(ds.xh.values, ds.yh.values)
    velocity = np.column_stack([0.5 * (u[j, i - 1] + u[j, i]), 0.5 * (v[j - 1, i] + v[j, i])])
    points = np.column_stack([lon[j, i], lat[j, i], 0.5 * h[0][j, i]])
    return Reference(np.array([0.0, 432000.0]), 432000.0, points, velocity)


def _foam_cells(case: Path, time: str) -> Reference:
    """An OpenFOAM case's cell values of `U` at `time`, parsed from its ASCII file with NumPy,
    at the cell centres of VTK's reader (the internal mesh, in OpenFOAM's cell order)."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    text = (case / time / "U").read_text()
    body = text[text.index("internalField") :]
    count = int(body.split("\n")[1])
    rows = body.split("(", 1)[1].split("\n")[1 : count + 1]
    values = np.array([row.strip("()").split() for row in rows], float)
    reader = vtk.vtkOpenFOAMReader()
    reader.SetFileName(str(case / "system/controlDict"))
    reader.UpdateInformation()
    reader.DisableAllPatchArrays()
    reader.SetPatchArrayStatus("internalMesh", 1)
    reader.UpdateTimeStep(float(time))
    reader.Update()
    centres = vtk.vtkCellCenters()
    centres.SetInputData(reader.GetOutput().GetBlock(0))
    centres.Update()
    points = vtk_to_numpy(centres.GetOutput().GetPoints().GetData()).astype(float)
    cells = np.arange(0, count, count // 40)
    return Reference(None, float(time), points[cells], values[cells, :2], read={"cell_data": "constant"})


def foam_transient() -> Reference:
    case = REAL / "openfoam_pitzdaily_transient/pitzDaily"
    written = sorted((p.name for p in case.iterdir() if p.name[0].isdigit() and p.name != "0"), key=float)
    reference = _foam_cells(case, "0.05")
    return dataclasses.replace(reference, times=np.array([float(t) for t in written]) - float(written[0]))


def foam_steady() -> Reference:
    return _foam_cells(REAL / "openfoam_pitzdaily/pitzDaily", "282")


def fluent() -> Reference:
    """Fluent CFF (2-D room): the cell values SV_U, SV_V of the .dat.h5 (h5py) at the cell
    centres of VTK's reader."""
    import h5py
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    with h5py.File(REAL / "fluent_cff_room/room.dat.h5") as data:
        u, v = (np.asarray(data[f"results/1/phase-1/cells/{n}/1"], float) for n in ("SV_U", "SV_V"))
    reader = vtk.vtkFLUENTCFFReader()
    reader.SetFileName(str(REAL / "fluent_cff_room/room.cas.h5"))
    reader.Update()
    centres = vtk.vtkCellCenters()
    centres.SetInputData(reader.GetOutput().GetBlock(0))
    centres.Update()
    points = vtk_to_numpy(centres.GetOutput().GetPoints().GetData()).astype(float)[:, :2]
    cells = np.arange(0, len(u), len(u) // 40)
    return Reference(None, 0.0, points[cells], np.column_stack([u, v])[cells], read={"cell_data": "constant"})


CASES: dict[str, tuple[str, Callable[[], Reference]]] = {
    "roms_doppio": ("roms_doppio/ROMS3D_00.nc", roms_doppio),
    "nemo_orca025": ("nemo_orca025_northsea", nemo),
    "mitgcm_gyre": ("mitgcm_barotropic_gyre/barotropic_gyre", mitgcm),
    "wrf_katrina": ("wrf_katrina/ci_test_file.nc", wrf),
    "schism_2d_shuffled": ("schism2d_random_order/*.nc", schism_2d),
    "schism_v10": ("schism_v10/demo_hindcast_schisim3D_00.nc", schism_3d),
    "fvcom_sfbofs": ("fvcom_sfbofs/tri_grid_example-FVCOM.nc", fvcom),
    "dflowfm_hex": ("dflowfm_simplebox_hex7/simplebox_hex7_map.nc", dflowfm),
    "adcirc": ("adcirc_quarterannular/fort.64.nc", adcirc),
    "era5": ("era5_grib_to_netcdf/ERA5_regional_test_data.nc", era5),
    "glorys12": ("glorys12_na/GLORYS_NA_2012.nc", glorys),
    "mom6": ("mom6_prog/prog__0001_006.nc", mom6),
    "openfoam_transient": ("openfoam_pitzdaily_transient/pitzDaily", foam_transient),
    "openfoam_steady": ("openfoam_pitzdaily/pitzDaily", foam_steady),
    "fluent_cff": ("fluent_cff_room/room.cas.h5", fluent),
}


def _path(name: str) -> str:
    return str(REAL / CASES[name][0])  # NEMO's folder: its U and V files and coordinates.nc read together


def _metres_per_second(field, x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The field's horizontal velocity at `x` in m/s (degrees per second on a sphere)."""
    u = np.asarray(u, float)[:, :2]
    if not field.spherical:
        return u
    scale = np.pi / 180 * R
    return np.column_stack([u[:, 0] * scale * np.cos(np.deg2rad(x[:, 1])), u[:, 1] * scale])


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_file_reads_by_default_with_its_own_times_and_values(name):
    reference = CASES[name][1]()
    field = fk.io.read(_path(name))  # no options: as a new user would
    if reference.times is None:
        assert field.times is None
    else:
        np.testing.assert_allclose(np.asarray(field.times, float), reference.times, rtol=0, atol=0.5)
    exact = fk.io.read(_path(name), dtype="float64", **reference.read)
    x = jnp.asarray(reference.points)
    found = np.asarray(jax.vmap(exact, in_axes=(None, 0))(reference.t, x))
    assert len(reference.points) >= 20
    inside = np.all(np.isfinite(found), axis=1)
    assert inside.mean() >= 0.9, f"{name}: {int((~inside).sum())} of {len(inside)} of the file's points off the field"
    got = _metres_per_second(exact, reference.points[inside], found[inside])
    want = reference.velocity[inside]
    if reference.turned:
        np.testing.assert_allclose(np.hypot(*got.T), np.hypot(*want.T), rtol=0, atol=1e-5)
        fast = np.hypot(*want.T) > 1e-3
        turn = np.arctan2(got[:, 0] * want[:, 1] - got[:, 1] * want[:, 0], np.sum(got * want, axis=1))
        assert np.all(np.abs(np.rad2deg(turn[fast])) < 1.0)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeds_drawn_in_a_real_file_lie_in_moving_water_and_stay_there(name):
    field = fk.io.read(_path(name))
    dt = 0.5 / field.max_courant_rate()  # a step of Courant number 0.5 in the fastest cell
    if field.times is None:
        t0, t1 = 0.0, 10 * dt
    else:  # ten such steps (at most half the last interval) up to the last time: the first may be at rest
        times = np.asarray(field.times, float)
        t1 = float(times[-1])
        t0 = t1 - min(10 * dt, 0.5 * (times[-1] - times[-2]))
    seeds = fk.seeding.random_inside(400, field, key=jax.random.key(3), t=t0)
    speed = np.hypot(*np.asarray(jax.vmap(field, in_axes=(None, 0))(t0, jnp.asarray(seeds, jnp.float32)))[:, :2].T)
    assert np.all(np.isfinite(speed))
    assert np.mean(speed > 0) >= 0.98, f"{name}: {np.mean(speed == 0):.1%} of the seeds in still water"
    traj = fk.track(field, seeds, t0, t1, (t1 - t0) / 10, save_every=1)
    assert np.all(np.isfinite(np.asarray(traj.positions)))
    status = np.asarray(traj.status[-1])
    assert not np.any(status == fk.Status.NONFINITE)
    active = status == fk.Status.ACTIVE
    assert active.mean() > 0.5, f"{name}: {active.mean():.1%} of the particles still moving after ten steps"
    assert np.all(in_flow(field, np.asarray(traj.positions[-1])[active], t1))
