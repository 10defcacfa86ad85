"""The tracker: saved times, statuses, compile-once, no host traffic, sharding and batches."""

import json
import os
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from helpers import HANG

import flowkit as fk


@pytest.fixture(scope="module")
def gyre_grid():
    return fk.datasets.double_gyre_grid(nx=41, ny=21, nt=11, t_end=10.0)


def test_user_example_contract():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid(resolution=(60, 30), bounds=field.bounds, include_boundaries=True)
    traj = fk.track(
        field,
        seeds,
        t0=0.0,
        t1=20.0,
        dt=0.01,
        integrator=fk.RK4(),
        boundary=fk.Reflective(field.bounds),
        save_every=10,
        progress=True,
    )
    assert traj.times.shape == (201,) and traj.times[0] == 0.0 and traj.times[-1] == 20.0
    assert traj.positions.shape == (201, 1800, 2) and traj.status.shape == (201, 1800)
    assert traj.positions.dtype == np.float32
    np.testing.assert_allclose(traj.positions[0], seeds.astype(np.float32))
    assert traj.active.all()
    assert np.all(traj.positions >= 0) and np.all(traj.positions[..., 0] <= 2) and np.all(traj.positions[..., 1] <= 1)
    stats = traj.stats  # the run carries what it measured
    assert (stats.n_particles, stats.n_steps, stats.n_saves, stats.dtype) == (1800, 2000, 201, "float32")
    assert stats.run_s > 0 and stats.particle_steps_per_s == 1800 * 2000 / stats.run_s


def test_float32_close_to_float64():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((10, 5), field.bounds, include_boundaries=False)
    t32 = fk.track(field, seeds, 0.0, 5.0, 0.01, save_every=100)
    t64 = fk.track(field, seeds, 0.0, 5.0, 0.01, save_every=100, dtype="float64")
    assert np.max(np.abs(t32.positions - t64.positions)) < 1e-4


def test_last_step_lands_on_t1_and_partial_saves():
    field = fk.fields.SolidBodyRotation()
    seeds = np.array([[0.5, 0.0]])
    traj = fk.track(field, seeds, 0.0, 1.0, 0.03, fk.RK4(), save_every=7, dtype="float64")  # 34 steps, last one short
    assert traj.times[-1] == 1.0 and len(traj.times) == 1 + 5
    np.testing.assert_allclose(traj.times[:-1], np.arange(5) * 0.21)
    np.testing.assert_allclose(
        traj.positions[:, 0],
        np.asarray(field.exact(jnp.asarray(traj.times)[:, None], jnp.asarray(seeds)))[:, 0],
        atol=1e-7,
    )


def test_compiles_once_for_repeated_runs_of_same_shape():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((8, 4), field.bounds)
    fk.track(field, seeds, 0.0, 1.0, 0.01, save_every=10)
    before = fk.tracker.compile_count()
    other_field = fk.fields.DoubleGyre(A=0.2, eps=0.1)
    for f, s, t0 in [(field, seeds * 0.9, 0.0), (other_field, seeds, 3.0), (other_field, seeds * 0.5, -2.0)]:
        traj = fk.track(f, s, t0, t0 + 1.0, 0.01, save_every=10)
    assert fk.tracker.compile_count() == before
    assert traj.stats.compile_s == 0.0


def test_warmup_runs_the_compiled_chunk_untimed_and_changes_nothing():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((9, 5), field.bounds)
    plain = fk.track(field, seeds, 0.0, 2.0, 0.01, save_every=20)
    assert plain.stats.warmup_s == 0.0
    before = fk.tracker.compile_count()
    warmed = fk.track(field, seeds, 0.0, 2.0, 0.01, save_every=20, warmup=True)
    assert fk.tracker.compile_count() == before and warmed.stats.warmup_s > 0
    np.testing.assert_array_equal(warmed.positions, plain.positions)


def test_chunk_runs_without_host_transfers(gyre_grid):
    seeds = fk.seeding.uniform_grid((20, 10), gyre_grid.bounds)
    run = fk.tracker.TrackRun(
        gyre_grid, seeds, 0.0, 2.0, 0.01, fk.RK4(), fk.Reflective(gyre_grid.bounds), save_every=5, chunk_saves=8
    )
    run.compile()
    state, slots, _ = run.initial_state()
    with jax.transfer_guard("disallow"):
        for _ in range(run.n_chunks):
            state, frames = run.advance(state, slots)
        jax.block_until_ready(state)
    assert frames.positions.shape == (8, run.padded_batch, 2) and frames.status.shape == (8, run.padded_batch)
    reference = fk.track(gyre_grid, seeds, 0.0, 2.0, 0.01, fk.RK4(), fk.Reflective(gyre_grid.bounds), save_every=5)
    np.testing.assert_allclose(np.asarray(state.rows.x)[:200], reference.positions[-1], atol=1e-6)


def test_sharded_equals_single_device_and_batches(gyre_grid):
    assert len(jax.devices()) >= 2, "conftest imports flowkit first, which splits the CPU into devices"
    seeds = fk.seeding.random_box(1001, gyre_grid.bounds, key=jax.random.key(3))
    kwargs = dict(
        t0=0.0, t1=3.0, dt=0.02, integrator=fk.Heun(), boundary=fk.Reflective(gyre_grid.bounds), save_every=10
    )
    sharded = fk.track(gyre_grid, seeds, **kwargs)
    assert sharded.stats.n_devices == len(jax.devices())
    single = fk.track(gyre_grid, seeds, devices=jax.devices()[:1], **kwargs)
    batched = fk.track(gyre_grid, seeds, batch_size=300, **kwargs)
    np.testing.assert_allclose(single.positions, sharded.positions, atol=1e-6)
    np.testing.assert_array_equal(batched.positions, sharded.positions)
    np.testing.assert_array_equal(batched.status, sharded.status)


def test_process_shares_together_equal_one_run(gyre_grid, tmp_path):
    """`part=(i, n)`: what each process of a multi-host run tracks. Keys stay global, so the
    shares of a stochastic run concatenate to the one-process run bit for bit."""
    seeds = fk.seeding.random_box(301, gyre_grid.bounds, key=jax.random.key(4))
    kwargs = dict(
        t0=0.0,
        t1=1.0,
        dt=0.02,
        integrator=fk.EulerMaruyama(1e-3),
        boundary=fk.Reflective(gyre_grid.bounds),
        save_every=10,
        key=jax.random.key(5),
        t_release=np.linspace(0.0, 0.5, 301),
    )
    whole = fk.track(gyre_grid, seeds, **kwargs)
    shares = [fk.track(gyre_grid, seeds, part=(i, 3), **kwargs) for i in range(3)]
    assert [s.n_particles for s in shares] == [100, 100, 101]
    np.testing.assert_array_equal(np.concatenate([s.positions for s in shares], axis=1), whole.positions)
    np.testing.assert_array_equal(np.concatenate([s.t_release for s in shares]), whole.t_release)
    with pytest.raises(ValueError, match="part must be"):
        fk.track(gyre_grid, seeds, part=(3, 3), **kwargs)
    fk.track(gyre_grid, seeds, part=(1, 3), output=tmp_path / "tracks.zarr", **kwargs)  # one store per share
    assert not (tmp_path / "tracks.zarr").exists()
    np.testing.assert_array_equal(fk.Trajectory.load(tmp_path / "tracks.part1.zarr").positions, shares[1].positions)


def test_release_times():
    field = fk.fields.SolidBodyRotation()
    seeds = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.3]])
    t_release = np.array([0.0, 0.5, 1.0])
    traj = fk.track(field, seeds, 0.0, 1.0, 0.01, save_every=10, t_release=t_release, dtype="float64")
    waiting = traj.times[:, None] < t_release[None, :] - 1e-12
    np.testing.assert_array_equal(traj.status == fk.Status.NOT_RELEASED, waiting)
    np.testing.assert_array_equal(
        traj.positions[waiting[:, 1], 1], np.broadcast_to(seeds[1], (int(waiting[:, 1].sum()), 2))
    )
    expected = np.asarray(field.exact(1.0, jnp.asarray(seeds), t0=jnp.asarray(t_release)))
    np.testing.assert_allclose(traj.positions[-1], expected, atol=1e-8)


def test_out_of_domain_on_grid_without_boundary():
    field = fk.GridField.from_function(
        fk.fields.Uniform((1.0, 0.0)), [np.linspace(0, 1, 5), np.linspace(0, 1, 5)], dtype="float64"
    )
    seeds = np.array([[0.05, 0.5], [0.55, 0.5]])
    traj = fk.track(field, seeds, 0.0, 1.0, 0.1, fk.Euler(), dtype="float64")
    last_inside = [0.95, 0.95]
    for i in range(2):
        out = traj.status[:, i] == fk.Status.OUT_OF_DOMAIN
        assert out[-1] and out[np.argmax(out) :].all()
        assert traj.positions[-1, i, 0] == pytest.approx(last_inside[i])
        assert np.all(traj.positions[:, i, 0] <= 1.0)


def test_nonfinite_velocity_marks_particle():
    field = fk.fields.Analytic(
        lambda t, x, args: jnp.where(x[0] > 0.5, jnp.nan, 1.0) * jnp.array([1.0, 0.0]),
        bounds=((0.0, 0.0), (2.0, 1.0)),
        dim=2,
    )
    traj = fk.track(
        field, np.array([[0.0, 0.5], [0.0, 0.2]]), 0.0, 1.0, 0.1, fk.Euler(), t_release=[0.0, 0.5], dtype="float64"
    )
    assert traj.status[-1, 0] == fk.Status.NONFINITE and traj.status[-1, 1] == fk.Status.ACTIVE
    assert np.all(np.isfinite(traj.positions))
    assert traj.positions[-1, 0, 0] == pytest.approx(0.6)  # last finite position: the step from 0.6 met NaN


def test_record_velocity():
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((4, 3), field.bounds, include_boundaries=False)
    traj = fk.track(field, seeds, 0.0, 2.0, 0.05, save_every=8, record_velocity=True, dtype="float64")
    for k in (0, 2, len(traj.times) - 1):
        expected = jax.vmap(field, in_axes=(None, 0, None))(
            jnp.asarray(traj.times[k]), jnp.asarray(traj.positions[k]), None
        )
        np.testing.assert_allclose(traj.velocities[k], expected, atol=1e-12)


def test_trajectory_save_load_and_xarray(tmp_path):
    field = fk.fields.ABCFlow()
    seeds = fk.seeding.random_box(7, field.bounds, key=jax.random.key(0))
    traj = fk.track(field, seeds, 0.0, 0.5, 0.05, boundary=fk.Periodic(field.bounds), record_velocity=True)
    loaded = fk.Trajectory.load(traj.save(tmp_path / "t.npz"))
    for name in ("times", "positions", "status", "velocities", "t_release", "exit_time"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(traj, name))
    ds = traj.to_xarray()
    assert ds.sizes == {"trajectory": 7, "obs": 11} and ds.attrs["featureType"] == "trajectory"
    ds.to_netcdf(tmp_path / "t.nc") if _has_netcdf() else None
    np.testing.assert_array_equal(ds["z"].values, traj.positions[..., 2].T)
    assert isinstance(ds, xr.Dataset)


def _has_netcdf():
    try:
        import scipy.io  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            dict(seeds=np.array([[0.5, 0.5], [2.5, 0.5], [0.1, -1.0]])),
            ValueError,
            "2 of 3 seeds lie outside the field bounds",
        ),
        (dict(seeds=np.zeros((4, 3))), ValueError, "seeds must have shape \\(N, 2\\)"),
        (dict(dt=0.0), ValueError, "dt must be non-zero"),
        (dict(dt=-0.1), ValueError, "dt must have the sign of t1 - t0"),
        (dict(t1=30.0), ValueError, "t1=30.0 lies outside the field's time range \\[0.0, 10.0\\]"),
        (dict(save_every=0), ValueError, "save_every must be a positive integer"),
        (dict(t_release=[0.0]), ValueError, "t_release must have shape \\(2,\\)"),
        (dict(t_release=[0.0, 9.0]), ValueError, "t_release: every release time must lie between"),
        (dict(dtype="float16"), ValueError, "dtype must be 'float32' or 'float64'"),
        (dict(integrator="rk4"), TypeError, "integrator must be a flowkit integrator"),
    ],
)
def test_bad_input_raises_before_compiling(gyre_grid, kwargs, error, message):
    args = dict(field=gyre_grid, seeds=np.array([[0.5, 0.5], [1.0, 0.2]]), t0=0.0, t1=1.0, dt=0.1) | kwargs
    before = fk.tracker.compile_count()
    with pytest.raises(error, match=message):
        fk.track(**args)
    assert fk.tracker.compile_count() == before


@pytest.mark.parametrize(
    "seeds, t_release, message",
    [
        ([[0.5, 0.5], [2.5, 0.5]], None, "some of 2 seeds lie outside the field bounds"),
        ([[0.5, np.nan], [1.0, 0.2]], None, "seeds contain some non-finite positions"),
        ([[0.5, 0.5], [1.0, 0.2]], [0.0, 9.0], "t_release: every release time must lie between"),
    ],
)
def test_traced_runs_check_their_seeds_like_any_run(seeds, t_release, message):
    """Inside `jax.grad`/`jit` the seeds cannot be looked at on the host: the same checks run
    inside the program and fail it, instead of tracking invented positions."""
    field = fk.fields.DoubleGyre()
    final = jax.jit(lambda x: fk.track(field, x, 0.0, 1.0, 0.1, t_release=t_release).positions[-1])
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(final(jnp.asarray(seeds)))
    with pytest.raises(ValueError, match="batch_size: a traced run"):
        jax.jit(lambda x: fk.track(field, x, 0.0, 1.0, 0.1, batch_size=1).positions)(jnp.asarray([[0.5, 0.5]]))


def test_ensemble_of_parameters_matches_separate_runs():
    seeds = fk.seeding.uniform_grid((6, 3), fk.fields.DoubleGyre().bounds, include_boundaries=False)
    amplitudes = np.array([0.05, 0.1, 0.2])
    ensemble = fk.track_ensemble(
        lambda a: fk.fields.DoubleGyre(A=a), amplitudes, seeds, 0.0, 3.0, 0.01, save_every=50, dtype="float64"
    )
    assert ensemble.positions.shape == (3, 7, 18, 2) and ensemble.stats is None  # traced: nothing timed
    for i, a in enumerate(amplitudes):
        single = fk.track(fk.fields.DoubleGyre(A=a), seeds, 0.0, 3.0, 0.01, save_every=50, dtype="float64")
        np.testing.assert_allclose(np.asarray(ensemble.positions[i]), single.positions, atol=1e-12)


def test_ensemble_of_diffusivities():
    still = fk.fields.Uniform((0.0, 0.0), bounds=((-10.0, -10.0), (10.0, 10.0)))
    diffusivities = np.array([0.001, 0.01, 0.1])
    ensemble = fk.track_ensemble(
        lambda k: (still, fk.EulerMaruyama(k)),
        diffusivities,
        np.zeros((20000, 2)),
        0.0,
        1.0,
        0.05,
        save_every=20,
        key=jax.random.key(0),
    )
    variance = np.asarray(ensemble.positions[:, -1]).var(axis=1)  # (E, d)
    np.testing.assert_allclose(variance, np.broadcast_to(2 * diffusivities[:, None], variance.shape), rtol=0.05)


def test_four_devices_give_the_same_tracks_as_one(tmp_path):
    script = tmp_path / "four.py"
    script.write_text(
        "import os\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import flowkit as fk, jax, numpy as np\n"
        "assert len(jax.devices()) == 4\n"
        "f = fk.datasets.double_gyre_grid(nx=41, ny=21, nt=5, t_end=4.0)\n"
        "s = fk.seeding.random_box(1003, f.bounds, key=jax.random.key(1))\n"
        "a = fk.track(f, s, 0.0, 4.0, 0.01, save_every=50, boundary=fk.Reflective(f.bounds))\n"
        "assert a.stats.n_devices == 4\n"
        "b = fk.track(f, s, 0.0, 4.0, 0.01, save_every=50, boundary=fk.Reflective(f.bounds), "
        "devices=jax.devices()[:1])\n"
        "np.testing.assert_allclose(a.positions, b.positions, atol=2e-6)\n"
        "np.testing.assert_array_equal(a.status, b.status)\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr


def test_streamed_output_equals_in_memory_run(tmp_path):
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((30, 15), field.bounds)
    kwargs = dict(
        save_every=10,
        record_velocity=True,
        t_release=np.where(np.arange(450) < 10, 1.0, 0.0),
        boundary=fk.Absorbing(((0.2, 0.2), (1.8, 0.8))),
    )
    memory = fk.track(field, seeds, 0.0, 2.0, 0.01, **kwargs)
    lazy = fk.track(field, seeds, 0.0, 2.0, 0.01, output=tmp_path / "tracks.zarr", batch_size=100, **kwargs)
    assert isinstance(lazy, xr.Dataset) and lazy.sizes == {"trajectory": 450, "obs": 21}
    assert json.loads(lazy.attrs["flowkit_stats"])["n_particles"] == 450
    np.testing.assert_array_equal(lazy["x"][7].values, memory.positions[:, 7, 0])  # reads one track only
    streamed = fk.Trajectory.load(tmp_path / "tracks.zarr")
    for name in ("times", "positions", "status", "velocities", "t_release", "exit_time"):
        np.testing.assert_array_equal(getattr(streamed, name), getattr(memory, name))


def test_new_particle_counts_reuse_the_program_through_buckets():
    from flowkit.tracker import bucket_size

    assert [bucket_size(n) for n in (5, 9, 17, 500, 513, 5000)] == [5, 10, 20, 512, 640, 5120]
    assert all(n <= bucket_size(n) <= 1.25 * n for n in range(5, 5000))
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.random_box(1020, field.bounds, key=jax.random.key(3))
    first = fk.track(field, seeds[:1000], 0.0, 1.0, 0.1, bucket=True)
    before = fk.tracker.compile_count()
    second = fk.track(field, seeds, 0.0, 1.0, 0.1, bucket=True)  # 510 per device: the same bucket as 500
    assert fk.tracker.compile_count() == before
    np.testing.assert_array_equal(second.positions[:, :1000], first.positions)
    exact = fk.track(field, seeds, 0.0, 1.0, 0.1, bucket=False)
    np.testing.assert_array_equal(second.positions, exact.positions)


@pytest.mark.parametrize(
    "script, devices, warns",
    [
        ("import jax\nimport flowkit\nflowkit.configure()\n", 3, False),  # the usual order
        ("import flowkit\nflowkit.configure()\nimport jax\n", 3, False),
        ("import jax, jax.numpy as jnp\njnp.ones(1)\nimport flowkit\nflowkit.configure()\n", 1, True),  # too late
        ("import jax\nimport flowkit\n", 1, False),  # the import alone changes nothing of JAX's
        ("import jax\nimport flowkit\nflowkit.configure(2)\n", 2, False),
    ],
)
def test_one_cpu_device_per_core_after_configure_whatever_the_import_order(script, devices, warns):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {
        "FLOWKIT_HOST_DEVICES": "3",
        "JAX_PLATFORMS": "cpu",
    }
    code = "import warnings\nwarnings.simplefilter('always')\n" + script + "print(len(jax.devices()))\n"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == str(devices)
    assert ("configured after JAX had started" in result.stderr) == warns


def test_no_log_line_about_backends_nobody_asked_for():
    """With logging at INFO (as in the Hydra apps), JAX's "Unable to initialize backend 'tpu'"
    no longer reaches the user; flowkit's own INFO lines still do."""
    code = (
        "import logging\nlogging.basicConfig(level=logging.INFO)\nimport flowkit, "
        "jax\njax.devices()\nlogging.getLogger('flowkit').info('still here')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr
    assert "Unable to initialize backend" not in result.stderr and "still here" in result.stderr


def test_save_every_as_a_duration_of_whole_steps():
    field = fk.fields.analytic.DoubleGyre()
    seeds = np.array([[0.5, 0.5], [1.5, 0.3]])
    by_steps = fk.track(field, seeds, 0.0, 3.0, 0.25, save_every=4)
    by_time = fk.track(field, seeds, 0.0, 3.0, 0.25, save_every="1s")
    np.testing.assert_array_equal(by_time.times, by_steps.times)
    np.testing.assert_array_equal(by_time.positions, by_steps.positions)
    with pytest.raises(ValueError, match=r"save_every='0.3s' \(0.3 s\) is not a whole number of steps of dt=0.25 s"):
        fk.track(field, seeds, 0.0, 3.0, 0.25, save_every="0.3s")


def test_a_step_longer_than_the_run_and_no_seeds_are_refused_in_one_line():
    field = fk.fields.analytic.DoubleGyre()
    with pytest.raises(ValueError, match=r"dt=1e\+09 is longer than the run \(t1 - t0 = 20\): .* give dt <= 20"):
        fk.track(field, np.array([[0.5, 0.5]]), 0.0, 20.0, 1e9)
    with pytest.raises(ValueError, match=r"^no seeds \(N = 0\)"):
        fk.track(field, np.zeros((0, 2)), 0.0, 1.0, 0.1)


def test_a_second_run_on_the_same_field_takes_its_copy_already_on_the_devices():
    """The next run of the same field on the same devices reuses the field's arrays as the last
    run placed them (JAX arrays do not change), and computes the same tracks; the kept copy goes
    when the field is collected."""
    import gc

    from flowkit.tracker import cache

    field = fk.datasets.double_gyre_grid(nx=41, ny=21, nt=11, t_end=10.0)
    seeds = np.array([[0.5, 0.5], [1.2, 0.3]])
    runs = [fk.tracker.TrackRun(field, seeds, 0.0, 2.0, 0.1) for _ in range(2)]
    placed = [jax.tree.leaves(eqx.filter(run.pieces.field, eqx.is_array)) for run in runs]
    assert placed[0] and all(a is b for a, b in zip(*placed))
    first, second = (run.run() for run in runs)
    np.testing.assert_array_equal(first.positions, second.positions)
    assert cache._PLACED
    del field, runs, placed, first, second
    gc.collect()
    assert not cache._PLACED


@pytest.mark.skipif(min(len(os.sched_getaffinity(0)), 8) < 2, reason="one core: one device is all there is")
def test_a_run_on_one_cpu_device_of_several_cores_says_so_once():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "FLOWKIT_HOST_DEVICES")}
    code = (
        "import logging\nlogging.basicConfig(level=logging.INFO)\nimport flowkit as fk\n"
        "field = fk.fields.analytic.DoubleGyre()\n"
        "for _ in range(2):\n    fk.track(field, [[0.5, 0.5]], 0.0, 1.0, 0.1)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("flowkit runs on 1 CPU device of") == 1 and "flowkit.configure()" in result.stderr
