"""Buoyant plastics (OpenDrift's PlastDrift): rising against the wind's mixing into Kukulka et
al. (2012)'s exponential profile, and windage only near the surface."""

import jax
import numpy as np
import pytest
from test_vertical_mixing import H, column_seeds, still_column

import flowkit as fk
from flowkit.diffusion import Vertical, WindDriven
from flowkit.particles import Plastic


def windy_column(east: float = 8.0) -> fk.fields.LayeredField:
    column = still_column()
    points, depths = np.asarray(column.surface.points), np.broadcast_to(np.linspace(0, H, 11), (1, 4, 11))
    return fk.fields.LayeredField.from_arrays(
        points, [[0, 1, 2, 3]], depths, np.zeros((1, 4, 11, 3)), np.full((1, 4), H), spherical=False,
        samples={"wind": fk.fields.Uniform([east, 0.0])},
    )  # fmt: skip


def test_plastics_settle_into_kukulkas_exponential_profile_under_the_winds_mixing():
    """An 8 m/s wind mixes with OpenDrift's Sundby (1983) K = 76.1e-4 + 2.26e-4 W² m²/s down to
    the mixed layer; plastics rising at 1 cm/s settle into C(z) ∝ exp(-z w / K) (mean depth
    L - H / (e^{H/L} - 1), L = K / w): what OpenDrift's analytical mixing draws from."""
    w, wind = 0.01, 8.0
    k = 76.1e-4 + 2.26e-4 * wind**2
    length = k / w
    expected = length - H / np.expm1(H / length)
    mixing = fk.EulerMaruyama(Vertical(WindDriven("wind", mixed_layer_depth=H + 5)))
    traj = fk.track(
        windy_column(wind),
        column_seeds(5000, np.random.default_rng(4)),
        0.0,
        6 * 3600.0,
        10.0,
        mixing,
        particles=Plastic(rise_velocity=w, wind_drift_factor=0.0),
        key=jax.random.key(5),
        save_every=2160,
    )
    depth = traj.positions[-1, :, 2]
    np.testing.assert_allclose(depth.mean(), expected, rtol=0.05)
    np.testing.assert_allclose(np.median(depth), length * np.log(2), rtol=0.08)  # the exponential's median


def test_windage_acts_only_within_the_wind_drift_depth():
    """Each Euler–Maruyama step moves a plastic downwind by factor × W × dt exactly when the
    step starts within 0.1 m of the surface, else not at all (no current)."""
    wind, factor, dt = 8.0, 0.02, 10.0
    mixing = fk.EulerMaruyama(Vertical(WindDriven("wind", mixed_layer_depth=H + 5)))
    seeds = column_seeds(400, np.random.default_rng(6)) * [1, 1, 0.05]
    traj = fk.track(
        windy_column(wind), seeds, 0.0, 1800.0, dt, mixing,
        particles=Plastic(rise_velocity=0.01, wind_drift_factor=factor), key=jax.random.key(7), dtype="float64",
    )  # fmt: skip
    near = np.asarray(traj.positions[:-1, :, 2]) <= 0.1
    moved = np.asarray(traj.positions[-1, :, 0] - traj.positions[0, :, 0])
    np.testing.assert_allclose(moved, factor * wind * dt * near.sum(axis=0), rtol=1e-9, atol=1e-9)
    assert 0 < near.mean() < 1


def test_a_missing_wind_is_refused_naming_the_plastic():
    with pytest.raises(ValueError, match="particles: Plastic reads the sampled"):
        fk.track(still_column(), column_seeds(2, np.random.default_rng(8)), 0.0, 60.0, 10.0, particles=Plastic())
