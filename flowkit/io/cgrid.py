"""Arakawa C-grid helpers shared by the curvilinear models (ROMS, CROCO, NEMO, MITgcm, MOM6): face
values at the cell centres, the grid's angle to east, and the columns of z-level models."""

from collections.abc import Mapping, Sequence

import numpy as np
from jax.typing import DTypeLike

from .._time import TimeOrigin
from ..fields.curvilinear import quad_cells
from ..fields.layered import LayeredField

SIDES = ("right", "left")
"""Where face `i` of a staggered variable lies against centre `i` along one axis, as each model
declares it (xgcm's and SGRID's positions): `right`, on its far side (east or north: ROMS'
`u[i]` between `rho[i]` and `rho[i+1]`, NEMO's `U(i)`, MOM6's non-symmetric `xq`), or `left`,
on its near side (MITgcm's `U` on `XG[i]`). The faces' count then gives the rest: one fewer
than the centres are `inner` (between them; a whole ROMS file), as many lie on the declared
side (a subset cut on every dimension alike), one more are `outer` (around them: MOM6's
symmetric grids, MITgcm's with its wrapped face)."""


def face_position(n_faces: int, n_centres: int, side: str) -> str:
    """The position (`inner`, `right`, `left`, `outer`) of `n_faces` faces of a model whose
    face `i` lies on `side` of centre `i`, or `ValueError` where no position has that many."""
    positions = {n_centres - 1: "inner", n_centres: side, n_centres + 1: "outer"}
    if side == "left":
        positions.pop(n_centres - 1)  # one face fewer on a left-sided grid: which end lacks it cannot be told
    if n_faces not in positions:
        raise ValueError(
            ", ".join(f"{count} faces are {name}" for count, name in sorted(positions.items()))
            + f" of {n_centres} centres with face i on the {side} of centre i"
        )
    return positions[n_faces]


def to_centres(values: np.ndarray, axis: int, n_rho: int, name: str, source: str, side: str) -> np.ndarray:
    """Face values along `axis` at the `n_rho` cell centres (ROMS' rho points, NEMO's T points),
    their position from the model's declared `side` (`SIDES`) and their count; each centre the
    mean of the faces either side that exist and are not NaN (0 where none is), as ROMS'
    `u2rho`."""
    n_faces = values.shape[axis]
    try:
        position = face_position(n_faces, n_rho, side)
    except ValueError as err:
        raise ValueError(f"{source}: {name!r} has {n_faces} points along its staggered axis; {err}") from None
    faces = np.moveaxis(values, axis, -1)
    if position == "outer":
        near, far = faces[..., :-1], faces[..., 1:]
    else:
        near = np.full(faces.shape[:-1] + (n_rho,), np.nan)
        far = np.full_like(near, np.nan)
        if position == "left":  # face i west (south) of centre i, face i + 1 east of it
            near[...] = faces
            far[..., :-1] = faces[..., 1:]
        else:  # inner or right: face i east (north) of centre i, face i - 1 west of it
            near[..., 1:] = faces[..., : n_rho - 1]
            far[..., :n_faces] = faces
    count = np.isfinite(near).astype(np.float64) + np.isfinite(far)
    total = np.nan_to_num(near) + np.nan_to_num(far)
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
    spherical: bool = True,
) -> LayeredField:
    """The `LayeredField` of a curvilinear grid's centres `(eta, xi)` in degrees (metres where not
    `spherical`), from per-step
    arrays in the models' `(eta, xi, ...)` order: level depths `(eta, xi, K)`, velocity `(eta,
    xi, K, C)`, water depth `(eta, xi)`, land `(eta, xi)`; in flowkit's node order (xi first, as
    `CurvilinearField`), longitudes unwrapped across the dateline."""
    n = len(depths)
    nodes = lambda a: np.swapaxes(np.asarray(a), 1, 2).reshape(n, lon.size, *np.asarray(a).shape[3:])  # noqa: E731
    lon_t = np.unwrap(np.unwrap(lon.T, period=360.0, axis=0), period=360.0, axis=1) if spherical else lon.T
    points = np.stack([lon_t.reshape(-1), np.asarray(lat).T.reshape(-1)], axis=-1)
    return LayeredField.from_arrays(
        points,
        quad_cells(lon_t.shape),
        nodes(depths),
        nodes(velocity),
        nodes(water),
        times=times if times is not None and len(times) > 1 else None,
        land=land.T.reshape(-1),
        samples={name: nodes(values) for name, values in (samples or {}).items()},
        time_origin=origin,
        spherical=spherical,
        grid_shape=lon_t.shape,
        dtype=dtype,
    )


def step_faces(ds, name: str, time_dim, index: int | None) -> np.ndarray:
    """Step `index` along `time_dim` (None: the only one) of a face variable as `(K, y, x)`
    float64 (`K = 1` for a surface field)."""
    var = ds[name] if index is None else ds[name].isel({time_dim: index})
    values = np.asarray(var.values, np.float64)
    return values.reshape((-1,) + values.shape[-2:])


def centred_velocity(
    faces: Sequence[np.ndarray], cos: np.ndarray, sin: np.ndarray, scales: Sequence[float], source: str, side: str
):
    """The velocity at the centres `(y, x, K, C)`, east, north (and down) in m/s, from one time
    step's faces `(K, y, x)`: U's along x and V's along y (`to_centres`, `side` the model's:
    `SIDES`), turned from the grid's axes by the cosine and sine of its angle to east; W's on
    the top of each level (upward, the
    last level's bottom at rest), the level's mean, downward. `scales`: each one's units in m/s."""
    n_y, n_x = cos.shape
    u = to_centres(faces[0], 2, n_x, "u", source, side)
    v = to_centres(faces[1], 1, n_y, "v", source, side)
    components = [scales[0] * (cos * u - sin * v), scales[0] * (sin * u + cos * v)]
    if len(faces) > 2:
        w = np.nan_to_num(faces[2])
        below = np.concatenate([w[1:], np.zeros_like(w[:1])])[: len(u)]
        components.append(-0.5 * scales[2] * (w[: len(u)] + below))
    return np.moveaxis(np.stack(components, axis=-1), 0, 2)


def z_columns(wet: np.ndarray, levels: np.ndarray, water: np.ndarray | None = None):
    """`(land, water depth, wet levels)` of z-level columns `(y, x)` from each level's water
    `wet` `(y, x, K)` (a column's wet levels end at its first dry one) and the levels' depths
    (m, positive down); `water`: the columns' depths where the model gives them (partial
    steps), else the floor half a level below the deepest wet level."""
    n_wet = np.sum(np.cumprod(wet, axis=-1), axis=-1)
    if water is None:
        spacing = np.diff(levels) if len(levels) > 1 else np.ones(1)
        floors = np.concatenate([levels[:-1] + 0.5 * spacing, levels[-1:] + 0.5 * spacing[-1:]])
        water = floors[np.maximum(n_wet, 1) - 1]
    return n_wet == 0, np.maximum(water, levels[0]), n_wet


def below_floor(values: np.ndarray, n_wet: np.ndarray) -> np.ndarray:
    """Velocities `(y, x, K, C)` with the levels below a column's floor holding its deepest wet
    level's (0 on land)."""
    last = np.maximum(n_wet - 1, 0)[..., None]
    index = np.minimum(np.arange(values.shape[2]), last)
    return np.take_along_axis(values, index[..., None], axis=2)
