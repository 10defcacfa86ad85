"""The exponential Runge–Kutta update of inertial particles (float64): its φ functions, the
tracer limit, and the order of the run's method at dt/τ between 5 and 1.25."""

from math import factorial

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

import flowkit as fk
from flowkit.integrators.exponential import phis
from flowkit.particles import Inertial


@pytest.mark.parametrize("z", [-200.0, -40.0, -5.0, -1.0001, -0.9999, -0.3, -1e-7, 0.0, 0.5])
def test_phi_functions_match_their_integrals(z):
    got = phis(jnp.asarray(z, jnp.float64), 3)
    assert float(got[0]) == pytest.approx(np.exp(z), rel=1e-15, abs=0)
    for k in (1, 2, 3):  # φ_k(z) = ∫_0^1 e^{(1-θ) z} θ^{k-1} dθ / (k-1)!
        expected = quad(lambda s: np.exp((1 - s) * z) * s ** (k - 1), 0, 1, epsabs=0, epsrel=1e-13, limit=200)[0]
        assert float(got[k]) == pytest.approx(expected / factorial(k - 1), rel=1e-12, abs=1e-300)


def test_phi_functions_in_float32():
    z = jnp.asarray([-300.0, -3.0, -1.0, -0.5, -1e-3, 0.0], jnp.float32)
    for single, double in zip(phis(z, 3), phis(z.astype(jnp.float64), 3)):
        assert single.dtype == jnp.float32
        np.testing.assert_allclose(single, double, rtol=2e-6, atol=1e-30)


def test_phi_functions_far_out_where_tau_is_tiny():
    z = -1e9  # dt / τ: the tracer limit
    got = phis(jnp.asarray(z, jnp.float64), 3)
    assert float(got[0]) == 0.0
    for k in (1, 2, 3):  # φ_k(z) = 1/((k-1)! (-z)) + O(z^-2)
        assert float(got[k]) == pytest.approx(1 / (factorial(k - 1) * -z), rel=1e-8)


def test_the_tracer_limit_is_the_tracers_rk4_path():
    rotation = fk.fields.SolidBodyRotation(1.0, bounds=((-2, -2), (2, 2)))
    seeds = np.array([[1.0, 0.0], [0.0, 0.5], [-0.3, -0.3]])
    model = Inertial(1e-9, 1000.0, gravity=(0.0, 0.0), scheme="exponential")  # τ ≈ 3e-12 s
    period = 2 * np.pi
    kw = dict(integrator=fk.RK4(), dtype="float64")
    inertial = fk.track(rotation, seeds, 0.0, period, period / 2000, particles=model, **kw)
    tracer = fk.track(rotation, seeds, 0.0, period, period / 2000, **kw)
    np.testing.assert_allclose(inertial.positions, tracer.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(tracer.positions[-1], seeds, atol=1e-10)  # the tracer's own error is ~1e-12


@pytest.mark.parametrize(("integrator", "order"), [(fk.RK4(), 3.5), (fk.Heun(), 1.8), (fk.Midpoint(), 1.8)])
def test_the_run_keeps_its_methods_order_at_steps_longer_than_tau(integrator, order):
    """Heavy particles in the double gyre, τ = 0.05: the RMS error of 32 final positions at
    dt/τ = 5, 2.5, 1.25 against RK4 on position and velocity at dt = τ/40 falls at the
    integrator's order (the former second-order update gave 2 for every method)."""
    field = fk.fields.DoubleGyre()
    tau = 0.05
    seeds = np.random.default_rng(0).uniform((0.1, 0.1), (1.9, 0.9), (32, 2))
    diameter = np.sqrt(18 * tau * 1.8e-5 / 1000.0)

    def final(scheme, dt, method):
        model = Inertial(diameter, 1000.0, gravity=(0.0, 0.0), scheme=scheme)
        return fk.track(field, seeds, 0.0, 4.0, dt, integrator=method, particles=model, dtype="float64").positions[-1]

    reference = final("rk", tau / 40, fk.RK4())
    ratios = np.array([5.0, 2.5, 1.25])
    errors = [
        np.sqrt(np.mean(np.sum((final("exponential", r * tau, integrator) - reference) ** 2, axis=1))) for r in ratios
    ]
    assert np.polyfit(np.log(ratios), np.log(errors), 1)[0] >= order


def test_schiller_naumann_drag_per_particle_rates_converge_at_fourth_order():
    """Each particle's own rate (it depends on the slip) sets its coefficients: a droplet
    thrown down at 3 m/s, faster than it settles (the slip never passes zero, where the drag
    law has a kink), against `solve_ivp`, at dt/τ = 1 and 1/2."""
    from scipy.integrate import solve_ivp

    model = Inertial(200e-6, 1000.0, drag="schiller_naumann", scheme="exponential")
    tau, ratio = float(model.response_time), 1.2 / 1000

    def rhs(t, y):
        re = 1.2 * abs(y[1]) * 200e-6 / 1.8e-5
        return [y[1], -(1 + 0.15 * re**0.687) * y[1] / tau - (1 - ratio) * 9.81]

    still = fk.fields.Uniform((0.0, 0.0, 0.0), bounds=((-1e3,) * 3, (1e3,) * 3))
    t1, thrown = 4 * tau, np.tile([0.0, 0.0, -3.0], (2, 1))
    reference = solve_ivp(rhs, (0, t1), [0.0, -3.0], rtol=1e-13, atol=1e-16, method="DOP853").y[0, -1]

    def error(h):
        traj = fk.track(
            still, np.zeros((2, 3)), 0.0, t1, h, particles=model, dtype="float64", particle_state={"velocity": thrown}
        )
        return abs(traj.positions[-1, 0, 2] - reference)

    errors = [error(tau), error(tau / 2)]
    assert errors[1] < 1e-3 * abs(reference)
    assert np.log2(errors[0] / errors[1]) > 3.5
