"""Forcing fields as samples (wind, waves on their own grids and times) and the drift models
that read them: windage, Stokes drift, leeway."""

import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from test_vtk import SHARED

import flowkit as fk
from flowkit._time import TimeOrigin
from flowkit.fields.grid import degrees_per_second
from flowkit.particles import Combined, Leeway, StokesDrift, Windage

OCEAN = SHARED / "ocean-real"
R = 6_371_000.0
LON, LAT = np.linspace(0, 10, 41), np.linspace(50, 60, 41)
WIND_LON, WIND_LAT = np.linspace(-20, 30, 11), np.linspace(40, 70, 7)
WIND_TIMES = np.array([0.0, 43200.0, 86400.0])


def currents():
    u = np.zeros((41, 41, 2))
    u[..., 0] = 0.2 + 0.1 * np.cos(np.deg2rad(20 * LAT))[None, :]
    u[..., 1] = 0.05 * np.sin(np.deg2rad(30 * LON))[:, None]
    return u


def wind_closed_form(t, lon, lat):
    """A wind linear in longitude, latitude and time: what bilinear interpolation on any grid
    gives exactly, so the windage's reference is known in closed form."""
    east = 5 + 0.1 * lon - 0.05 * lat + t / 86400 * 4
    north = -3 + 0.02 * lon + 0.1 * (lat - 55) - t / 86400 * 2
    return np.stack([east, north], axis=-1)


def wind_field(**options):
    lon, lat = np.meshgrid(WIND_LON, WIND_LAT, indexing="ij")
    values = np.stack([wind_closed_form(t, lon, lat) for t in WIND_TIMES])
    return fk.GridField.from_arrays(values, [WIND_LON, WIND_LAT], times=WIND_TIMES, spherical=True, **options)


def test_windage_across_grids_is_exactly_the_current_plus_the_coefficient_times_the_wind():
    """Currents on a 1/4° grid, wind on a coarser, larger 5° grid with its own time axis: the
    windage's velocity at the particles is current + 0.03 × wind (converted to degrees per
    second at each latitude), and a run equals the run through one field holding that sum."""
    field = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True, samples={"wind": wind_field()})
    plain = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True)
    rng = np.random.default_rng(1)
    x = jnp.asarray(np.column_stack([rng.uniform(0.5, 9.5, 64), rng.uniform(50.5, 59.5, 64)]), jnp.float32)
    windage = Windage(0.03)
    for t in (0.0, 20_000.0, 80_000.0):
        rates, _ = fk.particles.ModelTerm(field, windage).rates(t, {"x": x}, None, field.hints(64, x.dtype))
        current, _ = plain.velocity_batch(t, x, None, plain.hints(64, x.dtype))
        wind = jnp.asarray(wind_closed_form(t, np.asarray(x[:, 0]), np.asarray(x[:, 1])), jnp.float32)
        expected = current + degrees_per_second(0.03 * wind, x[:, 1])
        np.testing.assert_allclose(np.asarray(rates["x"]), np.asarray(expected), rtol=2e-6, atol=1e-12)

    lon, lat = np.meshgrid(LON, LAT, indexing="ij")
    summed = np.stack([currents() + 0.03 * wind_closed_form(t, lon, lat) for t in WIND_TIMES])
    reference = fk.GridField.from_arrays(summed, [LON, LAT], times=WIND_TIMES, spherical=True)
    seeds = np.column_stack([rng.uniform(2, 8, 200), rng.uniform(52, 58, 200)])
    ours = fk.track(field, seeds, 0.0, 86400.0, 1800.0, particles=windage)
    theirs = fk.track(reference, seeds, 0.0, 86400.0, 1800.0)
    moved = np.abs(ours.positions[-1] - seeds).max()
    assert moved > 0.5  # the wind drift is a large part of the path
    np.testing.assert_allclose(ours.positions[-1], theirs.positions[-1], atol=2e-5)
    # the wind is recorded along the tracks, in m/s
    np.testing.assert_allclose(ours.samples["wind"][0], wind_closed_form(0.0, seeds[:, 0], seeds[:, 1]), rtol=1e-5)


def test_a_particle_outside_the_forcing_gets_zero_wind_and_the_seeds_outside_are_logged(caplog):
    small = fk.GridField.from_arrays(
        np.broadcast_to([10.0, 0.0], (3, 3, 2)).copy(), [np.linspace(0, 4, 3), np.linspace(50, 60, 3)], spherical=True
    )
    field = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True, samples={"wind": small})
    seeds = np.array([[2.0, 55.0], [7.0, 55.0]])
    with caplog.at_level("INFO", logger="flowkit"):
        traj = fk.track(field, seeds, 0.0, 3600.0, 600.0, particles=Windage(0.03), save_every=1)
    assert "forcing 'wind': 1 of 2 seeds lie outside its extent" in caplog.text
    assert np.all(np.isfinite(traj.positions))
    np.testing.assert_array_equal(traj.samples["wind"][0], [[10.0, 0.0], [0.0, 0.0]])
    alone = fk.track(fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True), seeds[1:], 0.0, 3600.0, 600.0)
    np.testing.assert_allclose(traj.positions[-1, 1], alone.positions[-1, 0], atol=1e-6)


def test_a_forcing_for_another_region_warns_and_windage_below_its_depth_warns(caplog):
    """Most seeds outside a forcing's extent is a warning (a wind file of another region), and a
    3-D run whose seeds all lie below windage's depth is told the wind moves none of them."""
    small = fk.GridField.from_arrays(
        np.broadcast_to([10.0, 0.0], (3, 3, 2)).copy(), [np.linspace(0, 4, 3), np.linspace(50, 60, 3)], spherical=True
    )
    field = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True, samples={"wind": small})
    with caplog.at_level("WARNING", logger="flowkit"):
        fk.track(field, np.array([[7.0, 55.0], [8.0, 55.0]]), 0.0, 3600.0, 600.0, particles=Windage(0.03))
    assert "forcing 'wind': 2 of 2 seeds lie outside its extent" in caplog.text
    depths = np.array([0.0, 10.0, 50.0])
    values = np.broadcast_to([0.1, 0.0, 0.0], (len(LON), len(LAT), 3, 3)).copy()
    deep = fk.GridField.from_arrays(values, [LON, LAT, depths], spherical=True, samples={"wind": wind_field()})
    caplog.clear()
    with caplog.at_level("WARNING", logger="flowkit"):
        fk.track(deep, np.array([[5.0, 55.0, 5.0], [6.0, 55.0, 20.0]]), 0.0, 3600.0, 600.0, particles=Windage(0.03))
    assert "Windage acts above 0.1 m, and all 2 seeds start deeper" in caplog.text


def test_a_forcing_on_another_calendar_origin_is_read_at_the_same_date():
    """Currents dated from 2024-01-02, wind from 2024-01-01T12:00: at the run's time 0 the wind
    is the wind file's slice at 12 h; a wind on [0, 360) serves positions on [-180, 180)."""
    wind = wind_field(time_origin=TimeOrigin("2024-01-01T12:00:00", "seconds since 2024-01-01 12:00:00", "standard"))
    origin = TimeOrigin("2024-01-02T00:00:00", "seconds since 2024-01-02", "standard")
    field = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True, time_origin=origin, samples={"wind": wind})
    x = jnp.asarray([[3.0, 55.0]], jnp.float32)
    got = field.samples_at(0.0, x, field.hints(1, x.dtype))["wind"]
    np.testing.assert_allclose(np.asarray(got), wind_closed_form(43200.0, 3.0, 55.0)[None], rtol=1e-6)

    east_lon = np.linspace(0, 357.5, 144)
    global_wind = fk.GridField.from_arrays(
        np.broadcast_to(np.where(east_lon > 180, 7.0, 1.0)[:, None, None], (144, 41, 2)).copy(),
        [east_lon, LAT],
        spherical=True,
    )
    west = fk.GridField.from_arrays(currents(), [LON - 10, LAT], spherical=True, samples={"wind": global_wind})
    got = west.samples_at(0.0, jnp.asarray([[-5.0, 55.0]]), west.hints(1, jnp.float32))["wind"]
    np.testing.assert_allclose(np.asarray(got), [[7.0, 7.0]])


def test_forcings_are_refused_with_one_line_naming_what_is_wrong():
    with pytest.raises(ValueError, match=r"samples\['wind'\]: the forcing is on Cartesian coordinates"):
        fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True, samples={"wind": fk.fields.DoubleGyre()})
    with pytest.raises(ValueError, match="already samples an array named 'wind'"):
        field = fk.GridField.from_arrays(
            currents(), [LON, LAT], spherical=True, samples={"wind": np.zeros((41, 41, 2))}
        )
        fk.fields.forcing.attach(field, {"wind": wind_field()})
    with pytest.raises(TypeError, match="forcing fields attach to data fields"):
        fk.fields.forcing.attach(fk.fields.DoubleGyre(), {"wind": wind_field()})
    field = fk.GridField.from_arrays(currents(), [LON, LAT], spherical=True)
    with pytest.raises(
        ValueError, match=r"particles: Windage reads the sampled \['wind'\], but the field samples \[\]"
    ):
        fk.track(field, [[3.0, 55.0]], 0.0, 3600.0, 600.0, particles=Windage(0.03))


def test_stokes_drift_decays_as_a_monochromatic_deep_water_wave():
    """A monochromatic deep-water wave of amplitude a and period T has the Stokes drift
    ω k a² exp(-2 k z) at depth z (k = ω²/g). Particles at rest in still water at several
    depths move with exactly that speed."""
    a, period, g = 1.5, 9.0, 9.81
    omega = 2 * np.pi / period
    k = omega**2 / g
    surface = omega * k * a**2
    axes = [np.linspace(0, 1e5, 5), np.linspace(0, 1e5, 5), np.linspace(0, 50, 6)]
    still = fk.GridField.from_arrays(np.zeros((5, 5, 6, 3)), axes)
    waves = fk.GridField.from_arrays(np.broadcast_to([surface, 0.0], (5, 5, 2)).copy(), axes[:2])
    field = fk.fields.forcing.attach(still, {"stokes": waves})
    depths = np.array([0.0, 1.0, 3.0, 8.0, 20.0])
    seeds = np.column_stack([np.full(5, 1e4), np.full(5, 5e4), depths])
    traj = fk.track(field, seeds, 0.0, 3600.0, 600.0, particles=StokesDrift(period=period), dtype="float64")
    expected = surface * np.exp(-2 * k * depths) * 3600.0
    np.testing.assert_allclose(traj.positions[-1, :, 0] - seeds[:, 0], expected, rtol=1e-6)
    np.testing.assert_array_equal(traj.positions[-1, :, 1:], seeds[:, 1:])


def test_leeway_moves_downwind_and_to_either_side_of_it():
    """A 10 m/s wind toward the north: leeway 3 % + 5 cm/s downwind, 1 % crosswind; +1 goes to
    the right (east) and -1 to the left. Combined with windage, the drifts add up."""
    axes = [np.linspace(0, 1e5, 3), np.linspace(0, 1e5, 3)]
    wind = fk.GridField.from_arrays(np.broadcast_to([0.0, 10.0], (3, 3, 2)).copy(), axes)
    field = fk.GridField.from_arrays(np.broadcast_to([0.1, 0.0], (3, 3, 2)).copy(), axes, samples={"wind": wind})
    seeds = np.full((2, 2), 1e4)
    model = Leeway(downwind_slope=3.0, crosswind_slope=1.0, downwind_offset=5.0)
    traj = fk.track(field, seeds, 0.0, 1000.0, 100.0, particles=model, particle_state={"orientation": [1.0, -1.0]})
    moved = (traj.positions[-1] - seeds) / 1000.0
    np.testing.assert_allclose(moved, [[0.1 + 0.1, 0.35], [0.1 - 0.1, 0.35]], rtol=1e-5)
    np.testing.assert_array_equal(traj.variables["orientation"][-1], [1.0, -1.0])

    both = fk.track(field, seeds[:1], 0.0, 1000.0, 100.0, particles=Combined(Windage(0.03), model))
    np.testing.assert_allclose((both.positions[-1, 0] - seeds[0]) / 1000.0, [0.2, 0.65], rtol=1e-5)


def era5_like_wind(path):
    """A global wind file written the way ERA5's NetCDF downloads are: `u10`/`v10` packed as
    int16 with `scale_factor`/`add_offset`, longitudes 0..359 (float32), latitudes descending,
    hourly times in hours since 1900-01-01 (here 2016-02-02 06:00 to 2016-02-03 06:00)."""
    lon = np.arange(0, 360, 1.0, dtype=np.float32)
    lat = np.arange(90, -91, -1.0, dtype=np.float32)
    hours = (np.datetime64("2016-02-02T06:00") - np.datetime64("1900-01-01T00:00")).astype("timedelta64[h]").astype(int)
    time = hours + np.arange(0, 25, 6)
    t, la, lo = np.meshgrid(np.arange(5), lat, lon, indexing="ij")
    u = 8 + 2 * np.cos(np.deg2rad(lo)) + 0.5 * t
    v = -2 + np.sin(np.deg2rad(la)) + 0.05 * lo / 36
    attrs = {
        "u10": {"standard_name": "eastward_wind", "units": "m s**-1", "long_name": "10 metre U wind component"},
        "v10": {"standard_name": "northward_wind", "units": "m s**-1", "long_name": "10 metre V wind component"},
    }
    ds = xr.Dataset(
        {name: (("time", "latitude", "longitude"), values, attrs[name]) for name, values in (("u10", u), ("v10", v))},
        coords={
            "longitude": ("longitude", lon, {"units": "degrees_east", "standard_name": "longitude"}),
            "latitude": ("latitude", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "time": (
                "time",
                time.astype(np.int32),
                {"units": "hours since 1900-01-01 00:00:00.0", "calendar": "gregorian"},
            ),
        },
    )
    packing = {"dtype": "int16", "scale_factor": 0.001, "add_offset": 5.0, "_FillValue": -32767}
    ds.to_netcdf(path, encoding={"u10": packing, "v10": packing}, format="NETCDF3_64BIT")
    return xr.open_dataset(path)


@pytest.mark.skipif(not (OCEAN / "Nordic_subset.nc").exists(), reason="../shared/data/ocean-real is not here")
def test_roms_currents_with_an_era5_wind_file_in_one_read(tmp_path):
    """The real ROMS file (s-levels, C-grid, dates from 2016-02-02 12:00) and a global ERA5-like
    wind (packed int16, 0..360 longitudes, hours since 1900): the wind at the particles is the
    file's own bilinear interpolation at the particle's date; windage adds 3 % of it."""
    wind_ds = era5_like_wind(tmp_path / "era5.nc")
    field = fk.io.read(OCEAN / "Nordic_subset.nc", samples={"wind": fk.io.read(tmp_path / "era5.nc")})
    roms = xr.open_dataset(OCEAN / "Nordic_subset.nc")
    wet = np.argwhere(roms.mask_rho.values[1:-1, 1:-1] == 1)[::40][:3] + 1
    seeds = np.column_stack(
        [roms.lon_rho.values[wet[:, 0], wet[:, 1]], roms.lat_rho.values[wet[:, 0], wet[:, 1]], np.zeros(3)]
    )
    x = jnp.asarray(seeds, jnp.float32)
    for t in (0.0, 5400.0):  # 12:00 and 13:30 on the ROMS clock: 6 h and 7.5 h into the wind file
        got = np.asarray(field.samples_at(t, x, field.hints(3, x.dtype))["wind"])
        date = np.datetime64("2016-02-02T12:00") + np.timedelta64(int(t), "s")
        expected = wind_ds[["u10", "v10"]].interp(time=date, longitude=seeds[:, 0], latitude=seeds[:, 1])
        by_hand = np.column_stack([np.diag(expected.u10.values), np.diag(expected.v10.values)])
        np.testing.assert_allclose(got, by_hand, atol=2e-4)
    windy = fk.track(field, seeds, 0.0, 6 * 3600.0, 1800.0, particles=Windage(0.03))
    calm = fk.track(field, seeds, 0.0, 6 * 3600.0, 1800.0, particles=Windage(0.0))  # the same program
    east_m = (windy.positions[-1, :, 0] - calm.positions[-1, :, 0]) * np.pi / 180 * R * np.cos(np.deg2rad(seeds[:, 1]))
    assert np.all(east_m > 0.03 * 8 * 6 * 3600 * 0.8)  # ~3 % of a 9-10 m/s westerly for 6 h, east of the calm run
