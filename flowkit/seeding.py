"""Seed positions: functions returning `(N, dim)` arrays, and release times.

Deterministic seeders return NumPy float64 arrays (the tracker casts them to its working
precision); random ones take a keyword-only `key` and never read global random state.
"""

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray

from ._custom_types import BoundsLike, Counts, PathLike, PointsLike
from ._paths import open_npz, refuse_special
from .fields.base import AbstractField, as_bounds


def uniform_grid(resolution: Counts, bounds: BoundsLike, include_boundaries: bool = True) -> np.ndarray:
    """A tensor-product lattice of `prod(resolution)` points in the box `bounds`.

    With `include_boundaries` the lattice spans the box edge to edge (`linspace`); otherwise the
    points are cell centres, half a spacing in from every face. Ordering is C-order over the
    axes (the last axis varies fastest), so `positions.reshape(*resolution, dim)` is the lattice.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in as_bounds(bounds))
    resolution = tuple(int(r) for r in np.atleast_1d(resolution))
    if len(resolution) != lo.shape[0] or min(resolution) < 1:
        raise ValueError(
            f"uniform_grid: resolution needs one positive count per axis ({lo.shape[0]}), got {resolution}"
        )
    axes = []
    for n, a, b in zip(resolution, lo, hi):
        if include_boundaries:
            axes.append(np.linspace(a, b, n) if n > 1 else np.array([(a + b) / 2]))
        else:
            axes.append(a + (np.arange(n) + 0.5) * (b - a) / n)
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, lo.shape[0])


def random_box(n: int, bounds: BoundsLike, *, key: PRNGKeyArray) -> np.ndarray:
    """`n` points uniform in the box `bounds`."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in as_bounds(bounds))
    u = np.asarray(jax.random.uniform(key, (int(n), lo.shape[0]), dtype=jnp.result_type(float)), dtype=np.float64)
    return lo + u * (hi - lo)


def random_inside(
    n: int, field: AbstractField, bounds: BoundsLike | None = None, *, key: PRNGKeyArray, t: float | None = None
) -> np.ndarray:
    """Exactly `n` points uniform by volume in the field's domain (by area on a sphere: uniform
    in the sine of latitude): inside a mesh's cells, in the water of an ocean field (off land,
    above the sea floor at time `t`, default the start of its data). Drawn in the box `bounds`
    (default the field's) in batches and kept where the field locates them, so a mesh with holes
    or a coastline is filled only where there is flow.

    **Raises:** `ValueError` when no point of the box lies in the domain.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"random_inside: n must be a positive integer, got {n}")
    lo, hi = (np.asarray(b, dtype=np.float64) for b in as_bounds(field.bounds if bounds is None else bounds, field.dim))
    batch = int(min(max(2 ** int(np.ceil(np.log2(2 * n))), 1024), 2**18))  # one compiled shape for all draws
    kept, found, drawn = [], 0, 0
    while found < n:
        key, sub = jax.random.split(key)
        u = np.asarray(jax.random.uniform(sub, (batch, lo.shape[0]), dtype=jnp.result_type(float)), dtype=np.float64)
        points = lo + u * (hi - lo)
        if field.spherical:  # uniform in sin(latitude): equal areas
            s0, s1 = np.sin(np.deg2rad(lo[1])), np.sin(np.deg2rad(hi[1]))
            points[:, 1] = np.rad2deg(np.arcsin(s0 + u[:, 1] * (s1 - s0)))
        inside = in_flow(field, points, t)
        kept.append(points[inside])
        found += int(inside.sum())
        drawn += batch
        if found == 0 and drawn >= 64 * batch:
            raise ValueError(
                f"random_inside: none of {drawn} points drawn in the box {lo.tolist()} - {hi.tolist()} "
                "lies inside the field's domain"
            )
    return np.concatenate(kept)[:n]


def off_walls(field: AbstractField, points: PointsLike, fraction: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """`points` with those on a mesh's boundary (within 1e-4 of their cell's size of leaving
    it) moved into their cell by `fraction` of the way to its centre, and which were moved.

    A seed on a no-slip wall has zero velocity and would never move; one on an outlet would
    leave at once. Fields that are not meshes have no such faces: their points come back as
    given.
    """
    from .fields.mesh import AbstractMeshField

    points = np.asarray(points, np.float64)
    field = field if isinstance(field, AbstractField) else field.template  # a streamed series' geometry
    if not isinstance(field, AbstractMeshField) or not len(points):
        return points, np.zeros(len(points), bool)
    on, centre = _on_boundary(field.as_mesh(), jnp.asarray(points))
    on = np.asarray(on)
    return np.where(on[:, None], points + fraction * (np.asarray(centre, np.float64) - points), points), on


@eqx.filter_jit
def _on_boundary(mesh, x):
    """Whether each located row has a point outside the mesh within 1e-4 of its cell's radius
    along an axis, and its cell's centre."""
    hint, found = mesh.locate(x, mesh.hints(x.shape[0], x.dtype))
    centre, radius = mesh.cell_centres(jnp.maximum(hint.cell, 0))
    near = jnp.zeros(x.shape[0], bool)
    for axis in range(x.shape[1]):
        for sign in (-1.0, 1.0):
            _, inside = mesh.locate(x.at[:, axis].add(sign * 1e-4 * radius), hint)
            near = near | ~inside
    return found & near, centre


def in_flow(field: AbstractField, points: PointsLike, t: float | None = None) -> np.ndarray:
    """Whether each of `points` `(N, dim)` lies where particles move at time `t` (default: the
    start of the field's data): inside its mesh, off land, in the water column. A streamed
    series (`fk.io.StreamedField`) is asked through its slices around `t`."""
    t = float(field.time_range[0]) if t is None and np.isfinite(field.time_range[0]) else float(t or 0.0)
    return np.asarray(_in_flow(_field_at(field, t), t, jnp.asarray(np.asarray(points, np.float64))))


def _field_at(field, t: float) -> AbstractField:
    """`field` itself, or for a streamed series (not itself a field: its data stays on disk) the
    field of its slices around `t`."""
    return field if isinstance(field, AbstractField) else field.near(t)


@eqx.filter_jit
def _in_flow(field: AbstractField, t, x):
    """Whether each row lies where particles move: located in the field, not on land, and left
    where it is by the field's settling (a layered ocean moves points below its floor)."""
    hint, inside = field.locate_batch(x, field.hints(x.shape[0], x.dtype))
    beached = field.beached_batch(x, hint)
    settled, _ = field.settle_batch(jnp.asarray(t, x.dtype), x, hint)
    eps = max(jnp.finfo(x.dtype).eps, jnp.finfo(field.bounds[0].dtype).eps)  # a float32 field's floor in float64 rows
    kept = jnp.all(jnp.abs(settled - x) <= 8 * eps * (1 + jnp.abs(x)), axis=1)
    return inside & kept & (True if beached is None else ~beached)


def line(a: PointsLike, b: PointsLike, n: int) -> np.ndarray:
    """`n` points evenly spaced on the segment from `a` to `b`, both ends included."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"line: a and b must be points of equal dimension, got shapes {a.shape} and {b.shape}")
    s = np.linspace(0.0, 1.0, int(n))[:, None]
    return a + s * (b - a)


def disk(
    center: PointsLike, radius: float, n: int, *, key: PRNGKeyArray, normal: PointsLike | None = None
) -> np.ndarray:
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


def plane(origin: PointsLike, u: PointsLike, v: PointsLike, resolution: Counts) -> np.ndarray:
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


def from_file(path: PathLike, with_release: bool = False):
    """Seeds from an `.npz` (array `positions` or `seeds`, optional `t_release`) or a `.csv`
    (columns `x, y[, z][, t_release]`, optional header line).

    Returns the `(N, dim)` positions, or `(positions, t_release)` with `with_release=True`
    (`t_release` is None when the file has none).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"seeds file {path} does not exist")
    refuse_special(path, "seeds file ")
    t_release = None
    if path.suffix == ".npz":
        with open_npz(path, "seeds file") as data:
            key = next((k for k in ("positions", "seeds") if k in data), None)
            if key is None:
                raise ValueError(
                    f"seeds file {path}: expected an array named 'positions' or 'seeds', found {sorted(data.files)}"
                )
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
