"""The solvers' outputs that the `vtk` package reads (`flowkit.io.formats.FORMATS` lists them):
each format's configured reader, and a case opened once with it, one data set per time step."""

import contextlib
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from .vtk_blocks import cell_dimension, joined, merged, vtk_errors

_log = logging.getLogger("flowkit")


def _vtk():
    import vtk

    return vtk


def ensight_reader(path: Path):
    reader = _vtk().vtkGenericEnSightReader()
    reader.SetCaseFileName(str(path))
    return reader


def exodus_reader(path: Path):
    reader = _vtk().vtkIOSSReader()
    reader.SetFileName(str(path))
    return reader


def cgns_reader(path: Path):
    reader = _vtk().vtkCGNSReader()
    reader.SetFileName(str(path))
    return reader


def all_arrays_on(reader, path: Path) -> None:
    """CGNS: its arrays are known, and off, only after the information pass."""
    reader.EnableAllPointArrays()
    reader.EnableAllCellArrays()


def _fluent_data(path: Path, data: Path) -> None:
    if not data.exists():  # VTK's reader only warns, and gives a mesh without values
        raise FileNotFoundError(
            f"{path}: Fluent case without its data file {data.name} beside it (the solution is in the .dat)"
        )


def fluent_reader(path: Path):
    _fluent_data(path, path.with_suffix(".dat"))
    reader = _vtk().vtkFLUENTReader()
    reader.SetFileName(str(path))
    return reader


def fluent_cff_reader(path: Path):
    _fluent_data(path, path.with_name(path.name[: -len(".cas.h5")] + ".dat.h5"))
    reader = _vtk().vtkFLUENTCFFReader()
    reader.SetFileName(str(path))
    return reader


def fluid_zones_only(reader, path: Path) -> None:
    """Fluent: read the fluid cell zones only. VTK's reader names its zones `name:type`; face
    zones (`interior`, `wall`, `velocity-inlet`, ...) and solid zones hold no flow and are left
    out with a log line."""
    zones = reader.GetZoneSectionSelection()
    names = [zones.GetArrayName(i) for i in range(zones.GetNumberOfArrays())]
    fluid = [name for name in names if name.rsplit(":", 1)[-1] == "fluid"]
    if not fluid:
        raise ValueError(f"{path}: no fluid cell zone among the case's zones {names}")
    for name in names:
        if name not in fluid:
            zones.DisableArray(name)
    if len(fluid) < len(names):
        _log.info(
            "%s: reading the fluid zones %s; leaving out %s (face or solid zones)",
            path,
            fluid,
            [n for n in names if n not in fluid],
        )


def vtkhdf_reader(path: Path):
    reader = _vtk().vtkHDFReader()
    reader.SetFileName(str(path))
    return reader


def _check_nek5000(path: Path) -> None:
    """A `.nek5000` is a small text file naming the data files; VTK's reader does not return on
    anything else, so it is checked here first."""
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        text = ""
    keys = {line.split(":")[0].strip().lower() for line in text.splitlines() if ":" in line}
    missing = {"filetemplate", "firsttimestep", "numtimesteps"} - keys
    if missing:
        raise ValueError(
            f"{path}: not a Nek5000 metadata file (it lacks {sorted(missing)}); a .nek5000 file names "
            "the .f files by filetemplate, firsttimestep and numtimesteps"
        )


def nek5000_reader(path: Path):
    _check_nek5000(path)
    reader = _vtk().vtkNek5000Reader()
    reader.SetFileName(str(path))
    reader.CleanGridOn()  # each spectral element has its own copy of the nodes it shares: join them
    return reader


def plot3d_reader(path: Path):
    solution = path.with_suffix(".q")
    if not solution.exists():
        raise FileNotFoundError(f"{path}: PLOT3D grid without its solution file {solution.name} beside it")
    reader = _vtk().vtkMultiBlockPLOT3DReader()
    reader.SetXYZFileName(str(path))
    reader.SetQFileName(str(solution))
    reader.AutoDetectFormatOn()
    reader.AddFunction(200)  # the reader's "Velocity": Momentum / Density
    return reader


def tecplot_reader(path: Path):
    reader = _vtk().vtkTecplotReader()
    reader.SetFileName(str(path))
    return reader


def openfoam_case(path: Path) -> tuple[Path, bool]:
    """The case directory of an OpenFOAM path, and whether it is read decomposed: its
    `processor*/` shares where the top level has no mesh, or where they hold later times than
    the top level (a parallel run not reconstructed, whose top level holds only `0/`; said in
    the log)."""
    case = path if path.is_dir() else (path.parent.parent if path.name == "controlDict" else path.parent)
    processors = sorted(case.glob("processor*"))
    if not processors:
        return case, False
    if not (case / "constant" / "polyMesh").exists():
        return case, True
    top, shares = _time_dirs(case), _time_dirs(processors[0])
    if shares and (not top or shares[-1] > top[-1]):
        _log.info(
            "%s: the decomposed case (%d processor*/ shares, times up to %g) read, not the top level (times up "
            "to %s): it holds the later times",
            case,
            len(processors),
            shares[-1],
            f"{top[-1]:g}" if top else "none",
        )
        return case, True
    return case, False


def _time_dirs(root: Path) -> list[float]:
    """The times of the time directories of a case or processor `root`, in order."""
    times = []
    for entry in root.iterdir():
        try:
            if entry.is_dir() and any(entry.iterdir()):
                times.append(float(entry.name))
        except ValueError:
            continue
    return sorted(times)


def openfoam_reader(path: Path):
    case, decomposed = openfoam_case(path)
    control = case / "system" / "controlDict"
    if not control.exists():
        raise FileNotFoundError(f"{case}: an OpenFOAM case needs system/controlDict")
    vtk = _vtk()
    reader = vtk.vtkPOpenFOAMReader() if decomposed else vtk.vtkOpenFOAMReader()
    if decomposed:
        reader.SetCaseType(0)
    reader.SetFileName(str(path if path.is_file() and path.suffix == ".foam" else control))
    reader.SkipZeroTimeOff()
    reader.CreateCellToPointOn()
    return reader


@runtime_checkable
class ReaderRecipe(Protocol):
    """What a case needs of its format (`flowkit.io.formats.Format`): its configured VTK reader of
    a path, and what to set on it once it knows its arrays and zones."""

    name: str
    make_reader: Callable[[Path], Any] | None
    after_information: Callable[[Any, Path], None] | None


class SolverCase:
    """One case or file of a solver format, opened once with its VTK reader: its time steps
    (`times`, `[None]` for a steady file) and the merged data set at each. Reads are serialised
    (one reader, several threads asking)."""

    def __init__(
        self,
        path: Path,
        fmt: "ReaderRecipe",
        velocity: str | None = None,
        *,
        skip_zero_time: bool = True,
        steady: bool | None = None,
    ):
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        self.path, self.format = path, fmt
        self._lock = threading.Lock()
        with vtk_errors(path):
            self._reader = fmt.make_reader(path)
            self._reader.UpdateInformation()
            if fmt.after_information is not None:
                fmt.after_information(self._reader, path)
        steps = self._reader.GetOutputInformation(0).Get(_vtk().vtkStreamingDemandDrivenPipeline.TIME_STEPS())
        self.times: list[float | None] = [float(t) for t in steps] if steps else [None]
        self.surfaces: dict | None = None
        """`{name: surface data set}` of the boundary patches and surface parts, from the first read."""
        self.domain_centre = None
        self.domain_dim = 3
        """The cells' dimension: 2 for a 2-D case, whose patches are lines in its plane."""

    def describe(self, k: int) -> str:
        """Time step `k` in messages: the path, and the time where the case has several."""
        t = self.times[k]
        return str(self.path) if t is None else f"{self.path} (time {t:g})"

    def _volume(self, data, where: str, first: bool):
        """The read `data` as one domain (its surface blocks put into `surfaces`)."""
        surfaces: dict = {}
        volume = merged(data, where, surfaces)
        if first:
            self.surfaces, self.domain_centre = surfaces, volume.GetCenter()
            self.domain_dim = cell_dimension(volume)
        return volume

    def dataset(self, k: int):
        """The data set at time step `k`, its blocks merged into one."""
        t, where = self.times[k], self.describe(k)
        with self._lock, vtk_errors(where):
            if t is None:
                self._reader.Update()
            else:
                self._reader.UpdateTimeStep(t)
            data = self._reader.GetOutputDataObject(0)
            if data is None:
                raise ValueError(f"{where}: the reader returned no data")
            out = data.NewInstance()
            out.DeepCopy(data)  # the reader reuses its output for the next step
            return self._volume(out, where, self.surfaces is None)

    def keep_arrays(self, names) -> None:
        """Read only the arrays `names` from now on, where the reader can choose (its later steps
        then parse less)."""
        reader = self._reader
        for count, name_of, choose in (
            ("GetNumberOfCellArrays", "GetCellArrayName", "SetCellArrayStatus"),
            ("GetNumberOfPointArrays", "GetPointArrayName", "SetPointArrayStatus"),
        ):
            # VTK's readers differ in which of these array selections they offer: asked by name
            if not hasattr(reader, choose):
                continue
            count, name_of, choose = (getattr(reader, method) for method in (count, name_of, choose))
            for i in range(count()):
                choose(name_of(i), int(name_of(i) in names))

    def patch_types(self) -> dict:
        """`{patch name: the solver's own type}`, where the format records one (none here)."""
        return {}

    def regions(self) -> dict:
        """`{"patch:NAME": {point, normal, lo, hi, kind}}`: the planar boundary patches (or
        surface parts) as regions that boundaries take by name; normals point away from the
        domain; `kind` is `"wall"`, `"open"` or None (`patch_kind`). A curved patch is listed with
        its kind alone, so that naming it as a plane says why it cannot be used."""
        from vtk.util.numpy_support import vtk_to_numpy

        if self.surfaces is None:
            self.dataset(0)
        types = self.patch_types()
        out = {}
        for name, surface in (self.surfaces or {}).items():
            kind = patch_kind(name, types.get(name.split("/")[-1]))
            points = np.asarray(vtk_to_numpy(surface.GetPoints().GetData()), np.float64)[:, : self.domain_dim]
            centre = points.mean(axis=0)
            normal = np.linalg.svd(points - centre, full_matrices=False)[2][-1]
            if np.abs((points - centre) @ normal).max() > 1e-5 * max(np.ptp(points, axis=0).max(), 1e-300):
                _log.info("%s: patch %r is not planar; it is not a region an inlet or outlet can name", self.path, name)
                out[f"patch:{name}"] = dict(kind=kind)
                continue
            if (np.asarray(self.domain_centre)[: self.domain_dim] - centre) @ normal > 0:
                normal = -normal
            out[f"patch:{name}"] = dict(
                point=centre, normal=normal, lo=points.min(axis=0), hi=points.max(axis=0), kind=kind
            )
        return out


STEADY_SOLVERS = frozenset(
    {"simpleFoam", "potentialFoam", "SRFSimpleFoam", "porousSimpleFoam", "rhoSimpleFoam", "buoyantSimpleFoam"}
    | {"rhoPorousSimpleFoam", "chtMultiRegionSimpleFoam", "adjointShapeOptimizationFoam", "laplacianFoam"}
)
"""OpenFOAM's applications that iterate to a steady state."""


def steady_solver(case_dir: Path) -> str | None:
    """Why an OpenFOAM case is steady, or None: `system/fvSchemes` says `ddtSchemes { default
    steadyState; }`, or `system/controlDict` names a steady solver as its `application`."""
    schemes, control = case_dir / "system" / "fvSchemes", case_dir / "system" / "controlDict"
    # comments out: `//` to the end of its line (OpenFOAM's `// * * *` banner precedes every
    # dictionary), `/* ... */` across lines
    text = lambda p: re.sub(r"//[^\n]*|/\*.*?\*/", "", p.read_text(errors="replace"), flags=re.S) if p.exists() else ""  # noqa: E731
    if re.search(r"ddtSchemes\s*\{[^}]*default\s+steadyState\s*;", text(schemes)):
        return "a steady case (system/fvSchemes: ddtSchemes default steadyState)"
    application = re.search(r"^\s*application\s+(\w+)\s*;", text(control), flags=re.M)
    if application and application[1] in STEADY_SOLVERS:
        return f"a steady solver (system/controlDict: application {application[1]})"
    return None


class OpenFoamCase(SolverCase):
    """An OpenFOAM case (reconstructed, or its `processor*/` shares joined into one mesh): the
    boundary patches come with the first read (they name regions, typed by the case's
    `constant/polyMesh/boundary`), and the `0/` directory is skipped as ParaView does."""

    def __init__(
        self,
        path: Path,
        fmt: "ReaderRecipe",
        velocity: str | None = None,
        *,
        skip_zero_time: bool = True,
        steady: bool | None = None,
    ):
        super().__init__(path, fmt, velocity, skip_zero_time=skip_zero_time, steady=steady)
        self.case_dir, self.decomposed = openfoam_case(path)
        self._read_patches(True)
        if len(self.times) > 1 and self.times[0] == 0.0:
            root = sorted(self.case_dir.glob("processor*"))[0] if self.decomposed else self.case_dir
            needed = _velocity_fields(root, self.times[1], velocity)
            missing = [name for name in needed if not (root / "0" / name).exists()]
            if skip_zero_time or missing:
                why = (
                    f"holds no {', '.join(missing)}"
                    if missing
                    else "is the initial condition, skipped as ParaView does (skip_zero_time=False keeps it)"
                )
                _log.info("%s: time directory 0 %s; the series starts at %g", self.case_dir, why, self.times[1])
                self.times = self.times[1:]
        self._keep_last_if_steady(steady)
        shown = ", ".join(f"{t:g}" for t in self.times[:6]) + (
            f", ... {self.times[-1]:g}" if len(self.times) > 6 else ""
        )
        _log.info(
            "%s: %d time step(s) read: %s",
            self.case_dir,
            len(self.times),
            shown if self.times[0] is not None else "steady",
        )

    def _keep_last_if_steady(self, steady: bool | None) -> None:
        """A steady solver's iterations are not times: its last (converged) one is the field."""
        why = steady_solver(self.case_dir) if steady is None else ("steady=True" if steady else None)
        if why is None or len(self.times) < 2 or self.times[0] is None:
            return
        _log.info(
            "%s: %s: the last iteration (%g) is read as a steady field, not %d iterations as times "
            "(steady=False reads them all)",
            self.case_dir,
            why,
            self.times[-1],
            len(self.times),
        )
        self.times = self.times[-1:]

    def _read_patches(self, on: bool) -> None:
        """Read the boundary patches beside the internal mesh, or the internal mesh alone."""
        for i in range(self._reader.GetNumberOfPatchArrays()):
            name = self._reader.GetPatchArrayName(i)
            self._reader.SetPatchArrayStatus(name, int(on or name == "internalMesh"))

    def _volume(self, data, where: str, first: bool):
        if first:  # the patches are read once, with the first step
            self._read_patches(False)
        surfaces: dict = {}
        volume = merged(data, where, surfaces)
        if self.decomposed:
            volume = joined(volume)  # the processors' shares repeat the points on their interfaces
        if first:
            self.surfaces, self.domain_centre = surfaces, volume.GetCenter()
        return volume

    def patch_types(self) -> dict:
        return _openfoam_patch_types(self.case_dir)


def _velocity_fields(root: Path, t: float, velocity: str | None) -> list[str]:
    """The OpenFOAM field files the velocity is made of: the names in `velocity` (a name, a list
    or an expression such as `U.air` or `Momentum/Density`), or by default those of the time
    directory `t` named like a velocity (`U`, `U.water`, `Velocity`)."""
    import re

    if velocity:
        return [name for name in re.findall(r"[A-Za-z_][\w.:]*", velocity) if not re.fullmatch(r"[eE]\d*", name)]
    folder = _time_directory(root, t)
    names = sorted(p.name for p in folder.iterdir()) if folder is not None else []
    velocity_like = [n for n in names if n.split(".")[0].lower() in ("u", "velocity", "vel")]
    return velocity_like or ["U"]


def _time_directory(root: Path, t: float) -> Path | None:
    """The time directory of a case (or processor) `root` whose name is the time `t`."""
    for folder in root.iterdir():
        with contextlib.suppress(ValueError):
            if folder.is_dir() and float(folder.name) == t:
                return folder
    return None


def patch_kind(name: str, solver_type: str | None = None) -> str | None:
    """Whether a boundary patch is a `"wall"` or `"open"` (particles may leave through it): by
    the solver's own type where it has one (OpenFOAM's `wall` against `patch`; `symmetry`,
    `empty`, `wedge`, `cyclic` are not crossed), else by the words of its name (Exodus and CGNS
    side sets: `wall`, `body`, `symmetry` against `inlet`, `outlet`, `farfield`, `opening`; a
    place such as `bottom` or `cylinder` is a wall unless the name also says open, as in
    `outlet_bottom`); None when neither says."""
    if solver_type is not None:
        return "open" if solver_type in ("patch", "inlet", "outlet") else "wall"
    words = name.lower()
    for pattern, kind in (
        (r"wall|solid|body|obstacle|symm", "wall"),
        (r"inlet|inflow|outlet|outflow|opening|far_?field|exit|outer|freestream", "open"),
        (r"cylinder|bottom|floor|ceiling", "wall"),
    ):
        if re.search(pattern, words):
            return kind
    return None


def _openfoam_patch_types(case: Path) -> dict:
    """`{patch name: type}` from the case's `constant/polyMesh/boundary` (empty when absent)."""
    import re

    boundary = case / "constant" / "polyMesh" / "boundary"
    if not boundary.exists():
        processors = sorted(case.glob("processor*/constant/polyMesh/boundary"))
        if not processors:
            return {}
        boundary = processors[0]
    text = re.sub(r"//.*", "", boundary.read_text(errors="replace"))
    return {name: kind for name, kind in re.findall(r"(\w[\w.:-]*)\s*\{[^{}]*?\btype\s+(\w+)\s*;", text)}


class Step(NamedTuple):
    """Time step `index` of a `SolverCase`: an item of a series, read by `read_dataset`."""

    case: SolverCase
    index: int

    def __str__(self) -> str:
        return self.case.describe(self.index)

    def read(self):
        return self.case.dataset(self.index)
