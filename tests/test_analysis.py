"""FTLE, densities, residence times, dispersion, sampling, plots and CF/xarray I/O."""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from helpers import APP_CACHE, HANG
from scipy import stats

import flowkit as fk
from flowkit.analysis import ftle

ROOT = Path(__file__).resolve().parents[1]


def _strain(rate):
    return fk.fields.Analytic(
        lambda t, x, args: rate * jnp.stack([x[0], -x[1]]), bounds=((-1.0, -1.0), (1.0, 1.0)), dim=2
    )


@pytest.mark.parametrize("T", [2.0, -2.0])
def test_ftle_of_linear_strain_is_the_strain_rate(T):
    points = np.random.default_rng(0).uniform(-0.1, 0.1, (30, 2))
    np.testing.assert_allclose(ftle(_strain(0.7), points, 0.0, T, 0.01), 0.7, atol=1e-6)


def test_ftle_3d_saddle():
    field = fk.fields.Analytic(
        lambda t, x, args: jnp.stack([0.5 * x[0], 0.2 * x[1], -0.7 * x[2]]), bounds=((-1.0,) * 3, (1.0,) * 3), dim=3
    )
    points = np.random.default_rng(1).uniform(-0.05, 0.05, (10, 3))
    np.testing.assert_allclose(ftle(field, points, 0.0, 1.5, 0.01), 0.5, atol=1e-6)
    np.testing.assert_allclose(ftle(field, points, 0.0, -1.5, 0.01), 0.7, atol=1e-6)


@pytest.fixture(scope="module")
def gyre_ftle():
    field = fk.fields.DoubleGyre()
    points = fk.seeding.uniform_grid((81, 41), field.bounds)
    auto = ftle(field, points, 0.0, 15.0, 0.05)
    fd = ftle(field, points, 0.0, 15.0, 0.05, method="fd", delta=1e-6)
    return points, auto, fd


def test_autodiff_and_finite_difference_ftle_agree_away_from_ridges(gyre_ftle):
    _, auto, fd = gyre_ftle
    difference = np.abs(auto - fd)
    assert np.nanpercentile(difference, 90) < 1e-6
    assert np.nanmedian(difference) < 1e-8


def test_double_gyre_ridge_where_the_literature_puts_it():
    # Shadden, Lekien & Marsden (2005), Fig. 6: at t0 = 0 the forward-time (T = 15) repelling
    # LCS crosses the lower half of the domain as a near-vertical curve just right of x = 1.
    field = fk.fields.DoubleGyre()
    xs = np.linspace(0.2, 1.8, 321)
    for y in (0.2, 0.3):
        values = ftle(field, np.stack([xs, np.full_like(xs, y)], axis=-1), 0.0, 15.0, 0.02)
        ridge = xs[np.nanargmax(values)]
        assert 1.05 < ridge < 1.2, (y, ridge)
        assert np.nanmax(values) > 2 * np.nanmedian(values)  # a distinct ridge, not noise


def test_ftle_marks_points_that_leave_a_grid():
    grid = fk.GridField.from_function(
        fk.fields.Uniform((1.0, 0.0)), [np.linspace(0, 1, 5), np.linspace(0, 1, 5)], dtype="float64"
    )
    values = ftle(grid, np.array([[0.1, 0.5], [0.9, 0.5]]), 0.0, 0.5, 0.05)
    assert np.isfinite(values[0]) and abs(values[0]) < 1e-9 and np.isnan(values[1])


def test_kde_matches_scipy_and_integrates_to_one():
    points = np.random.default_rng(2).normal(size=(500, 2)) * [1.0, 0.5] + [0.3, -0.2]
    gx, gy = np.meshgrid(np.linspace(-5, 5, 161), np.linspace(-4, 4, 129), indexing="ij")
    where = np.stack([gx.ravel(), gy.ravel()], axis=-1)
    for rule in ("scott", "silverman"):
        ours = fk.analysis.kde(points, where, bandwidth=rule, chunk=1000)
        reference = stats.gaussian_kde(points.T, bw_method=rule)(where.T)
        np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-12)
    cell = (10 / 160) * (8 / 128)
    assert abs(ours.sum() * cell - 1.0) < 1e-3
    points3 = np.random.default_rng(3).normal(size=(300, 3))
    np.testing.assert_allclose(
        fk.analysis.kde(points3, points3[:50]), stats.gaussian_kde(points3.T)(points3[:50].T), rtol=1e-9
    )


def test_histogram_counts_active_particles():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((20, 10), field.bounds, include_boundaries=False)
    traj = fk.track(
        field,
        seeds,
        0.0,
        2.0,
        0.05,
        save_every=10,
        t_release=np.where(np.arange(200) < 50, 1.0, 0.0),
        boundary=fk.Reflective(field.bounds),
    )
    counts = fk.analysis.histogram(traj, (8, 4), field.bounds)
    assert counts.shape == (len(traj.times), 8, 4)
    np.testing.assert_array_equal(counts.sum(axis=(1, 2)), traj.active.sum(axis=1))
    assert counts[0].sum() == 150


def test_residence_arrival_and_exit_times_exact_for_uniform_flow():
    field = fk.fields.Uniform((0.5, 0.0), bounds=((0.0, 0.0), (3.0, 1.0)))
    seeds = np.array([[0.1, 0.5], [0.2, 0.2], [0.6, 0.9], [0.1, 0.05]])
    traj = fk.track(field, seeds, 0.0, 7.0, 0.3, fk.Euler(), fk.Absorbing(field.bounds), save_every=1, dtype="float64")
    region = ((1.0, 0.1), (2.0, 0.95))
    inside_y = (seeds[:, 1] >= 0.1) & (seeds[:, 1] <= 0.95)
    expected = np.where(inside_y, 1.0 / 0.5, 0.0)
    np.testing.assert_allclose(fk.analysis.residence_time(traj, region), expected, atol=1e-12)
    arrival = fk.analysis.arrival_time(traj, region)
    np.testing.assert_allclose(arrival[inside_y], (1.0 - seeds[inside_y, 0]) / 0.5, atol=1e-12)
    assert np.isinf(arrival[~inside_y]).all()
    # the box's far wall is absorbing: exit at x = 3 (end of the step in which it was crossed)
    crossing = (3.0 - seeds[:, 0]) / 0.5
    exit_time = fk.analysis.exit_time(traj)
    assert np.all(exit_time >= crossing - 1e-12) and np.all(exit_time < crossing + 0.3 + 1e-12)


def test_dispersion():
    still = fk.fields.Uniform((0.0, 0.0), bounds=((-10.0, -10.0), (10.0, 10.0)))
    traj = fk.track(
        still, np.zeros((20000, 2)), 0.0, 1.0, 0.05, fk.EulerMaruyama(0.01), key=jax.random.key(4), save_every=4
    )
    np.testing.assert_allclose(fk.analysis.absolute_dispersion(traj)[1:], 4 * 0.01 * traj.times[1:], rtol=0.05)
    pairs = np.stack([np.arange(0, 20000, 2), np.arange(1, 20000, 2)], axis=-1)
    np.testing.assert_allclose(fk.analysis.relative_dispersion(traj, pairs)[1:], 8 * 0.01 * traj.times[1:], rtol=0.05)


def test_sampling_any_field_along_trajectories():
    field = fk.fields.DoubleGyre()
    axes = [np.linspace(0, 2, 41), np.linspace(0, 1, 21)]
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    pressure = fk.GridField.from_arrays(
        mesh[..., :1] + 2 * mesh[..., 1:], axes, dtype="float64"
    )  # p = x + 2y, one component
    traj = fk.track(
        field,
        fk.seeding.uniform_grid((5, 5), field.bounds, include_boundaries=False),
        0.0,
        1.0,
        0.05,
        save_every=5,
        dtype="float64",
    )
    sampled = fk.analysis.sample(pressure, traj)
    assert sampled.shape == traj.positions.shape[:2] + (1,)
    np.testing.assert_allclose(sampled[..., 0], traj.positions[..., 0] + 2 * traj.positions[..., 1], atol=1e-12)
    with pytest.raises(ValueError, match="velocity field needs 2 components, this one has 1"):
        fk.track(pressure, np.array([[0.5, 0.5]]), 0.0, 1.0, 0.1)


def test_plots_are_written(tmp_path):
    field = fk.fields.DoubleGyre()
    traj = fk.track(
        field,
        fk.seeding.uniform_grid((10, 5), field.bounds),
        0.0,
        2.0,
        0.05,
        save_every=4,
        boundary=fk.Reflective(field.bounds),
    )
    paths = [
        fk.analysis.plot_pathlines(traj, tmp_path / "speed.png", field, color_by="speed"),
        fk.analysis.plot_snapshot(traj, -1, tmp_path / "snap.png", field),
        fk.analysis.plot_density(
            fk.analysis.histogram(traj, (20, 10), field.bounds)[-1], field.bounds, tmp_path / "density.png", time=2.0
        ),
        fk.analysis.plot_ftle(
            np.random.rand(20, 10), [np.linspace(0, 2, 20), np.linspace(0, 1, 10)], tmp_path / "ftle.png", 0.0, -5.0
        ),
    ]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_pictures_evaluate_a_curvilinear_field_in_located_batches(tmp_path):
    """A projected model grid's picture: the speed behind the particles located once per batch
    (`speeds_at`), equal to the field at each point, NaN outside; the snapshot is written."""
    from flowkit.analysis.picture import speeds_at
    from flowkit.analysis.plots import plot_snapshot
    from flowkit.fields.curvilinear import CurvilinearField

    radius, angle = np.meshgrid(np.linspace(1, 3, 120), np.linspace(0.2, 1.3, 150), indexing="ij")
    lon, lat = 10 + 3 * radius * np.cos(angle), 50 + 2 * radius * np.sin(angle)  # a curved, skewed grid
    values = np.stack([np.cos(angle) * 0.3, np.sin(radius) * 0.2], axis=-1)
    field = CurvilinearField.from_arrays(lon, lat, values, dtype="float64")
    rng = np.random.default_rng(0)
    points = rng.uniform([lon.min() - 0.5, lat.min() - 0.5], [lon.max() + 0.5, lat.max() + 0.5], (300, 2))
    got = speeds_at(field, 0.0, points, chunk=128)
    one = np.asarray(jax.jit(jax.vmap(field, in_axes=(None, 0)))(0.0, jnp.asarray(points)))  # the one-point path
    np.testing.assert_allclose(got, one, rtol=1e-12, equal_nan=True)
    assert np.isnan(got).any() and np.isfinite(got).any()
    traj = fk.track(field, points[np.isfinite(got[:, 0])][:50], 0.0, 3600.0, 600.0)
    assert plot_snapshot(traj, -1, tmp_path / "snapshot.png", field).exists()


def test_land_of_a_layered_ocean_is_drawn_as_filled_cells():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flowkit.analysis.picture import land as draw_land

    lon, lat = np.meshgrid(np.linspace(0, 3, 4), np.linspace(60, 62, 3), indexing="ij")
    points = np.column_stack([lon.ravel(), lat.ravel()])
    index = np.arange(12).reshape(4, 3)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    land = points[:, 0] <= 1.0  # the western two node columns: land up to x = 1.5, where the mask is 1/2
    field = fk.fields.LayeredField.from_arrays(
        points, quads, np.full((1, 12, 1), 1.0), np.ones((1, 12, 1, 2)), np.full((1, 12), 10.0), land=land
    )
    fig, ax = plt.subplots()
    draw_land(ax, field)
    drawn = np.concatenate([p.vertices for c in ax.collections for p in c.get_paths()])
    np.testing.assert_allclose(
        [drawn[:, 0].min(), drawn[:, 0].max(), drawn[:, 1].min(), drawn[:, 1].max()], [0.0, 1.5, 60.0, 62.0]
    )
    beached = np.asarray(field.beached_batch(jnp.asarray([[1.45, 61.0], [1.55, 61.0]])))
    np.testing.assert_array_equal(beached, [True, False])  # the line drawn is where particles beach
    plt.close(fig)


@pytest.mark.parametrize("suffix", [".zarr", ".nc"])
def test_cf_trajectory_round_trip(tmp_path, suffix):
    field = fk.fields.ABCFlow()
    traj = fk.track(
        field,
        fk.seeding.random_box(9, field.bounds, key=jax.random.key(0)),
        0.0,
        0.5,
        0.05,
        boundary=fk.Periodic(field.bounds),
        record_velocity=True,
    )
    path = traj.save(tmp_path / f"t{suffix}")
    ds = xr.open_zarr(path, consolidated=False) if suffix == ".zarr" else xr.open_dataset(path)
    with ds:
        assert ds.attrs["featureType"] == "trajectory" and ds["trajectory"].attrs["cf_role"] == "trajectory_id"
        assert ds["x"].dims == ("trajectory", "obs") and ds.sizes["obs"] == 11
    again = fk.Trajectory.load(path)
    for name in ("times", "positions", "status", "velocities", "t_release", "exit_time"):
        np.testing.assert_array_equal(getattr(again, name), getattr(traj, name))
    spherical = traj.save(tmp_path / f"s{suffix}", spherical=True)
    back = fk.Trajectory.load(spherical)
    assert back.positions.shape == traj.positions.shape
    np.testing.assert_allclose(back.velocities, traj.velocities, rtol=1e-5)  # degrees per second again
    ds = traj.to_xarray(spherical=True)
    assert ds["lon"].attrs["units"] == "degrees_east" and ds["lat"].attrs["standard_name"] == "latitude"
    assert ds["u"].attrs["units"] == "m s-1"  # an oceanographer's units, not degrees per second
    lat = np.deg2rad(traj.positions[..., 1].T)
    np.testing.assert_allclose(
        ds["u"].values, traj.velocities[..., 0].T * np.pi / 180 * 6_371_000.0 * np.cos(lat), rtol=1e-5
    )


def test_from_xarray_reproduces_a_direct_grid_field():
    field = fk.datasets.double_gyre_grid(nx=21, ny=11, nt=5, t_end=4.0, dtype="float64")
    values = np.asarray(field.values)
    start = np.datetime64("2026-01-01T00:00:00")
    ds = xr.Dataset(
        {
            "u": (("time", "y", "x"), np.swapaxes(values[..., 0], 1, 2)),
            "v": (("time", "y", "x"), np.swapaxes(values[..., 1], 1, 2)),
        },
        coords={
            "x": np.asarray(field.axes[0]),
            "y": np.asarray(field.axes[1]),
            "time": start + (np.asarray(field.times) * 1e9).astype("timedelta64[ns]"),
        },
    )
    again = fk.io.from_xarray(ds, dtype="float64")
    np.testing.assert_array_equal(np.asarray(again.values), values)
    np.testing.assert_allclose(np.asarray(again.times), np.asarray(field.times))
    points = fk.seeding.uniform_grid((7, 5), field.bounds)
    a = fk.track(field, points, 0.0, 4.0, 0.1, dtype="float64")
    b = fk.track(again, points, 0.0, 4.0, 0.1, dtype="float64")
    np.testing.assert_array_equal(a.positions, b.positions)


def test_from_xarray_lon_lat_converts_to_degrees_per_second():
    lon, lat = np.linspace(0, 10, 11), np.linspace(40, 50, 11)
    ds = xr.Dataset(
        {"uo": (("lat", "lon"), np.ones((11, 11))), "vo": (("lat", "lon"), np.full((11, 11), np.nan))},
        coords={"lon": lon, "lat": lat},
    )
    field = fk.io.from_xarray(ds, u="uo", v="vo", land_value=0.0, dtype="float64")
    assert field.spherical and field.land is None
    for phi in (40.0, 43.7, 50.0):  # converted at the point's own latitude, not interpolated from the nodes'
        u = np.asarray(field(0.0, jnp.array([3.3, phi])))
        np.testing.assert_allclose(u, [1.0 / (6_371_000.0 * np.cos(np.deg2rad(phi))) * 180 / np.pi, 0.0], rtol=1e-12)
    with pytest.raises(ValueError, match="w='w' given but 'uo' has no depth dimension"):
        fk.io.from_xarray(ds, u="uo", v="vo", w="w")
    with pytest.raises(ValueError, match="velocity variable 'u' not in the dataset"):
        fk.io.from_xarray(ds, u="u")


@pytest.mark.slow
def test_ftle_app(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "apps" / "ftle.py"),
            "resolution=[41,21]",
            "T=-5",
            APP_CACHE,
            f"hydra.run.dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("ftle.npz", "ftle.vti", "ftle.png", "summary.json"):
        assert (tmp_path / name).stat().st_size > 0
    with np.load(tmp_path / "ftle.npz") as saved:
        written = fk.io.read_vti_arrays(tmp_path / "ftle.vti")["ftle"]
        np.testing.assert_allclose(written, np.nan_to_num(saved["ftle"]))
        assert saved["ftle"].shape == (41, 21)
    assert json.loads((tmp_path / "summary.json").read_text())["points"] == 41 * 21
