"""Inlets and outlets, release schedules: slot accounting, placement, flux profile, compiled runs."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk
from flowkit.boundaries.regions import inlet_surface, plane

RADIUS, LENGTH = 0.5, 4.0


@pytest.fixture(scope="module")
def pipe():
    """Poiseuille flow through the sample pipe mesh (float64 nodes and values)."""
    points, tets = fk.datasets.pipe_mesh()
    return fk.MeshField.from_arrays(points, tets, fk.datasets.poiseuille(points), dtype="float64")


def channel_flow():
    """2-D plane Poiseuille flow over [0, 2] × [0, 1], in closed form."""
    return fk.fields.Analytic(
        lambda t, x, args: jnp.stack([4 * x[1] * (1 - x[1]), 0 * x[0]]), bounds=((0.0, 0.0), (2.0, 1.0)), dim=2
    )


@pytest.fixture(scope="module")
def channel():
    """2-D plane Poiseuille flow on a grid over [0, 2] × [0, 1]."""
    return fk.GridField.from_function(channel_flow(), [np.linspace(0, 2, 41), np.linspace(0, 1, 21)])


def _pipe_seeds(n, seed=0):
    rng = np.random.default_rng(seed)
    r = 0.45 * np.sqrt(rng.uniform(size=n))
    a = rng.uniform(0, 2 * np.pi, n)
    return np.stack([rng.uniform(0, LENGTH, n), r * np.cos(a), r * np.sin(a)], axis=1)


def _restarts(traj):
    """`(frame, slot)` of every saved restart, and the positions there."""
    new = traj.generation[1:] > traj.generation[:-1]
    frame, slot = np.nonzero(new)
    return frame + 1, slot, traj.positions[frame + 1, slot]


def _ks_distance(samples, cdf):
    x = np.sort(samples)
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


@pytest.mark.parametrize("mode", ["grid", "random", "flux"])
def test_inlet_outlet_on_a_pipe_keeps_every_slot(pipe, mode):
    seeds = _pipe_seeds(600)
    traj = fk.track(
        pipe,
        seeds,
        0.0,
        12.0,
        0.05,
        boundary=fk.InletOutlet("xmin", "xmax", mode=mode, walls="reflect"),
        key=jax.random.key(0),
        dtype="float64",
    )
    assert traj.positions.shape == (241, 600, 3) and traj.generation.shape == (241, 600)
    assert np.all(traj.status == fk.Status.ACTIVE)  # nobody lost: walls reflect, the outlet restarts
    assert np.all(np.diff(traj.generation, axis=0) >= 0)
    frame, slot, where = _restarts(traj)
    assert len(frame) > 600  # particles near the axis go through the pipe several times
    # every restarted particle is on the inlet disc (one save per step: seen where it was put)
    assert np.all(where[:, 0] == 0.0) and np.all(np.hypot(where[:, 1], where[:, 2]) <= RADIUS + 1e-9)
    ids = traj.particle_id
    assert len(np.unique(ids[-1])) == 600 and np.all(ids[-1] == np.arange(600) + 600 * traj.generation[-1])


def test_restarts_are_placed_exactly_on_the_inlet(pipe):
    seeds = _pipe_seeds(400, seed=1)
    traj = fk.track(
        pipe,
        seeds,
        0.0,
        8.0,
        0.05,
        save_every=1,
        boundary=fk.InletOutlet("xmin", "xmax", mode="random", walls="reflect"),
        key=jax.random.key(1),
        dtype="float64",
    )
    steps_x = traj.positions[1:, :, 0] - traj.positions[:-1, :, 0]
    frame, slot, where = _restarts(traj)
    # a restarted particle is put on the inlet at the end of its step: the frame shows x = 0 exactly
    assert len(frame) > 100 and np.all(where[:, 0] == 0.0)
    assert np.all(steps_x[frame - 1, slot] < -LENGTH / 2)  # it came from the outlet


def test_grid_mode_reproduces_the_seed_pattern_exactly(channel):
    seeds = np.stack([np.zeros(19), np.linspace(0.05, 0.95, 19)], axis=1)
    traj = fk.track(channel, seeds, 0.0, 6.0, 0.01, save_every=1, boundary=fk.InletOutlet("xmin", "xmax", mode="grid"))
    frame, slot, where = _restarts(traj)
    assert len(frame) >= 19
    np.testing.assert_array_equal(where, seeds.astype(np.float32)[slot])


def test_grid_mode_projects_volume_seeds_onto_the_inlet(channel):
    seeds = np.array([[1.5, 0.3], [0.7, 0.6]])
    traj = fk.track(channel, seeds, 0.0, 3.0, 0.01, save_every=1, boundary=fk.InletOutlet("xmin", "xmax", mode="grid"))
    _, slot, where = _restarts(traj)
    np.testing.assert_array_equal(where, np.stack([np.zeros(2), seeds[:, 1]], 1).astype(np.float32)[slot])


def test_flux_sampler_follows_the_poiseuille_profile(pipe):
    """KS test of the radial distribution of 10 000 draws: uniform over the disc gives
    CDF ρ², flux-weighted (u ∝ 1 - ρ²) gives 2ρ² - ρ⁴ (ρ = r/R)."""
    surface = inlet_surface(pipe, plane("xmin", pipe.bounds))
    n = 10_000
    u = jax.random.uniform(jax.random.key(7), (n, 6), dtype=jnp.float64)
    critical = 1.63 / np.sqrt(n)  # Kolmogorov, alpha = 0.01
    for inflow, cdf, other in [
        (None, lambda r: r**2, lambda r: 2 * r**2 - r**4),
        (surface.normal_speed(pipe, None, 0.0), lambda r: 2 * r**2 - r**4, lambda r: r**2),
    ]:
        x, cell = surface.draw(u, inflow)
        x = np.asarray(x)
        rho = np.hypot(x[:, 1], x[:, 2]) / RADIUS
        assert np.all(x[:, 0] == 0.0) and np.all(rho <= 1 + 1e-12)
        assert _ks_distance(rho, cdf) < critical
        assert _ks_distance(rho, other) > 5 * critical  # the test can tell the two apart
        found = np.asarray(pipe.locate(jnp.asarray(x), jnp.asarray(cell))[0].cell)
        np.testing.assert_array_equal(found, np.asarray(cell))  # hints are the faces' own cells


def test_flux_mode_injections_in_a_run_follow_the_profile(pipe):
    seeds = _pipe_seeds(3000, seed=2)
    traj = fk.track(
        pipe,
        seeds,
        0.0,
        4.0,
        0.05,
        save_every=1,
        boundary=fk.InletOutlet("xmin", "xmax", mode="flux", walls="reflect"),
        key=jax.random.key(2),
        dtype="float64",
    )
    _, _, where = _restarts(traj)
    rho = np.hypot(where[:, 1], where[:, 2]) / RADIUS
    assert len(rho) > 800
    assert _ks_distance(rho, lambda r: 2 * r**2 - r**4) < 1.63 / np.sqrt(len(rho))


def test_inlet_outlet_compiles_once_and_runs_without_host_transfers(pipe):
    boundary = fk.InletOutlet("xmin", "xmax", mode="flux", walls="reflect")
    run = fk.tracker.TrackRun(
        pipe, _pipe_seeds(300), 0.0, 4.0, 0.05, fk.RK4(), boundary, 4, key=jax.random.key(3), chunk_saves=5
    )
    run.compile()
    before = fk.tracker.compile_count()
    state, slots, _ = run.initial_state()
    with jax.transfer_guard("disallow"):
        for _ in range(run.n_chunks):
            state, frames = run.advance(state, slots)
        jax.block_until_ready(state)
    assert int(np.asarray(state.rows.generation).sum()) > 0 and frames.generation.shape == (5, run.padded_batch)
    fk.tracker.TrackRun(
        pipe, _pipe_seeds(300, seed=5), 0.0, 4.0, 0.05, fk.RK4(), boundary, 4, key=jax.random.key(4), chunk_saves=5
    ).run()
    assert fk.tracker.compile_count() == before


@pytest.mark.parametrize("kind", ["grid", "analytic"])
def test_sharded_and_chunked_runs_agree(channel, kind):
    """On two devices, chunk after chunk, as the app runs on a 2-core machine: an analytic
    field's hints are empty `(N, 0)` arrays, which a restart rebuilds (and XLA returned
    replicated, so the second chunk refused the state)."""
    assert len(jax.devices()) == 2
    field = channel if kind == "grid" else channel_flow()
    seeds = np.random.default_rng(3).uniform((0, 0.05), (2, 0.95), (301, 2))
    boundary = fk.InletOutlet("xmin", "xmax", mode="random")
    kw = dict(boundary=boundary, key=jax.random.key(5), save_every=10, chunk_saves=10)
    one = fk.tracker.TrackRun(field, seeds, 0.0, 5.0, 0.01, devices=jax.devices()[:1], **kw).run()
    two = fk.tracker.TrackRun(field, seeds, 0.0, 5.0, 0.01, **kw).run()
    assert one.generation.max() >= 1  # particles restarted, in more than one chunk
    np.testing.assert_array_equal(one.generation, two.generation)
    np.testing.assert_allclose(one.positions, two.positions, atol=1e-5)


def test_continuous_inlet_releases_at_its_rate(channel):
    rate, t1, dt = 200.0, 3.0, 0.01
    inlet = fk.ContinuousInlet("xmin", rate, slots=1000, mode="flux", outlet="xmax")
    traj = fk.track(channel, np.zeros((0, 2)), 0.0, t1, dt, save_every=1, boundary=inlet, key=jax.random.key(6))
    assert traj.n_particles == 1000 and traj.stats.lost_releases == 0
    # release k is due at (k + 1/2) / rate: 600 in [0, 3), exactly 2 in every step of 0.01
    assert traj.generation[-1].sum() == 600
    per_step = np.diff(traj.generation.sum(axis=1))
    assert np.all(per_step == 2)
    frame, slot, where = _restarts(traj)
    assert np.all(where[:, 0] == 0.0) and np.all((where[:, 1] >= 0) & (where[:, 1] <= 1))
    assert (traj.status == fk.Status.OUT_OF_DOMAIN).any()  # the fastest leave through the outlet after 2 s


def test_continuous_inlet_reuses_slots_and_reports_lost_releases(channel, caplog):
    inlet = fk.ContinuousInlet("xmin", 400.0, slots=300, mode="random", outlet="xmax")
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        traj = fk.track(channel, np.zeros((0, 2)), 0.0, 4.0, 0.01, save_every=5, boundary=inlet, key=jax.random.key(7))
    assert "releases found no free slot" in caplog.text
    lost = traj.stats.lost_releases
    expected = 1600
    assert lost > 0 and traj.generation[-1].sum() + lost == expected
    assert traj.generation.max() >= 2  # slots freed at the outlet were used again
    assert np.all(traj.status[traj.generation == 0] == fk.Status.NOT_RELEASED)


def test_pulses_release_per_pulse(channel):
    inlet = fk.ContinuousInlet("xmin", pulses=[0.5, 1.0, 1.5], per_pulse=40, slots=200, mode="random")
    traj = fk.track(
        channel, np.array([[1.0, 0.5]]), 0.0, 2.0, 0.01, save_every=1, boundary=inlet, key=jax.random.key(8)
    )
    assert traj.n_particles == 201
    count = traj.generation.sum(axis=1)
    t = traj.times
    for pulse, expected in [(0.5, 40), (1.0, 80), (1.5, 120)]:
        assert count[np.searchsorted(t, pulse - 0.02)] == expected - 40
        assert count[np.searchsorted(t, pulse + 0.02)] == expected


def test_outputs_keep_restarted_paths_apart(pipe, tmp_path):
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    traj = fk.track(
        pipe,
        _pipe_seeds(50),
        0.0,
        10.0,
        0.05,
        save_every=2,
        boundary=fk.InletOutlet("xmin", "xmax", mode="grid", walls="reflect"),
    )
    path = traj.save(tmp_path / "paths.vtp")
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    poly = reader.GetOutput()
    assert poly.GetNumberOfLines() == 50 + int(traj.generation[-1].sum())
    points = vtk_to_numpy(poly.GetPoints().GetData())
    offsets = vtk_to_numpy(poly.GetLines().GetOffsetsArray())
    ids = vtk_to_numpy(poly.GetPointData().GetArray("particle_id"))
    for a, b in zip(offsets[:-1], offsets[1:]):
        assert np.all(np.diff(points[a:b, 0]) > -1e-9) and len(set(ids[a:b])) == 1  # no jump back to the inlet
    ds = traj.to_xarray()
    assert "particle_id" in ds and fk.Trajectory.from_xarray(ds).generation.tolist() == traj.generation.tolist()
    traj.save(tmp_path / "t.npz")
    np.testing.assert_array_equal(fk.Trajectory.load(tmp_path / "t.npz").generation, traj.generation)
    streamed = fk.track(
        pipe,
        _pipe_seeds(50),
        0.0,
        10.0,
        0.05,
        save_every=2,
        boundary=fk.InletOutlet("xmin", "xmax", mode="grid", walls="reflect"),
        output=tmp_path / "s.zarr",
    )
    np.testing.assert_array_equal(streamed["generation"].values.T, traj.generation)


def test_bad_inlets_are_refused(pipe, channel):
    with pytest.raises(ValueError, match="unknown side 'left'"):
        fk.track(channel, [[0.5, 0.5]], 0, 1, 0.1, boundary=fk.InletOutlet("left", "xmax"))
    with pytest.raises(ValueError, match="no boundary face of the mesh lies on the plane"):
        fk.track(
            pipe,
            [[1.0, 0, 0]],
            0,
            1,
            0.1,
            boundary=fk.InletOutlet({"point": [2.0, 0, 0], "normal": [-1, 0, 0]}, "xmax"),
        )
    with pytest.raises(ValueError, match="needs a PRNG key"):
        fk.track(pipe, [[1.0, 0, 0]], 0, 1, 0.1, boundary=fk.InletOutlet(mode="flux"))
    small = {"point": [0, 0, 0], "normal": [-1, 0, 0], "lo": [0, -0.2, -0.2], "hi": [0, 0.2, 0.2]}
    with pytest.raises(ValueError, match="1 of 2 seeds project onto the inlet plane outside"):
        fk.track(pipe, [[1.0, 0.3, 0.3], [1.0, 0.1, 0.1]], 0, 1, 0.1, boundary=fk.InletOutlet(small, mode="grid"))
    with pytest.raises(ValueError, match="mode must be one of"):
        fk.InletOutlet(mode="spray")
    with pytest.raises(ValueError, match="either rate"):
        fk.ContinuousInlet("xmin")
    with pytest.raises(ValueError, match="forward in time"):
        fk.track(channel, [[1.0, 0.5]], 1, 0, -0.1, boundary=fk.ContinuousInlet("xmin", 10.0), key=jax.random.key(0))
    with pytest.raises(TypeError, match="MeshWalls needs a MeshField"):
        fk.track(channel, [[1.0, 0.5]], 0, 1, 0.1, boundary=fk.MeshWalls("reflect"))


def test_a_small_inlet_patch_restarts_seeds_spread_through_the_domain_on_the_patch(pipe, caplog):
    """The default mode on an inlet that is part of a face (a real case's inlet patch): seeds
    spread through the pipe do not all project onto it, so the restarts are drawn on the patch."""
    small = {"point": [0, 0, 0], "normal": [-1, 0, 0], "lo": [0, -0.2, -0.2], "hi": [0, 0.2, 0.2]}
    seeds = _pipe_seeds(200)
    with caplog.at_level("INFO", logger="flowkit"):
        traj = fk.track(pipe, seeds, 0.0, 4.0, 0.05, boundary=fk.InletOutlet(small), dtype="float64")
    assert "seeds project outside the inlet" in caplog.text and "mode='random', key=0" in caplog.text
    restarted = traj.generation[-1] > 0
    assert restarted.sum() > 20
    first = np.argmax(traj.generation > 0, axis=0)[restarted]  # the frame after each first restart
    x = traj.positions[first, np.flatnonzero(restarted)]
    assert np.abs(x[:, 1:]).max() < 0.3  # on the patch: its faces, which reach a face past its box (y, z kept)
    on_patch = fk.track(
        pipe, seeds[np.all(np.abs(seeds[:, 1:]) < 0.2, axis=1)], 0.0, 0.5, 0.05, boundary=fk.InletOutlet(small)
    )
    assert on_patch.stats.n_particles > 0  # every seed projects onto the patch: grid, no key needed


def test_ensemble_with_an_inlet_equals_separate_runs():
    def channel_of(speed):
        return fk.fields.Analytic(
            lambda t, x, args: jnp.stack([speed * 4 * x[1] * (1 - x[1]), 0 * x[0]]),
            bounds=((0.0, 0.0), (2.0, 1.0)),
            dim=2,
        )

    seeds = np.random.default_rng(4).uniform((0, 0.1), (2, 0.9), (50, 2))
    boundary = fk.InletOutlet("xmin", "xmax", "grid")
    ensemble = fk.track_ensemble(
        channel_of, jnp.array([0.5, 2.0]), seeds, 0.0, 3.0, 0.01, boundary=boundary, save_every=10
    )
    for member, speed in enumerate([0.5, 2.0]):
        alone = fk.track(channel_of(speed), seeds, 0.0, 3.0, 0.01, boundary=boundary, save_every=10)
        np.testing.assert_array_equal(np.asarray(ensemble.generation[member]), alone.generation)
        np.testing.assert_allclose(np.asarray(ensemble.positions[member]), alone.positions, atol=1e-6)
    assert int(ensemble.generation[1, -1].sum()) > int(ensemble.generation[0, -1].sum()) > 0
