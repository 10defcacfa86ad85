"""Sample data generated from analytic flows, so every example runs from the project alone."""

import numpy as np

from .fields.analytic import DoubleGyre
from .fields.grid import GridField


def double_gyre_grid(nx: int = 201, ny: int = 101, t_end: float = 20.0, nt: int = 101, dtype="float32") -> GridField:
    """The double gyre (`fk.fields.DoubleGyre`) sampled on an `nx × ny` grid over [0,2]×[0,1]
    at `nt` times in `[0, t_end]`: a gridded time series of the kind ocean models write."""
    axes = [np.linspace(0.0, 2.0, nx), np.linspace(0.0, 1.0, ny)]
    return GridField.from_function(DoubleGyre(), axes, times=np.linspace(0.0, t_end, nt), dtype=dtype)


def grid_field(path=None, dtype="float32", interpolation="linear") -> GridField:
    """A gridded field from an `.npz` file (`flowkit.io.load_grid_npz`), or the double-gyre
    sample (`double_gyre_grid`) when `path` is None."""
    if path is None:
        return double_gyre_grid(dtype=dtype)
    from .io.npz import load_grid_npz

    return load_grid_npz(path, dtype=dtype, interpolation=interpolation)
