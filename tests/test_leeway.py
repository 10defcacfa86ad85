"""Search-and-rescue leeway from the published leeway table: every class can be chosen, each
element draws its own coefficients, jibes at the probability given, runs backward in time, and
is differentiable."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk
from flowkit.io.leeway import LeewayClass, parse
from flowkit.particles import Leeway

HOUR = 3600.0


@pytest.fixture(scope="module")
def table() -> dict[str, LeewayClass]:
    try:
        return fk.io.leeway_classes()
    except FileNotFoundError as error:  # no OpenDrift installed and PyPI out of reach
        pytest.skip(str(error))


def uniform(current, wind, size=1e6):
    axes = [np.linspace(-size, size, 3), np.linspace(-size, size, 3)]
    winds = fk.GridField.from_arrays(np.broadcast_to(wind, (3, 3, 2)).copy(), axes)
    return fk.GridField.from_arrays(np.broadcast_to(current, (3, 3, 2)).copy(), axes, samples={"wind": winds})


def test_every_class_of_the_table_can_be_chosen_by_key_number_and_description(table):
    """OpenDrift's table holds 85 classes (persons in water to debris); each is found by key,
    number and description, and its model's leeway at the median draws is the table's slope ×
    wind + offset on each side."""
    assert len(table) == 85
    assert [c.number for c in table.values()] == list(range(1, 86))
    wind = jnp.asarray(12.0)
    for c in table.values():
        model = fk.io.leeway(c.key)
        assert fk.io.leeway(c.number).name == c.key == fk.io.leeway(c.key.lower()).name
        described = [d for d in table.values() if d.description == c.description]
        if len(described) == 1:
            assert fk.io.leeway(c.description).name == c.key
        else:
            with pytest.raises(KeyError, match="give the key"):
                fk.io.leeway(c.description)
        for side, (slope, offset, _) in ((1.0, c.right), (-1.0, c.left)):
            state = {"orientation": jnp.asarray(side), "downwind_draw": jnp.asarray(0.5), "crosswind_draw": 0.0}
            downwind, crosswind = model.speeds(wind, state)
            median = c.downwind[0] * 12 + c.downwind[1]
            if c.downwind[2] > 0:  # the truncated normal's median moves where the floor cuts it
                low = jax.scipy.stats.norm.cdf(-20 * c.downwind[0] / c.downwind[2])
                shift = float(jax.scipy.special.ndtri(low + 0.5 * (1 - low))) * c.downwind[2]
                median += shift * (12 / 20 + 0.5)
            np.testing.assert_allclose(float(downwind) * 100, median, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(float(crosswind) * 100, slope * 12 + offset, rtol=1e-5, atol=1e-4)


def test_an_unknown_class_is_refused_with_the_closest_names(table):
    with pytest.raises(KeyError, match=r"no class 'PIW-12'.*'PIW-2'"):
        fk.io.leeway("PIW-12")
    with pytest.raises(KeyError, match="numbers are 1 to 85"):
        fk.io.leeway(86)


def test_a_table_in_the_wrong_layout_names_its_line(tmp_path):
    bad = tmp_path / "table.dat"
    bad.write_text(" PIW-1 1\n Person in water\n 0.96 0.0 12.0 0.54\n")
    with pytest.raises(ValueError, match=r"table.dat: class PIW-1: expected nine coefficients, got 4"):
        fk.io.leeway_classes(bad)
    good = parse(" OBJ-1 1\n An object\n 1 2 3 4 5 6 -4 -5 6\n\nFootnotes:\n")
    assert good["OBJ-1"].left == (-4.0, -5.0, 6.0)


def test_the_ensemble_drifts_at_the_tables_mean_and_spread_for_a_constant_wind(table):
    """A 10 m/s wind toward the north, no current, 10 h: each side's mean velocity is the
    table's slope × W + offset (downwind north, right east), the downwind spread is the
    residual's std × (W/20 + 1/2), and the elements pick their sides half and half."""
    c = table["LIFE-RAFT-DB-11"]
    model = fk.io.leeway(c.key, jibe_probability=0.0)
    n, w = 20_000, 10.0
    seeds = np.zeros((n, 2))
    traj = fk.track(uniform([0.0, 0.0], [0.0, w]), seeds, 0.0, 10 * HOUR, 600.0, particles=model, key=jax.random.key(0))
    v = 100 * (traj.positions[-1] - seeds) / (10 * HOUR)  # cm/s
    side = traj.variables["orientation"][-1]
    assert abs(np.mean(side == 1) - 0.5) < 0.02
    for s, (slope, offset, std) in ((1, c.right), (-1, c.left)):
        rows = side == s
        assert abs(v[rows, 0].mean() - (slope * w + offset)) < 4 * std / np.sqrt(rows.sum())
        np.testing.assert_allclose(v[rows, 0].std(), std * (w / 20 + 0.5), rtol=0.05)
    downwind = c.downwind[0] * w + c.downwind[1]
    assert abs(v[:, 1].mean() - downwind) < 4 * c.downwind[2] / np.sqrt(n)
    np.testing.assert_allclose(v[:, 1].std(), c.downwind[2] * (w / 20 + 0.5), rtol=0.05)


def test_jibing_happens_at_the_probability_per_hour_given():
    """With p = 0.3 per hour and 1 h steps, 30 % of the element-hours see a jibe; with 15 min
    steps, the chance per hour of at least one is still 0.3."""
    model = Leeway(1.0, 0.5, jibe_probability=0.3)
    field = uniform([0.0, 0.0], [5.0, 0.0])
    for dt in (HOUR, HOUR / 4):
        traj = fk.track(field, np.zeros((2000, 2)), 0.0, 100 * HOUR, dt, particles=model, key=jax.random.key(3))
        hourly = traj.variables["orientation"][:: round(HOUR / dt)]
        if dt == HOUR:
            np.testing.assert_allclose(np.mean(hourly[1:] != hourly[:-1]), 0.3, atol=0.01)
        steps = traj.variables["orientation"]
        per_step = 1 - (1 - 0.3) ** (dt / HOUR)
        np.testing.assert_allclose(np.mean(steps[1:] != steps[:-1]), per_step, atol=0.01)


def test_a_run_needs_a_key_when_the_elements_draw():
    with pytest.raises(ValueError, match="draws each particle's variables at random and needs a PRNG key"):
        fk.track(uniform([0.0, 0.0], [5.0, 0.0]), np.zeros((2, 2)), 0.0, HOUR, 600.0, particles=Leeway(1, 0.5, 0, 0, 3))


def test_a_backward_run_retraces_the_forward_one():
    """Drawn coefficients, no jibing, a varying current and wind: the run backward from where
    the forward run ended (same key, so the same draws) comes back to the seeds."""
    lon, lat = np.linspace(0, 4, 9), np.linspace(58, 62, 9)
    a, b = np.meshgrid(lon, lat, indexing="ij")
    current = np.stack([0.2 * np.cos(b - 60), 0.1 * np.sin(a)], axis=-1)
    wind = np.stack([8 + np.sin(b), 4 * np.cos(a)], axis=-1)
    winds = fk.GridField.from_arrays(wind, [lon, lat], spherical=True)
    field = fk.GridField.from_arrays(current, [lon, lat], spherical=True, samples={"wind": winds})
    model = Leeway(1.2, 0.4, 2.0, 1.0, downwind_std=5.0, crosswind_std=3.0, left_slope=-0.3, left_offset=0.5)
    seeds = np.column_stack([np.linspace(1, 2, 50), np.full(50, 59.5)])
    key = jax.random.key(7)
    ahead = fk.track(field, seeds, 0.0, 24 * HOUR, 900.0, particles=model, key=key, dtype="float64")
    back = fk.track(field, ahead.positions[-1], 24 * HOUR, 0.0, -900.0, particles=model, key=key, dtype="float64")
    np.testing.assert_array_equal(back.variables["orientation"][-1], ahead.variables["orientation"][0])
    np.testing.assert_allclose(back.positions[-1], seeds, atol=1e-7)


def test_gradients_through_a_backward_run_match_finite_differences():
    """d(where a found object came from)/d(where it was found), through a backward run with
    drawn coefficients and jibing, against central differences (the draws and jibes are the
    same at every position: they come from the key)."""
    lon, lat = np.linspace(0, 4, 9), np.linspace(58, 62, 9)
    a, b = np.meshgrid(lon, lat, indexing="ij")
    current = np.stack([0.2 * np.cos(2 * (b - 60)), 0.1 * np.sin(2 * a)], axis=-1)
    wind = np.stack([8 + 2 * np.sin(2 * b), 4 * np.cos(a)], axis=-1)
    winds = fk.GridField.from_arrays(wind, [lon, lat], spherical=True)
    field = fk.GridField.from_arrays(current, [lon, lat], spherical=True, samples={"wind": winds})
    model = Leeway(1.2, 0.4, 2.0, 1.0, downwind_std=5.0, crosswind_std=3.0, jibe_probability=0.2)

    def origin(find):
        seeds = jnp.broadcast_to(find, (16, 2))
        traj = fk.track(field, seeds, 6 * HOUR, 0.0, -900.0, particles=model, key=jax.random.key(2), dtype="float64")
        return jnp.mean(traj.positions[-1], axis=0)

    fk._dtypes.resolve("float64")  # x64 on before the find is made, as the run would set it
    find = jnp.array([2.1, 60.2], jnp.float64)
    jacobian = np.asarray(jax.jacfwd(origin)(find))
    h = 1e-5
    columns = [(origin(find + h * e) - origin(find - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(jacobian, np.stack(columns, axis=1), rtol=1e-5, atol=1e-8)
    assert np.all(np.abs(np.diag(jacobian)) > 0.5)
