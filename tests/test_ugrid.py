"""Unstructured ocean models in NetCDF (UGRID): SCHISM's real output (a California Delta model's
mixed triangles and quadrilaterals, `tests/data/schism`), and files written the way FVCOM and
ADCIRC write theirs (FVCOM's element-centred velocity on sigma layers, 1-based `nv` transposed,
MJD times; ADCIRC's 2-D `u-vel` with dry nodes filled), read with one `fk.io.read`."""

import shutil
from pathlib import Path

import equinox as eqx
import h5netcdf
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from helpers import columns

import flowkit as fk

SCHISM = Path(__file__).parent / "data" / "schism"
R = 6_371_000.0


@eqx.filter_jit
def _evaluate(field, t, x):
    return field(t, x)


def _velocity(field, t, x):
    return np.asarray(_evaluate(field, jnp.asarray(t, float), jnp.asarray(x, float)))


# -- SCHISM: the real mesh and levels ---------------------------------------------------------


def _schism_run(folder: Path):
    """The real files, and velocity files beside them as SCHISM v5.10 writes them: per node
    and level, NaN below the sea floor. u is linear in x (exact on any cell), v grows with the
    level index (exact at the levels)."""
    for name in ("out2d_1.nc", "zCoordinates_1.nc"):
        shutil.copy(SCHISM / name, folder / name)
    z = xr.open_dataset(SCHISM / "zCoordinates_1.nc")
    x = z.SCHISM_hgrid_node_x.values
    n_t, n_p, n_k = z.zCoordinates.shape
    wet = np.isfinite(z.zCoordinates.values)
    u = np.broadcast_to((0.1 + 1e-5 * (x - x.mean()))[None, :, None], wet.shape)
    v = np.broadcast_to(0.05 * np.arange(n_k) / n_k, wet.shape)
    attrs = {"i23d": np.int32(2), "ivs": np.int32(1), "location": "node", "mesh": "SCHISM_hgrid"}
    for name, values in (("horizontalVelX", u), ("horizontalVelY", v)):
        data = np.where(wet, values, np.nan).astype(np.float32)
        xr.Dataset(
            {name: (("time", "nSCHISM_hgrid_node", "nSCHISM_vgrid_layers"), data, attrs)}, coords={"time": z.time}
        ).to_netcdf(folder / f"{name}_1.nc")
    return z, x, n_k


def test_schism_output_opens_with_its_mixed_mesh_levels_and_split_files(tmp_path):
    z, x, n_k = _schism_run(tmp_path)
    field = fk.io.read(str(tmp_path / "*.nc"), dtype="float64")
    assert isinstance(field, fk.fields.LayeredField) and field.dim == 3 and field.levels == n_k
    assert set(field.surface.kinds) == {"triangle", "quad"} and not field.spherical
    np.testing.assert_allclose(np.asarray(field.times), [0.0, 1800.0, 3600.0, 5400.0])
    y = z.SCHISM_hgrid_node_y.values
    levels = z.zCoordinates.values
    for t_index, node in ((0, 0), (2, 100), (3, 500)):
        column = levels[t_index, node]
        for k in (
            n_k - 1,
            n_k - 8,
            int(np.argmax(np.isfinite(column))),
        ):  # the surface, mid-water, the deepest wet level
            depth = column[-1] - column[k]
            got = _velocity(field, 1800.0 * t_index, [x[node], y[node], depth])
            np.testing.assert_allclose(got[:2], [0.1 + 1e-5 * (x[node] - x.mean()), 0.05 * k / n_k], rtol=1e-6)
        bottom = column[-1] - np.nanmin(column)
        np.testing.assert_allclose(field.water_depth(1800.0 * t_index, [[x[node], y[node]]]), [bottom], rtol=1e-6)
    # inside a quadrilateral (bilinear): u linear in x is exact there too
    faces = xr.open_dataset(SCHISM / "out2d_1.nc").SCHISM_hgrid_face_nodes.values
    quad = faces[np.isfinite(faces[:, 3])][0].astype(int) - 1
    centre = [x[quad].mean(), y[quad].mean(), 0.0]
    np.testing.assert_allclose(_velocity(field, 0.0, centre)[0], 0.1 + 1e-5 * (centre[0] - x.mean()), rtol=1e-6)
    # random seeds fill the water: on the mesh, between the surface and the floor
    seeds = fk.seeding.random_inside(300, field, key=jax.random.key(0))
    floor = field.water_depth(0.0, seeds)
    assert len(seeds) == 300 and np.all(np.isfinite(floor)) and np.all(seeds[:, 2] <= floor)


def test_particles_on_schism_levels_move_and_stay_in_the_water(tmp_path):
    z, x, _ = _schism_run(tmp_path)
    field = fk.io.read(str(tmp_path / "*.nc"))
    y = z.SCHISM_hgrid_node_y.values
    faces = xr.open_dataset(SCHISM / "out2d_1.nc").SCHISM_hgrid_face_nodes.values
    corners = np.nan_to_num(faces[:60], nan=faces[:60, 0:1]).astype(int) - 1
    seeds = np.column_stack([x[corners].mean(axis=1), y[corners].mean(axis=1), np.tile([0.0, 5.0, 40.0], 20)])
    traj = fk.track(field, seeds, 0.0, 1800.0, 60.0)
    assert np.all(traj.status[0] == fk.Status.ACTIVE)
    floor = field.water_depth(0.0, seeds)
    np.testing.assert_allclose(traj.positions[0, 2::3, 2], floor[2::3], rtol=1e-5)  # below the floor: placed on it
    moving = traj.status[-1] == fk.Status.ACTIVE
    assert moving.sum() > 30
    shift = traj.positions[-1, moving, 0] - traj.positions[0, moving, 0]
    assert np.all(shift > 100.0) and np.all(shift < 250.0)  # u in 0.06-0.14 m/s for 1800 s


def test_schism_v10_combined_output_equals_the_split_output(tmp_path):
    """The same run as SCHISM v10's combined `schout_1.nc` writes it: the mesh, `hvel` pairs
    `(time, node, level, 2)` and `zcor` with junk under `node_bottom_index`."""
    z, x, n_k = _schism_run(tmp_path)
    split = fk.io.read(str(tmp_path / "*.nc"), dtype="float64")
    out2d = xr.open_dataset(tmp_path / "out2d_1.nc")
    u, v = (xr.open_dataset(tmp_path / f"{name}_1.nc")[name].values for name in ("horizontalVelX", "horizontalVelY"))
    dims = ("time", "nSCHISM_hgrid_node", "nSCHISM_vgrid_layers")
    combined = out2d[["SCHISM_hgrid", "SCHISM_hgrid_face_nodes", "depth"]].assign(
        node_bottom_index=out2d.bottom_index_node,
        zcor=(dims, np.nan_to_num(z.zCoordinates.values, nan=-9999.0)),
        hvel=(dims + ("two",), np.nan_to_num(np.stack([u, v], axis=-1), nan=-9999.0)),
        time=z.time,
    )
    (tmp_path / "v10").mkdir()
    combined.to_netcdf(tmp_path / "v10" / "schout_1.nc")
    field = fk.io.read(tmp_path / "v10" / "schout_1.nc", dtype="float64")
    np.testing.assert_array_equal(columns(field), columns(split))
    assert field.levels == n_k and np.asarray(field.times).tolist() == np.asarray(split.times).tolist()


# -- FVCOM: faces, sigma layers, degrees or metres --------------------------------------------


def _triangles(nx, ny):
    """A regular grid's nodes and its triangles, clockwise (as FVCOM numbers them), one diagonal."""
    index = np.arange(nx * ny).reshape(ny, nx)
    a, b, c, d = index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]
    cells = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)])
    i, j = np.meshgrid(np.arange(nx), np.arange(ny))
    return i.reshape(-1), j.reshape(-1), cells


def _fvcom_clock(days: np.ndarray, times_only: bool = False) -> dict:
    """FVCOM's exact clocks of modified Julian days `58000 + days`: `Itime` (days), `Itime2`
    (milliseconds since midnight) and `Times` (text); `Times` alone with `times_only`."""
    mjd = 58000 + days
    whole = np.floor(mjd)
    dates = np.datetime64("1858-11-17T00:00:00", "ms") + np.round(mjd * 86_400_000).astype(np.int64)
    text = np.array([f"{np.datetime_as_string(d, unit='us')}" for d in dates], dtype="S26")
    clock = {"Times": ("time", text)}
    if not times_only:
        clock["Itime"] = ("time", whole.astype(np.int32), {"units": "days since 1858-11-17 00:00:00"})
        clock["Itime2"] = (
            "time",
            np.round((mjd - whole) * 86_400_000).astype(np.int32),
            {"units": "msec since 00:00:00"},
        )
    return clock


def _fvcom(path, *, cartesian=False, days=(0.0, 0.25, 0.5), topology=False, times_only=False):
    """An FVCOM history file as FVCOM writes it: lon/lat and x/y on nodes, lonc/latc on elements,
    `nv(three, nele)` from 1, `siglay(siglay, node)`, `u`, `v`, `ww` on elements per layer,
    `zeta` per node, times in modified Julian days. u = 0.2 + 2 (lonc - 5) m/s per degree, v = -0.1 k."""
    i, j, cells = _triangles(11, 9)
    lon, lat = 5.0 + 0.02 * i, 60.0 + 0.01 * j
    x, y = 1000.0 * i, 1000.0 * j
    lonc, latc = lon[cells].mean(axis=1), lat[cells].mean(axis=1)
    n_layers, n_t = 5, len(days)
    siglay = -(np.arange(n_layers) + 0.5) / n_layers
    h = 20.0 + 2.0 * i
    zeta = np.array([0.1 * np.sin(d * 4) + 0.01 * j for d in days])
    u = np.broadcast_to(0.2 + 2.0 * (lonc - 5.0), (n_t, n_layers, len(cells)))
    v = np.broadcast_to((-0.1 * np.arange(n_layers))[None, :, None], u.shape)
    ds = xr.Dataset(
        {
            "nv": (("three", "nele"), (cells.T + 1).astype(np.int32)),
            "h": ("node", h.astype(np.float32), {"standard_name": "sea_floor_depth_below_geoid", "units": "m"}),
            "siglay": (
                ("siglay", "node"),
                np.repeat(siglay[:, None], len(lon), axis=1).astype(np.float32),
                {"standard_name": "ocean_sigma/general_coordinate", "positive": "up"},
            ),
            "zeta": (("time", "node"), zeta.astype(np.float32), {"units": "meters"}),
            "u": (
                ("time", "siglay", "nele"),
                u.astype(np.float32),
                {"standard_name": "eastward_sea_water_velocity", "units": "meters s-1"},
            ),
            "v": (
                ("time", "siglay", "nele"),
                v.astype(np.float32),
                {"standard_name": "northward_sea_water_velocity", "units": "meters s-1"},
            ),
            "ww": (("time", "siglay", "nele"), np.zeros(u.shape, np.float32), {"long_name": "Upward Water Velocity"}),
            "ua": (("time", "nele"), u[:, 0].astype(np.float32), {"long_name": "Vertically Averaged x-velocity"}),
            **_fvcom_clock(np.asarray(days), times_only=times_only),
        },
        coords={
            "lon": (
                "node",
                (0 * lon if cartesian else lon).astype(np.float32),
                {"standard_name": "longitude", "units": "degrees_east"},
            ),
            "lat": (
                "node",
                (0 * lat if cartesian else lat).astype(np.float32),
                {"standard_name": "latitude", "units": "degrees_north"},
            ),
            "x": ("node", x.astype(np.float32), {"units": "meters"}),
            "y": ("node", y.astype(np.float32), {"units": "meters"}),
            "lonc": ("nele", lonc.astype(np.float32)),
            "latc": ("nele", latc.astype(np.float32)),
            "time": (
                "time",
                (58000.0 + np.asarray(days)).astype(np.float32),  # FVCOM's float32 days: 337 s apart here
                {"units": "days since 1858-11-17 00:00:00", "format": "modified julian day (MJD)", "time_zone": "UTC"},
            ),
        },
        attrs={"source": "FVCOM_4.3", "CoordinateSystem": "Cartesian" if cartesian else "GeoReferenced"},
    )
    if topology:
        ds["fvcom_mesh"] = (
            (),
            np.int32(0),
            {
                "cf_role": "mesh_topology",
                "topology_dimension": 2,
                "node_coordinates": "lon lat",
                "face_node_connectivity": "nv",
            },
        )
    ds.to_netcdf(path)
    return lon, lat, x, y, h, zeta, siglay


@pytest.mark.parametrize("topology", [False, True])
def test_fvcom_sigma_layers_and_element_velocity_on_the_nodes(tmp_path, topology):
    lon, lat, x, y, h, zeta, siglay = _fvcom(tmp_path / "fvcom_0001.nc", topology=topology)
    field = fk.io.read(tmp_path / "fvcom_0001.nc", dtype="float64")
    assert isinstance(field, fk.fields.LayeredField) and field.spherical and field.levels == 5
    assert field.time_origin.date == "2017-09-04T00:00:00"  # MJD 58000
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 21600.0, 43200.0])  # not the float32 days
    interior = [12, 40, 75]  # nodes with all six triangles around them: the face mean is exact for linear u
    for t_index in (0, 2):
        t = 0.25 * 86400.0 * t_index
        for node in interior:
            depth = -siglay * (h[node] + zeta[t_index, node])
            for k in (0, 2, 4):
                got = _velocity(field, t, [lon[node], lat[node], depth[k]])
                metres = [got[0] * np.pi / 180 * R * np.cos(np.deg2rad(lat[node])), got[1] * np.pi / 180 * R]
                np.testing.assert_allclose(
                    metres, [0.2 + 2.0 * (lon[node] - 5.0), -0.1 * k], rtol=2e-5, atol=1e-7
                )  # the file holds float32
            np.testing.assert_allclose(
                field.water_depth(t, [[lon[node], lat[node]]]), [h[node] + zeta[t_index, node]], rtol=1e-6
            )


@pytest.mark.parametrize("clock", ["Times", "time"])
def test_fvcom_times_from_its_text_clock_or_said_from_float32_days(tmp_path, clock, caplog):
    days = (0.0, 1 / 24, 2 / 24)
    _fvcom(tmp_path / "fvcom_0001.nc", days=days, times_only=True)
    if clock == "time":  # a file without FVCOM's exact clocks
        xr.load_dataset(tmp_path / "fvcom_0001.nc", decode_times=False).drop_vars("Times").to_netcdf(
            tmp_path / "bare.nc"
        )
    with caplog.at_level("WARNING", logger="flowkit"):
        field = fk.io.read(tmp_path / ("fvcom_0001.nc" if clock == "Times" else "bare.nc"))
    if clock == "Times":
        np.testing.assert_array_equal(np.asarray(field.times), [0.0, 3600.0, 7200.0])
        assert "Itime" not in caplog.text
    else:
        assert "neither Itime/Itime2 nor Times" in caplog.text
        assert np.abs(np.asarray(field.times) - [0.0, 3600.0, 7200.0]).max() > 1.0  # the float32 days drift


def test_velocity_units_as_models_spell_them_are_converted_or_refused(tmp_path):
    _fvcom(tmp_path / "m.nc")
    ds = xr.load_dataset(tmp_path / "m.nc", decode_times=False)
    metres = fk.io.read(tmp_path / "m.nc", dtype="float64")
    for units, factor in (("centimeters s-1", 100.0), ("cm/s", 100.0), ("knots", 3600 / 1852)):
        name = tmp_path / f"{units.replace('/', '_')}.nc"
        ds.assign(**{c: ds[c] * factor for c in ("u", "v")}).assign_attrs().pipe(
            lambda d: d.assign(u=d.u.assign_attrs(units=units), v=d.v.assign_attrs(units=units))
        ).to_netcdf(name)
        np.testing.assert_allclose(columns(fk.io.read(name, dtype="float64")), columns(metres), rtol=1e-6, atol=1e-12)
    ds.assign(u=ds.u.assign_attrs(units="degC"), v=ds.v.assign_attrs(units="degC")).to_netcdf(tmp_path / "c.nc")
    with pytest.raises(ValueError, match=r"c\.nc: velocity 'u' has units 'degC', which is not a speed"):
        fk.io.read(tmp_path / "c.nc")


def test_fvcom_cartesian_run_and_daily_files_equal_one_file(tmp_path):
    _, _, x, y, *_ = _fvcom(tmp_path / "one.nc", cartesian=True, days=(0.0, 0.25, 0.5, 0.75))
    _fvcom(tmp_path / "day_1.nc", cartesian=True, days=(0.0, 0.25))
    _fvcom(tmp_path / "day_2.nc", cartesian=True, days=(0.5, 0.75))
    one = fk.io.read(tmp_path / "one.nc", dtype="float64")
    daily = fk.io.read(str(tmp_path / "day_*.nc"), dtype="float64")
    assert not one.spherical and float(one.bounds[1][0]) == 10000.0  # lon/lat all 0: the run's metres
    np.testing.assert_array_equal(columns(daily), columns(one))
    np.testing.assert_array_equal(np.asarray(daily.times), np.asarray(one.times))


# -- ADCIRC: a 2-D depth-averaged model in degrees ---------------------------------------------


def _adcirc(path):
    """A `fort.64.nc` as ADCIRC writes it: `mesh` topology, `element(nele, nvertex)` from 1,
    `x`/`y` in degrees, `u-vel`/`v-vel` per node with -99999 at dry nodes, and the scalar `neta`
    beside the dimension `neta` of its boundary nodes `nbdv` (which xarray cannot open as is)."""
    i, j, cells = _triangles(9, 7)
    lon, lat = -75.0 + 0.01 * i, 35.0 + 0.01 * j
    u = np.full((2, len(lon)), 0.3)
    u[:, 0] = -99999.0  # a dry corner node
    ds = xr.Dataset(
        {
            "mesh": (
                (),
                np.int32(1),
                {
                    "cf_role": "mesh_topology",
                    "topology_dimension": 2,
                    "node_coordinates": "x y",
                    "face_node_connectivity": "element",
                },
            ),
            "element": (
                ("nele", "nvertex"),
                (cells[:, ::-1] + 1).astype(np.int32),
                {"cf_role": "face_node_connectivity", "start_index": 1},
            ),
            "depth": ("node", np.full(len(lon), 8.0), {"standard_name": "depth_below_geoid", "units": "m"}),
            "u-vel": (
                ("time", "node"),
                u,
                {"long_name": "water column vertically averaged east/west velocity", "units": "m s-1"},
            ),
            "v-vel": (
                ("time", "node"),
                np.where(u < -1, u, 0.0),
                {"long_name": "water column vertically averaged north/south velocity", "units": "m s-1"},
            ),
        },
        coords={
            "x": ("node", lon, {"long_name": "longitude", "standard_name": "longitude", "units": "degrees_east"}),
            "y": ("node", lat, {"long_name": "latitude", "standard_name": "latitude", "units": "degrees_north"}),
            "time": ("time", [0.0, 3600.0], {"units": "seconds since 2008-08-01 00:00:00 +00:00"}),
        },
    )
    ds.to_netcdf(
        path, engine="h5netcdf", encoding={"u-vel": {"_FillValue": -99999.0}, "v-vel": {"_FillValue": -99999.0}}
    )
    with h5netcdf.File(path, "a") as f:  # ADCIRC's counts: scalars named as the dimensions they count
        f.dimensions["neta"] = 3
        f.create_variable("neta", (), "i4")[...] = 3
        f.create_variable("nbdv", ("neta",), "i4")[:] = [1, 2, 3]
    return lon, lat


def test_adcirc_depth_averaged_tracks_in_degrees_with_two_coordinates(tmp_path):
    lon, lat = _adcirc(tmp_path / "fort.64.nc")
    field = fk.io.read(tmp_path / "fort.64.nc", dtype="float64")
    assert field.dim == 2 and field.spherical
    np.testing.assert_array_equal(_velocity(field, 0.0, [lon[0], lat[0]]), [0.0, 0.0])  # dry: no velocity
    seeds = np.array([[-74.97, 35.03], [-74.95, 35.02]])
    traj = fk.track(field, seeds, 0.0, 3600.0, 600.0, dtype="float64")
    assert traj.positions.shape[-1] == 2 and np.all(traj.status[-1] == fk.Status.ACTIVE)
    expected = 0.3 * 3600.0 / (R * np.cos(np.deg2rad(seeds[:, 1]))) * 180 / np.pi
    np.testing.assert_allclose(traj.positions[-1, :, 0] - seeds[:, 0], expected, rtol=1e-6)
    np.testing.assert_allclose(traj.positions[-1, :, 1], seeds[:, 1], atol=1e-12)


def test_ugrid_errors_name_the_file_and_variable(tmp_path):
    _adcirc(tmp_path / "fort.64.nc")
    ds = xr.open_dataset(tmp_path / "fort.64.nc", drop_variables=["neta"]).load()
    ds.drop_vars("element").to_netcdf(tmp_path / "no_cells.nc")
    with pytest.raises(ValueError, match=r"no_cells\.nc: the face-node connectivity 'element'"):
        fk.io.read(tmp_path / "no_cells.nc")
    ds.drop_vars(["u-vel", "v-vel"]).to_netcdf(tmp_path / "no_velocity.nc")
    with pytest.raises(ValueError, match=r"no_velocity\.nc: no eastward velocity found .*velocity='u,v'"):
        fk.io.read(tmp_path / "no_velocity.nc")
    with pytest.raises(
        ValueError,
        match=r"fort\.64\.nc: unstructured \(UGRID: SCHISM, ADCIRC, Delft3D-FM\) output is read by its own "
        r"conventions; periodic",
    ):
        fk.io.read(tmp_path / "fort.64.nc", periodic=True)
