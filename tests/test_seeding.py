"""Seeders: counts, bounds, determinism, files."""

import jax
import numpy as np
import pytest

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
