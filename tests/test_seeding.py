"""Seeders: counts, bounds, determinism, files."""

import jax
import numpy as np
import pytest
from meshes import channel_with_cylinder

import flowkit as fk

BOX = ((0.0, 0.0), (2.0, 1.0))


def test_uniform_grid_with_and_without_boundaries():
    edge = fk.seeding.uniform_grid((5, 3), BOX, include_boundaries=True)
    assert edge.shape == (15, 2)
    np.testing.assert_allclose(edge.min(0), [0, 0]) and np.testing.assert_allclose(edge.max(0), [2, 1])
    np.testing.assert_allclose(edge.reshape(5, 3, 2)[:, 0, 0], np.linspace(0, 2, 5))
    centres = fk.seeding.uniform_grid((4, 2), BOX, include_boundaries=False)
    np.testing.assert_allclose(np.unique(centres[:, 0]), [0.25, 0.75, 1.25, 1.75])
    np.testing.assert_allclose(np.unique(centres[:, 1]), [0.25, 0.75])
    with pytest.raises(ValueError, match="one positive count per axis"):
        fk.seeding.uniform_grid((5, 3, 2), BOX)


def test_random_box_is_deterministic_and_inside():
    a = fk.seeding.random_box(1000, BOX, key=jax.random.key(7))
    b = fk.seeding.random_box(1000, BOX, key=jax.random.key(7))
    np.testing.assert_array_equal(a, b)
    assert np.all(a >= 0) and np.all(a[:, 0] <= 2) and np.all(a[:, 1] <= 1)
    assert abs(a[:, 0].mean() - 1.0) < 0.1


def test_line_disk_plane():
    pts = fk.seeding.line([0, 0, 0], [1, 2, 3], 5)
    np.testing.assert_allclose(pts[[0, -1]], [[0, 0, 0], [1, 2, 3]])
    d2 = fk.seeding.disk([1.0, 0.5], 0.25, 500, key=jax.random.key(1))
    assert np.all(np.linalg.norm(d2 - [1.0, 0.5], axis=1) <= 0.25 + 1e-12)
    normal = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    d3 = fk.seeding.disk([0.0, 0.0, 0.0], 1.0, 200, key=jax.random.key(2), normal=normal)
    np.testing.assert_allclose(d3 @ normal, 0, atol=1e-12)
    p = fk.seeding.plane([0, 0, 0], [1, 0, 0], [0, 0, 2], (3, 4))
    assert p.shape == (12, 3) and np.allclose(p[:, 1], 0) and p[:, 2].max() == 2


def test_from_file_npz_and_csv(tmp_path):
    positions = np.array([[0.1, 0.2], [0.3, 0.4]])
    np.savez(tmp_path / "s.npz", positions=positions, t_release=[0.0, 1.0])
    got, t_rel = fk.seeding.from_file(tmp_path / "s.npz", with_release=True)
    np.testing.assert_array_equal(got, positions) and np.testing.assert_array_equal(t_rel, [0, 1])
    (tmp_path / "s.csv").write_text("x,y,t_release\n0.1,0.2,0.5\n0.3,0.4,0.0\n")
    got, t_rel = fk.seeding.from_file(tmp_path / "s.csv", with_release=True)
    np.testing.assert_allclose(got, positions) and np.testing.assert_allclose(t_rel, [0.5, 0.0])
    (tmp_path / "plain.csv").write_text("0.1,0.2,0.3\n")
    assert fk.seeding.from_file(tmp_path / "plain.csv").shape == (1, 3)
    np.savez(tmp_path / "bad.npz", points=positions)
    with pytest.raises(ValueError, match="bad.npz: expected an array named 'positions' or 'seeds'"):
        fk.seeding.from_file(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        fk.seeding.from_file(tmp_path / "missing.csv")


def test_seeds_files_that_would_run_code_or_never_end_are_refused_by_name(tmp_path):
    import os
    import pickle

    np.savez(tmp_path / "objects.npz", positions=np.array([{"x": 1.0}], dtype=object))
    with pytest.raises(ValueError, match=r"seeds file .*objects.npz: holds pickled \(object\) arrays"):
        fk.seeding.from_file(tmp_path / "objects.npz")
    (tmp_path / "pickle.npz").write_bytes(pickle.dumps([[0.1, 0.2]]))
    with pytest.raises(ValueError, match=r"seeds file .*pickle.npz: not an .npz archive of numeric arrays"):
        fk.seeding.from_file(tmp_path / "pickle.npz")
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(ValueError, match=r"seeds file .*fifo.csv: a FIFO \(named pipe\), not a file or folder"):
        fk.seeding.from_file(tmp_path / "fifo.csv")
    os.mkfifo(tmp_path / "fifo.npz")
    with pytest.raises(ValueError, match=r"grid field file .*fifo.npz: a FIFO"):
        fk.io.load_grid_npz(tmp_path / "fifo.npz")


def _channel_with_cylinder():
    """The channel with a cylinder hole, a uniform flow, and its triangles' corners and areas."""
    points, cells = channel_with_cylinder()
    field = fk.MeshField.from_arrays(points, cells, np.tile([1.0, 0.0], (len(points), 1)), dtype="float64")
    corners = points[cells]
    e1, e2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    area = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    return field, corners, area


def test_random_inside_fills_a_mesh_with_a_hole_exactly_and_uniformly():
    field, corners, area = _channel_with_cylinder()
    seeds = fk.seeding.random_inside(2000, field, key=jax.random.key(3))
    assert seeds.shape == (2000, 2)
    assert np.all(fk.seeding.in_flow(field, seeds))
    assert np.all(
        np.linalg.norm(seeds - [1.0, 0.5], axis=1) > 0.25 - 0.05 * np.sqrt(2)
    )  # none in the cylinder (its cells are 0.05 wide)
    # uniform by area: the left half, which holds the hole, gets its share of the water's area
    left = area[corners.mean(axis=1)[:, 0] < 2.0].sum() / area.sum()
    share = np.mean(seeds[:, 0] < 2.0)
    assert abs(share - left) < 4 * np.sqrt(left * (1 - left) / 2000) and left < 0.48
    np.testing.assert_array_equal(seeds, fk.seeding.random_inside(2000, field, key=jax.random.key(3)))
    with pytest.raises(ValueError, match="none of .* lies inside the field's domain"):
        fk.seeding.random_inside(10, field, [[1.0, 0.45], [1.05, 0.55]], key=jax.random.key(0))


def test_random_inside_keeps_to_the_water_and_equal_areas_on_the_sphere():
    lon, lat = np.linspace(0, 40, 41), np.linspace(0, 80, 81)
    values = np.zeros((41, 81, 2))
    values[:10, :, :] = np.nan  # land west of 9.5 E
    field = fk.io.from_xarray(_dataset(lon, lat, values))
    seeds = fk.seeding.random_inside(4000, field, key=jax.random.key(5))
    assert len(seeds) == 4000 and seeds[:, 0].min() > 9.0
    # uniform in sin(latitude): its mean is the mean of sin over the band's ends
    assert abs(np.mean(np.sin(np.deg2rad(seeds[:, 1]))) - 0.5 * np.sin(np.deg2rad(80.0))) < 0.02


def _dataset(lon, lat, values):
    import xarray as xr

    meta = lambda name: {"standard_name": name, "units": "m s-1"}  # noqa: E731
    return xr.Dataset(
        {
            "uo": (("latitude", "longitude"), values[..., 0].T, meta("eastward_sea_water_velocity")),
            "vo": (("latitude", "longitude"), values[..., 1].T, meta("northward_sea_water_velocity")),
        },
        coords={
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
        },
    )


def test_seeds_on_walls_are_moved_inside_and_then_move():
    points, cells = channel_with_cylinder()
    field = fk.MeshField.from_arrays(
        points, cells, np.stack([4 * points[:, 1] * (1 - points[:, 1]), 0 * points[:, 1]], axis=1), dtype="float64"
    )  # no slip at floor and ceiling
    _, _, faces = field.boundary_faces()
    ends = points[faces[:, :2]].mean(axis=1)
    cylinder = ends[np.linalg.norm(ends - [1.0, 0.5], axis=1) < 0.4][0]  # the middle of a face of the hole
    on_walls = np.array([[0.5, 0.0], [2.5, 1.0], cylinder, [0.0, 0.5]])  # floor, ceiling, cylinder, inlet
    inside = np.array([[0.5, 0.5], [3.0, 0.3], [0.5, 0.05]])
    seeds, moved = fk.seeding.off_walls(field, np.concatenate([on_walls, inside]))
    np.testing.assert_array_equal(moved, [True] * 4 + [False] * 3)
    np.testing.assert_array_equal(seeds[4:], inside)
    step = np.linalg.norm(seeds[:4] - on_walls, axis=1)
    assert np.all((step > 0) & (step < 1e-3 * 0.05))  # a thousandth of the way to a centre < 0.05 away
    assert np.all(fk.seeding.in_flow(field, seeds))
    # on the no-slip floor and ceiling the moved seeds now move (slowly, being near the wall)
    traj = fk.track(field, seeds[:2], 0.0, 1.0, 0.1, dtype="float64")
    assert np.all(traj.positions[-1, :, 0] - traj.positions[0, :, 0] > 1e-6)
    assert np.all(traj.status[-1] == fk.Status.ACTIVE)
    # fields that are not meshes have no wall faces: points come back as given
    grid = fk.GridField.from_arrays(np.zeros((5, 3, 2)), [np.linspace(0, 2, 5), np.linspace(0, 1, 3)])
    corner = np.array([[0.0, 0.0], [1.0, 0.5]])
    np.testing.assert_array_equal(fk.seeding.off_walls(grid, corner)[0], corner)
