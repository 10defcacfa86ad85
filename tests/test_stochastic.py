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
    [
        (fk.EulerMaruyama(K), 0.05),
        (fk.EulerMaruyama([K, 2 * K]), 0.05),
        (fk.Diffrax(diffrax.Euler(), diffusivity=K, substeps=5), 0.25),
    ],
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
    anti = fk.fields.Analytic(
        lambda t, x, args: -jnp.stack([0 * x[0], -0.9 * K * jnp.pi * jnp.sin(jnp.pi * x[1])]), bounds=box, dim=2
    )
    biased = fk.track(anti, seeds, integrator=fk.EulerMaruyama(fk.diffusion.Analytic(_profile)), **run)
    unmixed = stats.kstest(biased.positions[-1, :, 1], "uniform")
    assert mixed.pvalue > 1e-3, mixed
    assert unmixed.pvalue < 1e-6, unmixed


class _Parabolic(fk.diffusion.AbstractDiffusivity):
    """Vertical mixing in a 20 m column: K(z) = 4 K0 z (H - z) / H², zero at the surface and the
    bottom (none along x); `corrected=False` drops the drift correction (the control)."""

    corrected: bool = True
    sample_names = frozenset()

    def __call__(self, t, x):
        return jnp.stack([0.0 * x[1], 0.01 * 4 * x[1] * (20.0 - x[1]) / 20.0**2])

    def drift_correction(self, t, x):
        return fk.diffusion.divergence(self, t, x) if self.corrected else jnp.zeros_like(x)


def test_a_well_mixed_column_stays_mixed_under_a_parabolic_diffusivity():
    """The issue's test: 20 000 particles spread evenly over a 20 m column, reflected at the
    surface and the bottom, 6 h of steps of 60 s: Kolmogorov-Smirnov distance to uniform
    <= 0.015. Without the drift correction they leave the walls, where K vanishes."""
    box = ((0.0, 0.0), (1.0, 20.0))
    seeds = np.column_stack([np.full(20_000, 0.5), np.random.default_rng(3).uniform(0.0, 20.0, 20_000)])
    run = dict(t0=0.0, t1=6 * 3600.0, dt=60.0, boundary=fk.Reflective(box), key=jax.random.key(4), save_every=360)
    still = fk.fields.Uniform((0.0, 0.0), bounds=box)
    mixed = fk.track(still, seeds, integrator=fk.EulerMaruyama(_Parabolic()), **run)
    naive = fk.track(still, seeds, integrator=fk.EulerMaruyama(_Parabolic(corrected=False)), **run)
    assert stats.kstest(mixed.positions[-1, :, 1] / 20.0, "uniform").statistic <= 0.015
    assert stats.kstest(naive.positions[-1, :, 1] / 20.0, "uniform").statistic > 0.05


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


def _still_globe():
    lon, lat = np.arange(0.0, 360.0, 10.0), np.linspace(-90.0, 90.0, 19)
    return fk.GridField.from_arrays(
        np.zeros((36, 19, 2)), [lon, lat], periodic=(360.0, False), spherical=True, dtype="float64"
    )


def test_horizontal_diffusion_in_m2_per_s_spreads_2_Kh_t_in_metres_at_any_latitude():
    """Kh = 100 m²/s for 5 days from 60°N: the spread east (in metres, R cos(lat) per radian)
    and north both have variance 2 Kh t."""
    n, kh, t1 = 20000, 100.0, 5 * 86400.0
    seeds = np.tile([[180.0, 60.0]], (n, 1))
    traj = fk.track(
        _still_globe(),
        seeds,
        0.0,
        t1,
        3600.0,
        integrator=fk.EulerMaruyama(fk.diffusion.Horizontal(kh)),
        key=jax.random.key(3),
        dtype="float64",
    )
    metres = np.deg2rad(traj.positions[-1] - seeds) * 6_371_000.0
    metres[:, 0] *= np.cos(np.deg2rad(traj.positions[-1, :, 1]))
    np.testing.assert_allclose(metres.var(axis=0), 2 * kh * t1, rtol=0.04)


def test_horizontal_diffusion_keeps_particles_uniform_per_area_on_the_sphere():
    """Particles uniform per area (sin(lat) uniform) stay so under Kh = 2e5 m²/s for 60 days:
    the metric term -K tan(lat) balances the spreading. Without it the polar bands gain 10 %
    and more, which this test would see (it is checked here too)."""
    rng = np.random.default_rng(1)
    n = 40000
    seeds = np.stack([rng.uniform(0, 360, n), np.rad2deg(np.arcsin(rng.uniform(-1, 1, n)))], -1)

    def bands(diffusivity):
        traj = fk.track(
            _still_globe(),
            seeds,
            0.0,
            60 * 86400.0,
            4 * 3600.0,
            save_every=360,
            integrator=fk.EulerMaruyama(diffusivity),
            key=jax.random.key(0),
            dtype="float64",
        )
        assert np.all(traj.status[-1] == fk.Status.ACTIVE)
        counts, _ = np.histogram(np.sin(np.deg2rad(traj.positions[-1, :, 1])), bins=10, range=(-1, 1))
        return counts / (n / 10)

    assert np.max(np.abs(bands(fk.diffusion.Horizontal(2e5)) - 1)) < 0.06  # 4 sigma of a band's count

    class WithoutMetric(fk.diffusion.Horizontal):
        def drift_correction(self, t, x):
            return fk.diffusion.divergence(self, t, x)

    polar = bands(WithoutMetric(2e5))[[0, -1]]
    assert np.all(polar > 1.06)
