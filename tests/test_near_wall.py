"""Tracers beside no-slip walls (`flowkit.fields.near_wall`): in a closed cavity whose flow is
at rest on every wall, the density near the walls stays that of an even spread after many
turnovers, as in the closed-form flow, where linear interpolation alone piles particles on the
walls; the CPU mesh kernel takes the same walls as the JAX step; walls whose data slide are
left as interpolated."""

import logging

import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk


def _cavity_velocity(points: np.ndarray, xp=np):
    """psi = sin²(pi x) sin²(pi y) on the unit square (times sin²(pi z) in 3-D): incompressible,
    at rest on every wall, its normal component quadratic in the distance to each wall."""
    x, y = points[..., 0], points[..., 1]
    u = 2 * xp.pi * xp.sin(xp.pi * x) ** 2 * xp.sin(xp.pi * y) * xp.cos(xp.pi * y)
    v = -2 * xp.pi * xp.sin(xp.pi * x) * xp.cos(xp.pi * x) * xp.sin(xp.pi * y) ** 2
    if points.shape[-1] == 2:
        return xp.stack([u, v], axis=-1)
    g = xp.sin(xp.pi * points[..., 2]) ** 2
    return xp.stack([u * g, v * g, 0 * u], axis=-1)


def _lattice(n: int, dim: int):
    """`(points, cells)` of an n^dim node lattice of the unit square (quads) or cube (hexahedra)."""
    axis = np.linspace(0.0, 1.0, n)
    points = np.stack(np.meshgrid(*[axis] * dim, indexing="ij"), axis=-1).reshape(-1, dim)
    ids = np.arange(n**dim).reshape((n,) * dim)
    corners = [(0, 0), (1, 0), (1, 1), (0, 1)] if dim == 2 else [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    if dim == 3:
        corners = corners + [(a, b, 1) for a, b, _ in corners]
    cut = lambda o: tuple(slice(a, n - 1 + a) for a in o)  # noqa: E731
    return points, np.stack([ids[cut(o)] for o in corners], axis=-1).reshape(-1, len(corners))


def _near_walls(x: np.ndarray, width: float) -> float:
    """The fraction of particles within `width` of a wall of the unit square, over an even spread's."""
    distance = np.minimum.reduce([x[:, 0], 1 - x[:, 0], x[:, 1], 1 - x[:, 1]])
    return float(np.mean(distance < width) / (1 - (1 - 2 * width) ** 2))


def test_tracers_do_not_collect_on_the_no_slip_walls_of_a_cavity(caplog):
    """3 000 tracers, 10 s (about five turnovers of the eddy): with the mesh's walls the near-wall
    density matches the closed form's and an even spread's; the same mesh with no walls (linear
    interpolation up to the wall) piles hundreds of times an even spread within 1e-4 of them."""
    points, cells = _lattice(21, 2)
    mesh = fk.MeshField.from_arrays(points, cells, _cavity_velocity(points), dtype="float64")
    closed = fk.fields.Analytic(lambda t, x, a: _cavity_velocity(x, jnp), bounds=((0.0, 0.0), (1.0, 1.0)), dim=2)
    seeds = np.random.default_rng(0).uniform(0.0, 1.0, (3000, 2))
    final = {}
    for name, field, boundary in (
        ("closed", closed, fk.Reflective(closed.bounds)),
        ("walls", mesh, fk.MeshWalls("reflect")),
        ("none", mesh, None),
    ):
        with caplog.at_level(logging.INFO, logger="flowkit"):
            traj = fk.track(field, seeds, 0.0, 10.0, 0.01, boundary=boundary, save_every=500, dtype="float64")
        final[name] = np.asarray(traj.positions[-1])
    assert "walls: 80 faces are no-slip" in caplog.text
    for width in (1e-3, 0.025):  # a twentieth and half of a cell
        assert _near_walls(final["walls"], width) == pytest.approx(_near_walls(final["closed"], width), abs=0.5)
    assert 0.9 < _near_walls(final["walls"], 0.025) < 1.1
    x = final["walls"]
    for distance in (x[:, 0], 1 - x[:, 0], x[:, 1], 1 - x[:, 1]):  # each wall's strip of half a cell
        assert 0.7 < np.mean(distance < 0.025) / 0.025 < 1.3  # about 75 particles: within their noise
    assert _near_walls(final["walls"], 1e-4) < 5 and _near_walls(final["none"], 1e-4) > 100


def test_the_kernel_takes_the_no_slip_walls_as_the_jax_step(monkeypatch):
    """The 3-D cavity (hexahedra), every face a no-slip wall: the kernel's tracks equal the JAX
    step's, and the walls' correction changed them."""
    points, cells = _lattice(8, 3)
    field = fk.MeshField.from_arrays(points, cells, _cavity_velocity(points), dtype="float64")
    seeds = np.random.default_rng(1).uniform(0.02, 0.98, (200, 3))
    tracks = []
    for native in (True, False):
        monkeypatch.setenv("FLOWKIT_NATIVE", "1" if native else "0")
        run = fk.tracker.TrackRun(field, seeds, 0.0, 2.0, 0.01, fk.RK4(), fk.MeshWalls("reflect"), 20, dtype="float64")
        assert run._kwargs()["kernel"] == ("mesh" if native else None)
        index, rows = run.pieces.field.near_wall
        assert (
            np.count_nonzero(np.asarray(rows)[..., -1]) == 6 * 7 * 7 and np.sum(np.asarray(index) >= 0) == 7**3 - 5**3
        )
        tracks.append(run.run())
    np.testing.assert_array_equal(tracks[0].status, tracks[1].status)
    np.testing.assert_allclose(tracks[0].positions, tracks[1].positions, rtol=0, atol=1e-9)
    plain = fk.track(field, seeds, 0.0, 2.0, 0.01, save_every=20, dtype="float64")  # no walls: as interpolated
    assert np.abs(np.asarray(plain.positions[-1]) - tracks[0].positions[-1]).max() > 1e-4


def test_walls_whose_data_slide_are_left_as_interpolated(caplog):
    """A drift across the cavity (the data not at rest on the walls: a slip wall, a symmetry
    plane, cell data averaged onto the nodes): no correction, nothing said."""
    points, cells = _lattice(11, 2)
    field = fk.MeshField.from_arrays(points, cells, _cavity_velocity(points) + [0.0, 0.1], dtype="float64")
    with caplog.at_level(logging.INFO, logger="flowkit"):
        run = fk.tracker.TrackRun(field, np.full((4, 2), 0.5), 0.0, 0.1, 0.01, fk.RK4(), fk.MeshWalls(), 1)
    assert run.pieces.field.near_wall is None and "no-slip" not in caplog.text
