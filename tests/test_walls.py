"""Mesh walls (reflect, slip, absorb, open regions), round domains and composed boundaries."""

import logging
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from meshes import channel_with_cylinder

import flowkit as fk

SHEAR = 0.3  # the mesh's x-walls are the tilted planes x = 0.3 y and x = 1 + 0.3 y
NORMAL = np.array([1.0, -SHEAR, 0.0]) / np.hypot(1.0, SHEAR)


def _tilted_box(velocity):
    points, tets = fk.datasets.jittered_tet_box((9, 9, 9), (1.0, 1.0, 1.0), jitter=0.2, seed=4)
    points = points + SHEAR * points[:, 1:2] * np.array([1.0, 0.0, 0.0])
    return fk.MeshField.from_arrays(
        points, tets, np.tile(np.asarray(velocity, np.float64), (len(points), 1)), dtype="float64"
    )


def _near_wall(n, seed=0):
    rng = np.random.default_rng(seed)
    y, z = rng.uniform(0.2, 0.8, n), rng.uniform(0.2, 0.8, n)
    gap = rng.uniform(0.001, 0.049, n)  # distance along x to the wall at x = 1 + 0.3 y
    return np.stack([1 + SHEAR * y - gap, y, z], axis=1)


def _one_euler_step(field, seeds, boundary, dt=0.05):
    traj = fk.track(field, seeds, 0.0, dt, dt, fk.Euler(), boundary, dtype="float64")
    return traj.positions[-1], traj.status[-1]


def test_reflection_off_a_tilted_wall_is_the_mirror_image():
    field = _tilted_box([1.0, 0.0, 0.0])
    seeds = _near_wall(300)
    x, status = _one_euler_step(field, seeds, fk.MeshWalls("reflect"))
    x_next = seeds + [0.05, 0.0, 0.0]
    depth = (x_next - [1.0, 0.0, 0.0]) @ NORMAL
    assert np.all(depth > 0)  # every step crosses the wall
    np.testing.assert_allclose(x, x_next - 2 * depth[:, None] * NORMAL, rtol=0, atol=1e-12)
    assert np.all(status == fk.Status.ACTIVE)


def test_slip_projects_and_absorb_stops_on_the_wall():
    field = _tilted_box([1.0, 0.0, 0.0])
    seeds = _near_wall(200, seed=1)
    x_next = seeds + [0.05, 0.0, 0.0]
    depth = (x_next - [1.0, 0.0, 0.0]) @ NORMAL
    x, status = _one_euler_step(field, seeds, fk.MeshWalls("slip"))
    np.testing.assert_allclose(x, x_next - depth[:, None] * NORMAL, rtol=0, atol=1e-12)
    assert np.all(status == fk.Status.ACTIVE) and np.all((x - [1.0, 0, 0]) @ NORMAL <= 0)
    for mode in ("absorb", "stick"):
        x, status = _one_euler_step(field, seeds, fk.MeshWalls(mode))
        s = ((seeds - [1.0, 0, 0]) @ NORMAL) / -(np.array([0.05, 0, 0]) @ NORMAL)
        np.testing.assert_allclose(x, seeds + s[:, None] * [0.05, 0, 0], rtol=0, atol=1e-12)
        assert np.all(status == fk.Status.ABSORBED)


def test_corner_reflects_off_both_walls():
    field = _tilted_box([1.0, 0.0, 1.0])
    rng = np.random.default_rng(2)
    y = rng.uniform(0.3, 0.7, 100)
    seeds = np.stack([1 + SHEAR * y - rng.uniform(0.005, 0.04, 100), y, 1 - rng.uniform(0.005, 0.04, 100)], axis=1)
    x, status = _one_euler_step(field, seeds, fk.MeshWalls("reflect"))
    x_next = seeds + [0.05, 0.0, 0.05]
    mirrored = x_next - 2 * ((x_next - [1.0, 0, 0]) @ NORMAL)[:, None] * NORMAL
    mirrored[:, 2] = 2 - mirrored[:, 2]  # the top wall z = 1 is orthogonal to the tilted one
    np.testing.assert_allclose(x, mirrored, rtol=0, atol=1e-12)
    assert np.all(status == fk.Status.ACTIVE)


def test_open_regions_let_particles_leave():
    field = _tilted_box([0.0, -1.0, 0.0])
    rng = np.random.default_rng(3)
    seeds = np.stack([rng.uniform(0.3, 0.7, 50), rng.uniform(0.001, 0.04, 50), rng.uniform(0.2, 0.8, 50)], axis=1)
    seeds[:, 0] += SHEAR * seeds[:, 1]
    x, status = _one_euler_step(field, seeds, fk.MeshWalls("reflect", open=["ymin"]))
    assert np.all(status == fk.Status.OUT_OF_DOMAIN)
    np.testing.assert_array_equal(x, seeds)  # frozen at the last position inside
    x, status = _one_euler_step(field, seeds, fk.MeshWalls("reflect", open=["ymax"]))
    assert np.all(status == fk.Status.ACTIVE)
    np.testing.assert_allclose(x[:, 1], -(seeds[:, 1] - 0.05), atol=1e-12)


def test_swirling_flow_stays_inside_the_pipe_walls():
    points, tets = fk.datasets.pipe_mesh(21, 9, length=2.0)
    u = np.stack(
        [0.2 + 0 * points[:, 0], -points[:, 2] + 0.5 * points[:, 1], points[:, 1] + 0.5 * points[:, 2]], axis=1
    )
    field = fk.MeshField.from_arrays(points, tets, u)
    rng = np.random.default_rng(4)
    seeds = np.concatenate([rng.uniform(0.1, 1.9, (400, 1)), rng.uniform(-0.3, 0.3, (400, 2))], axis=1)
    traj = fk.track(field, seeds, 0.0, 20.0, 0.02, boundary=fk.MeshWalls("reflect"), save_every=50)
    assert np.all(traj.status == fk.Status.ACTIVE)
    inside = np.asarray(
        eqx.filter_jit(field.locate_batch)(jnp.asarray(traj.positions[-1]), field.hints(400, traj.positions.dtype))[1]
    )
    assert inside.all()
    r = np.hypot(traj.positions[-1][:, 1], traj.positions[-1][:, 2])
    assert r.max() > 0.45  # the outward swirl does push them onto the wall


def _apply(boundary, x_prev, x_next):
    status = jnp.zeros(len(x_prev), jnp.int32)
    x, s = jax.vmap(boundary.apply, in_axes=(0, 0, 0, None))(jnp.asarray(x_prev), jnp.asarray(x_next), status, None)
    return np.asarray(x), np.asarray(s)


def _crossing(x_prev, x_next, centre, radius, across):
    d, p = across(x_next - x_prev), across(x_prev - centre)
    a, b, c = np.sum(d * d, 1), 2 * np.sum(d * p, 1), np.sum(p * p, 1) - radius**2
    s = (-b + np.sqrt(b * b - 4 * a * c)) / (2 * a)
    hit = x_prev + s[:, None] * (x_next - x_prev)
    normal = across(hit - centre)
    return hit, normal / np.linalg.norm(normal, axis=1, keepdims=True)


@pytest.mark.parametrize("shape", ["sphere", "cylinder"])
def test_round_domains_reflect_and_absorb(shape):
    rng = np.random.default_rng(5)
    centre = np.array([0.5, -0.2, 1.0])
    if shape == "sphere":
        boundary, absorbing = fk.Sphere(centre, 0.8), fk.Sphere(centre, 0.8, mode="absorbing")
        across = lambda v: v  # noqa: E731
    else:
        axis = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
        boundary, absorbing = fk.Cylinder(centre, axis, 0.8), fk.Cylinder(centre, axis, 0.8, mode="absorbing")
        across = lambda v: v - (v @ axis)[:, None] * axis  # noqa: E731
    direction = rng.normal(size=(2000, 3))
    x_prev = centre + 0.75 * direction / np.linalg.norm(direction, axis=1, keepdims=True) * rng.uniform(
        0.5, 1, (2000, 1)
    )
    x_next = x_prev + rng.normal(size=(2000, 3)) * 0.1
    out = np.linalg.norm(across(x_next - centre), axis=1) > 0.8
    hit, normal = _crossing(x_prev[out], x_next[out], centre, 0.8, across)
    x, status = _apply(boundary, x_prev, x_next)
    mirror = x_next[out] - 2 * np.sum((x_next[out] - hit) * normal, 1)[:, None] * normal
    single = np.linalg.norm(across(mirror - centre), axis=1) <= 0.8
    assert out.sum() > 30 and single.mean() > 0.9
    np.testing.assert_allclose(x[out][single], mirror[single], atol=1e-12)
    np.testing.assert_array_equal(x[~out], x_next[~out])
    assert np.all(np.linalg.norm(across(x - centre), axis=1) <= 0.8 + 1e-12) and np.all(status == 0)
    # long steps fold back inside too
    far, _ = _apply(boundary, x_prev, x_prev + rng.normal(size=(2000, 3)) * 3)
    assert np.all(np.linalg.norm(across(far - centre), axis=1) <= 0.8 + 1e-12)
    x, status = _apply(absorbing, x_prev, x_next)
    np.testing.assert_allclose(x[out], hit, atol=1e-12)
    assert np.all(status[out] == fk.Status.ABSORBED) and np.all(status[~out] == 0)


def test_compose_a_cylinder_with_periodic_ends():
    swirl = fk.fields.Analytic(
        lambda t, x, args: jnp.stack([1.0 + 0 * x[0], -x[2] + 0.3 * x[1], x[1] + 0.3 * x[2]]),
        bounds=((0.0, -1.0, -1.0), (2.0, 1.0, 1.0)),
        dim=3,
    )
    boundary = fk.boundaries.compose(
        fk.Cylinder([0, 0, 0], [1, 0, 0], 0.9), fk.Mixed(swirl.bounds, ("periodic", "open", "open"))
    )
    seeds = np.random.default_rng(6).uniform((0, -0.5, -0.5), (2, 0.5, 0.5), (300, 3))
    traj = fk.track(swirl, seeds, 0.0, 10.0, 0.01, boundary=boundary, save_every=100)
    assert np.all(traj.status == fk.Status.ACTIVE)
    assert np.all(np.hypot(traj.positions[..., 1], traj.positions[..., 2]) <= 0.9 + 1e-6)
    assert np.all((traj.positions[..., 0] >= 0) & (traj.positions[..., 0] <= 2))
    absorbing = fk.boundaries.compose(
        fk.Cylinder([0, 0, 0], [1, 0, 0], 0.9, mode="absorbing"), fk.Periodic(swirl.bounds)
    )
    traj = fk.track(swirl, seeds, 0.0, 10.0, 0.01, boundary=absorbing, save_every=100)
    stopped = traj.status[-1] == fk.Status.ABSORBED
    assert stopped.mean() > 0.8  # the outward swirl takes all but those seeded nearest the axis to the wall
    np.testing.assert_allclose(np.hypot(traj.positions[-1, stopped, 1], traj.positions[-1, stopped, 2]), 0.9, atol=1e-5)


def test_auto_boundary_opens_the_outlet_and_reflects_on_the_walls_of_a_channel_with_an_obstacle(caplog):
    """No-slip data (zero velocity on the walls and around the obstacle), flowing up and out:
    the outlet's faces are open, the inlet, the channel walls and the obstacle are walls."""
    points, cells = channel_with_cylinder()
    used = np.unique(cells)
    on_obstacle = np.isin(np.arange(len(points)), used) & (np.linalg.norm(points - [1.0, 0.5], axis=1) < 0.33)
    profile = 4 * points[:, 1] * (1 - points[:, 1]) * ~on_obstacle
    field = fk.MeshField.from_arrays(points, cells, np.column_stack([profile, 0.6 * profile]), dtype="float64")
    with caplog.at_level(logging.INFO, logger="flowkit"):
        seeds = fk.seeding.random_inside(300, field, key=jax.random.key(2))
        traj = fk.track(field, seeds, 0.0, 12.0, 0.1, boundary=fk.Auto(), dtype="float64")
    assert re.search(
        r"20 faces the flow leaves through are open \(area 1\), 214 are walls \(area 10\.8\d\)", caplog.text
    )  # the outlet; the rest: 4 + 4 + 1 + the obstacle
    left = traj.status[-1] == fk.Status.OUT_OF_DOMAIN
    assert left.sum() > 50 and np.all(traj.status[-1][~left] == fk.Status.ACTIVE)
    last = np.array([traj.positions[traj.times <= t][-1, i] for i, t in enumerate(traj.exit_time)])[left]
    assert np.all(last[:, 0] > 3.8)  # they left through the outlet
    assert np.all(traj.positions[..., 1] >= -1e-9) and np.all(
        traj.positions[..., 1] <= 1 + 1e-9
    )  # the top wall turned them back
    assert traj.positions[..., 1].max() > 0.9


def test_auto_boundary_takes_the_solvers_patch_types(tmp_path, caplog):
    """An OpenFOAM case: `walls` typed `wall`, `inlet` and `outlet` typed `patch`. The patch
    types decide, not the flow: the outlet lets particles out, the walls turn them back."""
    from foam import write_case

    root = write_case(
        tmp_path / "case",
        lambda t, x: np.stack([0.5 + 0 * x[:, 0], 1.0 + 0 * x[:, 0], 0 * x[:, 0]], axis=1),
        times=(0.0, 1.0),
    )
    field = fk.io.read(root, dtype="float64")
    assert {name: region["kind"] for name, region in field.regions.items()} == {
        "patch:inlet": "open",
        "patch:outlet": "open",
        "patch:walls": "wall",
    }
    with caplog.at_level(logging.INFO, logger="flowkit"):
        traj = fk.track(
            field,
            np.array([[0.2, 0.3, 0.5], [0.5, 0.1, 0.5]]),
            1.0,
            1.0 + 3.0,
            0.05,
            boundary=fk.Auto(),
            dtype="float64",
        )
    assert "the solver's patch types: open ['patch:inlet', 'patch:outlet'], walls ['patch:walls']" in caplog.text
    assert np.all(traj.status[-1] == fk.Status.OUT_OF_DOMAIN) and np.all(np.isfinite(traj.exit_time))
    y = traj.positions[traj.times < traj.exit_time.min(), :, 1]
    lo, hi = (np.asarray(b) for b in field.bounds)
    assert hi[1] - 0.1 < y.max() <= hi[1] + 1e-9 and np.any(
        np.diff(y[:, 0]) < 0
    )  # it reached the wall at y = hi and was turned back
