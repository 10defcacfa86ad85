"""Arakawa C-grid helpers shared by the curvilinear models (ROMS, CROCO, NEMO): face values at the
cell centres, and the grid's angle to east."""

from collections.abc import Mapping, Sequence

import numpy as np
from jax.typing import DTypeLike

from .._time import TimeOrigin
from ..fields.curvilinear import quad_cells
from ..fields.layered import LayeredField


def to_centres(values: np.ndarray, axis: int, n_rho: int, name: str, source: str) -> np.ndarray:
    """Face values along `axis` at the `n_rho` cell centres (ROMS' rho points, NEMO's T points):
    `n_rho - 1` faces between the centres (ROMS), or `n_rho` with face `i` east (north) of centre
    `i` (NEMO, and a ROMS subset cut on every dimension alike); each centre the mean of the faces
    either side that exist and are not NaN (0 where none is), as ROMS' `u2rho`."""
    n_faces = values.shape[axis]
    if n_faces not in (n_rho - 1, n_rho):
        raise ValueError(
            f"{source}: {name!r} has {n_faces} points along its staggered axis; a C-grid between "
            f"{n_rho} centres has {n_rho - 1} or {n_rho}"
        )
    faces = np.moveaxis(values, axis, -1)
    left = np.full(faces.shape[:-1] + (n_rho,), np.nan)
    right = np.full_like(left, np.nan)
    left[..., 1:] = faces[..., : n_rho - 1]  # the face west (south) of rho point i is face i - 1
    right[..., : min(n_faces, n_rho)] = faces[..., : min(n_faces, n_rho)]
    count = np.isfinite(left).astype(np.float64) + np.isfinite(right)
    total = np.nan_to_num(left) + np.nan_to_num(right)
    return np.moveaxis(np.where(count > 0, total / np.maximum(count, 1), 0.0), -1, axis)


def grid_angle(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """The angle (radians) between the grid's first (xi, i) axis and east at each centre `(eta,
    xi)`, from the centres' own longitudes and latitudes: ROMS' `angle` for files without it,
    and what turns NEMO's grid-relative `uo`, `vo` to east and north."""
    east = np.gradient(np.unwrap(lon, period=360.0, axis=1), axis=1) * np.cos(np.deg2rad(lat))
    return np.arctan2(np.gradient(lat, axis=1), east)


def layered_on_grid(
    lon: np.ndarray,
    lat: np.ndarray,
    depths: Sequence[np.ndarray],
    velocity: Sequence[np.ndarray],
    water: Sequence[np.ndarray],
    land: np.ndarray,
    times: np.ndarray | None,
    origin: TimeOrigin | None,
    dtype: DTypeLike,
    samples: Mapping[str, Sequence[np.ndarray]] | None = None,
) -> LayeredField:
    """The `LayeredField` of a curvilinear grid's centres `(eta, xi)` in degrees, from per-step
    arrays in the models' `(eta, xi, ...)` order: level depths `(eta, xi, K)`, velocity `(eta,
    xi, K, C)`, water depth `(eta, xi)`, land `(eta, xi)`; in flowkit's node order (xi first, as
    `CurvilinearField`), longitudes unwrapped across the dateline."""
    n = len(depths)
    nodes = lambda a: np.swapaxes(np.asarray(a), 1, 2).reshape(n, lon.size, *np.asarray(a).shape[3:])  # noqa: E731
    lon_t = np.unwrap(np.unwrap(lon.T, period=360.0, axis=0), period=360.0, axis=1)
    points = np.stack([lon_t.reshape(-1), np.asarray(lat).T.reshape(-1)], axis=-1)
    return LayeredField(
        points,
        quad_cells(lon_t.shape),
        nodes(depths),
        nodes(velocity),
        nodes(water),
        times=times if times is not None and len(times) > 1 else None,
        land=land.T.reshape(-1),
        samples={name: nodes(values) for name, values in (samples or {}).items()},
        time_origin=origin,
        spherical=True,
        grid_shape=lon_t.shape,
        dtype=dtype,
    )
