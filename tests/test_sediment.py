"""Sediments (OpenDrift's SedimentDrift): settling onto the sea floor on the closed-form schedule,
grains resting on the bed, resuspension over the threshold, and a deposition rate that does not
depend on the step."""

import jax
import numpy as np
import pytest
from test_vertical_mixing import H, column_seeds

import flowkit as fk
from flowkit.diffusion import Vertical
from flowkit.particles import Sediment


def current_column(east: float) -> fk.fields.LayeredField:
    """A 20 m column over a 1 km square flowing east at `east` m/s at every depth."""
    points = np.array([[0.0, 0.0], [1000.0, 0.0], [1000.0, 1000.0], [0.0, 1000.0]])
    depths = np.broadcast_to(np.linspace(0, H, 11), (1, 4, 11))
    velocity = np.zeros((1, 4, 11, 3))
    velocity[..., 0] = east
    return fk.fields.LayeredField.from_arrays(
        points, [[0, 1, 2, 3]], depths, velocity, np.full((1, 4), H), spherical=False
    )


def test_grains_settle_on_the_closed_form_schedule_and_rest():
    """Still water, no mixing: a grain from depth z0 settles at the first step that ends within
    w dt of the floor, i.e. once w (t + dt) >= H - z0; settled grains stay put in a current
    below the threshold."""
    w, dt = 1e-3, 60.0
    seeds = column_seeds(500, np.random.default_rng(0)) * [0.5, 1, 1]
    traj = fk.track(
        current_column(0.01), seeds, 0.0, 4 * 3600.0, dt, particles=Sediment(settling_velocity=w),
        dtype="float64", save_every=30,
    )  # fmt: skip
    times = np.asarray(traj.times)
    settled = np.asarray(traj.variables["settled"])
    expected = (H - seeds[None, :, 2]) <= w * (times[:, None] + dt) + 1e-9
    np.testing.assert_array_equal(settled.astype(bool), expected & (times[:, None] > 0))
    resting = settled[:-1].astype(bool)
    np.testing.assert_array_equal(np.where(resting[..., None], traj.positions[1:], 0),
                                  np.where(resting[..., None], traj.positions[:-1], 0))  # fmt: skip
    assert 0.5 < settled[-1].mean() < 1


def test_a_current_over_the_threshold_keeps_grains_moving_along_the_bed():
    seeds = column_seeds(100, np.random.default_rng(1)) * [0.4, 1, 1]
    traj = fk.track(
        current_column(0.3), seeds, 0.0, 1200.0, 60.0, particles=Sediment(settling_velocity=0.05),
        dtype="float64", save_every=20,
    )  # fmt: skip
    assert not np.any(traj.variables["settled"])
    np.testing.assert_allclose(traj.positions[-1, :, 2], H)  # on the floor, and still moving
    np.testing.assert_allclose(traj.positions[-1, :, 0] - seeds[:, 0], 0.3 * 1200.0, rtol=1e-6)  # 0.3 in float32


def test_deposition_under_mixing_does_not_depend_on_the_step():
    """Grains mixed by K = 1e-3 m²/s settle at 0.5 mm/s: the fraction on the bed after 3 h is the
    same with 10 s and 60 s steps (the deposition flux w C at the bed, whatever the step)."""
    seeds = column_seeds(3000, np.random.default_rng(2))

    def settled(dt):
        traj = fk.track(
            current_column(0.0), seeds, 0.0, 3 * 3600.0, dt, fk.EulerMaruyama(Vertical(1e-3)),
            particles=Sediment(settling_velocity=5e-4), key=jax.random.key(3), save_every=int(3 * 3600 / dt),
        )  # fmt: skip
        return float(np.mean(traj.variables["settled"][-1]))

    fine, coarse = settled(10.0), settled(60.0)
    assert 0.2 < fine < 0.8
    assert coarse == pytest.approx(fine, abs=0.03)


def test_a_field_without_a_sea_floor_is_refused():
    field = fk.fields.Uniform([0.1, 0.0, 0.0])
    with pytest.raises(ValueError, match="Sediment needs the sea floor, but Uniform has none"):
        fk.track(field, [[0.0, 0.0, 1.0]], 0.0, 60.0, 10.0, particles=Sediment())
