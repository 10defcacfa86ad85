"""Particle models inside every kind of run: inlets restart their variables, late releases start
at the fluid, streamed series and batches equal in-memory runs, ensembles sweep a model's numbers,
one compile per run shape and no host traffic inside a chunk."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import advance_without_host_traffic

import flowkit as fk
from flowkit.particles import Aging, Combined, Inertial, Tracer

WIND = fk.fields.Analytic(
    lambda t, x, args: jnp.stack([1.0 + 0.5 * jnp.sin(t) + 0 * x[0], 0.2 * jnp.cos(x[0])]), ((0.0, -5.0), (4.0, 5.0)), 2
)
HEAVY = dict(fluid_density=1.0, viscosity=1.0, gravity=(0.0, 0.0))


def droplet(tau: float) -> Inertial:
    """An inertial particle of response time `tau` (ρ_p = 1000, μ = 1: d = sqrt(18 τ / 1000))."""
    return Inertial(np.sqrt(18 * tau / 1000.0), 1000.0, **HEAVY)


def test_late_releases_start_at_the_fluid_velocity_and_inlets_restart_the_variables():
    seeds = np.array([[0.5, 0.0], [0.5, 1.0]])
    model = Combined(Inertial(np.sqrt(18 * 0.05 / 1000.0), 1000.0, **HEAVY, scheme="rk"), Aging())
    traj = fk.track(
        WIND, seeds, 0.0, 3.0, 0.01, particles=model, t_release=np.array([0.0, 1.0]), dtype="float64", save_every=100
    )
    released = traj.variables["velocity"][1, 1]  # saved at t = 1, the step it was released in
    np.testing.assert_allclose(released, np.asarray(WIND(1.0, jnp.asarray(seeds[1]))), atol=1e-12)
    np.testing.assert_allclose(traj.variables["age"][-1], [3.0, 2.0], atol=1e-9)
    inlet = fk.InletOutlet("xmin", "xmax", mode="grid")
    traj = fk.track(
        WIND,
        np.array([[0.1, 0.0], [0.1, 2.0]]),
        0.0,
        12.0,
        0.01,
        particles=model,
        boundary=inlet,
        dtype="float64",
        save_every=10,
    )
    assert traj.generation[-1].min() >= 2  # every slot went round several times
    restarted = np.nonzero(np.diff(traj.generation[:, 0]))[0] + 1
    age = traj.variables["age"][:, 0]
    assert np.all(age[restarted] < 0.1 + 1e-9)  # each new path starts young (within the save interval)
    assert np.all(np.isfinite(traj.variables["velocity"]))


def test_batches_devices_and_a_traced_run_agree():
    rng = np.random.default_rng(0)
    seeds = rng.uniform((0.2, -2.0), (1.0, 2.0), (103, 2))
    model = Combined(Inertial(np.sqrt(18 * 0.05 / 1000.0), 1000.0, **HEAVY, scheme="rk"), Aging())
    kw = dict(particles=model, dtype="float64", save_every=20, t_release=rng.uniform(0, 1, 103))
    whole = fk.track(WIND, seeds, 0.0, 2.0, 0.01, **kw)
    batched = fk.track(WIND, seeds, 0.0, 2.0, 0.01, batch_size=40, devices=jax.local_devices()[:1], **kw)
    traced = jax.jit(lambda s: fk.track(WIND, s, 0.0, 2.0, 0.01, **kw).positions)(jnp.asarray(seeds))
    for other in (batched.positions, np.asarray(traced)):
        np.testing.assert_allclose(whole.positions, other, rtol=0, atol=1e-12)
    np.testing.assert_allclose(whole.variables["velocity"], batched.variables["velocity"], atol=1e-12)


def test_ensemble_over_droplet_sizes_equals_separate_runs():
    seeds = jnp.array([[0.5, 0.0], [0.5, 1.0]])
    taus = jnp.array([0.01, 0.1, 1.0])
    build = lambda tau: (WIND, fk.RK4(), Inertial(jnp.sqrt(18 * tau / 1000.0), 1000.0, **HEAVY, scheme="exponential"))  # noqa: E731
    ensemble = fk.track_ensemble(build, taus, seeds, 0.0, 2.0, 0.02, dtype="float64")
    for i, tau in enumerate(np.asarray(taus)):
        alone = fk.track(
            WIND,
            seeds,
            0.0,
            2.0,
            0.02,
            particles=Inertial(np.sqrt(18 * tau / 1000.0), 1000.0, **HEAVY, scheme="exponential"),
            dtype="float64",
        )
        np.testing.assert_allclose(ensemble.positions[i], alone.positions, atol=1e-12)
    spread = np.linalg.norm(ensemble.positions[:, -1] - ensemble.positions[0, -1], axis=-1)
    assert spread[2].min() > spread[1].max() > 0  # heavier droplets lag the gusts more


def test_one_compile_per_shape_and_no_host_traffic_inside_a_chunk():
    seeds = np.random.default_rng(1).uniform((0.2, -2.0), (1.0, 2.0), (64, 2))
    run = fk.tracker.TrackRun(WIND, seeds, 0.0, 1.0, 0.01, particles=droplet(0.05), chunk_saves=2, save_every=5)
    before, frames = advance_without_host_traffic(run)
    assert frames.variables["velocity"].shape == (2, run.padded_batch, 2)
    fk.tracker.TrackRun(
        WIND, seeds, 0.0, 1.0, 0.01, particles=droplet(0.2), chunk_saves=2, save_every=5
    ).run()  # a new size: same program
    assert fk.tracker.compile_count() == before


@pytest.mark.parametrize("stream", [False, True])
def test_inertial_particles_on_a_streamed_mesh_series(tmp_path_factory, stream):
    series = fk.datasets.cellular_flow_vtu_series(
        tmp_path_factory.mktemp("inertial") / "cell", shape=(6, 6, 6), times=np.linspace(0.0, 1.0, 11)
    )
    memory = fk.io.read_vtk(series, stream=False)
    seeds = np.random.default_rng(2).uniform(0.2, 0.8, (50, 3))
    model = Inertial(0.03, 1000.0, fluid_density=1.0, viscosity=1.0, gravity=20.0)  # τ = 0.05, falling ~1 per unit time
    expected = fk.track(
        memory, seeds, 0.0, 1.0, 0.01, particles=model, dtype="float64", save_every=10, boundary=fk.MeshWalls("stick")
    )
    field = fk.io.read_vtk(series, stream=True, max_device_bytes=10**6) if stream else memory
    got = fk.track(
        field, seeds, 0.0, 1.0, 0.01, particles=model, dtype="float64", save_every=10, boundary=fk.MeshWalls("stick")
    )
    np.testing.assert_array_equal(expected.positions, got.positions)
    np.testing.assert_array_equal(expected.variables["velocity"], got.variables["velocity"])
    assert (got.status[-1] == fk.Status.ABSORBED).any()  # gravity brings some onto the floor


def test_tracer_model_keeps_the_plain_program():
    seeds = np.array([[0.5, 0.0]])
    a = fk.track(WIND, seeds, 0.0, 1.0, 0.01)
    b = fk.track(WIND, seeds, 0.0, 1.0, 0.01, particles=Tracer())
    assert a.variables is None and b.variables is None
    np.testing.assert_array_equal(a.positions, b.positions)


def test_an_inlets_walls_turn_an_inertial_particles_velocity_as_the_same_walls_alone():
    """Droplets carried into the floor of a channel whose ends are an inlet and an outlet
    (`InletOutlet(walls="reflect")`) bounce off it as off `fk.Reflective` alone: position and
    velocity alike (the inlet's walls turn the velocity they reflect; none reaches the outlet)."""
    flow = fk.fields.Analytic(
        lambda t, x, args: jnp.stack([0.2 + 0 * x[0], -1.0 + 0 * x[1]]), ((0.0, 0.0), (4.0, 1.0)), 2
    )
    seeds = np.column_stack([np.linspace(1.0, 2.0, 8), np.linspace(0.1, 0.9, 8)])
    model = Inertial(np.sqrt(18 * 0.5 / 1000.0), 1000.0, **HEAVY, scheme="rk")
    runs = [
        fk.track(flow, seeds, 0.0, 1.5, 0.01, particles=model, boundary=boundary, dtype="float64", save_every=10)
        for boundary in (fk.Reflective(flow.bounds), fk.InletOutlet("xmin", "xmax", walls="reflect"))
    ]
    alone, inlet = runs
    assert (alone.variables["velocity"][-1, :, 1] > -0.9).all()  # every droplet bounced and turned
    np.testing.assert_array_equal(inlet.status, alone.status)
    np.testing.assert_allclose(inlet.positions, alone.positions, rtol=0, atol=1e-12)
    np.testing.assert_allclose(inlet.variables["velocity"], alone.variables["velocity"], rtol=0, atol=1e-12)
