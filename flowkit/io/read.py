"""`fk.io.read`: one call for every format flowkit reads, dispatched by `formats.FORMATS`."""

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jax.typing import DTypeLike

from .._custom_types import Files, TimesLike
from ..fields import forcing
from ..fields.streamed import StreamedField
from .checks import is_default
from .formats import format_of
from .ocean.mitgcm import open_mds
from .ocean.telemac import opened
from .vtk_read import read_series
from .xarray import from_xarray, read_cf


def read(
    path: Files,
    velocity: str | None = None,
    times: TimesLike | None = None,
    *,
    sample: Sequence[str] | None = None,
    cell_data: str = "points",
    allow_nonfinite: bool = False,
    dtype: DTypeLike = "float32",
    interpolation: str = "linear",
    periodic=False,
    stream: bool | None = None,
    max_device_bytes: int | None = None,
    skip_zero_time: bool = True,
    steady: bool | None = None,
    samples: Mapping | None = None,
    **options,
):
    """A field from a file as a CFD solver, ParaView or an ocean or atmosphere model wrote it,
    by its format (`flowkit.io.formats.FORMATS`): VTK's own files and the solvers' outputs with
    the `vtk` package's readers, NetCDF/zarr with xarray, TELEMAC Selafin with xarray-selafin.

    **Arguments:**

    - `path`, one of:
      - NetCDF (`.nc`, `.nc4`, `.cdf`; NetCDF4/HDF5 or NetCDF3) or zarr data, one file, a glob
        or a list of files along time: read by its CF metadata into a `GridField` on lon/lat
        (see `fk.io.from_xarray`, whose options — `mask`, `land_value`, `spherical`, `x`,
        `y`, `z`, `time` — pass through; `velocity="uo,vo"` names the components);
      - a VTK file: `.vti`, `.vtr` (structured), `.vtu`, `.pvtu`, `.vts`, `.vtp`, `.vtm`/`.vtmb`
        (blocks merged into one domain), legacy `.vtk`; a `.pvd` collection (times from its
        `timestep` attributes, possibly non-uniform); a glob pattern or a list of files (times
        from each file's `TimeValue` field data, else from `times=`, else an error — never
        file indices);
      - a solver's output, its time steps the series (`flowkit.io.formats.FORMATS` lists the readers):
        an OpenFOAM case directory (reconstructed or `processor*/`), its `*.foam` or
        `system/controlDict`; EnSight Gold `.case`; Exodus II `.e`/`.exo`/`.ex2`/`.g`;
        CGNS `.cgns`; Fluent `.cas`/`.cas.h5`; TELEMAC Selafin `.slf` (`flowkit.io.ocean.telemac`);
        VTKHDF `.vtkhdf`/`.hdf`; Nek5000 `.nek5000`;
        PLOT3D `.xyz` (with its `.q`); Tecplot ASCII `.tec`. Parts, element blocks and zones are
        merged into one domain, points they share joined; surface parts (boundary patches) are
        skipped with a log line.
    - `velocity`: an array's name; or a ParaView Calculator expression over the arrays,
      evaluated at the nodes (`"Momentum/Density"`: + - * /, numbers, scalar and vector
      arrays); by default the vector array named like a velocity (`U`, `Velocity`, `vel`, or
      first word so: `velocity_liq (m/s)`) or the only vector array. Point data wins over cell
      data. Cell data is converted to points by `vtkCellDataToPointData` (each point gets the
      mean of the cells around it, as ParaView's "Cell Data to Point Data"); OpenFOAM's reader
      gives point data interpolated with the boundary patches' values. The choice is logged.
    - `cell_data`: `"points"` (default, as above) or `"constant"`: the velocity's cell values
      where it has them (a finite-volume solver's own numbers), piecewise constant per cell.
    - polyhedra and higher-order cells are decomposed into linear cells on their own nodes
      (`vtkDataSetTriangleFilter`), with a log line.
    - `sample`: names of further arrays (pressure, temperature, ...) to load for interpolation
      along trajectories and for particle models: `fk.track` then fills `Trajectory.samples[name]`
      (meshes, and NetCDF/zarr data on regular A-grids held in memory).
    - `allow_nonfinite`: keep NaN/Inf values (otherwise an error says how many and where).
    - `stream`: `True` returns a `fk.io.StreamedField` that `fk.track` reads file by file
      in time windows (a background thread reads the next files while the device computes);
      `None` (default) does so only when the whole series would exceed `max_device_bytes`.
    - `max_device_bytes`: device memory the field may use (default: half the GPU's memory, or
      a quarter of the host's RAM on CPU).
    - `skip_zero_time`: an OpenFOAM case's `0/` directory (the initial condition, often the
      flow at rest) is left out of the series, as ParaView does; `False` keeps it when it holds
      the velocity.
    - `steady`: an OpenFOAM case run by a steady solver (its `system/fvSchemes` says
      `steadyState`, or its `application` is `simpleFoam`, `potentialFoam`, ...) is read as a
      steady field from its last (converged) iteration (`None`, the default; logged); `False`
      keeps every written iteration as a time series, `True` takes the last time of any case.
    - `samples`: forcing fields by name, `{"wind": fk.io.read(wind_files)}`: other fields (wind,
      waves), each on its own grid and time axis, evaluated at the particles like the file's own
      arrays (`flowkit.fields.forcing`): particle models read them (`fk.particles.Windage`) and
      `Trajectory.samples` records them, in their data's units (m/s), zero outside their extent.
    - `options`: passed to the format's reader: to `MeshField` (`walk_steps`, `newton_steps`,
      `bin_scale`), to `fk.io.from_xarray` (`grid`, `mask`, ...), to `read_selafin` (`plane`).

    **Returns:** a `GridField` for image and rectilinear data (a grid with one point along an
    axis becomes 2-D; its velocity component along that axis must be zero), a `MeshField` for
    everything else: unstructured grids (pieces of a `.pvtu` merged, duplicate points on piece
    boundaries joined), curvilinear grids (as hexahedra or quads) and polygonal data. Steady for
    one file, a time series on a fixed mesh otherwise; or a `StreamedField` of either.

    **Raises:** `FileNotFoundError` for missing files (also those a `.pvd` lists), `ValueError`
    naming the file for truncated/corrupt files, empty data, no or ambiguous vector arrays
    (listing the arrays there are), 2-component velocities in 3-D, non-finite values (how many
    and where), unsupported cell types (type and count), geometry or point counts that change
    between steps, missing times, and options the file's format does not take (naming both).
    """
    given = {name: value for name, value in locals().items() if name in _COMMON}  # the common options
    fmt = format_of(path)
    refused = sorted(
        name for name, value in given.items() if name not in fmt.options and not is_default(value, _COMMON[name])
    )
    if refused:
        raise ValueError(
            f"{path}: {', '.join(refused)} do(es) not apply to {fmt.name} files; they take {sorted(fmt.options)}"
        )
    field = READERS[fmt.reader](
        path, velocity, **{name: value for name, value in given.items() if name in fmt.options}, **options
    )
    return field if not samples else _with_forcings(field, samples, f"{path}: samples")


def _with_forcings(field, samples: Mapping, where: str):
    """`field` with the forcing fields `samples` (a streamed series' template gets them)."""
    for name, value in samples.items():
        if isinstance(value, StreamedField):
            raise ValueError(
                f"{where}[{name!r}]: a forcing field is held in memory; read it with stream=False (or fewer files)"
            )
    if isinstance(field, StreamedField):
        field.template = forcing.attach(field.template, samples, where)
        return field
    return forcing.attach(field, samples, where)


_COMMON = {
    name: p.default
    for name, p in inspect.signature(read).parameters.items()
    if name not in ("path", "velocity", "samples", "options")
}
"""`read`'s options common to the formats, with their defaults (each format takes some)."""


read_vtk = read
"""The same as `read` (its first name, when it read VTK's own formats only)."""


def _read_cf(path, velocity=None, *, periodic=False, **options):
    return read_cf(path, velocity, periodic=None if periodic is False else periodic, **options)


def _read_selafin(path, velocity=None, **options):
    names = dict(zip("uvw", velocity.split(","))) if isinstance(velocity, str) else {}
    return from_xarray([opened(Path(path))], **names, **options)


def _read_mitgcm(path, velocity=None, *, delta_t: float | None = None, **options):
    names = dict(zip("uvw", velocity.split(","))) if isinstance(velocity, str) else {}
    return from_xarray([open_mds(path, delta_t)], **names, **options)


READERS: dict[str, Callable[..., Any]] = {
    "cf": _read_cf,
    "selafin": _read_selafin,
    "mitgcm": _read_mitgcm,
    "vtk": read_series,
}
"""Each format's reader by the name its `formats.Format` gives (`reader`)."""
