"""Ocean models whose output no public repository holds small enough to keep, read from files
written here in each model's documented layout: Delft3D-FM's UGRID map files (`mesh2d`, faces of
up to six corners, sigma layers), HYCOM's GOFS NetCDF (packed `water_u`, `water_v`) and MOM6's
symmetric C-grid (`xq`, `yh`, `zl` with layer thicknesses `h`)."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import flowkit as fk

_NODES = np.array(
    [[x, y] for y in (0.0, 1000.0, 2000.0) for x in (0.0, 1000.0, 2000.0)]
    + [[2600.0, -400.0], [3200.0, 0.0], [3200.0, 800.0], [2600.0, 1300.0]]
)
_FACES = np.array(
    [
        [1, 2, 5, 4, -999, -999],
        [2, 3, 6, 5, -999, -999],
        [4, 5, 8, 7, -999, -999],
        [5, 6, 9, 8, -999, -999],
        [3, 10, 11, 12, 13, 6],  # a hexagon
        [6, 13, 9, -999, -999, -999],
    ]
)


def _dfm_map(path: Path, layers: bool) -> None:
    """A Delft3D-FM map file as D-Flow FM writes it: `mesh2d` (UGRID-1.0), face velocities
    `mesh2d_ucx`, `mesh2d_ucy` (`time, mesh2d_nFaces[, mesh2d_nLayers]`); with layers, sigma
    layers bottom first, `mesh2d_ucz` on them and `mesh2d_ww1` on the interfaces (both upward),
    the depth average `mesh2d_ucxa`, and the water column `mesh2d_waterdepth`."""
    n_faces, times = len(_FACES), np.array([0.0, 3600.0])
    sigma = np.array([-0.875, -0.625, -0.375, -0.125])
    face_x = np.array([np.mean(_NODES[[n - 1 for n in f if n > 0], 0]) for f in _FACES])
    variables = {
        "mesh2d": (
            (),
            0,
            {
                "cf_role": "mesh_topology",
                "topology_dimension": 2,
                "node_coordinates": "mesh2d_node_x mesh2d_node_y",
                "face_node_connectivity": "mesh2d_face_nodes",
                "face_dimension": "mesh2d_nFaces",
                "face_coordinates": "mesh2d_face_x mesh2d_face_y",
                "layer_dimension": "mesh2d_nLayers",
            },
        ),
        "mesh1d": ((), 0, {"cf_role": "mesh_topology", "topology_dimension": 1, "node_coordinates": "n1_x n1_y"}),
        "mesh2d_node_x": (("mesh2d_nNodes",), _NODES[:, 0], {"units": "m", "standard_name": "projection_x_coordinate"}),
        "mesh2d_node_y": (("mesh2d_nNodes",), _NODES[:, 1], {"units": "m", "standard_name": "projection_y_coordinate"}),
        "mesh2d_face_x": (("mesh2d_nFaces",), face_x, {"units": "m"}),
        "mesh2d_face_nodes": (
            ("mesh2d_nFaces", "mesh2d_nMax_face_nodes"),
            _FACES,
            {"cf_role": "face_node_connectivity", "start_index": 1, "_FillValue": -999},
        ),
        "mesh2d_s1": (
            ("time", "mesh2d_nFaces"),
            np.zeros((2, n_faces)),
            {"standard_name": "sea_surface_height", "units": "m"},
        ),
    }
    if layers:
        uc = np.broadcast_to(0.1 * np.arange(1, 5), (2, n_faces, 4)).copy()
        variables |= {
            "mesh2d_layer_sigma": (
                ("mesh2d_nLayers",),
                sigma,
                {"standard_name": "ocean_sigma_coordinate", "units": ""},
            ),
            "mesh2d_ucx": (
                ("time", "mesh2d_nFaces", "mesh2d_nLayers"),
                uc,
                {"standard_name": "sea_water_x_velocity", "units": "m s-1"},
            ),
            "mesh2d_ucy": (
                ("time", "mesh2d_nFaces", "mesh2d_nLayers"),
                -uc,
                {"standard_name": "sea_water_y_velocity", "units": "m s-1"},
            ),
            "mesh2d_ucz": (
                ("time", "mesh2d_nFaces", "mesh2d_nLayers"),
                np.full((2, n_faces, 4), 1e-3),
                {"standard_name": "upward_sea_water_velocity", "units": "m s-1"},
            ),
            "mesh2d_ww1": (
                ("time", "mesh2d_nFaces", "mesh2d_nInterfaces"),
                np.full((2, n_faces, 5), 5.0),
                {"standard_name": "upward_sea_water_velocity", "units": "m s-1"},
            ),
            "mesh2d_ucxa": (
                ("time", "mesh2d_nFaces"),
                np.full((2, n_faces), 0.25),
                {"standard_name": "sea_water_x_velocity", "units": "m s-1"},
            ),
            "mesh2d_waterdepth": (
                ("time", "mesh2d_nFaces"),
                np.full((2, n_faces), 10.0),
                {"standard_name": "sea_floor_depth_below_sea_surface", "units": "m"},
            ),
        }
    else:
        variables |= {
            "mesh2d_ucx": (
                ("time", "mesh2d_nFaces"),
                np.full((2, n_faces), 0.3),
                {"standard_name": "sea_water_x_velocity", "units": "m s-1"},
            ),
            "mesh2d_ucy": (
                ("time", "mesh2d_nFaces"),
                np.full((2, n_faces), -0.2),
                {"standard_name": "sea_water_y_velocity", "units": "m s-1"},
            ),
        }
    ds = xr.Dataset(
        {name: (dims, np.asarray(values), attrs) for name, (dims, values, attrs) in variables.items()},
        coords={
            "time": ("time", times, {"units": "seconds since 2001-01-01 00:00:00 +00:00", "standard_name": "time"})
        },
        attrs={"Conventions": "CF-1.8 UGRID-1.0 Deltares-0.10", "source": "D-Flow FM 1.2.100.66357"},
    )
    ds.to_netcdf(path)


def test_delft3d_fm_map_faces_of_six_corners_and_its_time_zone(tmp_path):
    _dfm_map(tmp_path / "run_map.nc", layers=False)
    field = fk.io.read(tmp_path / "run_map.nc", dtype="float64")
    assert not field.spherical and field.time_origin.date == "2001-01-01T00:00:00"
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 3600.0])
    inside = jnp.array([[3100.0, 100.0], [2600.0, 1200.0], [500.0, 1500.0], [2100.0, 1800.0]])
    for point in inside:  # in the hexagon's corners and the other faces: uniform (0.3, -0.2)
        np.testing.assert_allclose(np.asarray(field(0.0, point)), [0.3, -0.2], rtol=1e-12)
    seeds = fk.seeding.random_inside(400, field, key=jax.random.key(0))
    assert (np.asarray(seeds)[:, 0] > 2600).sum() > 10  # the hexagon's part is seeded


def test_delft3d_fm_sigma_layers_take_the_layer_velocity_not_the_depth_average_and_w_on_layers(tmp_path):
    _dfm_map(tmp_path / "run_map.nc", layers=True)
    field = fk.io.read(tmp_path / "run_map.nc", dtype="float64")
    for depth, speed in ((1.25, 0.4), (3.75, 0.3), (6.25, 0.2), (8.75, 0.1)):  # -sigma x 10 m of water
        got = np.asarray(field(0.0, jnp.array([500.0, 500.0, depth])))
        np.testing.assert_allclose(got, [speed, -speed, -1e-3], rtol=1e-9)
    lo, hi = (np.asarray(b) for b in field.bounds)
    assert hi[2] == pytest.approx(10.0)
    ds = xr.open_dataset(tmp_path / "run_map.nc")
    ds = ds.drop_vars("mesh2d_layer_sigma").assign(
        mesh2d_layer_z=("mesh2d_nLayers", [-8.75, -6.25, -3.75, -1.25], {"standard_name": "altitude"})
    )
    ds.to_netcdf(tmp_path / "z_map.nc")
    ds.drop_vars(["mesh2d_ucz", "mesh2d_layer_z"]).assign(
        mesh2d_layer_sigma=(
            "mesh2d_nLayers",
            [-0.875, -0.625, -0.375, -0.125],
            {"standard_name": "ocean_sigma_coordinate"},
        )
    ).assign(
        mesh2d_ww1=(
            ("time", "mesh2d_nFaces", "mesh2d_nInterfaces"),
            np.broadcast_to([0.0, 1e-3, 2e-3, 3e-3, 4e-3], (2, 6, 5)).copy(),
            {"standard_name": "upward_sea_water_velocity"},
        )
    ).to_netcdf(tmp_path / "ww1_map.nc")
    field = fk.io.read(tmp_path / "ww1_map.nc", dtype="float64")  # w on the interfaces only: each layer their mean
    assert np.asarray(field(0.0, jnp.array([500.0, 500.0, 3.75])))[2] == pytest.approx(
        -2.5e-3
    )  # layer 2 of 4, bottom first
    with pytest.raises(ValueError, match=r"'mesh2d_layer_z': z-layers are not read, .*velocity='mesh2d_ucxa"):
        fk.io.read(tmp_path / "z_map.nc")
    field = fk.io.read(tmp_path / "z_map.nc", velocity="mesh2d_ucxa,mesh2d_ucxa")
    assert np.asarray(field(0.0, jnp.array([500.0, 500.0])))[0] == pytest.approx(0.25)


def _mom6_run(folder: Path, symmetric: bool = True) -> dict:
    """MOM6 output of a 10 x 8 grid turned 30° (`sin_rot`, `cos_rot`) with 3 layers `zl` of
    thickness 2, 0 (vanished) and 8 m: `u(I) = (0.1 + 0.01 I)(k + 1)`, `v(J) = 0.05 + 0.02 J` on
    the faces (`I = i + 1/2` east of h point `i`), and the static file beside it."""
    n_x, n_y, angle = 10, 8, np.deg2rad(30.0)
    i_faces = np.arange(-1 if symmetric else 0, n_x) + 0.5  # face I, in h-point index units
    j_faces = np.arange(-1 if symmetric else 0, n_y) + 0.5
    layer = np.arange(1, 4)[:, None, None]
    u = (0.1 + 0.01 * i_faces)[None, None, None, :] * layer[None] * np.ones((2, 3, n_y, 1))
    v = (0.05 + 0.02 * j_faces)[None, None, :, None] * np.ones((2, 3, 1, n_x))
    u[:, :, 0, :2] = np.nan  # h point (0, 0) is land: MOM6 leaves its faces missing
    v[:, :, :2, 0] = np.nan
    h = np.broadcast_to(np.array([2.0, 0.0, 8.0])[:, None, None], (2, 3, n_y, n_x)).copy()
    xq = "xq"
    output = xr.Dataset(
        {
            "u": (("Time", "zl", "yh", xq), u, {"units": "m s-1", "long_name": "Zonal velocity"}),
            "v": (("Time", "zl", "yq", "xh"), v, {"units": "m s-1", "long_name": "Meridional velocity"}),
            "h": (("Time", "zl", "yh", "xh"), h, {"units": "m", "long_name": "Layer Thickness"}),
        },
        coords={
            "Time": ("Time", [1.0, 1.5], {"units": "days since 0001-01-01 00:00:00", "calendar": "noleap"}),
            "zl": ("zl", [1025.0, 1026.0, 1027.0], {"units": "kg m-3", "long_name": "Layer Target Potential Density"}),
            "xh": ("xh", np.arange(n_x) * 0.1),
            "yh": ("yh", 40.0 + np.arange(n_y) * 0.1),
            "xq": ("xq", np.arange(len(i_faces)) * 0.1),
            "yq": ("yq", 40.0 + np.arange(len(j_faces)) * 0.1),
        },
    )
    lon, lat = np.meshgrid(np.arange(n_x) * 0.1, 40.0 + np.arange(n_y) * 0.1)
    geolon = lon * np.cos(angle) - (lat - 40.0) * np.sin(angle)
    geolat = 40.0 + lon * np.sin(angle) + (lat - 40.0) * np.cos(angle)
    wet = np.ones((n_y, n_x))
    wet[0, 0] = 0.0
    static = xr.Dataset(
        {
            "geolon": (("yh", "xh"), geolon),
            "geolat": (("yh", "xh"), geolat),
            "wet": (("yh", "xh"), wet),
            "sin_rot": (("yh", "xh"), np.full((n_y, n_x), np.sin(angle))),
            "cos_rot": (("yh", "xh"), np.full((n_y, n_x), np.cos(angle))),
        }
    )
    output.to_netcdf(folder / "ocean_hourly.nc")
    static.to_netcdf(folder / "ocean_static.nc")
    return dict(geolon=geolon, geolat=geolat, angle=angle)


@pytest.mark.parametrize("symmetric", [True, False])
def test_mom6_layers_placed_by_their_thickness_turned_by_sin_rot_with_the_static_file_beside(tmp_path, symmetric):
    run = _mom6_run(tmp_path, symmetric)
    field = fk.io.read(tmp_path / "ocean_hourly.nc", dtype="float64")
    assert field.time_origin.date == "0001-01-02T00:00:00" and field.time_origin.calendar == "noleap"
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 43200.0])
    cos, sin = np.cos(run["angle"]), np.sin(run["angle"])
    for j, i in ((3, 4), (7, 9), (5, 1)):
        v = 0.05 + 0.02 * j
        for depth, factor in (
            (1.0, 1),
            (6.0 + 2e-4, 3),
        ):  # layer centres: 1 m, and 2 + 0 + 4 m (the vanished one between)
            u = (0.1 + 0.01 * i) * factor
            lat = run["geolat"][j, i]
            got = np.asarray(field(0.0, jnp.array([run["geolon"][j, i], lat, depth])))
            metres = [got[0] * np.pi / 180 * 6_371_000.0 * np.cos(np.deg2rad(lat)), got[1] * np.pi / 180 * 6_371_000.0]
            np.testing.assert_allclose(metres, [cos * u + sin * v, -sin * u + cos * v], rtol=1e-6)
    assert np.asarray(field.beached_batch(jnp.array([[run["geolon"][0, 0], run["geolat"][0, 0], 1.0]])))[0]
    assert np.asarray(field.bounds[1])[2] == pytest.approx(10.0)


def test_mom6_without_thickness_or_with_two_velocities_is_refused_naming_them(tmp_path):
    _mom6_run(tmp_path)
    ds = xr.open_dataset(tmp_path / "ocean_hourly.nc", decode_times=False)
    ds.drop_vars("h").to_netcdf(tmp_path / "no_h.nc")
    with pytest.raises(ValueError, match=r"no_h\.nc: MOM6's layers 'zl' .* thickness 'h', which the file lacks"):
        fk.io.read([tmp_path / "no_h.nc", tmp_path / "ocean_static.nc"])
    ds.assign(uo=ds.u, vo=ds.v).to_netcdf(tmp_path / "both.nc")
    with pytest.raises(ValueError, match=r"'u' \(layers\) and 'uo' \(z-levels\) could each be MOM6's u"):
        fk.io.read([tmp_path / "both.nc", tmp_path / "ocean_static.nc"])


def test_hycom_gofs_packed_velocities_land_and_the_floor_read_through_the_cf_row(tmp_path):
    """GOFS 3.1 as HYCOM's THREDDS server subsets it: `water_u`, `water_v` packed in int16
    (scale 0.001, fill -30000), hours since 2000-01-01, longitudes 0-360, `tau` beside."""
    lon, lat = np.arange(262.0, 266.0, 0.08), np.arange(26.0, 28.0, 0.04)
    depth = np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0])
    hours = 24.0 * (np.datetime64("2024-06-01") - np.datetime64("2000-01-01")).astype(int) + np.array([0.0, 3.0])
    u = np.broadcast_to(0.3 - 0.01 * depth[None, :, None, None], (2, len(depth), len(lat), len(lon))).copy()
    v = np.full(u.shape, -0.1)
    for values in (u, v):
        values[:, :, :5, :5] = np.nan  # land
        values[:, 8:, 10:20, :] = np.nan  # the sea floor at 17.5 m there
    packed = dict(dtype="int16", scale_factor=0.001, add_offset=0.0, _FillValue=-30000)
    ds = xr.Dataset(
        {
            "water_u": (
                ("time", "depth", "lat", "lon"),
                u,
                {"standard_name": "eastward_sea_water_velocity", "units": "m/s"},
            ),
            "water_v": (
                ("time", "depth", "lat", "lon"),
                v,
                {"standard_name": "northward_sea_water_velocity", "units": "m/s"},
            ),
            "tau": (("time",), [0.0, 3.0], {"long_name": "Tau", "units": "hours since analysis"}),
        },
        coords={
            "time": ("time", hours, {"units": "hours since 2000-01-01 00:00:00", "calendar": "gregorian", "axis": "T"}),
            "depth": ("depth", depth, {"standard_name": "depth", "units": "m", "positive": "down", "axis": "Z"}),
            "lat": ("lat", lat, {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"}),
            "lon": (
                "lon",
                lon,
                {"standard_name": "longitude", "units": "degrees_east", "modulo": "360 degrees", "axis": "X"},
            ),
        },
        attrs={"source": "HYCOM archive file", "Conventions": "CF-1.0 NAVO_netcdf_v1.1"},
    )
    ds.to_netcdf(tmp_path / "gofs.nc", encoding={"water_u": packed, "water_v": packed})
    field = fk.io.read(tmp_path / "gofs.nc", dtype="float64")
    assert field.time_origin.date == "2024-06-01T00:00:00"
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 10800.0])
    lat0 = 27.0
    got = np.asarray(field(0.0, jnp.array([264.0, lat0, 5.0])))
    metres = got[0] * np.pi / 180 * 6_371_000.0 * np.cos(np.deg2rad(lat0))
    assert metres == pytest.approx(0.3 - 0.05, abs=1e-3)  # unpacked: 0.001 m/s steps
    assert np.asarray(field.beached_batch(jnp.array([[262.1, 26.1, 1.0]])))[0]
