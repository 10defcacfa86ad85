"""The diffrax engine: agreement with RK4, adaptive efficiency, exact exit events, gradients."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

import flowkit as fk


@pytest.fixture(scope="module")
def gyre_seeds():
    return fk.seeding.uniform_grid((10, 5), fk.fields.DoubleGyre().bounds, include_boundaries=False)


@pytest.mark.parametrize("solver", [diffrax.Tsit5(), diffrax.Dopri5()], ids=["Tsit5", "Dopri5"])
def test_adaptive_agrees_with_small_step_rk4(solver, gyre_seeds):
    field = fk.fields.DoubleGyre()
    adaptive = fk.track(field, gyre_seeds, 0.0, 5.0, 0.5, fk.Diffrax(solver, rtol=1e-8, atol=1e-10), dtype="float64")
    reference = fk.track(field, gyre_seeds, 0.0, 5.0, 0.001, fk.RK4(), save_every=500, dtype="float64")
    np.testing.assert_array_equal(adaptive.times, reference.times)
    assert np.max(np.abs(adaptive.positions - reference.positions)) < 1e-6
    assert np.all(adaptive.status == fk.Status.ACTIVE)


def _pulse_field():
    """u = 1 + 20 exp(-((t - 1)/0.02)^2): a sharp burst at t = 1, exact trajectory by erf."""
    return fk.fields.Analytic(
        lambda t, x, args: jnp.stack([1 + 20 * jnp.exp(-(((t - 1) / 0.02) ** 2)), 0 * t]),
        bounds=((0.0, 0.0), (10.0, 1.0)),
        dim=2,
    )


def _pulse_exact(x0, t):
    return x0 + t + 20 * 0.02 * np.sqrt(np.pi) / 2 * (erf((t - 1) / 0.02) - erf(-1 / 0.02))


def test_adaptive_needs_fewer_steps_than_fixed_rk4_for_same_error():
    field = _pulse_field()
    x0 = jnp.array([0.1, 0.5])
    # dtmax: an adaptive solver can only adapt to a feature it sees; without a cap on the step
    # its first steps stride over the 0.02-wide burst (a real pitfall worth a test)
    controller = diffrax.PIDController(rtol=1e-7, atol=1e-9, dtmax=0.05)
    sol = fk.Diffrax(diffrax.Tsit5(), controller).solve(
        fk.integrators.FlowTerm(field), x0, jnp.asarray(0.0), jnp.asarray(2.0)
    )
    adaptive_steps = int(sol.stats["num_steps"])
    adaptive_error = abs(float(sol.ys[0, 0]) - _pulse_exact(0.1, 2.0))
    assert adaptive_error < 1e-5
    rk4_steps = None
    for n in (50, 100, 200, 400, 800, 1600, 3200, 6400):
        traj = fk.track(field, np.asarray(x0)[None], 0.0, 2.0, 2.0 / n, fk.RK4(), save_every=n, dtype="float64")
        if abs(traj.positions[-1, 0, 0] - _pulse_exact(0.1, 2.0)) <= adaptive_error:
            rk4_steps = n
            break
    print(
        f"same error {adaptive_error:.1e}: adaptive Tsit5 {adaptive_steps} steps (6 evaluations "
        f"each), fixed RK4 {rk4_steps} steps (4 each)"
    )
    assert rk4_steps is not None and 4 * rk4_steps > 6 * adaptive_steps


def test_exit_event_times_are_exact():
    field = fk.fields.Uniform((0.3, -0.1))
    seeds = fk.seeding.random_box(50, field.bounds, key=jax.random.key(0))
    traj = fk.track(field, seeds, 0.0, 10.0, 0.5, fk.Diffrax(exit_event=True), dtype="float64")
    exact = np.minimum((1 - seeds[:, 0]) / 0.3, seeds[:, 1] / 0.1)
    np.testing.assert_allclose(traj.exit_time, exact, rtol=0, atol=1e-8)
    assert np.all(traj.status[-1] == fk.Status.OUT_OF_DOMAIN)
    final = traj.positions[-1]
    on_wall = np.isclose(final[:, 0], 1.0, atol=1e-8) | np.isclose(final[:, 1], 0.0, atol=1e-8)
    assert on_wall.all()
    np.testing.assert_allclose(final, seeds + np.array([0.3, -0.1]) * exact[:, None], atol=1e-8)


def test_max_steps_sets_status_not_exception(gyre_seeds):
    traj = fk.track(
        fk.fields.DoubleGyre(),
        gyre_seeds[:5],
        0.0,
        2.0,
        1.0,
        fk.Diffrax(rtol=1e-12, atol=1e-14, max_steps=3),
        dtype="float64",
    )
    assert np.all(traj.status[-1] == fk.Status.MAX_STEPS)
    np.testing.assert_array_equal(traj.positions[-1], gyre_seeds[:5])
    np.testing.assert_allclose(traj.exit_time, 0.0)  # stopped where the failed step began


def _central_difference(fn, value, eps=1e-6):
    return (fn(value + eps) - fn(value - eps)) / (2 * eps)


@pytest.mark.parametrize(
    "integrator", [fk.RK4(), fk.Heun(), fk.Diffrax(rtol=1e-12, atol=1e-12)], ids=["RK4", "Heun", "Tsit5"]
)
def test_gradient_wrt_field_parameter_matches_finite_differences(integrator, gyre_seeds):
    dt = 0.5 if isinstance(integrator, fk.Diffrax) else 0.01

    def loss(amplitude):
        traj = fk.track(fk.fields.DoubleGyre(A=amplitude), gyre_seeds, 0.0, 2.0, dt, integrator, dtype="float64")
        return jnp.sum(traj.positions[-1] ** 2)

    grad = float(jax.grad(loss)(0.1))
    fd = float(_central_difference(loss, 0.1))
    assert abs(grad - fd) <= 1e-5 * abs(fd)


@pytest.mark.parametrize("integrator", [fk.RK4(), fk.Diffrax(rtol=1e-12, atol=1e-12)], ids=["RK4", "Tsit5"])
def test_gradient_wrt_seeds_matches_finite_differences(integrator, gyre_seeds):
    dt = 0.5 if isinstance(integrator, fk.Diffrax) else 0.01
    field = fk.fields.DoubleGyre()
    seeds = jnp.asarray(gyre_seeds[:6])

    def loss(x0):
        traj = fk.track(field, x0, 0.0, 2.0, dt, integrator, dtype="float64")
        return traj.positions[-1, :, 0] @ jnp.arange(1.0, 7.0) + jnp.sum(traj.positions[-1, :, 1] ** 2)

    grad = np.asarray(jax.grad(loss)(seeds))
    for i, j in [(0, 0), (3, 1), (5, 0)]:
        fd = _central_difference(lambda v: loss(seeds.at[i, j].set(v)), seeds[i, j])
        assert abs(grad[i, j] - fd) <= 1e-5 * abs(fd)
