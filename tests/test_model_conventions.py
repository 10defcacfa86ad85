"""Conventions the models' manuals define that none of the real files here happens to use, each
in a small file written to the manual's layout (the section named in each test): a Cartesian
ROMS grid, ROMS files with only surface or depth-averaged currents, POP's B-grid in cm/s, WRF on
a Lambert conformal grid (turned by its cone, or by COSALPHA/SINALPHA), NEMO without units."""

import shutil

import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import flowkit as fk

R = 6_371_000.0


def _mps(field, x, u):
    """A field's horizontal velocity at `x` in m/s (degrees per second on a sphere)."""
    u = np.asarray(u, float)
    if not field.spherical:
        return u[:2]
    return np.array([u[0] * np.pi / 180 * R * np.cos(np.deg2rad(x[1])), u[1] * np.pi / 180 * R])


def _roms_cartesian(flag) -> xr.Dataset:
    """ROMS on a Cartesian grid (ROMS wiki, "Grid Generation": `spherical` F, `x_rho`/`y_rho`
    in metres), s-levels by Vtransform 2 (wiki "Vertical S-coordinate"), u and v on their
    staggered points; u = 1e-5 x, v = -2e-5 y (exact between faces)."""
    n_eta, n_xi, n_s = 6, 8, 4
    x = np.arange(n_xi) * 1000.0
    y = np.arange(n_eta) * 800.0
    xr_, yr_ = np.meshgrid(x, y)
    xu, yv = 0.5 * (x[:-1] + x[1:]), 0.5 * (y[:-1] + y[1:])
    s = (np.arange(n_s) - n_s + 0.5) / n_s
    u = np.broadcast_to(1e-5 * xu, (1, n_s, n_eta, n_xi - 1)).copy()
    v = np.broadcast_to(-2e-5 * yv[:, None], (1, n_s, n_eta - 1, n_xi)).copy()
    return xr.Dataset(
        {
            "spherical": ((), flag),
            "x_rho": (("eta_rho", "xi_rho"), xr_),
            "y_rho": (("eta_rho", "xi_rho"), yr_),
            "h": (("eta_rho", "xi_rho"), np.full((n_eta, n_xi), 50.0)),
            "mask_rho": (("eta_rho", "xi_rho"), np.ones((n_eta, n_xi))),
            "angle": (("eta_rho", "xi_rho"), np.zeros((n_eta, n_xi))),
            "Cs_r": (("s_rho",), s),
            "hc": ((), 10.0),
            "Vtransform": ((), 2),
            "zeta": (("ocean_time", "eta_rho", "xi_rho"), np.zeros((1, n_eta, n_xi))),
            "u": (("ocean_time", "s_rho", "eta_u", "xi_u"), u, {"units": "meter second-1"}),
            "v": (("ocean_time", "s_rho", "eta_v", "xi_v"), v, {"units": "meter second-1"}),
        },
        coords={"s_rho": ("s_rho", s), "ocean_time": ("ocean_time", [0.0], {"units": "seconds since 2020-01-01"})},
        attrs={"type": "ROMS/TOMS history file"},
    )


@pytest.mark.parametrize("flag", [0, np.bytes_("F")])
def test_a_cartesian_roms_grid_is_read_in_metres(tmp_path, flag):
    _roms_cartesian(flag).to_netcdf(tmp_path / "his.nc")
    field = fk.io.read(tmp_path / "his.nc", dtype="float64")
    assert not field.spherical
    for x, y in ((3000.0, 1600.0), (5000.0, 2400.0)):
        depth = 50.0 * 0.375  # the top level: -(h + zeta) s with C = s at hc = 10
        u = np.asarray(field(0.0, jnp.asarray([x, y, depth])))
        np.testing.assert_allclose(u[:2], [1e-5 * x, -2e-5 * y], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("names", [("u_sur", "v_sur"), ("ubar", "vbar")])
def test_a_roms_file_of_surface_or_depth_averaged_currents_is_a_2d_field(tmp_path, names):
    """ROMS' `u_sur`/`v_sur` (surface) and `ubar`/`vbar` (vertically integrated, ROMS wiki
    "varinfo.dat") on the u and v points: a 2-D field, each rho point the mean of its faces."""
    ds = _roms_cartesian(0)
    lon, lat = 10 + ds.x_rho.values / 1e5, 50 + ds.y_rho.values / 1e5
    surface = xr.Dataset(
        {
            "lon_rho": (("eta_rho", "xi_rho"), lon, {"units": "degree_east"}),
            "lat_rho": (("eta_rho", "xi_rho"), lat, {"units": "degree_north"}),
            "h": ds.h,
            "mask_rho": ds.mask_rho,
            "angle": ds.angle,
            names[0]: (("ocean_time", "eta_u", "xi_u"), ds.u.values[:, -1] * 1e4, {"units": "meter second-1"}),
            names[1]: (("ocean_time", "eta_v", "xi_v"), ds.v.values[:, -1] * 1e4, {"units": "meter second-1"}),
        },
        coords={"ocean_time": ds.ocean_time},
        attrs={"type": "ROMS/TOMS history file"},
    )
    surface.to_netcdf(tmp_path / "surface.nc")
    field = fk.io.read(tmp_path / "surface.nc", dtype="float64")
    assert field.dim == 2 and field.spherical
    j, i = 2, 3
    x = jnp.asarray([lon[j, i], lat[j, i]])
    np.testing.assert_allclose(
        _mps(field, np.asarray(x), field(0.0, x)),
        [0.1 * ds.x_rho.values[j, i], -0.2 * ds.y_rho.values[j, i]],
        rtol=1e-9,
    )


def _pop(times=True) -> xr.Dataset:
    """A POP history file (POP Reference Manual, ch. 3 "Grid": the B-grid, UVEL and VVEL at the
    U points; CESM's history fields in cm/s, z_t and dz in cm, KMU the U columns' wet levels)
    on a grid turned 20° from east, holding an eastward 0.3 m/s, northward 0.1 m/s current."""
    theta = np.deg2rad(20.0)
    j, i = np.meshgrid(np.arange(10.0), np.arange(14.0), indexing="ij")
    lon = 200 + 0.5 * (i * np.cos(theta) - j * np.sin(theta))
    lat = 10 + 0.5 * (i * np.sin(theta) + j * np.cos(theta))
    east, north = 30.0, 10.0  # cm/s
    u = east * np.cos(theta) + north * np.sin(theta)
    v = -east * np.sin(theta) + north * np.cos(theta)
    kmu = np.full(lon.shape, 3)
    kmu[:, :3] = 0  # a coast along the west
    kmu[5, 8] = 1  # a shallow column
    levels = np.arange(3)[None, :, None, None] < kmu[None, None]
    uvel = np.where(levels, u, np.nan) * np.ones((2, 3) + lon.shape)
    vvel = np.where(levels, v, np.nan) * np.ones((2, 3) + lon.shape)
    dims = ("time", "z_t", "nlat", "nlon")
    ds = xr.Dataset(
        {
            "UVEL": (dims, uvel, {"units": "centimeter/s", "coordinates": "ULONG ULAT z_t time"}),
            "VVEL": (dims, vvel, {"units": "centimeter/s", "coordinates": "ULONG ULAT z_t time"}),
            "ULONG": (("nlat", "nlon"), lon, {"units": "degrees_east"}),
            "ULAT": (("nlat", "nlon"), lat, {"units": "degrees_north"}),
            "ANGLE": (("nlat", "nlon"), np.full(lon.shape, theta), {"units": "radians"}),
            "KMU": (("nlat", "nlon"), kmu),
            "dz": (("z_t",), np.full(3, 1000.0), {"units": "centimeters"}),
        },
        coords={
            "z_t": ("z_t", [500.0, 1500.0, 2500.0], {"units": "centimeters"}),
            "time": ("time", [730.0, 731.0], {"units": "days since 0000-01-01 00:00:00", "calendar": "noleap"}),
        },
        attrs={"title": "g.e21.G1850ECO", "source": "CCSM POP2, the CCSM Ocean Component"},
    )
    return ds if times else ds.isel(time=0, drop=True)


def test_pop_b_grid_velocities_in_cm_per_s_are_turned_and_converted(tmp_path):
    ds = _pop()
    ds.to_netcdf(tmp_path / "pop.nc")
    field = fk.io.read(tmp_path / "pop.nc", dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 86400.0])
    assert field.time_origin.calendar == "noleap"
    for j, i, depth in ((4, 6, 5.0), (7, 10, 20.0), (2, 12, 12.0)):
        x = np.array([ds.ULONG.values[j, i], ds.ULAT.values[j, i], depth])
        np.testing.assert_allclose(_mps(field, x, field(3600.0, jnp.asarray(x))), [0.3, 0.1], rtol=1e-9)
    land = np.array([[ds.ULONG.values[4, 1], ds.ULAT.values[4, 1], 5.0]])
    shallow = np.array([[ds.ULONG.values[5, 8], ds.ULAT.values[5, 8], 25.0]])  # below its one wet level
    assert not fk.seeding.in_flow(field, land, 0.0)[0]
    assert not fk.seeding.in_flow(field, shallow, 0.0)[0]


def test_pop_files_without_a_time_axis(tmp_path):
    """A time-mean written without `time`: one file is a steady field; several, with no time
    to order them by, are refused in one line naming them."""
    for name in ("a.nc", "b.nc"):
        _pop(times=False).to_netcdf(tmp_path / name)
    steady = fk.io.read(tmp_path / "a.nc")
    assert steady.times is None
    with pytest.raises(ValueError, match=r"a\.nc, .*b\.nc: written without a time"):
        fk.io.read([tmp_path / "a.nc", tmp_path / "b.nc"])


def _wrf_lambert(alpha_variables: bool) -> tuple[xr.Dataset, np.ndarray, np.ndarray]:
    """A `wrfout` on a Lambert conformal grid (WRF ARW User's Guide, "Map projections":
    MAP_PROJ 1, TRUELAT1/2, STAND_LON; WRF's sphere of 6370 km) whose 10 m wind blows 10 m/s
    east everywhere: along the grid, that is the direction of each parallel in projected
    coordinates (worked out here by finite differences of pyproj's projection)."""
    import pyproj

    lcc = pyproj.Proj(proj="lcc", lat_1=30, lat_2=60, lat_0=40, lon_0=-100, R=6_370_000)
    x, y = np.meshgrid(np.arange(-6e5, 6.01e5, 1e5), np.arange(-4e5, 4.01e5, 1e5))
    lon, lat = lcc(x, y, inverse=True)
    ahead, behind = lcc(lon + 1e-4, lat), lcc(lon - 1e-4, lat)
    dx, dy = ahead[0] - behind[0], ahead[1] - behind[1]
    norm = np.hypot(dx, dy)
    ex, ey = dx / norm, dy / norm  # east, in the grid's axes
    times = np.array([b"2020-01-01_00:00:00", b"2020-01-01_03:00:00"])
    dims = ("Time", "south_north", "west_east")
    data = {
        "Times": (("Time",), times),
        "XLONG": (dims, np.repeat(lon[None], 2, 0), {"units": "degree_east"}),
        "XLAT": (dims, np.repeat(lat[None], 2, 0), {"units": "degree_north"}),
        "U10": (dims, np.repeat(10 * ex[None], 2, 0), {"units": "m s-1"}),
        "V10": (dims, np.repeat(10 * ey[None], 2, 0), {"units": "m s-1"}),
    }
    if alpha_variables:  # WRF's own: earth u = u COSALPHA - v SINALPHA
        data["COSALPHA"] = (dims, np.repeat(ex[None], 2, 0))
        data["SINALPHA"] = (dims, np.repeat(-ey[None], 2, 0))
    attrs = {"MAP_PROJ": 1, "TRUELAT1": 30.0, "TRUELAT2": 60.0, "STAND_LON": -100.0, "TITLE": "OUTPUT FROM WRF"}
    return xr.Dataset(data, attrs=attrs), lon, lat


@pytest.mark.parametrize("alpha_variables", [False, True])
def test_wrf_winds_on_a_lambert_grid_are_turned_to_east_and_north(tmp_path, alpha_variables):
    ds, lon, lat = _wrf_lambert(alpha_variables)
    ds.to_netcdf(tmp_path / "wrfout_d01_2020-01-01_00:00:00")  # named as WRF names it: no suffix
    field = fk.io.read(tmp_path / "wrfout_d01_*", dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 10800.0])
    for j, i in ((2, 3), (6, 10), (1, 11)):
        x = np.array([lon[j, i], lat[j, i]])
        np.testing.assert_allclose(_mps(field, x, field(0.0, jnp.asarray(x))), [10.0, 0.0], atol=1e-3)


def test_a_nemo_velocity_without_units_is_taken_as_metres_per_second_with_a_warning(tmp_path, caplog):
    """NEMO's XIOS writes `units` on uo and vo (NEMO manual, "Output of diagnostics"); a file
    cut without them is read as m/s, warned."""
    from test_nemo import NEMO

    for path in sorted(NEMO.glob("ORCA*.nc")):
        ds = xr.open_dataset(path)
        for name in ("uo", "vo"):
            if name in ds:
                ds[name].attrs.pop("units", None)
        ds.to_netcdf(tmp_path / path.name)
    shutil.copy(NEMO / "coordinates.nc", tmp_path / "coordinates.nc")
    with caplog.at_level("WARNING", logger="flowkit"):
        fk.io.read(str(tmp_path / "*.nc"))
    assert "velocity 'uo' has no units: taken as m/s" in caplog.text


def test_a_decomposed_openfoam_case_whose_top_level_holds_only_0_is_read_from_its_processors(tmp_path, caplog):
    """OpenFOAM User Guide, "Running applications in parallel": `decomposePar` leaves the
    mesh and `0/` at the top level and each processor's share in `processor*/`, where a
    parallel run writes its times; not reconstructed, the processors hold the flow."""
    from foam import write_case

    flow = lambda t, x: np.stack([1.0 + t + 0 * x[..., 0], 0 * x[..., 1], 0 * x[..., 2]], axis=-1)  # noqa: E731
    root = write_case(tmp_path / "case", flow, times=(0.0, 0.5, 1.0), processors=2)
    write_case(root, flow, times=(0.0,))  # the top level as decomposePar left it: mesh and 0/ only
    with caplog.at_level("INFO", logger="flowkit"):
        field = fk.io.read(root, dtype="float64")
    assert "the decomposed case (2 processor*/ shares, times up to 1) read" in caplog.text
    np.testing.assert_array_equal(np.asarray(field.times), [0.5, 1.0])
    np.testing.assert_allclose(np.asarray(field(1.0, jnp.asarray([0.5, 0.5, 0.5])))[0], 2.0, rtol=1e-9)


def test_a_dflowfm_map_with_a_1d_network_beside_its_2d_mesh_tracks_the_2d_mesh(tmp_path, caplog):
    """D-Flow FM's 1D2D map files (D-Flow FM User Manual, "Map file": UGRID topologies
    `mesh1d`, `topology_dimension = 1`, beside `mesh2d`): the 2-D mesh is tracked, and said."""
    from test_real_corpus import REAL

    path = REAL / "dflowfm_simplebox_hex7/simplebox_hex7_map.nc"
    if not path.exists():
        pytest.skip("the corpus ../shared/data/real is not beside this checkout")
    ds = xr.open_dataset(path)
    network = {
        "mesh1d": (
            (),
            0,
            {
                "cf_role": "mesh_topology",
                "topology_dimension": 1,
                "node_coordinates": "mesh1d_node_x mesh1d_node_y",
                "edge_node_connectivity": "mesh1d_edge_nodes",
            },
        ),
        "mesh1d_node_x": (("mesh1d_nNodes",), [0.0, 500.0, 900.0]),
        "mesh1d_node_y": (("mesh1d_nNodes",), [-50.0, -50.0, -80.0]),
        "mesh1d_edge_nodes": (("mesh1d_nEdges", "Two"), [[0, 1], [1, 2]], {"start_index": 0}),
        "mesh1d_u1": (("time", "mesh1d_nEdges"), np.ones((ds.sizes["time"], 2)), {"units": "m s-1"}),
    }
    ds.assign(network).to_netcdf(tmp_path / "net_map.nc")
    with caplog.at_level("INFO", logger="flowkit"):
        both = fk.io.read(tmp_path / "net_map.nc", dtype="float64")
    assert "the 2-D mesh 'mesh2d' is tracked; beside it 'mesh1d' (1-D)" in caplog.text
    alone = fk.io.read(path, dtype="float64")
    x = jnp.asarray([700.0, 800.0])
    assert np.all(np.isfinite(np.asarray(alone(60.0, x))))
    np.testing.assert_array_equal(np.asarray(both(60.0, x)), np.asarray(alone(60.0, x)))
