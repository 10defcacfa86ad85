"""Each integrator's convergence order, against closed-form trajectories, in float64."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ALL_INTEGRATORS, exp_sin_exact, exp_sin_field

import flowkit as fk


def _final_error(field, exact, integrator, dt, t1, seeds):
    traj = fk.track(field, seeds, 0.0, t1, dt, integrator, save_every=10**6, dtype="float64")
    assert traj.positions.dtype == np.float64
    return np.max(np.abs(traj.positions[-1] - exact))


@pytest.mark.parametrize("integrator", ALL_INTEGRATORS, ids=lambda i: type(i).__name__)
@pytest.mark.parametrize("case", ["rotation", "exp_sin"])
def test_convergence_order(integrator, case):
    seeds = np.array([[0.5, 0.0], [0.3, -0.4], [-0.7, 0.2]])
    if case == "rotation":
        field = fk.fields.SolidBodyRotation(omega=1.0)
        t1 = 1.0
        exact = np.asarray(field.exact(t1, jnp.asarray(seeds)))
    else:
        field = exp_sin_field()
        t1 = 2.0
        exact = exp_sin_exact(seeds, t1)
    dts = np.array([0.1, 0.05, 0.025, 0.0125]) if integrator.order < 4 else np.array([0.2, 0.1, 0.05, 0.025])
    errors = np.array([_final_error(field, exact, integrator, dt, t1, seeds) for dt in dts])
    slope = np.polyfit(np.log(dts), np.log(errors), 1)[0]
    assert abs(slope - integrator.order) < 0.2, (errors, slope)


def test_rotation_returns_after_one_period():
    field = fk.fields.SolidBodyRotation(omega=2.0, center=(0.1, -0.2), bounds=((-2.0, -2.0), (2.0, 2.0)))
    seeds = fk.seeding.uniform_grid((7, 7), ((-1.0, -1.0), (1.0, 1.0)))
    period = 2 * np.pi / 2.0
    traj = fk.track(field, seeds, 0.0, period, period / 2000, fk.RK4(), save_every=100, dtype="float64")
    assert np.max(np.abs(traj.positions[-1] - seeds)) < 1e-11
    assert traj.times[-1] == pytest.approx(period, abs=1e-15)


@pytest.mark.parametrize("integrator", ALL_INTEGRATORS, ids=lambda i: type(i).__name__)
def test_backward_retraces_forward(integrator):
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((6, 3), field.bounds, include_boundaries=False)
    forward = fk.track(field, seeds, 0.0, 2.0, 0.001, integrator, save_every=500, dtype="float64")
    backward = fk.track(field, forward.positions[-1], 2.0, 0.0, -0.001, integrator, save_every=500, dtype="float64")
    np.testing.assert_allclose(backward.times, forward.times[::-1])
    tolerance = {1: 1e-3, 2: 1e-6}.get(integrator.order, 1e-9)
    assert np.max(np.abs(backward.positions[-1] - seeds)) < tolerance


@pytest.mark.parametrize(
    "integrator", ALL_INTEGRATORS + [fk.EulerMaruyama(0.01), fk.Diffrax()], ids=lambda i: type(i).__name__
)
def test_a_rows_step_does_not_depend_on_the_others(integrator):
    """A block's step equals each row stepped alone (the same keys for the stochastic ones)."""
    field = fk.fields.DoubleGyre()
    x = jnp.asarray(fk.seeding.uniform_grid((5, 4), field.bounds))
    t, dt = jnp.asarray(0.3), jnp.asarray(0.05)
    term = fk.integrators.FlowTerm(field)
    keys = jax.random.split(jax.random.key(1), len(x)) if integrator.stochastic else None

    def one(y, key):
        return integrator.step(term, {"x": y[None]}, t, dt, None, None if key is None else key[None]).x[0]

    single = jax.vmap(one)(x, keys)
    batch = integrator.step(term, {"x": x}, t, dt, None, keys).x
    assert not np.allclose(batch, x)  # the step moves them
    np.testing.assert_allclose(single, batch, rtol=1e-13, atol=1e-15)


def test_tableau_rejects_inconsistent_coefficients():
    with pytest.raises(ValueError, match="strictly lower triangular"):
        fk.integrators.ButcherTableau.make([[1.0]], [1.0], [0.0])
    with pytest.raises(ValueError, match="sum to 1"):
        fk.integrators.ButcherTableau.make([[0, 0], [1, 0]], [0.5, 0.6], [0, 1])
