"""Cell sizes, for Courant numbers: how many cells a step carries a particle across.

A step's Courant number is `max_i |u_i| dt / size_i` over the axes, with `size_i` the local
cell's size along axis `i` (a grid's spacing; for a mesh cell, its shortest edge along every
axis). On the sphere sizes are measured in metres on the surface, so the narrow cells of a
longitude-latitude grid at high latitude count as narrow; depth is not counted there (ocean
models' vertical steps are set by their own levels).
"""

import logging
import math
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np

from .grid import EARTH_RADIUS

_METRES_PER_DEGREE = EARTH_RADIUS * math.pi / 180


def shortest_edges(points, nodes, spherical: bool, xp: ModuleType = jnp):
    """Each cell's shortest distance between two of its nodes (`nodes` `(n, w)`; slots that
    repeat a node are not compared): its shortest edge, a convex cell's diagonals being longer.
    On a sphere in metres, from the first four nodes (one level of a hexahedron over depth),
    longitudes scaled by the cosine of the latitude; else in the points' units."""
    width = 4 if spherical else nodes.shape[1]
    best = None
    for a in range(width):
        for b in range(a + 1, min(width, nodes.shape[1])):
            pa, pb = points[nodes[:, a]], points[nodes[:, b]]
            d = pb - pa
            if spherical:
                cos_lat = xp.cos(xp.deg2rad(0.5 * (pa[:, 1] + pb[:, 1])))
                d = xp.stack([d[:, 0] * cos_lat, d[:, 1]], axis=1) * _METRES_PER_DEGREE
            length = xp.where(nodes[:, a] == nodes[:, b], xp.inf, xp.sqrt(xp.sum(d * d, axis=1)))
            best = length if best is None else xp.minimum(best, length)
    return best


def axis_sizes(edge, x, spherical: bool):
    """`(n, dim)` per-axis sizes in position units from each row's cell `edge` (metres on a
    sphere: degrees of longitude at the row's latitude and of latitude; depth not counted)."""
    dim = x.shape[1]
    if not spherical:
        return jnp.broadcast_to(edge[:, None], x.shape)
    cos_lat = jnp.maximum(jnp.cos(jnp.deg2rad(x[:, 1])), 1e-6)
    sizes = [edge / (_METRES_PER_DEGREE * cos_lat), edge / _METRES_PER_DEGREE] + [jnp.full_like(edge, jnp.inf)] * (
        dim - 2
    )
    return jnp.stack(sizes, axis=1)


def mesh_max_rate(points, nodes, velocity, spherical: bool, per_cell: bool = False) -> float:
    """The largest `max_i |u_i| / shortest edge` over a mesh's cells and the data's times (host
    side): `velocity` `(T, P, c)` at the nodes (m/s on a sphere, where only the two horizontal
    components count), or `(T, C, c)` one per cell with `per_cell`."""
    points, nodes = np.asarray(points, np.float64), np.asarray(nodes)
    xp = jnp if isinstance(velocity, jax.Array) else np  # a series on the device is reduced there, not copied back
    speed = np.asarray(xp.abs(velocity[..., :2] if spherical else velocity).max(axis=(0, 2)), np.float64)
    edges = shortest_edges(points, nodes, spherical, xp=np)
    fastest = speed if per_cell else speed[nodes].max(axis=1)
    collapsed = edges <= 1e-12 * max(float(np.ptp(points, axis=0).max(initial=0.0)), np.finfo(np.float64).tiny)
    if collapsed.any():  # no volume, so no particle is located in them: not a step's measure
        logging.getLogger("flowkit").warning(
            "mesh: %d cell(s) have two nodes at one point (collapsed; cell %d is one): left out of the "
            "Courant number and dt='auto'",
            int(collapsed.sum()),
            int(np.flatnonzero(collapsed)[0]),
        )
    rate = np.where(collapsed, 0.0, fastest / np.maximum(edges, np.finfo(np.float64).tiny))
    return float(np.nanmax(rate)) if len(rate) else 0.0
