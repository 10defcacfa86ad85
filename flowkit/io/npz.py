"""Gridded velocity fields as `.npz` files.

Layout: `velocity` with shape `(nx, ny[, nz], dim)` or `(nt, nx, ny[, nz], dim)`, one
coordinate array per axis named `x`, `y` (, `z`), optional `time` (for a time series) and
optional `periodic` (a bool per axis).
"""

from pathlib import Path

import numpy as np

from ..fields.grid import GridField

_AXES = ("x", "y", "z")


def save_grid_npz(path, field: GridField) -> Path:
    """Write `field`'s data and axes to `path` in the layout above."""
    path = Path(path)
    values = np.asarray(field.values)
    arrays = {name: np.asarray(ax) for name, ax in zip(_AXES, field.axes)}
    if field.times is None:
        arrays["velocity"] = values[0]
    else:
        arrays["velocity"] = values
        arrays["time"] = np.asarray(field.times)
    arrays["periodic"] = np.asarray(field.periodic, dtype=bool)
    np.savez(path, **arrays)
    return path


def load_grid_npz(path, dtype="float32", interpolation="linear", periodic=None) -> GridField:
    """Read a `GridField` from an `.npz` file; errors name the file and the missing array."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"grid field file {path} does not exist")
    with np.load(path) as data:
        if "velocity" not in data:
            raise ValueError(f"{path}: expected an array named 'velocity', found {sorted(data.files)}")
        velocity = data["velocity"]
        dim = velocity.shape[-1]
        if dim not in (2, 3):
            raise ValueError(f"{path}: 'velocity' must end in 2 or 3 components, got shape {velocity.shape}")
        missing = [name for name in _AXES[:dim] if name not in data]
        if missing:
            raise ValueError(f"{path}: a {dim}-D field needs coordinate arrays {list(_AXES[:dim])}; missing {missing}")
        axes = [data[name] for name in _AXES[:dim]]
        times = data["time"] if "time" in data else None
        if periodic is None:
            periodic = tuple(bool(p) for p in data["periodic"]) if "periodic" in data else False
        try:
            return GridField(velocity, axes, times=times, periodic=periodic, interpolation=interpolation, dtype=dtype)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
