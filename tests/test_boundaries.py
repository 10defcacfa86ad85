"""Boundary invariants, per particle and through the tracker."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk

BOX = ((0.0, -1.0), (2.0, 1.0))


def _apply(boundary, x_prev, x_next):
    status = jnp.zeros(x_prev.shape[0], jnp.int32)
    x, s = jax.vmap(boundary.apply, in_axes=(0, 0, 0, None))(jnp.asarray(x_prev), jnp.asarray(x_next), status, None)
    return np.asarray(x), np.asarray(s)


@pytest.fixture
def steps(getkey):
    lo, hi = np.array(BOX[0]), np.array(BOX[1])
    x_prev = lo + (hi - lo) * np.asarray(jax.random.uniform(getkey(), (2000, 2)))
    x_next = x_prev + np.asarray(jax.random.normal(getkey(), (2000, 2))) * 3.0
    return x_prev, x_next


@pytest.mark.parametrize("cls", [fk.Periodic, fk.Reflective, fk.Clamp, fk.Absorbing])
def test_positions_stay_in_box(cls, steps):
    x, _ = _apply(cls(BOX), *steps)
    assert np.all(x >= np.array(BOX[0]) - 1e-12) and np.all(x <= np.array(BOX[1]) + 1e-12)


def test_periodic_wrap(steps):
    x, status = _apply(fk.Periodic(BOX), *steps)
    lo, hi = np.array(BOX[0]), np.array(BOX[1])
    np.testing.assert_allclose(x, lo + np.mod(steps[1] - lo, hi - lo), atol=1e-12)
    assert np.all(status == fk.Status.ACTIVE)


def test_reflection_preserves_distance_travelled():
    boundary = fk.Reflective(BOX)
    x_prev = np.array([[1.8, 0.0], [0.3, 0.9], [1.0, -0.5]])
    x_next = np.array([[2.5, 0.0], [0.3, 1.6], [1.0, -4.0]])  # the last one bounces twice: -0.5 → -1 → 1 → 0
    x, _ = _apply(boundary, x_prev, x_next)
    np.testing.assert_allclose(x, [[1.5, 0.0], [0.3, 0.4], [1.0, 0.0]], atol=1e-12)
    # straight path to the wall + path back equals the step length for a single bounce
    travelled = (2.0 - 1.8) + (2.0 - x[0, 0])
    assert travelled == pytest.approx(0.7)


def test_reflection_is_involution_inside():
    boundary = fk.Reflective(BOX)
    x_prev = np.array([[1.0, 0.0]])
    x_next = np.array([[1.2, 0.3]])
    x, _ = _apply(boundary, x_prev, x_next)
    np.testing.assert_array_equal(x, x_next)


def test_absorbing_stops_at_crossing_point():
    boundary = fk.Absorbing(BOX)
    x, status = _apply(boundary, np.array([[1.5, 0.0], [1.0, 0.5]]), np.array([[2.5, 0.5], [1.2, 0.6]]))
    np.testing.assert_allclose(x[0], [2.0, 0.25], atol=1e-12)
    np.testing.assert_array_equal(status, [fk.Status.ABSORBED, fk.Status.ACTIVE])


def test_one_vocabulary_of_wall_modes_everywhere():
    """Every boundary takes the same mode names (the box classes' adjectives too) and refuses
    others naming what it takes; a box's `slip` is its clamp and `stick` its absorb."""
    assert fk.Reflective(BOX).modes == ("reflect", "reflect") and fk.Clamp(BOX).modes == ("slip", "slip")
    assert fk.Mixed(BOX, ("reflective", "absorbing")).modes == ("reflect", "absorb")
    x_prev, x_next = np.array([[1.5, 0.0], [1.0, 0.5]]), np.array([[2.5, 0.5], [1.2, 1.6]])
    for name, same in (("slip", fk.Clamp(BOX)), ("stick", fk.Absorbing(BOX)), ("absorb", fk.Absorbing(BOX))):
        for a, b in zip(_apply(fk.Mixed(BOX, (name, name)), x_prev, x_next), _apply(same, x_prev, x_next)):
            np.testing.assert_array_equal(a, b)
    assert fk.Sphere([0.0, 0.0], 1.0, mode="absorbing").mode == "absorb"
    assert fk.MeshWalls("reflective").mode == "reflect"
    for make in (
        lambda m: fk.Mixed(BOX, (m, m)),
        lambda m: fk.Sphere([0.0, 0.0], 1.0, mode=m),
        fk.MeshWalls,
        lambda m: fk.InletOutlet(walls=m).bind(fk.fields.DoubleGyre()),
    ):
        with pytest.raises(ValueError, match=r"must name one of \[.*'reflect'"):
            make("bouncy")


def test_mixed_modes_per_axis():
    boundary = fk.Mixed(BOX, ("periodic", "absorbing"))
    x, status = _apply(boundary, np.array([[1.9, 0.0], [1.9, 0.8]]), np.array([[2.3, 0.5], [2.3, 1.2]]))
    np.testing.assert_allclose(x[0], [0.3, 0.5], atol=1e-12)
    np.testing.assert_allclose(x[1], [0.1, 1.0], atol=1e-12)  # crossing point (2.1, 1.0), wrapped in x
    np.testing.assert_array_equal(status, [fk.Status.ACTIVE, fk.Status.ABSORBED])
    with pytest.raises(ValueError, match="modes must name one of"):
        fk.Mixed(BOX, ("periodic", "sticky"))


def test_tracked_exit_time_through_absorbing_wall():
    field = fk.fields.Uniform((0.5, 0.0), bounds=((0.0, 0.0), (1.0, 1.0)))
    seeds = np.array([[0.1, 0.5], [0.6, 0.2], [0.0, 0.9]])
    traj = fk.track(field, seeds, 0.0, 3.0, 0.1, fk.Euler(), fk.Absorbing(field.bounds), dtype="float64")
    exit_times = (1.0 - seeds[:, 0]) / 0.5
    for i, t_exit in enumerate(exit_times):
        absorbed = traj.status[:, i] == fk.Status.ABSORBED
        first = np.argmax(absorbed)
        assert absorbed[first:].all() and not absorbed[:first].any()
        assert (
            traj.times[first] - 0.1 - 1e-9 <= t_exit <= traj.times[first] + 1e-9
        )  # absorbed within a step of the exit
        np.testing.assert_allclose(
            traj.positions[first:, i], np.broadcast_to([1.0, seeds[i, 1]], (len(traj.times) - first, 2)), atol=1e-12
        )


def test_reflective_run_keeps_speed_and_box():
    field = fk.fields.Uniform((0.7, -0.3), bounds=BOX)
    seeds = fk.seeding.uniform_grid((5, 5), BOX)
    traj = fk.track(field, seeds, 0.0, 10.0, 0.05, fk.RK4(), fk.Reflective(BOX), dtype="float64")
    assert np.all(traj.positions >= np.array(BOX[0]) - 1e-12) and np.all(traj.positions <= np.array(BOX[1]) + 1e-12)
    assert np.all(traj.status == fk.Status.ACTIVE)
    # positions are reflected, velocities come from the field: in a uniform flow the particles
    # end up against the downstream walls, within one step of them
    final = traj.positions[-1]
    assert np.all(final[:, 0] >= 2.0 - 0.7 * 0.05 - 1e-12) and np.all(final[:, 1] <= -1.0 + 0.3 * 0.05 + 1e-12)


def test_a_config_binds_into_a_bound_boundary_and_refuses_to_act_unbound():
    """Names resolve once into geometry: the bound boundary's regions are planes and its
    surface arrays; binding it again returns it; the config itself refuses to act."""
    field = fk.fields.DoubleGyre()
    x = jnp.zeros((2, 2))
    for config, bound_type in (
        (fk.InletOutlet("xmin", "xmax", walls="reflect"), fk.boundaries.BoundInletOutlet),
        (fk.ContinuousInlet("xmin", rate=10.0, slots=4), fk.boundaries.BoundContinuousInlet),
    ):
        bound = config.bind(field)
        assert (
            type(bound) is bound_type
            and isinstance(bound.inlet, fk.boundaries.Plane)
            and isinstance(bound.walls, fk.Reflective if bound_type is fk.boundaries.BoundInletOutlet else fk.Open)
        )
        assert (
            bound.bind(field) is bound
            and bound.extra_slots == config.extra_slots
            and bound.stochastic == config.stochastic
        )
        with pytest.raises(TypeError, match=f"{type(config).__name__} is a boundary config: bind it"):
            config.apply_batch(field, x, x, jnp.zeros(2, jnp.int32), field.hints(2, jnp.float32), jnp.ones(2, bool))
    composed = fk.boundaries.compose(fk.Reflective(field.bounds), fk.ContinuousInlet("xmin", rate=10.0, slots=4)).bind(
        field
    )
    assert isinstance(composed.parts[1], fk.boundaries.BoundContinuousInlet) and composed.parking is not None
