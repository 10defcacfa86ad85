"""Particle models against closed forms and limits (float64): settling, the tracer limit, the
centrifuge, Schiller–Naumann drag, gradients through the physics, buoyancy, per-particle records."""

import logging

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flowkit as fk
from flowkit.particles import Aging, Buoyant, Combined, Distance, DragTerm, Extremes, Inertial, TimeInBox, Tracer

P = fk.particles
STILL = fk.fields.Uniform((0.0, 0.0, 0.0), bounds=((-1e3,) * 3, (1e3,) * 3))
DROPLET = dict(diameter=50e-6, density=1000.0, fluid_density=1.2, viscosity=1.8e-5)


def settling(t, tau, vt):
    """Depth of a particle released at rest in still fluid (Stokes drag)."""
    return -vt * (t - tau * (1 - np.exp(-t / tau)))


@pytest.mark.parametrize("ratio", [0.05, 5.0, 500.0])
def test_settling_from_rest_follows_the_closed_form(ratio, caplog):
    model = Inertial(**DROPLET)
    tau = float(model.response_time)
    vt = (1 - 1.2 / 1000) * 9.81 * tau
    with caplog.at_level(logging.INFO, logger="flowkit"):
        traj = fk.track(
            STILL, np.zeros((2, 3)), 0.0, max(20.0, ratio) * tau, ratio * tau, particles=model, dtype="float64"
        )  # a step may not outrun the run
    assert ("exponential" in caplog.text) == (ratio > 0.5)  # the automatic choice is logged
    z = settling(traj.times, tau, vt)
    np.testing.assert_allclose(traj.positions[:, 0, 2], z, rtol=1e-6, atol=1e-6 * vt * tau)
    np.testing.assert_allclose(
        traj.variables["velocity"][:, 1, 2], -vt * (1 - np.exp(-traj.times / tau)), rtol=1e-6, atol=1e-9 * vt
    )
    assert np.all(traj.positions[:, :, :2] == 0)


def test_schiller_naumann_settling_matches_a_numerical_reference():
    model = Inertial(**{**DROPLET, "diameter": 200e-6}, drag="schiller_naumann")
    tau, ratio = float(model.response_time), 1.2 / 1000

    def rhs(t, y):
        w = -y[1]
        re = 1.2 * abs(w) * 200e-6 / 1.8e-5
        return [y[1], (1 + 0.15 * re**0.687) * w / tau - (1 - ratio) * 9.81]

    t1 = 5 * tau
    traj = fk.track(STILL, np.zeros((1, 3)), 0.0, t1, tau / 50, particles=model, dtype="float64", save_every=25)
    reference = solve_ivp(rhs, (0, t1), [0.0, 0.0], t_eval=traj.times, rtol=1e-12, atol=1e-15, method="DOP853")
    np.testing.assert_allclose(traj.positions[:, 0, 2], reference.y[0], rtol=1e-6, atol=1e-12)
    stokes = fk.track(
        STILL,
        np.zeros((1, 3)),
        0.0,
        t1,
        tau / 50,
        particles=Inertial(**{**DROPLET, "diameter": 200e-6}),
        dtype="float64",
    )
    assert abs(stokes.positions[-1, 0, 2]) > 1.2 * abs(traj.positions[-1, 0, 2])  # the correction matters here


def test_tracer_limit_and_stability_with_steps_far_longer_than_tau():
    rotation = fk.fields.SolidBodyRotation(1.0, bounds=((-2, -2), (2, 2)))
    model = Inertial(1e-7, 1000.0, gravity=(0.0, 0.0))  # τ ≈ 3e-8 s
    seeds = np.array([[1.0, 0.0], [0.0, 0.5], [-0.3, -0.3]])
    period = 2 * np.pi
    inertial = fk.track(rotation, seeds, 0.0, period, 0.01, integrator=fk.Heun(), particles=model, dtype="float64")
    tracer = fk.track(rotation, seeds, 0.0, period, 0.01, integrator=fk.Heun(), dtype="float64")
    assert 0.01 / float(model.response_time) > 1e5
    np.testing.assert_allclose(inertial.positions, tracer.positions, atol=1e-6)
    fluid = jax.vmap(lambda x: rotation(0.0, x))(inertial.positions[-1])
    np.testing.assert_allclose(
        inertial.variables["velocity"][-1], fluid, atol=1e-4
    )  # the fluid's, at the step's predicted end (O(dt²) away)


@pytest.mark.parametrize("tau_omega", [0.01, 0.05])
def test_heavy_particles_spiral_out_of_a_rotating_fluid_at_tau_omega_squared(tau_omega):
    omega = 2.0
    rotation = fk.fields.SolidBodyRotation(omega, bounds=((-50, -50), (50, 50)))
    model = Inertial(1e-4, 1000.0, fluid_density=1.0, viscosity=1.0, gravity=(0.0, 0.0))
    model = Inertial(
        1e-4, 1000.0, fluid_density=1.0, viscosity=1000.0 * 1e-8 / (18 * tau_omega / omega), gravity=(0.0, 0.0)
    )
    tau = float(model.response_time)
    np.testing.assert_allclose(tau * omega, tau_omega)
    t1 = 2 / (tau * omega**2) * 0.1  # r grows by ~10 %
    traj = fk.track(
        rotation, np.array([[1.0, 0.0]]), 0.0, t1, tau / 10, particles=model, dtype="float64", save_every=200
    )
    r = np.linalg.norm(traj.positions[:, 0], axis=1)
    late = traj.times > 5 * tau  # past the initial transient
    rate = np.polyfit(traj.times[late], np.log(r[late]), 1)[0]
    assert abs(rate / (tau * omega**2) - 1) < 0.05


def test_gradients_of_the_final_position_match_finite_differences():
    flow = fk.fields.Uniform((0.3, 0.0, 0.0), bounds=((-10,) * 3, (10,) * 3))
    seeds = jnp.zeros((1, 3))

    def final_z(diameter, density):
        model = Inertial(diameter, density, fluid_density=1.2, viscosity=1.8e-5, scheme="rk")
        traj = fk.track(flow, seeds, 0.0, 0.02, 5e-4, particles=model, dtype="float64")
        return traj.positions[-1, 0, 2] + traj.positions[-1, 0, 0]

    d, rho = 40e-6, 900.0
    grad = jax.grad(final_z, argnums=(0, 1))(d, rho)
    eps_d, eps_rho = 1e-4 * d, 1e-4 * rho
    fd_d = (final_z(d + eps_d, rho) - final_z(d - eps_d, rho)) / (2 * eps_d)
    fd_rho = (final_z(d, rho + eps_rho) - final_z(d, rho - eps_rho)) / (2 * eps_rho)
    np.testing.assert_allclose(grad[0], fd_d, rtol=1e-6)
    np.testing.assert_allclose(grad[1], fd_rho, rtol=1e-6)
    assert grad[0] < 0 and grad[1] < 0  # bigger or denser droplets sink further


def test_stiff_drag_with_a_diffrax_stiff_solver_and_with_euler_maruyama():
    model = Inertial(**DROPLET)
    tau = float(model.response_time)
    vt = (1 - 1.2 / 1000) * 9.81 * tau
    solver = fk.Diffrax(diffrax.Kvaerno5(), rtol=1e-10, atol=1e-14)
    traj = fk.track(
        STILL, np.zeros((1, 3)), 0.0, 20 * tau, 4 * tau, integrator=solver, particles=model, dtype="float64"
    )
    np.testing.assert_allclose(traj.positions[:, 0, 2], settling(traj.times, tau, vt), rtol=1e-6, atol=1e-9 * vt * tau)
    noisy = fk.track(
        STILL,
        np.zeros((200, 3)),
        0.0,
        20 * tau,
        tau / 20,
        integrator=fk.EulerMaruyama(1e-8),
        particles=model,
        dtype="float64",
        key=jax.random.key(0),
    )
    np.testing.assert_allclose(noisy.positions[-1, :, 2].mean(), settling(20 * tau, tau, vt), rtol=0.03)


def test_pressure_gradient_and_added_mass_of_a_bubble_in_a_rotating_fluid():
    """A light particle (a bubble) is pushed inward by the fluid's centripetal acceleration,
    which only the pressure-gradient and added-mass terms carry."""
    rotation = fk.fields.SolidBodyRotation(1.0, bounds=((-5, -5), (5, 5)))
    kwargs = dict(fluid_density=1000.0, viscosity=1e-3, gravity=(0.0, 0.0))
    bubble = Inertial(1e-3, 1.0, pressure_gradient=True, added_mass=True, **kwargs)
    plain = Inertial(1e-3, 1.0, **kwargs)
    seeds = np.array([[1.0, 0.0]])
    r = lambda traj: np.linalg.norm(traj.positions[-1, 0])  # noqa: E731
    with_terms = fk.track(rotation, seeds, 0.0, 1.0, 1e-3, particles=bubble, dtype="float64")
    without = fk.track(rotation, seeds, 0.0, 1.0, 1e-3, particles=plain, dtype="float64")
    assert r(with_terms) < 1.0 < r(without)
    # leading order, with (P, C) = (1, 1/2): d ln r/dt = τ ω² (1 - R), R = ρ_f/ρ_p
    tau, ratio = float(bubble.response_time), 1000.0
    assert np.isclose(np.log(r(with_terms)), tau * (1 - ratio), rtol=0.05)


def test_saffman_lift_matches_its_formula_in_a_shear_flow():
    shear = fk.fields.Analytic(
        lambda t, x, args: jnp.stack([2.0 * x[1], 0.0 * x[0], 0.0 * x[2]]), ((-1, -1, -1), (1, 1, 1)), 3
    )
    model = Inertial(1e-4, 2000.0, fluid_density=1000.0, viscosity=1e-3, gravity=(0.0, 0.0, 0.0), lift=True)
    x = jnp.array([[0.0, 0.1, 0.0]])
    v = jnp.array([[0.0, 0.0, 0.0]])
    hint = shear.hints(1, x.dtype)
    a, _, _ = DragTerm(shear, model, model).relaxation(0.0, x, v, None, hint)
    slip = np.array([0.2, 0.0, 0.0])
    vorticity = np.array([0.0, 0.0, -2.0])
    mass = 2000.0 * np.pi * 1e-12 / 6
    lift = 1.615 * 1e-8 * np.sqrt(1000.0 * 1e-3) / np.sqrt(2.0) * np.cross(slip, vorticity) / mass
    drag = slip / float(model.response_time)
    np.testing.assert_allclose(np.asarray(a[0]), drag + lift, rtol=1e-5)
    assert lift[1] > 0  # a particle lagging the flow is lifted toward the faster fluid


def test_buoyant_particles_rise_and_may_depend_on_sampled_values():
    flow = fk.fields.Uniform((1.0, 0.0, 0.0), bounds=((-10,) * 3, (10,) * 3))
    seeds = np.zeros((3, 3))
    traj = fk.track(flow, seeds, 0.0, 2.0, 0.1, particles=Buoyant(0.25), dtype="float64")
    np.testing.assert_allclose(traj.positions[-1], [[2.0, 0.0, 0.5]] * 3, atol=1e-12)
    grid = np.linspace(-2, 2, 9)
    xs, ys, zs = np.meshgrid(grid, grid, grid, indexing="ij")
    velocity = np.zeros(xs.shape + (3,))
    temperature = 10 + 2 * zs  # warmer above
    field = fk.GridField.from_arrays(
        velocity, [grid, grid, grid], samples={"temperature": temperature}, dtype="float64"
    )
    model = Buoyant(
        lambda fluid: 0.01 * fluid.samples["temperature"]
    )  # rises faster where warm: dz/dt = 0.01 (10 + 2 z)
    traj = fk.track(field, np.zeros((1, 3)), 0.0, 10.0, 0.05, particles=model, dtype="float64")
    z = (10 + 0) * (np.exp(0.02 * traj.times) - 1) / 2
    np.testing.assert_allclose(traj.positions[:, 0, 2], z, rtol=1e-8)


def test_combined_records_age_distance_time_in_a_box_and_a_sampled_maximum():
    grid = np.linspace(0, 4, 9)
    xs, ys = np.meshgrid(grid, grid, indexing="ij")
    velocity = np.stack([np.ones_like(xs), np.zeros_like(xs)], axis=-1)
    field = fk.GridField.from_arrays(velocity, [grid, grid], samples={"heat": 3 - (xs - 2) ** 2}, dtype="float64")
    model = Combined(Tracer(), Aging(), Distance(), TimeInBox((1.0, 0.0), (2.0, 4.0)), Extremes("heat"))
    seeds = np.array([[0.5, 1.0], [0.5, 2.0]])
    traj = fk.track(field, seeds, 0.0, 3.0, 0.01, particles=model, dtype="float64", t_release=np.array([0.0, 1.0]))
    v = traj.variables
    np.testing.assert_allclose(v["age"][-1], [3.0, 2.0], atol=1e-9)
    np.testing.assert_allclose(v["distance"][-1], [3.0, 2.0], atol=1e-9)
    np.testing.assert_allclose(v["time_in_box"][-1], [1.0, 1.0], atol=0.011)
    np.testing.assert_allclose(v["heat_max"][-1], [3.0, 3.0], atol=1e-3)  # x passed 2 on both paths
    np.testing.assert_allclose(traj.positions[-1], [[3.5, 1.0], [2.5, 2.0]], atol=1e-9)
    assert np.all(v["age"][traj.times <= 1.0, 1] == 0)  # not released yet: not aging


def test_a_user_written_model_windage():
    """The particle guide's example (docs/guides/particles.md): a floating object drifts with the
    current plus 3 % of the wind."""

    class Windage(P.AbstractParticles):
        coefficient: float
        needs = P.Needs(sample_names=("wind",))

        def rhs(self, t, state, fluid, args):
            return {"x": fluid.velocity + self.coefficient * fluid.samples["wind"]}

    grid = np.linspace(0, 10, 11)
    xs, ys = np.meshgrid(grid, grid, indexing="ij")
    current = np.stack([np.full_like(xs, 0.1), np.zeros_like(xs)], axis=-1)
    wind = np.stack([np.zeros_like(xs), np.full_like(xs, 5.0)], axis=-1)
    field = fk.GridField.from_arrays(current, [grid, grid], samples={"wind": wind}, dtype="float64")
    traj = fk.track(field, np.array([[1.0, 1.0]]), 0.0, 10.0, 0.5, particles=Windage(0.03), dtype="float64")
    np.testing.assert_allclose(traj.positions[-1, 0], [2.0, 2.5], atol=1e-12)


def test_tracer_model_equals_no_model_and_variables_round_trip(tmp_path):
    rotation = fk.fields.SolidBodyRotation(1.0, bounds=((-2, -2), (2, 2)))
    seeds = np.array([[1.0, 0.0], [0.5, 0.5]])
    plain = fk.track(rotation, seeds, 0.0, 3.0, 0.05)
    traced = fk.track(rotation, seeds, 0.0, 3.0, 0.05, particles=Tracer())
    np.testing.assert_array_equal(plain.positions, traced.positions)
    traj = fk.track(rotation, seeds, 0.0, 1.0, 0.05, particles=Combined(Tracer(), Aging()), save_every=5)
    for suffix in (".npz", ".nc"):
        back = fk.Trajectory.load(traj.save(tmp_path / f"t{suffix}"))
        np.testing.assert_array_equal(back.variables["age"], traj.variables["age"])
    stored = fk.track(
        rotation, seeds, 0.0, 1.0, 0.05, particles=Combined(Tracer(), Aging()), save_every=5, output=tmp_path / "s.zarr"
    )
    np.testing.assert_array_equal(stored["particle_age"].values.T, traj.variables["age"])


def test_given_initial_velocity_and_bad_models_are_refused_clearly():
    model = Inertial(**DROPLET)
    tau = float(model.response_time)
    start = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    traj = fk.track(
        STILL,
        np.zeros((2, 3)),
        0.0,
        30 * tau,
        tau / 20,
        particles=model,
        particle_state={"velocity": start},
        dtype="float64",
    )
    np.testing.assert_allclose(traj.positions[-1, 0, 0], tau * (1 - np.exp(-30)), rtol=1e-6)  # coasts τ·v0
    with pytest.raises(ValueError, match="no variable 'speed'"):
        fk.track(STILL, np.zeros((2, 3)), 0.0, 1.0, 0.1, particles=model, particle_state={"speed": start})
    with pytest.raises(ValueError, match="one finite value per seed"):
        fk.track(STILL, np.zeros((2, 3)), 0.0, 1.0, 0.1, particles=model, particle_state={"velocity": start[:1]})
    with pytest.raises(ValueError, match="backward"):
        fk.track(STILL, np.zeros((2, 3)), 1.0, 0.0, -0.1, particles=model)
    with pytest.raises(ValueError, match="diameter must be positive"):
        Inertial(-1.0, 1000.0)
    with pytest.raises(ValueError, match="share variable names"):
        Combined(Tracer(), Aging(), Aging())
    with pytest.raises(TypeError, match="particle model"):
        fk.track(STILL, np.zeros((2, 3)), 0.0, 1.0, 0.1, particles="inertial")


def test_parcels_decaying_moving_eddy_and_radial_rotation_with_the_tracer_model():
    """Two analytic cases of Parcels' test suite (flat mesh, metres): `Tracer()` gives the same
    answers as no model, bit for bit, and both follow the closed forms."""
    f, u0, ug, gamma, gamma_g = 1e-4, 0.3, 0.04, 1 / (86400 * 2.89), 1 / (86400 * 28.9)

    def eddy(t, x, args):
        decay = jnp.exp(-gamma * t)
        return (
            jnp.stack(
                [ug * jnp.exp(-gamma_g * t) + (u0 - ug) * decay * jnp.cos(f * t), -(u0 - ug) * decay * jnp.sin(f * t)]
            )
            + 0 * x
        )

    field = fk.fields.Analytic(eddy, ((-1e7, -1e7), (1e7, 1e7)), 2)
    seeds = np.array([[1e4, 2e4]])
    t1 = 86400.0 * 2
    plain = fk.track(field, seeds, 0.0, t1, 300.0, dtype="float64", save_every=48)
    traced = fk.track(field, seeds, 0.0, t1, 300.0, dtype="float64", save_every=48, particles=Tracer())
    np.testing.assert_array_equal(plain.positions, traced.positions)
    t = traced.times
    k = (u0 - ug) * f / (f**2 + gamma**2)
    x = (
        1e4
        + ug / gamma_g * (1 - np.exp(-gamma_g * t))
        + k * (gamma / f + np.exp(-gamma * t) * (np.sin(f * t) - gamma / f * np.cos(f * t)))
    )
    y = 2e4 - k * (1 - np.exp(-gamma * t) * (np.cos(f * t) + gamma / f * np.sin(f * t)))
    np.testing.assert_allclose(traced.positions[:, 0], np.stack([x, y], axis=1), atol=1e-3)  # metres
    day = 86400.0
    rotation = fk.fields.SolidBodyRotation(2 * np.pi / day, center=(30e3, 30e3), bounds=((0, 0), (60e3, 60e3)))
    ring = np.stack([30e3 + np.linspace(1e3, 25e3, 10), np.full(10, 30e3)], axis=1)
    plain = fk.track(rotation, ring, 0.0, day, 300.0, dtype="float64")
    traced = fk.track(rotation, ring, 0.0, day, 300.0, dtype="float64", particles=Tracer())
    np.testing.assert_array_equal(plain.positions, traced.positions)
    np.testing.assert_allclose(traced.positions[-1], ring, atol=1e-3)  # one lap returns home


def test_records_ride_along_an_inertial_particle_stepped_exponentially():
    model = Combined(Inertial(**DROPLET), Aging(), Distance())
    tau = float(model.mover.response_time)
    traj = fk.track(STILL, np.zeros((1, 3)), 0.0, 20 * tau, 5 * tau, particles=model, dtype="float64")
    assert traj.variables["velocity"].shape == (5, 1, 3)
    np.testing.assert_allclose(traj.variables["age"][:, 0], traj.times, rtol=1e-12)
    np.testing.assert_allclose(
        traj.variables["distance"][:, 0], -traj.positions[:, 0, 2], rtol=1e-12
    )  # a straight fall: the chords add up
