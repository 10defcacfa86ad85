"""Ocean and atmosphere data: CF files written here with xarray from closed-form flows, read by
`fk.io.read`, tracked on the sphere, against the closed forms."""

import logging

import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import flowkit as fk

R = 6_371_000.0


def _cf(
    u,
    v,
    lon,
    lat,
    times=None,
    *,
    units="days since 2024-01-01",
    calendar="standard",
    names=("uo", "vo"),
    standard=True,
    extra=None,
):
    """A CF dataset of `u`, `v` (`(time, lat, lon)`, or `(lat, lon)` without `times`) in m/s."""
    dims = ("time", "latitude", "longitude") if times is not None else ("latitude", "longitude")
    meta = lambda name: {"standard_name": name, "units": "m s-1"} if standard else {"units": "m/s"}  # noqa: E731
    data = {
        names[0]: (dims, u, meta("eastward_sea_water_velocity")),
        names[1]: (dims, v, meta("northward_sea_water_velocity")),
        **(extra or {}),
    }
    coords = {
        "longitude": ("longitude", lon, {"units": "degrees_east"}),
        "latitude": ("latitude", lat, {"units": "degrees_north"}),
    }
    if times is not None:
        coords["time"] = ("time", np.asarray(times, np.float64), {"units": units, "calendar": calendar})
    return xr.Dataset(data, coords=coords)


@pytest.mark.parametrize("repeated", [False, True])
def test_a_zonal_jet_crosses_the_dateline_and_returns_after_one_lap(tmp_path, repeated):
    """Solid-body rotation about the pole, u = U cos(lat): every latitude laps in 2 pi R / U.
    Seeds on node latitudes see the exact speed; the file is NetCDF4 (h5netcdf)."""
    lon = np.arange(-180.0, 181.0, 1.0) if repeated else np.arange(-179.5, 180.0, 1.0)
    lat = np.arange(-89.5, 90.0, 1.0)
    u = np.broadcast_to(10.0 * np.cos(np.deg2rad(lat))[None, :, None], (3, len(lat), len(lon)))
    path = tmp_path / "jet.nc"
    _cf(u, np.zeros_like(u), lon, lat, [0.0, 30.0, 60.0]).to_netcdf(path, engine="h5netcdf")
    field = fk.io.read(path, dtype="float64")
    assert field.spherical and field.periodic == (True, False) and field.shape == (360, 180)
    seeds = np.array([[179.0, 0.5], [-179.5, 30.5], [170.0, -60.5], [0.0, 75.5]])
    lap = 2 * np.pi * R / 10.0
    traj = fk.track(field, seeds, 0.0, lap, 3600.0, save_every=24, dtype="float64")
    assert np.all(traj.status == fk.Status.ACTIVE)
    assert np.all((traj.positions[..., 0] >= -180) & (traj.positions[..., 0] < 180))  # the data's own range, always
    assert np.ptp(traj.positions[:, 0, 0]) > 300  # the first seed did cross the dateline
    lap_error = (traj.positions[-1] - seeds + 180) % 360 - 180  # longitudes modulo the period
    np.testing.assert_allclose(lap_error, 0, atol=1e-6)


def test_netcdf3_daily_files_on_a_noleap_calendar_with_descending_latitude(tmp_path):
    """Three daily NetCDF3 files (scipy's engine), plain names u/v without standard names,
    latitudes stored north to south, the noleap calendar: one series, values where the
    closed form puts them, dates counted on that calendar."""
    lon, lat = np.arange(0.0, 40.0, 2.0), np.arange(60.0, -61.0, -2.0)
    files = []
    for day in range(3):
        u = np.sin(np.deg2rad(lat))[:, None] * np.ones((1, len(lon))) * (1 + day)
        v = 0.01 * lon[None, :] * np.ones((len(lat), 1))
        path = tmp_path / f"day_{day}.nc"
        _cf(
            u[None],
            v[None],
            lon,
            lat,
            [59.0 + day],
            units="days since 2023-01-01",
            calendar="noleap",
            names=("u", "v"),
            standard=False,
        ).to_netcdf(path, engine="scipy", format="NETCDF3_64BIT")
        files.append(path)
    field = fk.io.read(str(tmp_path / "day_*.nc"), dtype="float64")
    assert field.time_origin.calendar == "noleap" and field.time_origin.date == "2023-03-01T00:00:00"
    np.testing.assert_array_equal(np.asarray(field.times), [0.0, 86400.0, 172800.0])
    np.testing.assert_array_equal(np.asarray(field.axes[1]), lat[::-1])
    at = jnp.array([10.0, 30.0])
    cos = np.cos(np.deg2rad(30.0))
    np.testing.assert_allclose(
        np.asarray(field(43200.0, at)),
        [1.5 * np.sin(np.deg2rad(30.0)) / (R * cos) * 180 / np.pi, 0.1 / R * 180 / np.pi],
        rtol=1e-12,
    )
    origin = field.time_origin
    assert origin.seconds("2024-03-01") - origin.seconds("2024-02-28") == 86400.0  # no 29 February on this calendar
    assert fk.io.read(files, dtype="float64").time_origin == origin  # a list of files as the glob


def test_particles_beach_on_the_coast_and_no_nan_enters_a_step(tmp_path, caplog):
    """An eastward current of 1 m/s toward land (NaN east of 8°E): every particle beaches once,
    at its last wet position (west of the coast, where the land mask is below 1/2); seeds on land
    start beached, and are counted."""
    lon, lat = np.arange(0.0, 11.0, 1.0), np.arange(0.0, 11.0, 1.0)
    u = np.where(lon[None, :] >= 8, np.nan, 1.0) * np.ones((len(lat), 1))
    path = tmp_path / "coast.nc"
    _cf(u, np.where(np.isnan(u), np.nan, 0.0), lon, lat).to_netcdf(path)
    field = fk.io.read(path, dtype="float64")
    assert field.land is not None and np.isfinite(np.asarray(field.values)).all()
    seeds = np.array([[1.0, 2.0], [3.5, 5.0], [6.0, 8.0], [9.0, 4.0], [9.5, 9.5]])
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        traj = fk.track(field, seeds, 0.0, 12 * 86400.0, "1h", save_every=6, dtype="float64")
    assert "2 of 5 seeds lie on land: they start BEACHED" in caplog.text
    assert np.all(traj.status[0] == [0, 0, 0, 7, 7]) and np.all(traj.status[-1] == fk.Status.BEACHED)
    assert np.isfinite(traj.positions).all() and np.all(traj.exit_time[3:] == 0.0)
    np.testing.assert_array_equal(traj.positions[-1, 3:], seeds[3:])
    final = traj.positions[-1, :3]
    assert np.all((final[:, 0] < 7.5) & (final[:, 0] > 7.4)) and np.all(
        final[:, 1] == seeds[:3, 1]
    )  # the coast: mask 1/2 at 7.5°E
    assert np.all(np.diff(traj.exit_time[:3]) < 0)  # the nearer the coast, the earlier


def test_depth_is_positive_down_and_an_upward_velocity_raises_particles(tmp_path):
    lon, lat, depth = np.arange(0.0, 5.0), np.arange(0.0, 5.0), np.array([0.0, 10.0, 50.0, 200.0])
    shape = (len(depth), len(lat), len(lon))
    ds = xr.Dataset(
        {
            "uo": (
                ("depth", "latitude", "longitude"),
                np.zeros(shape),
                {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"},
            ),
            "vo": (
                ("depth", "latitude", "longitude"),
                np.zeros(shape),
                {"standard_name": "northward_sea_water_velocity", "units": "m s-1"},
            ),
            "wo": (
                ("depth", "latitude", "longitude"),
                np.full(shape, 1e-3),
                {"standard_name": "upward_sea_water_velocity", "units": "m s-1"},
            ),
        },
        coords={
            "depth": ("depth", depth, {"positive": "down", "units": "m"}),
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
        },
    )
    ds.to_netcdf(tmp_path / "column.nc")
    field = fk.io.read(tmp_path / "column.nc", dtype="float64")
    assert field.dim == 3 and not field.periodic[0]
    traj = fk.track(field, np.array([[2.0, 2.0, 150.0]]), 0.0, 86400.0, 3600.0, dtype="float64")
    np.testing.assert_allclose(traj.positions[-1, 0], [2.0, 2.0, 150.0 - 86.4], rtol=1e-12)


def test_poles_divide_by_no_zero_and_a_step_over_a_pole_comes_down_the_other_side():
    lon, lat = np.arange(-180.0, 180.0, 2.0), np.arange(-90.0, 91.0, 2.0)
    field = fk.io.from_xarray(
        _cf(np.ones((len(lat), len(lon))), np.ones((len(lat), len(lon))), lon, lat), dtype="float64"
    )
    assert np.isfinite(np.asarray(field(0.0, jnp.array([10.0, 90.0])))).all()
    over = np.asarray(field.canonical_batch(jnp.array([[10.0, 91.0], [-170.0, -92.5], [179.0, 45.0]])))
    np.testing.assert_allclose(over, [[-170.0, 89.0], [10.0, -87.5], [179.0, 45.0]])


def test_dates_and_durations_are_seconds_and_bad_ones_are_named(tmp_path):
    lon, lat = np.arange(0.0, 10.0), np.arange(0.0, 10.0)
    u = np.full((3, len(lat), len(lon)), 0.1)
    _cf(u, np.zeros_like(u), lon, lat, [0.0, 1.0, 2.0], units="days since 2024-01-01").to_netcdf(tmp_path / "d.nc")
    field = fk.io.read(tmp_path / "d.nc", dtype="float64")
    seeds = np.array([[2.0, 5.0]])
    by_date = fk.track(field, seeds, "2024-01-01T12:00", "2024-01-02", "30min", dtype="float64")
    by_number = fk.track(field, seeds, 43200.0, 86400.0, 1800.0, dtype="float64")
    np.testing.assert_array_equal(by_date.positions, by_number.positions)
    ds = by_date.to_xarray(spherical=True, time_origin=field.time_origin)
    assert xr.decode_cf(ds)["time"].values[-1] == np.datetime64("2024-01-02T00:00")
    back = fk.Trajectory.load(by_date.save(tmp_path / "dated.nc", spherical=True, time_origin=field.time_origin))
    np.testing.assert_allclose(back.times, by_date.times, atol=1e-6)  # seconds since the data's first time, not dates
    np.testing.assert_allclose(back.t_release, by_date.t_release, atol=1e-6)
    assert np.all(np.isinf(back.exit_time))  # still active at the end
    np.testing.assert_allclose(
        fk.Trajectory.from_xarray(xr.decode_cf(ds)).times, by_date.times, atol=1e-6
    )  # decoded dates too
    with pytest.raises(ValueError, match="t1: 'tomorrow' is neither a number of seconds nor an ISO date"):
        fk.track(field, seeds, 0.0, "tomorrow", 600.0)
    with pytest.raises(ValueError, match="dt: '1 fortnight' is neither a number of seconds nor a duration"):
        fk.track(field, seeds, 0.0, 3600.0, "1 fortnight")
    with pytest.raises(ValueError, match="t1: '2024-01-02' is a date, but this field has no time origin"):
        fk.track(fk.fields.DoubleGyre(), np.array([[1.0, 0.5]]), 0.0, "2024-01-02", 0.1)


def test_bad_ocean_files_are_named(tmp_path):
    bad = tmp_path / "broken.nc"
    bad.write_bytes(b"CDF\x01 not really")
    with pytest.raises(ValueError, match="broken.nc: cannot be opened as NetCDF/zarr"):
        fk.io.read(bad)
    lon, lat = np.arange(0.0, 5.0), np.arange(0.0, 5.0)
    _cf(np.zeros((5, 5)), np.zeros((5, 5)), lon, lat, names=("temp", "salt"), standard=False).to_netcdf(
        tmp_path / "t.nc"
    )
    with pytest.raises(ValueError, match="t.nc: no eastward velocity found .* pass u= and v="):
        fk.io.read(tmp_path / "t.nc")
    with pytest.raises(FileNotFoundError, match="no files match"):
        fk.io.read(str(tmp_path / "none_*.nc"))


def test_daily_files_streamed_equal_the_series_in_memory(tmp_path):
    """The embedded sample's daily NetCDF4 files, streamed one time step (one file) at a time,
    track bit for bit as the whole series in memory: land, beaching and the periodic seam
    included."""
    folder = fk.datasets.write_ocean_sample(tmp_path / "sample", days=4)
    coast = np.column_stack(
        [np.linspace(-30.0, -20.6, 30), np.linspace(-20.0, 20.0, 30)]
    )  # the continent's west coast at -20.5°
    seam = np.column_stack([np.linspace(179.6, 179.95, 10), np.linspace(40.0, 50.0, 10)])  # cross the dateline eastward
    seeds = np.concatenate([coast, seam])
    runs = [
        fk.track(
            fk.io.read(str(folder / "glo_cur_*.nc"), stream=stream),
            seeds,
            "2024-01-01",
            "2024-01-04",
            "2h",
            save_every=6,
        )
        for stream in (False, True)
    ]
    assert isinstance(fk.io.read(str(folder / "glo_cur_*.nc"), stream=True), fk.io.StreamedField)
    np.testing.assert_array_equal(runs[1].positions, runs[0].positions)
    np.testing.assert_array_equal(runs[1].status, runs[0].status)
    assert (runs[0].status[-1] == fk.Status.BEACHED).sum() > 0 and np.isfinite(runs[0].positions).all()
    assert np.all(runs[0].positions[-1, 30:, 0] < -179.0)  # across the seam, in the data's period


def test_sampled_temperature_from_daily_files_drives_a_buoyant_particle(tmp_path):
    """`sample=` reads a further variable beside the currents, slice by slice: it is interpolated
    along the tracks (NaN on land) and reaches a particle model, whose rise follows it."""
    lon, lat = np.arange(-30.0, 30.5, 1.0), np.arange(-20.0, 20.5, 1.0)
    depth = np.array([0.0, 50.0, 100.0, 200.0])
    shape = (len(depth), len(lat), len(lon))
    for day in range(3):
        theta = np.broadcast_to(
            (20.0 + day - 0.05 * depth)[:, None, None], shape
        ).copy()  # warmer each day, colder below
        theta[:, :, -1] = np.nan  # a land column at the eastern edge
        zero = np.zeros((1,) + shape, np.float32)
        ds = xr.Dataset(
            {
                "uo": (
                    ("time", "depth", "latitude", "longitude"),
                    zero,
                    {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"},
                ),
                "vo": (
                    ("time", "depth", "latitude", "longitude"),
                    zero,
                    {"standard_name": "northward_sea_water_velocity", "units": "m s-1"},
                ),
                "thetao": (
                    ("time", "depth", "latitude", "longitude"),
                    theta[None].astype(np.float32),
                    {"standard_name": "sea_water_potential_temperature", "units": "degC"},
                ),
            },
            coords={
                "time": ("time", [float(day)], {"units": "days since 2024-01-01", "calendar": "standard"}),
                "depth": ("depth", depth, {"units": "m", "positive": "down", "axis": "Z"}),
                "latitude": ("latitude", lat, {"units": "degrees_north"}),
                "longitude": ("longitude", lon, {"units": "degrees_east"}),
            },
        )
        ds.to_netcdf(tmp_path / f"day{day}.nc", engine="h5netcdf")
    field = fk.io.read(str(tmp_path / "day*.nc"), sample=["thetao"], dtype="float64")
    x = np.array([[0.0, 0.0, 60.0], [29.7, 0.0, 60.0]])
    sampled = field.sample_batch(86400.0 * 0.5, x)["thetao"]
    np.testing.assert_allclose(sampled[0], 20.5 - 3.0, atol=1e-9)  # linear in depth and time: exact
    assert np.isnan(sampled[1])  # next to the land column
    # sinks at 1e-4 m/s per degree: dz/dt = 1e-4 (T0(t) - 0.05 z), depth positive down
    model = fk.particles.Buoyant(lambda fluid: 1e-4 * fluid.samples["thetao"])
    traj = fk.track(field, x[:1], 0.0, 86400.0, 600.0, particles=model, dtype="float64", save_every=144)
    t = 86400.0
    k = 5e-6  # 1e-4 * 0.05
    expected = 60.0 * np.exp(-k * t) + (1e-4 / k) * (
        20.0 * (1 - np.exp(-k * t)) + (1 / 86400.0) * (t - (1 - np.exp(-k * t)) / k)
    )
    np.testing.assert_allclose(traj.positions[-1, 0, 2], expected, rtol=1e-6)
    with pytest.raises(ValueError, match="sample variable 'so' not in the dataset"):
        fk.io.read(str(tmp_path / "day*.nc"), sample=["so"])


def test_velocity_nan_or_zero_everywhere_in_a_step_is_named_in_one_line(tmp_path, caplog):
    import xarray as xr

    lon, lat = np.linspace(0, 10, 11), np.linspace(0, 5, 6)
    meta = {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"}

    def write(name, u):
        xr.Dataset(
            {
                "uo": (("time", "latitude", "longitude"), u, meta),
                "vo": (
                    ("time", "latitude", "longitude"),
                    0.5 * u,
                    {**meta, "standard_name": "northward_sea_water_velocity"},
                ),
            },
            coords={
                "time": ("time", np.array(["2024-01-01", "2024-01-02", "2024-01-03"], "datetime64[ns]")),
                "longitude": ("longitude", lon, {"units": "degrees_east"}),
                "latitude": ("latitude", lat, {"units": "degrees_north"}),
            },
        ).to_netcdf(tmp_path / name)

    u = np.full((3, 6, 11), 0.1)
    u[1] = np.nan  # the second day: every value a fill
    write("gap.nc", u)
    with pytest.raises(
        ValueError, match=r"gap\.nc: velocity \['uo', 'vo'\] is NaN everywhere at time step 1 \(t = 86400\)"
    ):
        fk.io.read(tmp_path / "gap.nc")
    u[1] = 0.0
    write("calm.nc", u)
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        fk.io.read(tmp_path / "calm.nc")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"{tmp_path / 'calm.nc'}: velocity ['uo', 'vo'] is zero everywhere at time step 1 (t = 86400)"
    ]
