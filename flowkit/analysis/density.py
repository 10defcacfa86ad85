"""Particle concentrations: histograms on a grid and Gaussian kernel density estimates, on device."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike

from .._custom_types import BoundsLike, Counts, PointsLike
from .._status import Status
from ..trajectory import Trajectory


def histogram(traj: Trajectory, bins: Counts, bounds: BoundsLike, frames: Counts | None = None) -> np.ndarray:
    """Counts of ACTIVE particles per grid cell, per saved frame.

    **Arguments:** `bins` (one count per axis), `bounds` `(lo, hi)`, `frames` (indices; default
    all). **Returns:** `(len(frames), *bins)` integer counts. Particles outside `bounds` are not
    counted; the total per frame equals the number of active particles inside.
    """
    positions = np.asarray(traj.positions)
    status = np.asarray(traj.status)
    frames = np.arange(positions.shape[0]) if frames is None else np.atleast_1d(frames)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    bins = tuple(int(b) for b in np.broadcast_to(bins, lo.shape))
    counts = _histogram_frames(
        jnp.asarray(positions[frames]),
        jnp.asarray(status[frames] == Status.ACTIVE),
        jnp.asarray(lo),
        jnp.asarray(hi),
        bins,
    )
    return np.asarray(counts)


def per_area(counts: ArrayLike, bounds: BoundsLike) -> np.ndarray:
    """Counts on lon/lat cells (`(..., n_lon, n_lat)`, the box `bounds` in degrees) per km² of
    the sphere: a cell spans R² Δλ Δ(sin φ), less toward the poles."""
    from ..fields.grid import EARTH_RADIUS

    counts = np.asarray(counts, dtype=np.float64)
    lo, hi = (np.asarray(b, dtype=np.float64)[:2] for b in bounds)
    lon = np.deg2rad(np.linspace(lo[0], hi[0], counts.shape[-2] + 1))
    lat = np.deg2rad(np.linspace(lo[1], hi[1], counts.shape[-1] + 1))
    return counts / ((EARTH_RADIUS / 1e3) ** 2 * np.diff(lon)[:, None] * np.diff(np.sin(lat))[None, :])


def _histogram_frames(positions, active, lo, hi, bins):
    sizes = jnp.asarray(bins)

    def one(x, keep):
        cell = jnp.floor((x - lo.astype(x.dtype)) / (hi - lo).astype(x.dtype) * sizes).astype(jnp.int32)
        cell = jnp.where(x == hi.astype(x.dtype), sizes - 1, cell)  # the upper face belongs to the last cell
        inside = keep & jnp.all((cell >= 0) & (cell < sizes), axis=-1)
        flat = jnp.ravel_multi_index(tuple(jnp.clip(cell, 0, sizes - 1).T), bins, mode="clip")
        return jnp.zeros(int(np.prod(bins)), jnp.int32).at[flat].add(inside.astype(jnp.int32)).reshape(bins)

    return jax.jit(jax.vmap(one), static_argnums=())(positions, active)


def bandwidth_factor(n: int, dim: int, rule: str = "scott") -> float:
    """Scott's $n^{-1/(d+4)}$ or Silverman's $(n(d+2)/4)^{-1/(d+4)}$, as in `scipy.stats.gaussian_kde`."""
    if rule == "scott":
        return n ** (-1.0 / (dim + 4))
    if rule == "silverman":
        return (n * (dim + 2) / 4.0) ** (-1.0 / (dim + 4))
    raise ValueError(f"bandwidth must be 'scott', 'silverman' or a number, got {rule!r}")


def kde(points: PointsLike, where: PointsLike, bandwidth: str | float = "scott", chunk: int = 4096) -> np.ndarray:
    """Gaussian kernel density of `points` `(n, d)` evaluated at `where` `(m, d)`, integrating to 1.

    The kernel covariance is the data covariance times `factor**2` (Scott or Silverman's rule,
    or a number), exactly as `scipy.stats.gaussian_kde`. Evaluated on the device in chunks of
    `chunk` evaluation points, so memory stays `chunk × n`.
    """
    points = jnp.asarray(points)
    where = jnp.asarray(where, points.dtype)
    n, dim = points.shape
    factor = bandwidth_factor(n, dim, bandwidth) if isinstance(bandwidth, str) else float(bandwidth)
    covariance = jnp.atleast_2d(jnp.cov(points.T)) * factor**2
    precision = jnp.linalg.inv(covariance)
    norm = 1.0 / (n * jnp.sqrt(jnp.linalg.det(2 * jnp.pi * covariance)))
    m = where.shape[0]
    pad = (-m) % chunk
    padded = jnp.concatenate([where, jnp.zeros((pad, dim), where.dtype)]).reshape(-1, chunk, dim)

    @jax.jit
    def evaluate(block):
        diff = block[:, None, :] - points[None, :, :]
        energy = 0.5 * jnp.einsum("mni,ij,mnj->mn", diff, precision, diff)
        return norm * jnp.sum(jnp.exp(-energy), axis=1)

    return np.asarray(jax.lax.map(evaluate, padded).reshape(-1)[:m])
