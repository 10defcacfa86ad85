"""Ocean model grids beyond the regular A-grid: Arakawa C-grids (MITgcm's layout, u on x faces and
v on y faces), written here with xarray from closed-form flows and read by `fk.io.read`."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from test_vtk import SHARED

import flowkit as fk

R = 6_371_000.0


def _mitgcm(u_of, v_of, xg, yg, *, spherical=True, times=None):
    """A C-grid in MITgcm's layout: `U(YC, XG)` on the west faces, `V(YG, XC)` on the south faces,
    `u_of(x, y)`/`v_of(x, y)` evaluated at those faces; NaN where they return NaN."""
    xc, yc = xg + 0.5 * (xg[1] - xg[0]), yg + 0.5 * (yg[1] - yg[0])
    unit_x, unit_y = ("degrees_east", "degrees_north") if spherical else ("m", "m")
    coords = {
        "XG": ("XG", xg, {"units": unit_x, "axis": "X", "c_grid_axis_shift": -0.5}),
        "XC": ("XC", xc, {"units": unit_x, "axis": "X"}),
        "YG": ("YG", yg, {"units": unit_y, "axis": "Y", "c_grid_axis_shift": -0.5}),
        "YC": ("YC", yc, {"units": unit_y, "axis": "Y"}),
    }
    u = u_of(xg[None, :], yc[:, None]) * np.ones((len(yc), len(xg)))
    v = v_of(xc[None, :], yg[:, None]) * np.ones((len(yg), len(xc)))
    dims_u, dims_v = ("YC", "XG"), ("YG", "XC")
    if times is not None:
        coords["time"] = ("time", np.asarray(times, float), {"units": "days since 2024-01-01"})
        u, v = np.broadcast_to(u, (len(times),) + u.shape), np.broadcast_to(v, (len(times),) + v.shape)
        dims_u, dims_v = ("time",) + dims_u, ("time",) + dims_v
    return xr.Dataset({"UVEL": (dims_u, u, {"units": "m/s"}), "VVEL": (dims_v, v, {"units": "m/s"})}, coords=coords)


def test_a_c_grid_is_exact_for_a_uniform_flow_and_at_its_faces(tmp_path):
    """Cartesian C-grid: a uniform flow is reproduced everywhere; every face value is returned at
    its face centre; inside a cell u is linear in x and constant in y, as Parcels does."""
    xg, yg = np.linspace(0.0, 10.0, 11), np.linspace(0.0, 5.0, 6)
    _mitgcm(lambda x, y: 0.3 + 0 * x, lambda x, y: -0.2 + 0 * y, xg, yg, spherical=False).to_netcdf(
        tmp_path / "uniform.nc"
    )
    field = fk.io.read(tmp_path / "uniform.nc", velocity="UVEL,VVEL", dtype="float64")
    assert field.staggering == "C" and not field.spherical
    points = np.random.default_rng(0).uniform([0.0, 0.25], [9.6, 5.0], (200, 2))
    np.testing.assert_allclose(
        np.asarray(fk.track(field, points, 0.0, 1.0, 0.5, dtype="float64").positions[-1]),
        points + [0.3, -0.2],
        atol=1e-12,
    )

    ds = _mitgcm(lambda x, y: x * x + y, lambda x, y: np.sin(x) * y, xg, yg, spherical=False)
    ds.to_netcdf(tmp_path / "shear.nc")
    field = fk.io.read(tmp_path / "shear.nc", velocity="UVEL,VVEL", dtype="float64")
    for i, x in enumerate(xg[1:-1], 1):  # interior west faces, centred in their row
        for j, y in enumerate(ds.YC.values[:-1]):
            assert float(field(0.0, jnp.array([x, y]))[0]) == pytest.approx(ds.UVEL.values[j, i], abs=1e-12)
    x, y = 3.25, 2.9  # a quarter of the way across cell (3, 2): linear in x between its faces, constant in y
    assert float(field(0.0, jnp.array([x, y]))[0]) == pytest.approx(0.75 * (9 + 2.5) + 0.25 * (16 + 2.5), abs=1e-12)


def test_solid_body_rotation_on_a_c_grid_stays_on_its_discrete_streamline():
    """u = -y, v = x sampled on the faces: the interpolated field is exactly divergence-free, so a
    particle circles on a closed curve within half a cell of its circle, and comes back."""
    xg = yg = np.linspace(-1.0, 1.0, 41)
    field = fk.io.from_xarray(
        _mitgcm(lambda x, y: -y + 0 * x, lambda x, y: x + 0 * y, xg, yg, spherical=False), dtype="float64"
    )
    seeds = np.array([[0.5, 0.0], [0.0, -0.73], [0.61, 0.3]])
    traj = fk.track(field, seeds, 0.0, 2 * np.pi, 0.005, save_every=20, dtype="float64")
    radius = np.linalg.norm(traj.positions, axis=-1)
    h = xg[1] - xg[0]
    assert np.all(np.abs(radius - np.linalg.norm(seeds, axis=-1)) <= 0.5 * h)
    assert np.all(np.linalg.norm(traj.positions[-1] - seeds, axis=-1) < h)


def test_a_spherical_c_grid_keeps_its_meridional_flux_and_a_zonal_jet_exact(tmp_path):
    """On a lon/lat C-grid: a zonal jet u = U cos(lat) laps at the closed-form rate on every
    latitude; v carries its faces' flux, v cos(lat) linear between the two faces."""
    xg, yg = np.arange(0.0, 360.0, 2.0), np.arange(-60.0, 61.0, 2.0)
    ds = _mitgcm(lambda x, y: 5.0 * np.cos(np.deg2rad(y)), lambda x, y: 0.0 * x * y, xg, yg, times=[0.0, 10.0])
    ds.to_netcdf(tmp_path / "jet.nc")
    field = fk.io.read(tmp_path / "jet.nc", dtype="float64")
    assert field.spherical and field.staggering == "C" and field.periodic == (True, False)
    seeds = np.array([[1.0, 1.0], [358.5, 41.0], [100.0, -45.0]])
    days = 8.0
    traj = fk.track(field, seeds, 0.0, days * 86400, 3600.0, dtype="float64")
    laps = 5.0 * days * 86400 / (2 * np.pi * R) * 360  # degrees of longitude, every latitude alike
    np.testing.assert_allclose((traj.positions[-1, :, 0] - seeds[:, 0] - laps + 180) % 360 - 180, 0, atol=1e-8)
    np.testing.assert_allclose(traj.positions[-1, :, 1], seeds[:, 1], atol=1e-12)

    flux = _mitgcm(lambda x, y: 0.0 * x * y, lambda x, y: 1.0 + 0 * x * y, xg, yg)
    field = fk.io.from_xarray(flux, dtype="float64")
    lat = 31.0  # halfway between the faces at 30 and 32
    expected = 0.5 * (np.cos(np.deg2rad(30.0)) + np.cos(np.deg2rad(32.0))) / np.cos(np.deg2rad(lat))
    assert float(field(0.0, jnp.array([11.0, lat]))[1]) * R * np.pi / 180 == pytest.approx(expected, rel=1e-12)


def test_c_grid_land_cells_carry_no_flux_and_seeds_there_start_beached(tmp_path):
    """Cells whose every face is NaN are land. The coast face carries no flux, so a particle
    driven at the coast slows (u linear from 1 to 0 across the last wet cell: 8 - x = e^-(t - t_7))
    and never crosses it; no NaN enters a step; a seed in a land cell starts BEACHED."""
    xg, yg = np.linspace(0.0, 10.0, 11), np.linspace(0.0, 4.0, 5)
    ds = _mitgcm(
        lambda x, y: np.where(x > 7, np.nan, 1.0) + 0 * y,
        lambda x, y: np.where(x > 7, np.nan, 0.0) + 0 * y,
        xg,
        yg,
        spherical=False,
    )
    ds.to_netcdf(tmp_path / "coast.nc")
    field = fk.io.read(tmp_path / "coast.nc", dtype="float64")
    assert field.land is not None and np.asarray(field.land)[8:10, :4].all() and not np.asarray(field.land)[:8].any()
    traj = fk.track(field, np.array([[1.0, 0.5], [2.0, 3.5], [8.5, 1.5]]), 0.0, 12.0, 0.05, dtype="float64")
    assert traj.status[-1].tolist() == [fk.Status.ACTIVE, fk.Status.ACTIVE, fk.Status.BEACHED]
    assert np.all(np.isfinite(traj.positions)) and traj.exit_time[2] == 0.0
    np.testing.assert_allclose(8.0 - traj.positions[-1, :2, 0], np.exp(-np.array([12.0 - 6.0, 12.0 - 5.0])), rtol=1e-5)


def test_grids_that_are_neither_a_nor_c_are_named(tmp_path):
    xg, yg = np.linspace(0.0, 10.0, 11), np.linspace(0.0, 4.0, 5)
    ds = _mitgcm(lambda x, y: 1.0 + 0 * x, lambda x, y: 0.0 * x, xg, yg, spherical=False)
    bad = ds.assign(VVEL=(("YC", "XG"), np.zeros((len(yg), len(xg)))), V2=(("YG", "XG"), np.zeros((len(yg), len(xg)))))
    with pytest.raises(ValueError, match="neither on the same grid nor on a C-grid"):
        fk.io.from_xarray(bad, u="UVEL", v="V2")
    shifted = ds.assign_coords(XC=ds.XC + 0.5)  # centres on the faces: no cell holds exactly one
    with pytest.raises(ValueError, match="C-grid x axis"):
        fk.io.from_xarray(shifted)


def _rotated(theta_deg: float, n: int = 31, h: float = 0.2, depth=None):
    """A ROMS-style curvilinear grid: 2-D `lon_rho`/`lat_rho` over `(eta_rho, xi_rho)`, its x
    axis turned `theta_deg` from east, with the grid-relative velocity of a flow linear in
    lon/lat (m/s) and its `angle`; also that flow as functions."""
    theta = np.deg2rad(theta_deg)
    j, i = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    lon = 10.0 + h * (i * np.cos(theta) - j * np.sin(theta))
    lat = 40.0 + h * (i * np.sin(theta) + j * np.cos(theta))
    east = lambda lo, la: 0.5 + 0.04 * (lo - 10) - 0.03 * (la - 40)  # noqa: E731
    north = lambda lo, la: -0.2 + 0.02 * (lo - 10) + 0.05 * (la - 40)  # noqa: E731
    ue, vn = east(lon, lat), north(lon, lat)
    u, v = ue * np.cos(theta) + vn * np.sin(theta), -ue * np.sin(theta) + vn * np.cos(theta)
    dims = ("eta_rho", "xi_rho")
    if depth is not None:
        u, v = np.repeat(u[None], len(depth), 0), np.repeat(v[None], len(depth), 0)
        dims = ("zt",) + dims
    data = {
        "u": (dims, u, {"units": "m s-1"}),
        "v": (dims, v, {"units": "m s-1"}),
        "angle": (dims[-2:], np.full(lon.shape, theta), {"units": "radians"}),
    }
    coords = {
        "lon_rho": (dims[-2:], lon, {"units": "degrees_east"}),
        "lat_rho": (dims[-2:], lat, {"units": "degrees_north"}),
    }
    if depth is not None:
        data["w"] = (dims, np.full(u.shape, 1e-3), {"units": "m s-1"})
        coords["zt"] = ("zt", np.asarray(depth, float), {"positive": "down", "units": "m"})
    return xr.Dataset(data, coords=coords), east, north


def test_a_rotated_curvilinear_grid_equals_the_same_flow_on_a_regular_grid(tmp_path):
    """A flow linear in lon/lat is reproduced exactly by both grids (bilinear on the rotated
    grid's parallelogram cells, multilinear on the regular one), so particles tracked through
    the rotated ROMS-style file, its grid-relative velocities turned back by `angle`, follow
    the regular grid's paths to round-off."""
    ds, east, north = _rotated(30.0)
    ds.to_netcdf(tmp_path / "roms.nc")
    field = fk.io.read(tmp_path / "roms.nc", dtype="float64")
    assert isinstance(field, fk.fields.CurvilinearField) and field.spherical
    lon, lat = np.arange(6.0, 15.01, 0.25), np.arange(39.0, 47.01, 0.25)
    lo, la = np.meshgrid(lon, lat, indexing="ij")
    regular = fk.GridField.from_arrays(
        np.stack([east(lo, la), north(lo, la)], -1), [lon, lat], spherical=True, dtype="float64"
    )
    seeds = np.array([[11.1, 44.1], [10.5, 42.0], [12.0, 43.0]])
    at = jnp.asarray(seeds[0])
    np.testing.assert_allclose(np.asarray(field(0.0, at)), np.asarray(regular(0.0, at)), rtol=1e-12)
    ours = fk.track(field, seeds, 0.0, 2 * 86400.0, "1h", dtype="float64")
    theirs = fk.track(regular, seeds, 0.0, 2 * 86400.0, "1h", dtype="float64")
    assert np.all(ours.status == fk.Status.ACTIVE) and np.ptp(ours.positions[:, :, 1]) > 0.3
    np.testing.assert_allclose(ours.positions, theirs.positions, atol=1e-9)
    leaving = fk.track(
        field, np.array([[10.05, 40.3]]), 0.0, 86400.0, 3600.0, dtype="float64"
    )  # carried over the grid's edge j = 0
    assert leaving.status[-1, 0] == fk.Status.OUT_OF_DOMAIN and 0 < leaving.exit_time[0] < 86400.0


def test_curvilinear_depth_levels_and_land(tmp_path):
    """Over depth levels (a vertical axis known only by its `positive` attribute) the grid is a
    mesh of hexahedra: an upward w raises particles (depth positive down), and NaN nodes are
    land on which particles beach."""
    ds, _, _ = _rotated(-20.0, n=11, depth=[0.0, 50.0, 400.0])
    uo = ds.u.values.copy()
    uo[:, :, 8:] = np.nan  # the last three columns of xi: land
    ds = ds.assign(u=(ds.u.dims, uo, ds.u.attrs))
    field = fk.io.from_xarray(ds, dtype="float64")
    assert field.dim == 3 and field.mesh.kinds == ("hexahedron",) and field.land is not None
    seeds = np.array([[11.3, 40.4, 100.0], [10.2, 40.2, 300.0]])
    traj = fk.track(field, seeds, 0.0, 86400.0, 3600.0, dtype="float64")
    assert np.isfinite(traj.positions).all()
    assert traj.status[-1].tolist() == [fk.Status.BEACHED, fk.Status.ACTIVE]
    np.testing.assert_allclose(traj.positions[-1, 1, 2], 300.0 - 86.4, rtol=1e-9)  # w = 1 mm/s up


def test_density_per_area_is_flat_for_particles_uniform_on_the_sphere(tmp_path):
    """Points uniform per area, binned on 10° cells: counts fall toward the poles, counts per km²
    do not (within the noise), and the map is drawn with the land."""
    rng = np.random.default_rng(4)
    n = 200_000
    positions = np.stack([rng.uniform(-180, 180, n), np.rad2deg(np.arcsin(rng.uniform(-1, 1, n)))], -1)
    traj = fk.Trajectory(
        times=np.zeros(1),
        positions=positions[None],
        status=np.zeros((1, n), np.int8),
        t_release=np.zeros(n),
        exit_time=np.full(n, np.inf),
    )
    bounds = ([-180.0, -90.0], [180.0, 90.0])
    counts = fk.analysis.histogram(traj, (36, 18), bounds, frames=[0])[0]
    assert counts[:, 0].mean() < 0.2 * counts[:, 9].mean()
    density = fk.analysis.per_area(counts, bounds)
    expected = n / (4 * np.pi * (R / 1e3) ** 2)
    cell_counts = counts * expected / density  # what each cell should hold
    assert np.all(np.abs(counts - cell_counts) < 5 * np.sqrt(cell_counts))  # a polar cell holds ~40
    assert abs(density.mean() / expected - 1) < 0.01
    land = np.zeros((36, 18), bool)
    land[18:22, 8:11] = True
    field = fk.GridField.from_arrays(
        np.where(land[..., None], np.nan, 0.1) * np.ones((36, 18, 2)),
        [np.arange(-175.0, 180.0, 10.0), np.arange(-85.0, 90.0, 10.0)],
        periodic=(360.0, False),
        spherical=True,
        land=land,
    )
    assert fk.analysis.plot_density(counts, bounds, tmp_path / "density.png", field=field).stat().st_size > 10_000


def test_a_curvilinear_series_streamed_equals_it_in_memory(tmp_path):
    """Three daily slices (the flow growing day by day), read whole and streamed one slice at a
    time: the same paths, bit for bit."""
    ds, _, _ = _rotated(15.0, n=21)
    days = [ds[["u", "v"]] * (1 + k) for k in range(3)]
    series = (
        xr.concat(days, dim="time")
        .assign(angle=ds.angle)
        .assign_coords(time=("time", [0.0, 1.0, 2.0], {"units": "days since 2024-03-01"}))
    )
    series.to_netcdf(tmp_path / "series.nc")
    seeds = np.array([[10.6, 41.5], [11.0, 42.0]])
    whole = fk.io.read(tmp_path / "series.nc", dtype="float64", stream=False)
    streamed = fk.io.read(tmp_path / "series.nc", dtype="float64", stream=True)
    assert isinstance(streamed, fk.io.StreamedField) and whole.time_origin.date.startswith("2024-03-01")
    a = fk.track(whole, seeds, 0.0, "2024-03-03", "2h", dtype="float64")
    b = fk.track(streamed, seeds, 0.0, "2024-03-03", "2h", dtype="float64")
    assert np.all(a.status == fk.Status.ACTIVE)
    np.testing.assert_array_equal(a.positions, b.positions)


@pytest.mark.parametrize("coast, factor", [("noslip", 0.75), ("freeslip", 1.0), ("partialslip", 0.875)])
def test_free_and_partial_slip_along_a_coast(coast, factor):
    """A channel between two land rows: in the cell next to a coast the velocity along it goes
    linearly to 0 (no slip), keeps the water's value (free slip) or half of it at the coast
    (partial slip), as Parcels' interpolation methods; across the coast it is 0 in every case."""
    x, y = np.arange(0.0, 11.0), np.arange(0.0, 5.0)
    u = np.zeros((len(x), len(y), 2))
    u[:, 1:4, 0] = 1.0
    u[:, 1:4, 1] = 0.3 * np.array([0.0, 1.0, 0.0])[None, :]  # across the channel, zero next to the coasts
    land = np.zeros((len(x), len(y)), bool)
    land[:, [0, 4]] = True
    field = fk.GridField.from_arrays(u, [x, y], land=land, coast=coast, dtype="float64")
    near = np.array([[2.0, 0.75], [2.0, 3.25], [2.0, 2.0]])  # a quarter cell from each coast, and mid-channel
    velocity = np.asarray(jax.vmap(lambda p: field(0.0, p))(near))
    np.testing.assert_allclose(velocity[:, 0], [factor, factor, 1.0], atol=1e-12)
    np.testing.assert_allclose(
        velocity[0, 1], 0.75 * 0.0 + 0.0, atol=1e-12
    )  # v is 0 on the coast row and the first water row
    traj = fk.track(field, near[:2], 0.0, 4.0, 0.1, dtype="float64")
    np.testing.assert_allclose(traj.positions[-1, :, 0], 2.0 + 4.0 * factor, atol=1e-9)
    assert np.all(traj.status[-1] == fk.Status.ACTIVE)
    with pytest.raises(ValueError, match="coast must be one of"):
        fk.GridField.from_arrays(u, [x, y], land=land, coast="slippery")


@pytest.mark.parametrize("depth", [None, [0.0, 10.0, 40.0, 100.0]])
def test_an_index_lookup_starts_unhinted_points_where_the_bin_search_finds_them(depth):
    """A curvilinear grid's points without a hint start at the cell its index lookup guesses and
    are checked and walked from there: the cells and coordinates equal those of the mesh's bin
    search everywhere (inside, outside, past the box), and the guess is mostly the cell itself."""
    from flowkit.fields.curvilinear import CurvilinearField

    radius, angle = np.meshgrid(np.linspace(1, 3, 40), np.linspace(0.2, 1.3, 60), indexing="ij")
    lon, lat = 10 + 3 * radius * np.cos(angle), 50 + 2 * radius * np.sin(angle)  # a curved, skewed grid
    shape = lon.shape if depth is None else lon.shape + (len(depth),)
    field = CurvilinearField.from_arrays(lon, lat, np.zeros(shape + (len(shape),)), depth=depth)
    mesh = field.mesh
    rng = np.random.default_rng(4)
    lo, hi = [lon.min() - 0.5, lat.min() - 0.5, -5.0], [lon.max() + 0.5, lat.max() + 0.5, 105.0]
    x = jnp.asarray(rng.uniform(lo[: len(shape)], hi[: len(shape)], (5000, len(shape))))

    def located(mesh):
        return jax.jit(lambda x: mesh.locate(x, mesh.hints(x.shape[0], x.dtype)))(x)

    searched, inside = located(eqx.tree_at(lambda m: m.lookup, mesh, None, is_leaf=lambda v: v is None))
    started, inside_too = located(mesh)
    assert 0.3 < float(inside.mean()) < 0.9
    np.testing.assert_array_equal(inside_too, inside)
    np.testing.assert_array_equal(started.cell[inside], searched.cell[inside])
    np.testing.assert_allclose(started.coords[inside], searched.coords[inside], atol=1e-12)
    guessed = mesh.lookup.cells(x)
    assert float(jnp.mean(guessed[inside] == searched.cell[inside])) > 0.95


def _rotated_grid(shape=(21, 31), angle=20.0, origin=(12.0, 66.5), step=0.04):
    """A ROMS-like curvilinear grid in degrees, far from the origin and turned by `angle`, its
    float64 corners not float32 numbers (as model files write lon_rho/lat_rho)."""
    j, i = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float64)
    c, s = np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))
    lon = origin[0] + step * (c * i - s * j) / np.cos(np.deg2rad(origin[1])) + 1e-9 * np.pi
    lat = origin[1] + step * (s * i + c * j) + 1e-9 * np.e
    points = np.column_stack([lon.ravel(), lat.ravel()])
    ids = np.arange(lon.size).reshape(shape)
    quads = np.stack([ids[:-1, :-1], ids[:-1, 1:], ids[1:, 1:], ids[1:, :-1]], axis=-1).reshape(-1, 4)
    return points, quads, ids


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_points_on_every_interior_edge_of_a_curvilinear_grid_are_inside(dtype):
    """Points on the edges between two cells of a turned grid in degrees (float64 corners, a
    float32 or float64 field) lie in one of the two: along i and along j, at the edges' ends,
    midpoints and a tenth from their ends, and a hair to either side. A float32 cell table
    built from the float64 corners put each cell's node 0 a rounding apart from its
    neighbours': points between two water cells were outside both (issue 55)."""
    points, quads, ids = _rotated_grid()
    field = fk.MeshField.from_arrays(points, quads, np.ones_like(points), dtype=dtype)
    edges = [  # interior edges along i and along j: node pairs shared by two cells
        (ids[1:-1, :-1].ravel(), ids[1:-1, 1:].ravel()),
        (ids[:-1, 1:-1].ravel(), ids[1:, 1:-1].ravel()),
    ]
    for a, b in edges:
        for f in (0.0, 0.1, 0.5, 0.9):
            on = points[a] + f * (points[b] - points[a])
            normal = np.column_stack([-(points[b] - points[a])[:, 1], (points[b] - points[a])[:, 0]])
            for side in (0.0, 1e-7, -1e-7) if f else (0.0,):  # an edge's end node may lie on the grid's edge
                x = jnp.asarray(on + side * normal, dtype)
                _, inside = field.locate_batch(x, field.hints(len(x), dtype))
                assert bool(jnp.all(inside)), f"{int(jnp.sum(~inside))} of {len(x)} points at {f} of an edge, {side}"


NORDIC = SHARED / "ocean-real" / "Nordic_subset.nc"


@pytest.mark.skipif(not NORDIC.exists(), reason="../shared/data/ocean-real is not here")
def test_seeds_between_two_water_cells_of_a_real_roms_grid_start_in_the_water():
    """OpenDrift's ROMS file (a turned 4 km grid at 67° N, float64 lon/lat): a seed on each
    edge between two water cells, at its middle and a tenth from its ends, is in the water at
    t0 and moves; none starts outside (before issue 55's fix, seeds within 1e-4 of a cell of
    such an edge were refused)."""
    ds = xr.open_dataset(NORDIC)
    lon, lat, mask = ds.lon_rho.values, ds.lat_rho.values, ds.mask_rho.values
    wet = (mask[:-1, :-1] + mask[1:, 1:] + mask[1:, :-1] + mask[:-1, 1:]) == 4  # cells between rho points
    both_i = wet[:, :-1] & wet[:, 1:]  # the edge shared by cells (j, i) and (j, i + 1)
    both_j = wet[:-1, :] & wet[1:, :]
    ends = [
        (np.argwhere(both_i) + [0, 1], np.argwhere(both_i) + [1, 1]),
        (np.argwhere(both_j) + [1, 0], np.argwhere(both_j) + [1, 1]),
    ]
    seeds = []
    for a, b in ends:
        for f in (0.1, 0.5, 0.9):
            seeds.append(
                np.column_stack(
                    [
                        (1 - f) * lon[a[:, 0], a[:, 1]] + f * lon[b[:, 0], b[:, 1]],
                        (1 - f) * lat[a[:, 0], a[:, 1]] + f * lat[b[:, 0], b[:, 1]],
                        np.zeros(len(a)),
                    ]
                )
            )
    seeds = np.concatenate(seeds)
    assert len(seeds) > 1000
    traj = fk.track(fk.io.read(NORDIC), seeds, 0.0, 3600.0, 3600.0)
    counts = traj.status_counts(0)
    assert counts["out_of_domain"] == 0 and counts["beached"] == 0, counts
