"""Evaluate any field along trajectories, on the device."""

import jax
import jax.numpy as jnp
import numpy as np

from .._custom_types import Args
from ..fields.base import AbstractField
from ..trajectory import Trajectory


def sample(field: AbstractField, traj: Trajectory, args: Args = None, chunk_frames: int = 64) -> np.ndarray:
    """`field(t, x)` at every saved time and position: `(T, N, components)`.

    Works for any `flowkit` field, e.g. a `GridField` of pressure or temperature with one or
    more components. Frames are evaluated `chunk_frames` at a time to bound device memory.
    """
    times = jnp.asarray(traj.times)
    positions = jnp.asarray(traj.positions)
    evaluate = jax.jit(jax.vmap(jax.vmap(lambda t, x: field(t, x, args), in_axes=(None, 0)), in_axes=(0, 0)))
    out = [
        np.asarray(evaluate(times[i : i + chunk_frames], positions[i : i + chunk_frames]))
        for i in range(0, len(traj.times), chunk_frames)
    ]
    return np.concatenate(out)
