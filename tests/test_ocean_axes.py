"""Axes as model files write them: float32 longitudes, periodic end nodes decided from the
coordinates, seeds anywhere on a periodic axis, positions in the data's own longitude range."""

import logging

import numpy as np
import pytest
import xarray as xr

import flowkit as fk


def _copernicus_like(path, lon, u=0.3):
    """A global 1° product as Copernicus Marine writes it: float32 axes (steps 1 ± 8e-6°),
    NetCDF4, CF attributes."""
    lat = np.arange(-80.0, 80.5, 1.0, dtype=np.float32)
    time = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[ns]")
    shape = (2, len(lat), len(lon))
    ds = xr.Dataset(
        {
            "uo": (
                ("time", "latitude", "longitude"),
                np.full(shape, u, np.float32),
                {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"},
            ),
            "vo": (
                ("time", "latitude", "longitude"),
                np.zeros(shape, np.float32),
                {"standard_name": "northward_sea_water_velocity", "units": "m s-1"},
            ),
        },
        coords={
            "time": ("time", time),
            "latitude": ("latitude", lat, {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"}),
            "longitude": ("longitude", lon, {"standard_name": "longitude", "units": "degrees_east", "axis": "X"}),
        },
    )
    ds.to_netcdf(path, engine="h5netcdf")
    return path


def test_float32_longitudes_with_round_off_steps_read_as_a_periodic_global_grid(tmp_path):
    lon = (np.arange(360, dtype=np.float64) - 179.54).astype(np.float32)
    steps = np.diff(lon.astype(np.float64))
    assert steps.max() - steps.min() > 1e-6  # the file's own round-off: not uniform to 1e-6
    field = fk.io.read(_copernicus_like(tmp_path / "cmems.nc", lon))
    assert field.periodic == (True, False) and field.shape[0] == 360
    assert field.longitude_origin == -180.0
    # a seed west of the first node (-179.9 < -179.54) is valid on a periodic axis
    seeds = np.array([[-179.9, 10.0], [179.9, -10.0], [190.0, 0.0]])
    traj = fk.track(field, seeds, 0.0, 86400.0, 3600.0, save_every=6, dtype="float64")
    assert (traj.status == fk.Status.ACTIVE).all()
    lon_out = traj.positions[..., 0]
    assert lon_out.min() >= -180.0 and lon_out.max() < 180.0
    np.testing.assert_allclose(traj.positions[0, 2], [-170.0, 0.0])  # wrapped by a whole period
    # 0.3 m/s eastward for a day at the particle's latitude, across the dateline
    expected = (
        seeds[:, 0] + 0.3 * 86400 / (6_371_000 * np.cos(np.deg2rad(seeds[:, 1]))) * 180 / np.pi + 180
    ) % 360 - 180
    np.testing.assert_allclose(lon_out[-1], expected, atol=1e-6)


def test_longitudes_in_0_360_stay_there(tmp_path):
    lon = np.arange(0.25, 360.0, 0.5, dtype=np.float32)
    field = fk.io.read(_copernicus_like(tmp_path / "east.nc", lon, u=-0.5))
    assert field.longitude_origin == 0.0
    traj = fk.track(field, np.array([[0.3, 0.0], [359.9, 5.0]]), 0.0, 86400.0, 3600.0, save_every=24)
    assert traj.positions[..., 0].min() >= 0.0 and traj.positions[..., 0].max() < 360.0
    assert traj.positions[-1, 0, 0] > 359.0  # went west across 0


def test_parcels_zonal_periodic_advection_returns_particles_where_they_started():
    """Parcels' `test_advection_zonal_periodic`: U = 0.1 on 20 nodes 0, 0.1, ..., 1.9 with
    `periodic=True` (the values at both ends are equal: that is no repeated node), 40 Euler
    steps of 1 s move 4.0, two whole periods."""
    lon, lat = np.arange(20) * 0.1, np.linspace(0, 1, 5)
    data = np.zeros((20, 5, 2))
    data[..., 0] = 0.1
    field = fk.GridField.from_arrays(data, [lon, lat], periodic=(True, False), dtype="float64")
    assert field.shape == (20, 5)
    np.testing.assert_allclose(np.asarray(field.bounds[1])[0], 2.0)
    seeds = np.array([[0.05, 0.5], [1.0, 0.5], [1.95, 0.2]])
    traj = fk.track(
        field, seeds, 0.0, 40.0, 1.0, integrator=fk.Euler(), boundary=fk.Periodic(field.bounds), dtype="float64"
    )
    np.testing.assert_allclose(traj.positions[-1], seeds, atol=1e-9)


def test_a_stated_period_drops_a_repeated_end_node_from_the_coordinates_not_the_values(caplog):
    lon = np.arange(-180.0, 180.5, 1.0, dtype=np.float32)  # 361 nodes: -180 repeated as 180
    data = np.random.default_rng(0).normal(size=(361, 3, 2))  # end columns differ: decided by coordinates
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.GridField.from_arrays(
            data, [lon, np.array([-1.0, 0.0, 1.0])], periodic=(360.0, False), spherical=True
        )
    assert field.shape == (360, 3) and "repeats the first" in caplog.text
    with pytest.raises(ValueError, match="periodic axis 0 spans 359 with spacing 1: neither one period of 350"):
        fk.GridField.from_arrays(data[:360], [lon[:360], np.array([-1.0, 0.0, 1.0])], periodic=(350.0, False))
