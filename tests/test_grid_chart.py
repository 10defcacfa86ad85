"""Tracers on a curvilinear grid stepped in its fractional indices (`fields.grid_chart`): the
same flow as positions stepped, closed-form trajectories at the integrator's order, the
position's derivatives through the chart, and which grids have one."""

import jax
import jax.numpy as jnp
import numpy as np

import flowkit as fk
from flowkit.fields.curvilinear import quad_cells
from flowkit.fields.grid_chart import chart_of


def grid_field(points, velocity, shape, cells=None):
    """A steady depth-averaged `LayeredField` in metres over the nodes `points` `(P, 2)` of a grid
    of `shape`, with the node velocities `velocity` `(P, 2)`."""
    n = len(points)
    return fk.fields.LayeredField.from_arrays(
        points,
        quad_cells(shape) if cells is None else cells,
        np.zeros((1, n, 1)),
        velocity[None, :, None, :],
        np.full((1, n), 50.0),
        spherical=False,
        grid_shape=shape,
        dtype="float64",
    )


def turned_grid(shape=(41, 41), angle=25.0, step=100.0):
    """The nodes of a square grid of `step` metres turned by `angle` about the origin, centred on it."""
    i, j = np.meshgrid(np.arange(shape[0]) - shape[0] // 2, np.arange(shape[1]) - shape[1] // 2, indexing="ij")
    c, s = np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))
    return np.stack([step * (c * i - s * j), step * (s * i + c * j)], axis=-1).reshape(-1, 2)


def warped_grid(shape=(31, 25), step=100.0):
    """A grid whose cells are no parallelograms: spacing and direction change from cell to cell."""
    i, j = np.meshgrid(np.arange(shape[0], dtype=float), np.arange(shape[1], dtype=float), indexing="ij")
    x = step * (i + 0.3 * np.sin(0.4 * j) + 0.01 * i**2)
    y = step * (j + 0.25 * np.cos(0.3 * i) + 0.1 * i)
    return np.stack([x, y], axis=-1).reshape(-1, 2)


def test_a_grid_of_quad_cells_has_a_chart_and_other_meshes_none():
    points = turned_grid((5, 4))
    still = np.zeros_like(points)
    assert chart_of(grid_field(points, still, (5, 4))).cells == (4, 3)
    transposed = quad_cells((5, 4))[:, [0, 3, 2, 1]]  # a cell's first coordinate along the grid's second axis
    assert chart_of(grid_field(points, still, (5, 4), cells=transposed)) is None
    triangles = np.concatenate([quad_cells((5, 4))[:, [0, 1, 2]], quad_cells((5, 4))[:, [0, 2, 3]]])
    assert chart_of(grid_field(points, still, (5, 4), cells=triangles)) is None


def test_a_solid_body_rotation_on_a_turned_grid_converges_at_fourth_order():
    """A rotation's velocity is linear in space, which a turned (affine) grid's bilinear cells
    reproduce exactly: the particles circle the centre, and RK4 in the grid's indices reaches
    the closed form with an error falling as dt^4."""
    omega = 2 * np.pi / 3600.0  # one turn an hour
    points = turned_grid()
    field = grid_field(points, omega * np.column_stack([-points[:, 1], points[:, 0]]), (41, 41))
    assert chart_of(field) is not None
    angle = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    radius = np.linspace(300.0, 1500.0, 12)
    seeds = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    t1 = 1800.0  # half a turn
    exact = -seeds
    errors = []
    for dt in (150.0, 75.0, 37.5):
        track = fk.track(field, seeds, 0.0, t1, dt, fk.RK4(), dtype="float64")
        assert np.all(track.status[-1] == fk.Status.ACTIVE)
        errors.append(np.max(np.linalg.norm(track.positions[-1] - exact, axis=1)))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert errors[0] < 0.5 and np.all(orders > 3.8), (errors, orders)


def test_indices_stepped_follow_the_flow_of_positions_stepped():
    """On a warped grid a uniform current is uniform in space (positions stepped follow it
    exactly), but not in the grid's indices, whose rate jumps where the grid's spacing does (at
    every cell edge here): as dt shrinks, the positions of indices stepped reach the closed
    form, at least at first order (a tenth of a 100 m cell at a Courant number of 2.4)."""
    points = warped_grid()
    u = np.array([0.4, 0.25])
    field = grid_field(points, np.broadcast_to(u, points.shape), (31, 25))
    rng = np.random.default_rng(1)
    seeds = points[quad_cells((31, 25))[rng.choice(30 * 24, 40, replace=False)]].mean(axis=1) * 0.6 + 200.0
    t1 = 3000.0
    errors = []
    for dt in (600.0, 150.0, 37.5):
        track = fk.track(field, seeds, 0.0, t1, dt, fk.RK4(), dtype="float64")
        moving = track.status[-1] == fk.Status.ACTIVE
        assert moving.sum() > 30
        errors.append(np.max(np.linalg.norm(track.positions[-1][moving] - (seeds[moving] + u * t1), axis=1)))
    assert errors[0] < 15.0 and errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3, errors


def test_derivatives_through_the_chart_match_finite_differences():
    """d(final position)/d(seed) of RK4 in the grid's indices, by `jax.grad`, against central
    differences of whole runs."""
    points = warped_grid()
    centre = points.mean(axis=0)
    velocity = 1e-3 * np.column_stack([-(points[:, 1] - centre[1]), points[:, 0] - centre[0]]) + [0.1, 0.0]
    field = grid_field(points, velocity, (31, 25))
    seeds = jnp.asarray(centre + np.array([[100.0, 50.0], [-200.0, 120.0], [40.0, -300.0]]))

    def loss(x0):
        final = fk.track(field, x0, 0.0, 1200.0, 120.0, fk.RK4(), dtype="float64").positions[-1]
        return final[:, 0] @ jnp.arange(1.0, 4.0) + jnp.sum(final[:, 1] ** 2) * 1e-3

    grad = np.asarray(jax.grad(loss)(seeds))
    eps = 1e-3
    for i, a in [(0, 0), (1, 1), (2, 0)]:
        fd = (loss(seeds.at[i, a].add(eps)) - loss(seeds.at[i, a].add(-eps))) / (2 * eps)
        assert abs(grad[i, a] - float(fd)) <= 1e-6 * max(abs(float(fd)), 1.0), (grad[i, a], fd)
