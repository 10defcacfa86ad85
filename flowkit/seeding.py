"""Seed positions: functions returning `(N, dim)` arrays, and release times.

Deterministic seeders return NumPy float64 arrays (the tracker casts them to its working
precision); random ones take a keyword-only `key` and never read global random state.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .fields.base import as_bounds


def uniform_grid(resolution, bounds, include_boundaries: bool = True) -> np.ndarray:
    """A tensor-product lattice of `prod(resolution)` points in the box `bounds`.

    With `include_boundaries` the lattice spans the box edge to edge (`linspace`); otherwise the
    points are cell centres, half a spacing in from every face. Ordering is C-order over the
    axes (the last axis varies fastest), so `positions.reshape(*resolution, dim)` is the lattice.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in as_bounds(bounds))
    resolution = tuple(int(r) for r in np.atleast_1d(resolution))
    if len(resolution) != lo.shape[0] or min(resolution) < 1:
        raise ValueError(f"uniform_grid: resolution needs one positive count per axis ({lo.shape[0]}), got {resolution}")
    axes = []
    for n, a, b in zip(resolution, lo, hi):
        if include_boundaries:
            axes.append(np.linspace(a, b, n) if n > 1 else np.array([(a + b) / 2]))
        else:
            axes.append(a + (np.arange(n) + 0.5) * (b - a) / n)
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, lo.shape[0])


def random_box(n: int, bounds, *, key) -> np.ndarray:
    """`n` points uniform in the box `bounds`."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in as_bounds(bounds))
    u = np.asarray(jax.random.uniform(key, (int(n), lo.shape[0]), dtype=jnp.result_type(float)), dtype=np.float64)
    return lo + u * (hi - lo)


def line(a, b, n: int) -> np.ndarray:
    """`n` points evenly spaced on the segment from `a` to `b`, both ends included."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"line: a and b must be points of equal dimension, got shapes {a.shape} and {b.shape}")
    s = np.linspace(0.0, 1.0, int(n))[:, None]
    return a + s * (b - a)


def disk(center, radius: float, n: int, *, key, normal=None) -> np.ndarray:
    """`n` points uniform on a disk: in 2-D the disk itself, in 3-D the disk through `center`
    perpendicular to `normal`."""
    center = np.asarray(center, dtype=np.float64)
    k1, k2 = jax.random.split(key)
    r = radius * np.sqrt(np.asarray(jax.random.uniform(k1, (int(n),)), dtype=np.float64))
    phi = 2 * np.pi * np.asarray(jax.random.uniform(k2, (int(n),)), dtype=np.float64)
    local = np.stack([r * np.cos(phi), r * np.sin(phi)], axis=-1)
    if center.shape == (2,):
        return center + local
    if center.shape != (3,):
        raise ValueError(f"disk: center must be a 2-D or 3-D point, got shape {center.shape}")
    e1, e2 = _plane_basis(np.asarray(normal if normal is not None else (0.0, 0.0, 1.0), dtype=np.float64))
    return center + local[:, :1] * e1 + local[:, 1:] * e2


def plane(origin, u, v, resolution) -> np.ndarray:
    """A `resolution[0] × resolution[1]` lattice on the parallelogram `origin + s u + r v`,
    `s, r ∈ [0, 1]` (edges included): a seeding rake in 3-D or a patch in 2-D."""
    origin, u, v = (np.asarray(p, dtype=np.float64) for p in (origin, u, v))
    s = np.linspace(0.0, 1.0, int(resolution[0]))
    r = np.linspace(0.0, 1.0, int(resolution[1]))
    S, R = np.meshgrid(s, r, indexing="ij")
    return (origin + S[..., None] * u + R[..., None] * v).reshape(-1, origin.shape[0])


def _plane_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = normal / np.linalg.norm(normal)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(n, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def from_file(path, with_release: bool = False):
    """Seeds from an `.npz` (array `positions` or `seeds`, optional `t_release`) or a `.csv`
    (columns `x, y[, z][, t_release]`, optional header line).

    Returns the `(N, dim)` positions, or `(positions, t_release)` with `with_release=True`
    (`t_release` is None when the file has none).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"seeds file {path} does not exist")
    t_release = None
    if path.suffix == ".npz":
        with np.load(path) as data:
            key = next((k for k in ("positions", "seeds") if k in data), None)
            if key is None:
                raise ValueError(f"seeds file {path}: expected an array named 'positions' or 'seeds', found {sorted(data.files)}")
            positions = np.asarray(data[key], dtype=np.float64)
            if "t_release" in data:
                t_release = np.asarray(data["t_release"], dtype=np.float64)
    elif path.suffix == ".csv":
        with open(path) as f:
            first = f.readline()
        header = [h.strip() for h in first.split(",")]
        has_header = not _is_number(header[0])
        table = np.loadtxt(path, delimiter=",", skiprows=1 if has_header else 0, ndmin=2)
        if has_header and "t_release" in header:
            col = header.index("t_release")
            t_release = table[:, col]
            table = np.delete(table, col, axis=1)
        positions = table
    else:
        raise ValueError(f"seeds file {path}: unsupported suffix {path.suffix!r}; use .npz or .csv")
    if positions.ndim != 2 or positions.shape[1] not in (2, 3):
        raise ValueError(f"seeds file {path}: positions must have shape (N, 2) or (N, 3), got {positions.shape}")
    return (positions, t_release) if with_release else positions


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
