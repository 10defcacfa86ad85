"""Step sizes in cells: `dt="auto"` from a Courant number, the largest Courant number every run
records, the warning past the integrator's limit; each checked against a Courant number computed
here, independently, from the saved positions."""

import logging
import re

import jax
import numpy as np
import pytest
from meshes import brute_force_locate

import flowkit as fk

R = 6_371_000.0


def _steps(traj) -> float:
    return (traj.times[-1] - traj.times[0]) / traj.stats.n_steps


def _active(traj):
    return traj.status == fk.Status.ACTIVE


def _chords(traj):
    """Each active particle's step into every frame after the first (save_every=1: frames are
    steps), and where it ended."""
    active = _active(traj)[1:]
    return (traj.positions[1:] - traj.positions[:-1])[active], traj.positions[1:][active]


def test_auto_dt_on_a_grid_keeps_the_courant_number_under_half_and_fills_the_save_interval():
    field = fk.datasets.double_gyre_grid(nx=101, ny=51, t_end=10.0, nt=11, dtype="float64")
    seeds = fk.seeding.uniform_grid((12, 6), field.bounds, include_boundaries=False)
    saved = fk.track(field, seeds, 0.0, 10.0, "auto", save_every="1s", dtype="float64")
    assert saved.stats.n_steps % 10 == 0  # whole steps per save of 1 s
    assert (
        0.45 < field.max_courant_rate() * _steps(saved) <= 0.5 + 1e-12
    )  # the fastest node, shortened only to fill the interval
    traj = fk.track(field, seeds, 0.0, 10.0, "auto", save_every=1, dtype="float64")
    chords, _ = _chords(traj)
    courant = np.max(np.abs(chords) / 0.02, axis=1)  # independently: the cells each step crossed, h = 0.02 on both axes
    assert 0.3 < courant.max() <= 0.5 + 1e-9
    np.testing.assert_allclose(traj.stats.courant, courant.max(), rtol=1e-9)


def test_auto_dt_spans_at_most_one_of_the_datas_time_intervals(caplog):
    """A tide sampled every 524 s in a slow flow: the Courant number alone would take one step
    across the whole run; no step spans more than one interval of the data (ADCIRC's case)."""
    times = 524.0 * np.arange(43)
    x, y = np.linspace(0, 1e5, 11), np.linspace(0, 5e4, 6)
    values = np.zeros((len(times), 11, 6, 2))
    values[..., 0] = 1e-3 * np.cos(2 * np.pi * times / 44_712.0)[:, None, None]  # the M2 tide, 1 mm/s
    field = fk.GridField.from_arrays(values, [x, y], times=times, dtype="float64")
    assert field.max_courant_rate() * 6 * 3600 < 0.5  # one step of 6 h by the Courant number
    with caplog.at_level(logging.INFO, logger="flowkit"):
        traj = fk.track(field, [[5e4, 2.5e4]], 0.0, 6 * 3600.0, "auto", dtype="float64")
    assert _steps(traj) <= 524.0 and traj.stats.n_steps == 42  # 21 600 s / 524 s, rounded up
    assert "no step spans more than the data's time step (524 s)" in caplog.text


def test_auto_dt_on_a_graded_tetrahedral_mesh():
    points, tets = fk.datasets.jittered_tet_box((8, 8, 8), (1.0, 1.0, 1.0), 0.2, 1)
    points = points**2  # cells shrink toward the corner at the origin (4x finer there than at the far side)
    velocity = np.stack(
        [-(points[:, 1] - 0.5), points[:, 0] - 0.5, 0.2 + 0 * points[:, 0]], axis=1
    )  # linear: exact in every tetrahedron
    field = fk.MeshField.from_arrays(points, tets, velocity, dtype="float64")
    seeds = fk.seeding.random_inside(300, field, key=jax.random.key(0))
    traj = fk.track(field, seeds, 0.0, 1.0, "auto", save_every=1, dtype="float64")
    chords, x = _chords(traj)
    corners = points[tets[np.argmax(brute_force_locate(field, x), axis=1)]]  # (n, 4, 3): each end point's tetrahedron
    edges = np.min(
        [np.linalg.norm(corners[:, a] - corners[:, b], axis=1) for a in range(4) for b in range(a + 1, 4)], axis=0
    )
    courant = np.max(np.abs(chords), axis=1) / edges
    assert 0.05 < courant.max() <= 0.5 + 1e-9
    np.testing.assert_allclose(traj.stats.courant, courant.max(), rtol=1e-9)


def test_auto_dt_on_the_sphere_counts_the_narrow_cells_at_high_latitude():
    lon, lat = np.arange(0.0, 41.0), np.arange(50.0, 87.0)
    values = np.zeros((len(lon), len(lat), 2))
    values[..., 0], values[..., 1] = 1.0, 0.2  # m/s east and north
    field = fk.GridField.from_arrays(values, [lon, lat], spherical=True, dtype="float64")
    seeds = np.stack([np.full(25, 5.0), np.linspace(60.0, 84.0, 25)], axis=1)
    traj = fk.track(field, seeds, 0.0, 86400.0, "auto", save_every=1, dtype="float64")
    chords, _ = _chords(traj)
    courant = np.max(np.abs(chords) / 1.0, axis=1)  # cells of 1° crossed
    assert 0.3 < courant.max() <= 0.5 + 1e-9
    np.testing.assert_allclose(traj.stats.courant, courant.max(), rtol=1e-9)
    # the narrowest cells, at 86°N, set the step: an equatorial cell would allow 14x more
    metres = np.deg2rad(1.0) * R
    assert _steps(traj) <= 0.5 * metres * np.cos(np.deg2rad(86.0)) / 1.0 * (1 + 1e-9)


def test_auto_dt_keeps_rk4_close_to_a_fine_step_reference_on_the_double_gyre():
    field = fk.datasets.double_gyre_grid(nx=201, ny=101, t_end=10.0, nt=51, dtype="float64")
    seeds = fk.seeding.uniform_grid((10, 5), field.bounds, include_boundaries=False)
    auto = fk.track(field, seeds, 0.0, 10.0, "auto", dtype="float64", boundary=fk.Reflective(field.bounds))
    fine = fk.track(field, seeds, 0.0, 10.0, _steps(auto) / 16, dtype="float64", boundary=fk.Reflective(field.bounds))
    assert np.max(np.linalg.norm(auto.positions[-1] - fine.positions[-1], axis=1)) < 1e-3


def test_a_step_across_many_cells_warns_once_with_a_dt_that_fits(caplog):
    field = fk.datasets.double_gyre_grid(nx=101, ny=51, t_end=10.0, nt=11, dtype="float64")
    seeds = fk.seeding.uniform_grid((8, 4), field.bounds, include_boundaries=False)
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        big = fk.track(field, seeds, 0.0, 10.0, 0.5, dtype="float64", boundary=fk.Reflective(field.bounds))
    (message,) = [r.getMessage() for r in caplog.records if "Courant" in r.getMessage()]
    assert big.stats.courant > 2 and f"{big.stats.courant:.3g} (over 2 for RK4)" in message
    better = float(re.search(r"dt=([0-9.e-]+) \(or dt='auto'\)", message).group(1))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        fitting = fk.track(
            field,
            seeds,
            0.0,
            10.0,
            10.0 / np.ceil(10.0 / better),
            dtype="float64",
            boundary=fk.Reflective(field.bounds),
        )
    assert fitting.stats.courant <= 2 and not [r for r in caplog.records if "Courant" in r.getMessage()]
    euler = fk.track(field, seeds, 0.0, 10.0, 0.05, fk.Euler(), dtype="float64", boundary=fk.Reflective(field.bounds))
    assert 1 < euler.stats.courant < 2 and "over 1 for Euler" in caplog.records[-1].getMessage()


def test_auto_dt_needs_cells_and_flow():
    seeds = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match="dt='auto' counts a step in cells, and DoubleGyre has none"):
        fk.track(fk.fields.DoubleGyre(), seeds, 0.0, 1.0, "auto")
    assert fk.track(fk.fields.DoubleGyre(), seeds, 0.0, 1.0, 0.1).stats.courant is None
    still = fk.GridField.from_arrays(np.zeros((5, 3, 2)), [np.linspace(0, 2, 5), np.linspace(0, 1, 3)])
    with pytest.raises(ValueError, match="velocity is zero everywhere"):
        fk.track(still, seeds, 0.0, 1.0, "auto")
    with pytest.raises(ValueError, match="courant must be a positive number"):
        fk.track(fk.datasets.double_gyre_grid(nx=21, ny=11, nt=3), seeds, 0.0, 1.0, "auto", courant=-1)


def test_a_collapsed_hexahedron_is_left_out_of_dt_auto_by_name(caplog):
    """A hexahedron whose +x face lies on its -x face has no size along x: its Courant rate was
    infinite, so `dt='auto'` refused the field as "not finite". It is left out, and said so."""
    shape = (5, 4, 4)
    points = np.stack(np.meshgrid(*[np.linspace(0, 1, k) for k in shape], indexing="ij"), -1).reshape(-1, 3)
    cells = fk.datasets.lattice_hexahedra(shape)
    first = cells[0]
    for moved, onto in ((1, 0), (2, 3), (5, 4), (6, 7)):
        points[first[moved]] = points[first[onto]]
    field = fk.MeshField.from_arrays(
        points, cells, np.tile([0.3, 0.1, 0.0], (len(points), 1)), cell_types=np.full(len(cells), 12)
    )
    with caplog.at_level(logging.INFO, logger="flowkit"):
        rate = field.max_courant_rate()
    assert "have two nodes at one point (collapsed; cell 0 is one): left out of the Courant number" in caplog.text
    np.testing.assert_allclose(rate, 0.3 / 0.25)  # the other cells' shortest edges, a quarter, at 0.3 m/s
