"""Every format `fk.io.read` opens, in one table: adding a format is one `Format` entry and its
reader.

VTK's own formats are read file by file; a solver's output by its `vtk` reader, which knows the
case's time steps; NetCDF/zarr by xarray and the file's CF (or UGRID, ROMS, ...) metadata;
TELEMAC Selafin by `xarray-selafin`.
"""

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._custom_types import Files
from .._paths import refuse_special
from . import solvers
from .datasets import dataset_files
from .ocean.mitgcm import is_run_directory


@dataclasses.dataclass(frozen=True)
class Format:
    """One kind of file and how it is read.

    - `name`: what messages call it.
    - `given_as`: how a user names it (for the documentation and for errors).
    - `suffixes`: the lower-case endings of its file names (a compound one such as `.cas.h5`
      whole).
    - `reader`: the name of its reader in `flowkit.io.read.READERS` (`read(path, velocity,
      **options) -> field`), which takes of `fk.io.read`'s common options those in `options`.
    - `make_reader`: a solver's format: the configured `vtk` reader of a path (before its
      information pass); None for the formats that are not read case by case.
    - `after_information`: what to set on that reader once it knows its arrays and zones.
    - `case`: the `solvers.SolverCase` class that opens it.
    """

    name: str
    given_as: str
    suffixes: tuple[str, ...]
    reader: str
    options: frozenset[str]
    make_reader: Callable[[Path], Any] | None = None
    after_information: Callable[[Any, Path], None] | None = None
    case: type[solvers.SolverCase] = solvers.SolverCase

    def open_case(
        self, path: Path, velocity: str | None = None, *, skip_zero_time: bool = True, steady: bool | None = None
    ) -> solvers.SolverCase:
        """The solver's case at `path`, opened with this format's reader."""
        return self.case(path, self, velocity, skip_zero_time=skip_zero_time, steady=steady)


_VTK_OPTIONS = frozenset(
    {
        "times",
        "sample",
        "cell_data",
        "allow_nonfinite",
        "dtype",
        "interpolation",
        "periodic",
        "stream",
        "max_device_bytes",
        "skip_zero_time",
        "steady",
    }
)
_SOLVER = dict(reader="vtk", options=_VTK_OPTIONS)

FORMATS: tuple[Format, ...] = (
    Format(
        "NetCDF/zarr",
        "`.nc`, `.nc4`, `.cdf`, `.netcdf`, `.zarr`: a file, a glob or a list along time",
        (".nc", ".nc4", ".cdf", ".netcdf", ".zarr"),
        "cf",
        frozenset({"sample", "dtype", "interpolation", "periodic", "stream", "max_device_bytes"}),
    ),
    Format("TELEMAC Selafin", "`.slf`, `.selafin`", (".slf", ".selafin"), "selafin", frozenset({"dtype"})),
    Format(
        "MITgcm MDS",
        "a run directory of MDS output (`XC.meta`, `U.0000000010.data`, ...; `flowkit.io.ocean.mitgcm`)",
        (),
        "mitgcm",
        frozenset({"dtype"}),
    ),
    Format(
        "VTK",
        "`.vti`, `.vtr`, `.vts`, `.vtu`, `.vtp` (and their parallel `.p*`), `.vtm`/`.vtmb`, "
        "legacy `.vtk`, a `.pvd` collection, ParaView's JSON series (`.vtu.series`, `.vtm.series`, ...)",
        (".vti", ".vtr", ".vts", ".vtu", ".vtp", ".pvti", ".pvtr", ".pvts", ".pvtu", ".vtm", ".vtmb", ".vtk", ".pvd")
        + (".series",),
        "vtk",
        _VTK_OPTIONS,
    ),
    Format(
        "OpenFOAM",
        "a case directory, its `*.foam` or `system/controlDict` (`vtkOpenFOAMReader`; "
        "`vtkPOpenFOAMReader` for `processor*/`)",
        (".foam",),
        make_reader=solvers.openfoam_reader,
        case=solvers.OpenFoamCase,
        **_SOLVER,
    ),
    Format(
        "EnSight Gold", "`.case` (`vtkGenericEnSightReader`)", (".case",), make_reader=solvers.ensight_reader, **_SOLVER
    ),
    Format(
        "Exodus II",
        "`.e`, `.exo`, `.ex2`, `.exii`, `.g`, `.gen` (`vtkIOSSReader`)",
        (".e", ".exo", ".ex2", ".exii", ".g", ".gen"),
        make_reader=solvers.exodus_reader,
        **_SOLVER,
    ),
    Format(
        "CGNS",
        "`.cgns` (`vtkCGNSReader`)",
        (".cgns",),
        make_reader=solvers.cgns_reader,
        after_information=solvers.all_arrays_on,
        **_SOLVER,
    ),
    Format(
        "Fluent",
        "`.cas`, its `.dat` beside it (`vtkFLUENTReader`)",
        (".cas",),
        make_reader=solvers.fluent_reader,
        after_information=solvers.fluid_zones_only,
        **_SOLVER,
    ),
    Format(
        "Fluent CFF",
        "`.cas.h5`, its `.dat.h5` beside it (`vtkFLUENTCFFReader`)",
        (".cas.h5", ".dat.h5"),
        make_reader=solvers.fluent_cff_reader,
        **_SOLVER,
    ),
    Format(
        "VTKHDF",
        "`.vtkhdf`, `.hdf` (`vtkHDFReader`)",
        (".vtkhdf", ".hdf"),
        make_reader=solvers.vtkhdf_reader,
        **_SOLVER,
    ),
    Format("Nek5000", "`.nek5000` (`vtkNek5000Reader`)", (".nek5000",), make_reader=solvers.nek5000_reader, **_SOLVER),
    Format(
        "PLOT3D",
        "`.xyz`, its `.q` beside it (`vtkMultiBlockPLOT3DReader`)",
        (".xyz",),
        make_reader=solvers.plot3d_reader,
        **_SOLVER,
    ),
    Format("Tecplot ASCII", "`.tec` (`vtkTecplotReader`)", (".tec",), make_reader=solvers.tecplot_reader, **_SOLVER),
)
"""The formats, in the order they are matched."""

OPENFOAM, VTK, MITGCM, NETCDF = (
    next(f for f in FORMATS if f.name == name) for name in ("OpenFOAM", "VTK", "MITgcm MDS", "NetCDF/zarr")
)


def format_of(path: Files) -> Format:
    """The format of `path` (a path, a glob pattern, or a list of paths along time, by its first):
    by its name's ending; a directory is an OpenFOAM case, a MITgcm run, a folder of NetCDF
    files (a model's output: its files read together) or a zarr store."""
    first = path[0] if isinstance(path, (list, tuple)) and path else path
    if not isinstance(first, (str, Path)):
        raise TypeError(f"path: give a file name, a glob pattern or a list of them, got {type(first).__name__}")
    for given in path if isinstance(path, (list, tuple)) else [path]:
        refuse_special(str(given))
    first = Path(str(first).rstrip("/"))
    name = first.name.lower()
    if first.is_dir() and not name.endswith(".zarr"):
        if (first / "system" / "controlDict").exists() or any(first.glob("processor*")):
            return OPENFOAM
        if is_run_directory(first):
            return MITGCM
        if dataset_files(first):  # a model's output folder (NEMO's grid files, SCHISM's outputs)
            return NETCDF
        raise ValueError(
            f"{first}: a directory, but not an OpenFOAM case (no system/controlDict, no processor*/), "
            "a MITgcm run (no XC.meta), a folder of NetCDF files nor a zarr store; give a file or a case directory"
        )
    if name == "controldict":
        return OPENFOAM
    for fmt in FORMATS:
        if name.endswith(fmt.suffixes):
            return fmt
    if _is_netcdf(first):  # written without a suffix, as WRF names its wrfout_d01_<date> files
        return NETCDF
    known = sorted({s for fmt in FORMATS for s in fmt.suffixes})
    raise ValueError(
        f"{first}: unsupported suffix {first.suffix!r}; flowkit reads {known} and OpenFOAM case directories"
    )


def _is_netcdf(path: Path) -> bool:
    """Whether `path` (or a glob's first match) starts as a NetCDF3 (`CDF`) or NetCDF4/HDF5
    file does."""
    import glob

    matches = sorted(glob.glob(str(path))) if any(ch in str(path) for ch in "*?[") else [str(path)]
    if not matches or not Path(matches[0]).is_file():
        return False
    with open(matches[0], "rb") as file:
        head = file.read(8)
    return head[:3] == b"CDF" or head == b"\x89HDF\r\n\x1a\n"
