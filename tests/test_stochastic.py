"""Random-walk diffusion: spreading rate, the well-mixed condition, reproducibility."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import flowkit as fk

K = 0.01
STILL = fk.fields.Uniform((0.0, 0.0), bounds=((-10.0, -10.0), (10.0, 10.0)))


@pytest.mark.parametrize(
    "integrator, dt",
    [(fk.EulerMaruyama(K), 0.05), (fk.EulerMaruyama([K, 2 * K]), 0.05), (fk.Diffrax(diffrax.Euler(), diffusivity=K, substeps=5), 0.25)],
    ids=["native", "native-per-axis", "diffrax-sde"],
)
def test_pure_diffusion_variance_grows_as_2Kt(integrator, dt):
    seeds = np.zeros((100_000, 2))
    traj = fk.track(STILL, seeds, 0.0, 1.0, dt, integrator, key=jax.random.key(0), save_every=10)
    diffusivity = np.broadcast_to(np.asarray(integrator.diffusivity(0.0, jnp.zeros(2))), (2,))
    for k in range(1, len(traj.times)):
        variance = traj.positions[k].var(axis=0)
        np.testing.assert_allclose(variance, 2 * diffusivity * traj.times[k], rtol=0.03)
    assert abs(traj.positions[-1].mean()) < 0.01


def _profile(t, x):
    return K * (1 + 0.9 * jnp.cos(jnp.pi * x[1]))  # K varies in y, with zero gradient at the walls


def test_well_mixed_condition_with_variable_diffusivity():
    box = ((0.0, 0.0), (1.0, 1.0))
    field = fk.fields.Uniform((0.0, 0.0), bounds=box)
    seeds = fk.seeding.random_box(20_000, box, key=jax.random.key(1))
    run = dict(t0=0.0, t1=3.0, dt=0.005, boundary=fk.Reflective(box), key=jax.random.key(2), save_every=600)
    traj = fk.track(field, seeds, integrator=fk.EulerMaruyama(fk.diffusion.Analytic(_profile)), **run)
    mixed = stats.kstest(traj.positions[-1, :, 1], "uniform")
    # Control: cancel the drift correction with an opposite velocity; particles must then
    # drift towards low K (the spurious accumulation the correction prevents).
    anti = fk.fields.Analytic(lambda t, x, args: -jnp.stack([0 * x[0], -0.9 * K * jnp.pi * jnp.sin(jnp.pi * x[1])]), bounds=box, dim=2)
    biased = fk.track(anti, seeds, integrator=fk.EulerMaruyama(fk.diffusion.Analytic(_profile)), **run)
    unmixed = stats.kstest(biased.positions[-1, :, 1], "uniform")
    assert mixed.pvalue > 1e-3, mixed
    assert unmixed.pvalue < 1e-6, unmixed


def test_noise_independent_of_batch_size_and_devices():
    seeds = np.zeros((301, 2))
    run = dict(t0=0.0, t1=0.5, dt=0.05, integrator=fk.EulerMaruyama(K), key=jax.random.key(5))
    whole = fk.track(STILL, seeds, **run)
    batched = fk.track(STILL, seeds, batch_size=100, **run)
    single = fk.track(STILL, seeds, devices=jax.devices()[:1], **run)
    np.testing.assert_array_equal(batched.positions, whole.positions)
    np.testing.assert_allclose(single.positions, whole.positions, atol=1e-6)
    other = fk.track(STILL, seeds, **(run | {"key": jax.random.key(6)}))
    assert np.abs(other.positions[-1] - whole.positions[-1]).max() > 1e-3


def test_stochastic_integrator_requires_key():
    with pytest.raises(ValueError, match="key: EulerMaruyama is stochastic"):
        fk.track(STILL, np.zeros((3, 2)), 0.0, 1.0, 0.1, fk.EulerMaruyama(K))
