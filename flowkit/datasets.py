"""Sample data generated from analytic flows, so every example runs from the project alone."""

from pathlib import Path

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


def double_gyre_vti_series(folder, nx: int = 101, ny: int = 51, times=None) -> Path:
    """Write the double gyre as a `.pvd` series of `.vti` files (VTK's own writer, ParaView's
    layout `name/name_0_K.vti`, 3-component `velocity` with w = 0, `TimeValue` field data),
    evaluated in float64. Returns the `.pvd` path."""
    import jax
    import jax.numpy as jnp

    from ._dtypes import resolve
    from .io.vtk import write_pvd, write_vti

    resolve("float64")
    folder = Path(folder)
    (folder / "double_gyre").mkdir(parents=True, exist_ok=True)
    times = np.linspace(0.0, 5.0, 11) if times is None else np.asarray(times, dtype=np.float64)
    mesh = np.stack(np.meshgrid(np.linspace(0.0, 2.0, nx), np.linspace(0.0, 1.0, ny), indexing="ij"), axis=-1)
    flow = jax.jit(jax.vmap(DoubleGyre(), in_axes=(None, 0)))
    files = []
    for k, t in enumerate(times):
        uv = np.asarray(flow(jnp.asarray(t), jnp.asarray(mesh.reshape(-1, 2)))).reshape(nx, ny, 2)
        velocity = np.concatenate([uv, np.zeros((nx, ny, 1))], axis=-1)
        files.append(write_vti(folder / "double_gyre" / f"double_gyre_0_{k}.vti", {"velocity": velocity}, (0.0, 0.0), (2.0 / (nx - 1), 1.0 / (ny - 1)), time=t))
    return write_pvd(folder / "double_gyre.pvd", files, times)
