"""Which of the `vtk` package's readers opens a path, and one data set per time step from it.

VTK's own file formats (`.vtu`, `.vts`, `.vtk`, ...) are read file by file. The solvers' formats
are read by their VTK reader, which knows the case's time steps:

| format | given as | reader |
|---|---|---|
| OpenFOAM | case directory, `*.foam`, `system/controlDict` | `vtkOpenFOAMReader` (`vtkPOpenFOAMReader` for `processor*/`) |
| EnSight Gold | `.case` | `vtkGenericEnSightReader` |
| Exodus II | `.e`, `.exo`, `.ex2`, `.exii`, `.g`, `.gen` | `vtkIOSSReader` |
| CGNS | `.cgns` | `vtkCGNSReader` |
| Fluent | `.cas` (its `.dat` beside it), `.cas.h5` | `vtkFLUENTReader`, `vtkFLUENTCFFReader` |
| VTKHDF | `.vtkhdf`, `.hdf` | `vtkHDFReader` |
| Nek5000 | `.nek5000` | `vtkNek5000Reader` |
| PLOT3D | `.xyz` (its `.q` beside it) | `vtkMultiBlockPLOT3DReader` |
| Tecplot ASCII | `.tec` | `vtkTecplotReader` |

A composite output (parts, element blocks, zones, multi-block files) becomes one domain:
`merged` joins the volume blocks, points that blocks share joined, and skips surface blocks
with a log line.
"""

import contextlib
import logging
import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np

_log = logging.getLogger("flowkit")

SOLVER_SUFFIXES = {
    ".foam": "openfoam",
    ".case": "ensight",
    ".cgns": "cgns",
    ".cas": "fluent",
    ".vtkhdf": "vtkhdf",
    ".hdf": "vtkhdf",
    ".nek5000": "nek5000",
    ".xyz": "plot3d",
    ".tec": "tecplot",
    **dict.fromkeys((".e", ".exo", ".ex2", ".exii", ".g", ".gen"), "exodus"),
}


def is_expression(velocity: str) -> bool:
    """Whether a `velocity=` is a Calculator expression (`Momentum/Density`), not array names."""
    return any(ch in velocity for ch in "+-*/()^")


def format_of(path: Path) -> str | None:
    """The solver format of `path` (`"openfoam"`, `"ensight"`, ...), or None for VTK's own formats."""
    name = path.name.lower()
    if path.is_dir():
        if (path / "system" / "controlDict").exists() or any(path.glob("processor*")):
            return "openfoam"
        raise ValueError(f"{path}: a directory, but not an OpenFOAM case (no system/controlDict, no processor*/); give a file or a case directory")
    if name == "controldict":
        return "openfoam"
    if name.endswith((".cas.h5", ".dat.h5")):
        return "fluent_cff"
    return SOLVER_SUFFIXES.get(path.suffix.lower())


@contextlib.contextmanager
def vtk_errors(where, what: str = "VTK could not read this file (truncated or corrupt?)"):
    """Run VTK calls with its error output captured; errors become one `ValueError` naming
    `where` and saying `what` went wrong, with VTK's own words."""
    import vtk

    messages = vtk.vtkStringOutputWindow()
    previous = vtk.vtkOutputWindow.GetInstance()
    vtk.vtkOutputWindow.SetInstance(messages)
    verbosity = vtk.vtkLogger.GetCurrentVerbosityCutoff()
    vtk.vtkLogger.SetStderrVerbosity(vtk.vtkLogger.VERBOSITY_OFF)
    try:
        yield
    finally:
        vtk.vtkOutputWindow.SetInstance(previous)
        vtk.vtkLogger.SetStderrVerbosity(verbosity)
    text = messages.GetOutput()
    if "ERROR" in text:
        detail = " ".join(line.strip() for line in text.splitlines() if line.strip() and "ERROR" not in line)[:300]
        raise ValueError(f"{where}: {what}: {detail}")


def _openfoam(path: Path):
    import vtk

    case = path if path.is_dir() else (path.parent.parent if path.name == "controlDict" else path.parent)
    decomposed = not (case / "constant" / "polyMesh").exists() and any(case.glob("processor*"))
    reader = vtk.vtkPOpenFOAMReader() if decomposed else vtk.vtkOpenFOAMReader()
    if decomposed:
        reader.SetCaseType(0)
    control = case / "system" / "controlDict"
    if not control.exists():
        raise FileNotFoundError(f"{case}: an OpenFOAM case needs system/controlDict")
    reader.SetFileName(str(path if path.is_file() and path.suffix == ".foam" else control))
    reader.SkipZeroTimeOff()
    reader.CreateCellToPointOn()
    return reader, case, decomposed


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
        raise ValueError(f"{path}: not a Nek5000 metadata file (it lacks {sorted(missing)}); a .nek5000 file names the .f files by filetemplate, firsttimestep and numtimesteps")


def _reader(path: Path, kind: str):
    """A configured VTK reader for `path`, before `UpdateInformation`."""
    import vtk

    if kind == "nek5000":
        _check_nek5000(path)
    if kind == "ensight":
        reader = vtk.vtkGenericEnSightReader()
        reader.SetCaseFileName(str(path))
        return reader
    if kind in ("fluent", "fluent_cff"):
        data = path.with_name(path.name[: -len(".cas.h5")] + ".dat.h5") if kind == "fluent_cff" else path.with_suffix(".dat")
        if not data.exists():  # VTK's reader only warns, and gives a mesh without values
            raise FileNotFoundError(f"{path}: Fluent case without its data file {data.name} beside it (the solution is in the .dat)")
        reader = vtk.vtkFLUENTReader() if kind == "fluent" else vtk.vtkFLUENTCFFReader()
    else:
        reader = {"exodus": vtk.vtkIOSSReader, "cgns": vtk.vtkCGNSReader, "vtkhdf": vtk.vtkHDFReader, "nek5000": vtk.vtkNek5000Reader, "tecplot": vtk.vtkTecplotReader}.get(kind, lambda: None)()
    if kind == "plot3d":
        reader = vtk.vtkMultiBlockPLOT3DReader()
        reader.SetXYZFileName(str(path))
        solution = path.with_suffix(".q")
        if not solution.exists():
            raise FileNotFoundError(f"{path}: PLOT3D grid without its solution file {solution.name} beside it")
        reader.SetQFileName(str(solution))
        reader.AutoDetectFormatOn()
        reader.AddFunction(200)  # the reader's "Velocity": Momentum / Density
        return reader
    reader.SetFileName(str(path))
    if kind == "nek5000":  # each spectral element has its own copy of the nodes it shares: join them
        reader.CleanGridOn()
    return reader


def _fluid_zones_only(reader, path: Path) -> None:
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
        _log.info("%s: reading the fluid zones %s; leaving out %s (face or solid zones)", path, fluid, [n for n in names if n not in fluid])


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


class SolverCase:
    """One case or file of a solver format, opened once with its VTK reader: its time steps
    (`times`, None for a steady file) and the merged data set at each. Reads are serialised (one
    reader, several threads asking)."""

    def __init__(self, path: Path, kind: str, velocity: str | None = None, *, skip_zero_time: bool = True):
        import vtk

        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        self.path, self.kind = path, kind
        self.case_dir = None
        """The OpenFOAM case directory (None for the other formats)."""
        self._lock = threading.Lock()
        self.decomposed = False
        with vtk_errors(path):
            if kind == "openfoam":
                self._reader, self.case_dir, self.decomposed = _openfoam(path)
            else:
                self._reader = _reader(path, kind)
            self._reader.UpdateInformation()
            if kind == "cgns":  # its arrays are known, and off, only after the information pass
                self._reader.EnableAllPointArrays()
                self._reader.EnableAllCellArrays()
            if kind == "fluent":
                _fluid_zones_only(self._reader, path)
        steps = self._reader.GetOutputInformation(0).Get(vtk.vtkStreamingDemandDrivenPipeline.TIME_STEPS())
        self.times = [float(t) for t in steps] if steps else [None]
        self.surfaces = None
        """`{name: surface data set}` of the boundary patches and surface parts, from the first read."""
        if kind == "openfoam":  # the patches come with the first read only: they name regions
            self._read_patches(True)
        if kind == "openfoam" and len(self.times) > 1 and self.times[0] == 0.0:
            root = sorted(self.case_dir.glob("processor*"))[0] if self.decomposed else self.case_dir
            needed = _velocity_fields(root, self.times[1], velocity)
            missing = [name for name in needed if not (root / "0" / name).exists()]
            if skip_zero_time or missing:
                why = f"holds no {', '.join(missing)}" if missing else "is the initial condition, skipped as ParaView does (skip_zero_time=False keeps it)"
                _log.info("%s: time directory 0 %s; the series starts at %g", self.case_dir, why, self.times[1])
                self.times = self.times[1:]
        if kind == "openfoam":
            shown = ", ".join(f"{t:g}" for t in self.times[:6]) + (f", ... {self.times[-1]:g}" if len(self.times) > 6 else "")
            _log.info("%s: %d time step(s) read: %s", self.case_dir, len(self.times), shown if self.times[0] is not None else "steady")

    def describe(self, k: int) -> str:
        """Time step `k` in messages: the path, and the time where the case has several."""
        t = self.times[k]
        return str(self.path) if t is None else f"{self.path} (time {t:g})"

    def _read_patches(self, on: bool) -> None:
        """OpenFOAM: read the boundary patches beside the internal mesh, or the internal mesh alone."""
        for i in range(self._reader.GetNumberOfPatchArrays()):
            name = self._reader.GetPatchArrayName(i)
            self._reader.SetPatchArrayStatus(name, int(on or name == "internalMesh"))

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
            first = self.surfaces is None
            if first and self.kind == "openfoam":
                self._read_patches(False)
            surfaces = {}
            volume = merged(out, where, surfaces)
            if self.decomposed:
                volume = joined(volume)  # the processors' shares repeat the points on their interfaces
            if first:
                self.surfaces, self.domain_centre = surfaces, volume.GetCenter()
        return volume

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

    def regions(self) -> dict:
        """`{"patch:NAME": {point, normal, lo, hi, kind}}`: the planar boundary patches (or
        surface parts) as regions that boundaries take by name; normals point away from the
        domain; `kind` is `"wall"`, `"open"` or None (`patch_kind`). A curved patch is listed with
        its kind alone, so that naming it as a plane says why it cannot be used."""
        from vtk.util.numpy_support import vtk_to_numpy

        if self.surfaces is None:
            self.dataset(0)
        types = _openfoam_patch_types(self.case_dir) if self.case_dir is not None else {}
        out = {}
        for name, surface in self.surfaces.items():
            points = np.asarray(vtk_to_numpy(surface.GetPoints().GetData()), np.float64)
            centre = points.mean(axis=0)
            normal = np.linalg.svd(points - centre, full_matrices=False)[2][-1]
            if np.abs((points - centre) @ normal).max() > 1e-5 * max(np.ptp(points, axis=0).max(), 1e-300):
                _log.info("%s: patch %r is not planar; it is not a region an inlet or outlet can name", self.path, name)
                out[f"patch:{name}"] = dict(kind=patch_kind(name, types.get(name.split("/")[-1])))
                continue
            if (np.asarray(self.domain_centre) - centre) @ normal > 0:
                normal = -normal
            out[f"patch:{name}"] = dict(point=centre, normal=normal, lo=points.min(axis=0), hi=points.max(axis=0), kind=patch_kind(name, types.get(name.split("/")[-1])))
        return out


def patch_kind(name: str, solver_type: str | None = None) -> str | None:
    """Whether a boundary patch is a `"wall"` or `"open"` (particles may leave through it): by
    the solver's own type where it has one (OpenFOAM's `wall` against `patch`; `symmetry`,
    `empty`, `wedge`, `cyclic` are not crossed), else by the words of its name (Exodus and CGNS
    side sets: `wall`, `body`, `symmetry` against `inlet`, `outlet`, `farfield`, `opening`);
    None when neither says."""
    import re

    if solver_type is not None:
        return "open" if solver_type in ("patch", "inlet", "outlet") else "wall"
    words = name.lower()
    if re.search(r"wall|solid|body|obstacle|cylinder|symm|bottom|floor|ceiling", words):
        return "wall"
    if re.search(r"inlet|inflow|outlet|outflow|opening|far_?field|exit|outer|freestream", words):
        return "open"
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


def _leaves(data):
    """`[(name, data set)]` of a composite data set's non-empty leaves."""
    import vtk

    out = []
    it = data.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        leaf = it.GetCurrentDataObject()
        meta = it.GetCurrentMetaData() if it.HasCurrentMetaData() else None
        name = meta.Get(vtk.vtkCompositeDataSet.NAME()) if meta is not None and meta.Has(vtk.vtkCompositeDataSet.NAME()) else f"block {len(out)}"
        if isinstance(leaf, vtk.vtkDataSet) and leaf.GetNumberOfCells() > 0:
            out.append((name, leaf))
        it.GoToNextItem()
    return out


def _cell_type_utilities():
    """VTK's cell-type helpers: `vtkCellTypeUtilities` from VTK 9.6, `vtkCellTypes` before."""
    import vtk

    return vtk.vtkCellTypeUtilities if _vtk_version() >= 906 else vtk.vtkCellTypes


def _vtk_version() -> int:
    import vtk

    return vtk.vtkVersion.GetVTKMajorVersion() * 100 + vtk.vtkVersion.GetVTKMinorVersion()


def cell_type_ids(data) -> np.ndarray:
    """`(C,)` VTK type id of each cell of an unstructured grid (the accessor was renamed in VTK 9.6)."""
    from vtk.util.numpy_support import vtk_to_numpy

    return np.asarray(vtk_to_numpy(data.GetCellTypes() if _vtk_version() >= 906 else data.GetCellTypesArray()), np.int64)


def cell_type_name(cell_type: int) -> str:
    """VTK's class name of a cell type id (`vtkQuadraticTetra`)."""
    return _cell_type_utilities().GetClassNameFromTypeId(int(cell_type))


def cell_dimension(data) -> int:
    """The largest dimension (0-3) of `data`'s cells."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    if isinstance(data, vtk.vtkUnstructuredGrid):
        types = vtk_to_numpy(data.GetDistinctCellTypesArray())
    else:
        types = [data.GetCellType(0)]
    return max(_cell_type_utilities().GetDimension(int(t)) for t in types)


def _array_names(data) -> set[str]:
    return {data.GetPointData().GetArrayName(i) for i in range(data.GetPointData().GetNumberOfArrays())} | {data.GetCellData().GetArrayName(i) for i in range(data.GetCellData().GetNumberOfArrays())}


def joined(data):
    """`data` with its coincident points (exactly equal coordinates) joined into one."""
    import vtk

    clean = vtk.vtkStaticCleanUnstructuredGrid()
    clean.SetInputData(data)
    clean.SetTolerance(0.0)
    clean.Update()
    return clean.GetOutput()


def merged(data, where, surfaces: dict | None = None):
    """`data` as one data set: a composite's volume blocks appended into one unstructured grid
    with the points they share joined (exactly equal coordinates), so particles cross from block
    to block. Blocks of lower dimension (boundary patches, surface parts) are skipped with a log
    line (and put into `surfaces`, by name); blocks with different arrays, or blocks that share
    no point, are refused."""
    import vtk

    if not data.IsA("vtkCompositeDataSet"):
        return data
    leaves = _leaves(data)
    if not leaves:
        raise ValueError(f"{where}: no block holds any cells")
    dims = [cell_dimension(leaf) for _, leaf in leaves]
    top = max(dims)
    for (name, leaf), d in zip(leaves, dims):
        if d < top:
            _log.info("%s: skipping %r (%d cells of dimension %d, beside a %d-D domain)", where, name, leaf.GetNumberOfCells(), d, top)
            if surfaces is not None:
                surfaces[name] = leaf
    kept = [(name, leaf) for (name, leaf), d in zip(leaves, dims) if d == top]
    if len(kept) == 1:
        return kept[0][1]
    names = [_array_names(leaf) for _, leaf in kept]
    every = set.union(*names)
    for (name, _), own in zip(kept, names):
        if own != every:
            raise ValueError(f"{where}: its blocks hold different arrays: {name!r} lacks {sorted(every - own)} (has {sorted(own)}); give every block the same variables")
    append = vtk.vtkAppendFilter()
    append.MergePointsOn()
    append.SetTolerance(0.0)
    for _, leaf in kept:
        append.AddInputData(leaf)
    append.Update()
    out = append.GetOutput()
    total = sum(leaf.GetNumberOfPoints() for _, leaf in kept)
    if out.GetNumberOfPoints() == total:
        raise ValueError(f"{where}: its {len(kept)} blocks {[n for n, _ in kept]} share no points, so no particle could cross between them; give blocks that meet on common nodes")
    _log.info("%s: %d blocks merged into one domain (%d cells, %d shared points joined)", where, len(kept), out.GetNumberOfCells(), total - out.GetNumberOfPoints())
    return out
