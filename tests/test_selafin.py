"""TELEMAC Selafin results: the real TELEMAC-3D file of OpenDrift's tests, and 2-D and 3-D files
written here with `xarray-selafin` (TELEMAC's layout: 1-based triangles, planes bottom first,
elevations `Z` per node and step) from flows whose paths are known."""

import numpy as np
import pytest
import xarray as xr
import xarray_selafin.xarray_backend  # noqa: F401 (the .selafin writer)
from test_vtk import SHARED

import flowkit as fk

SLF = SHARED / "ocean-real" / "r3d_tide_open_drift.slf"


def _mesh(n=9, size=1000.0):
    x, y = np.meshgrid(np.linspace(0, size, n), np.linspace(0, size, n), indexing="ij")
    index = np.arange(n * n).reshape(n, n)
    a, b, c, d = index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    triangles = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    return x.ravel(), y.ravel(), triangles + 1  # TELEMAC numbers nodes from 1


def _write(path, variables, planes=None, steps=4, dt=600.0):
    x, y, ikle = _mesh()
    dims = ("time", "plan", "node") if planes else ("time", "node")
    ds = xr.Dataset(
        {name: (dims, np.asarray(value, np.float32)) for name, value in variables.items()},
        coords={
            "x": ("node", x.astype(np.float32)),
            "y": ("node", y.astype(np.float32)),
            "time": np.datetime64("2024-03-01T00:00") + (np.arange(steps) * dt).astype("timedelta64[s]"),
        },
    )
    ds.attrs.update(
        ikle2=ikle,
        variables={
            "U": ("VELOCITY U", "M/S"),
            "V": ("VELOCITY V", "M/S"),
            "W": ("VELOCITY W", "M/S"),
            "Z": ("ELEVATION Z", "M"),
        },
        date_start=(2024, 3, 1, 0, 0, 0),
    )
    ds.selafin.write(str(path))
    return path


def test_telemac_2d_uniform_flow_is_exact(tmp_path):
    nodes, steps = 81, 4
    path = _write(tmp_path / "r2d.slf", {"U": np.full((steps, nodes), 0.2), "V": np.full((steps, nodes), -0.1)})
    field = fk.io.read(path, dtype="float64")
    assert isinstance(field, fk.MeshField) and field.dim == 2
    traj = fk.track(field, np.array([[300.0, 700.0], [500.0, 500.0]]), 0.0, 1800.0, 60.0, dtype="float64")
    np.testing.assert_allclose(traj.positions[-1], [[660.0, 520.0], [860.0, 320.0]], atol=1e-6)


def test_telemac_3d_planes_with_elevations_are_layers_below_the_moving_surface(tmp_path):
    """Four planes from a sloping bottom to a free surface that rises 0.1 m per step; U = 0.2
    everywhere, W = +0.005 m/s (upward): a particle rises at 5 mm/s until the surface holds it."""
    x, _, _ = _mesh()
    nodes, steps, n_planes = 81, 4, 4
    bottom = -10.0 - 0.01 * x  # 10 m deep at x = 0, 20 m at x = 1000
    surface = 0.1 * np.arange(steps)[:, None] * np.ones(nodes)
    sigma = np.linspace(0, 1, n_planes)[None, :, None]
    z = bottom[None, None, :] + sigma * (surface[:, None, :] - bottom[None, None, :])
    ones = np.ones((steps, n_planes, nodes))
    path = _write(tmp_path / "r3d.slf", {"Z": z, "U": 0.2 * ones, "V": 0.0 * ones, "W": 0.005 * ones}, planes=True)
    field = fk.io.read(path, dtype="float64")
    assert isinstance(field, fk.fields.LayeredField) and not field.spherical
    assert field.time_origin is not None and field.time_origin.date == "2024-03-01T00:00:00"
    np.testing.assert_allclose(
        field.water_depth(600.0, np.array([[0.0, 500.0], [1000.0, 500.0]])), [10.1, 20.1], rtol=1e-6
    )
    seeds = np.array([[100.0, 500.0, 4.0], [100.0, 300.0, 1.0], [100.0, 200.0, 15.0]])
    traj = fk.track(field, seeds, 0.0, 1800.0, 60.0, save_every=5, dtype="float64")
    assert (traj.status == fk.Status.ACTIVE).all()
    np.testing.assert_allclose(traj.positions[:, 0, 0], 100.0 + 0.2 * traj.times, atol=1e-6)
    expected = np.maximum(seeds[:2, 2][None] - 0.005 * traj.times[:, None], 0.0)
    np.testing.assert_allclose(traj.positions[:, :2, 2], expected, atol=1e-6)
    # below the floor (11 m there at t = 0): starts on it
    np.testing.assert_allclose(traj.positions[0, 2, 2], 11.0, rtol=1e-6)


@pytest.mark.skipif(not SLF.exists(), reason="../shared/data/ocean-real is not beside this checkout")
def test_real_telemac_3d_file_without_elevations_tracks_its_surface_plane(caplog):
    with xr.open_dataset(SLF, engine="selafin") as opened:
        ds = opened.load()
    with caplog.at_level("WARNING", logger="flowkit"):
        field = fk.io.read(SLF, dtype="float64")
    assert "no plane elevations" in caplog.text and isinstance(field, fk.MeshField)
    np.testing.assert_allclose(np.asarray(field.times), (ds.time.values - ds.time.values[0]) / np.timedelta64(1, "s"))
    node = 100
    probe, valid = field.probe(np.array([[float(ds.x[node]), float(ds.y[node])]]), t=900.0)
    assert valid.all()
    np.testing.assert_allclose(
        probe[0], [float(ds.U.values[1, -1, node]), float(ds.V.values[1, -1, node])], rtol=1e-5, atol=1e-6
    )
    inside = np.column_stack([ds.x.values[::25], ds.y.values[::25]]).astype(float)
    traj = fk.track(field, inside, 0.0, 4500.0, 60.0, save_every=15)
    assert np.mean(np.hypot(*(traj.positions[-1] - traj.positions[0]).T)) > 100.0  # tides move them
    with pytest.raises(ValueError, match=r"plane=7 is not one of its 4 planes"):
        fk.io.read(SLF, plane=7)
