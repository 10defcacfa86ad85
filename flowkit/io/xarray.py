"""Ocean and atmosphere data in: NetCDF/zarr files and xarray Datasets, opened lazily and read by
the model that wrote them (`flowkit.io.ocean.MODELS`: ROMS, NEMO, the unstructured models, ...,
and last CF gridded data), on the host.

xarray never reaches the compiled program: slices are converted once, here.
"""

import inspect
import logging

from jax.typing import DTypeLike

from .._custom_types import Files
from ..fields.base import AbstractField
from ..fields.streamed import StreamedField
from .cf import where
from .checks import is_default
from .datasets import open_datasets
from .ocean import model_of

_log = logging.getLogger("flowkit")


def read_cf(path: Files, velocity=None, **options) -> AbstractField | StreamedField:
    """`fk.io.read` for NetCDF/zarr: the files of `path` as one time series (see `from_xarray`).
    `velocity`: `"u,v"` or `"u,v,w"` names the components."""
    names = dict(zip("uvw", velocity.split(","))) if isinstance(velocity, str) else {}
    return from_xarray(open_datasets(path), **names, **options)


def from_xarray(
    ds,
    u: str | None = None,
    v: str | None = None,
    w: str | None = None,
    *,
    x=None,
    y=None,
    z=None,
    time=None,
    spherical=None,
    land_value=None,
    mask: str | None = None,
    periodic=None,
    interpolation: str = "linear",
    dtype: DTypeLike = "float32",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
    sample=None,
    coast: str = "noslip",
    grid=None,
    plane: int | None = None,
    face: int | None = None,
) -> AbstractField | StreamedField:
    """A `GridField` from a structured `xarray.Dataset`, or a list of them along time (one per
    file), regular or rectilinear in lon/lat(/depth)/time, found from CF metadata.

    **Arguments:**

    - `u`, `v`, `w`: names of the velocity variables; found by `standard_name`, then by common
      names, when not given. A depth axis with more than one level gives 3-D tracking (`w` = 0
      if the data has none, logged).
    - `x`, `y`, `z`, `time`: dimension names; found by `axis`/`standard_name`/`units`, then by
      common names, when not given.
    - `spherical`: positions in degrees, velocities in m/s (cm/s converted), converted at each
      particle's latitude (`GridField.from_arrays(spherical=True)`); default: when the axes are longitude
      and latitude. Latitudes (and depths) stored descending are flipped; depth is positive
      down (the sign of an upward `w` follows), height positive up.
    - `periodic`: per axis; default: longitude is periodic (period 360) when it spans the globe,
      with or without its end column repeated.
    - land: NaN velocities in the first time step mark land nodes (or the zeros of the variable
      `mask`): they become zero velocity and particles whose step ends there are `BEACHED`.
      `land_value` instead replaces every NaN by that number (no land).
    - `stream`: `True` returns a `fk.io.StreamedField` read one time step at a time (each step
      read from its own file); `None` (default) streams only when the series would exceed
      `max_device_bytes`.
    - `coast`: `"noslip"`, `"freeslip"` or `"partialslip"` next to land (`GridField.from_arrays(coast=)`).
    - A model's own output is read by its conventions (`flowkit.io.ocean.MODELS`, each row the
      options it takes): ROMS and CROCO (s-levels, C-grid; `grid`: the model's grid file when
      the history lacks it), NEMO (U, V, W grid files apart; `grid`: `mesh_mask.nc` or
      `coordinates.nc`), MITgcm (mnc NetCDF or xmitgcm's Datasets; `face`: the face of a cubed
      sphere), the unstructured models (UGRID: FVCOM, SCHISM, ADCIRC), TELEMAC Selafin
      (`plane`) become a `LayeredField` (or a `MeshField`) on the model's own grid.
    - `sample`: names of further variables on the velocity's grid (temperature, salinity, wind)
      to interpolate along trajectories and for particle models (`GridField.from_arrays(samples=)`); NaN on
      land. Regular A-grids held in memory.

    **Raises:** `ValueError` naming the file and the variable for a missing velocity, axes it
    cannot tell, dimensions besides space and time, times that do not increase across files,
    latitudes outside [-90, 90].
    """
    import xarray as xr

    datasets = list(ds) if isinstance(ds, (list, tuple)) else [ds]
    if not datasets or not all(isinstance(d, xr.Dataset) for d in datasets):
        raise TypeError(f"from_xarray: expected an xarray.Dataset or a list of them, got {type(ds).__name__}")
    given = {
        name: value for name, value in locals().items() if name in _OPTIONS and not is_default(value, _OPTIONS[name])
    }
    model = model_of(datasets)
    refused = sorted(set(given) - model.options)
    if refused:
        raise ValueError(
            f"{where(datasets[0])}: {model.name} output is read by its own conventions; {', '.join(refused)} "
            f"{'does' if len(refused) == 1 else 'do'} not apply to it (it takes {', '.join(sorted(model.options))})"
        )
    return model.build(datasets, **given)


_OPTIONS = {name: p.default for name, p in inspect.signature(from_xarray).parameters.items() if name != "ds"}
"""`from_xarray`'s options and their defaults: those a user changed go to the model's `build`."""
