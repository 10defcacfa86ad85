"""VTK data sets as flowkit reads them: VTK's errors as exceptions, cell types by id, and a
composite output (parts, element blocks, zones, multi-block files) as one domain: `merged`
joins the volume blocks, points that blocks share joined, and skips surface blocks with a log
line."""

import contextlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

_log = logging.getLogger("flowkit")


@contextlib.contextmanager
def vtk_errors(where, what: str = "VTK could not read this file (truncated or corrupt?)"):
    """Run VTK calls with its error output captured; errors become one `ValueError` naming
    `where` and saying `what` went wrong, with VTK's own words. Both of VTK's channels are
    heard: the output window (`vtkErrorMacro`) and its logger, where some readers (Fluent's)
    report a file they misread and go on with garbage values."""
    from vtkmodules.vtkCommonCore import vtkLogger, vtkOutputWindow, vtkStringOutputWindow

    messages = vtkStringOutputWindow()
    previous = vtkOutputWindow.GetInstance()
    vtkOutputWindow.SetInstance(messages)
    verbosity = vtkLogger.GetCurrentVerbosityCutoff()
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_OFF)
    descriptor, logged = tempfile.mkstemp(prefix="flowkit-vtk-", suffix=".log")
    os.close(descriptor)
    vtkLogger.LogToFile(logged, vtkLogger.TRUNCATE, vtkLogger.VERBOSITY_ERROR)
    try:
        yield
    finally:
        vtkOutputWindow.SetInstance(previous)
        vtkLogger.SetStderrVerbosity(verbosity)
        vtkLogger.EndLogToFile(logged)
        errors = [line.split("ERR|", 1)[1].strip() for line in Path(logged).read_text().splitlines() if "ERR|" in line]
        os.unlink(logged)
    text = messages.GetOutput()
    if "ERROR" in text or errors:
        lines = [line.strip() for line in text.splitlines() if line.strip() and "ERROR" not in line]
        detail = " ".join(dict.fromkeys(lines + errors))[:300]  # each message once
        raise ValueError(f"{where}: {what}: {detail}")


def _leaves(data):
    """`[(name, data set)]` of a composite data set's non-empty leaves."""
    from vtkmodules.vtkCommonDataModel import vtkCompositeDataSet, vtkDataSet

    out = []
    it = data.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        leaf = it.GetCurrentDataObject()
        meta = it.GetCurrentMetaData() if it.HasCurrentMetaData() else None
        name = (
            meta.Get(vtkCompositeDataSet.NAME())
            if meta is not None and meta.Has(vtkCompositeDataSet.NAME())
            else f"block {len(out)}"
        )
        if isinstance(leaf, vtkDataSet) and leaf.GetNumberOfCells() > 0:
            out.append((name, leaf))
        it.GoToNextItem()
    return out


def _cell_type_utilities():
    """VTK's cell-type helpers: `vtkCellTypeUtilities` from VTK 9.6, `vtkCellTypes` before."""
    from vtkmodules.vtkCommonDataModel import vtkCellTypes, vtkCellTypeUtilities

    return vtkCellTypeUtilities if _vtk_version() >= 906 else vtkCellTypes


def _vtk_version() -> int:
    from vtkmodules.vtkCommonCore import vtkVersion

    return vtkVersion.GetVTKMajorVersion() * 100 + vtkVersion.GetVTKMinorVersion()


def cell_type_ids(data) -> np.ndarray:
    """`(C,)` VTK type id of each cell of an unstructured grid (the accessor was renamed in VTK 9.6)."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    return np.asarray(
        vtk_to_numpy(data.GetCellTypes() if _vtk_version() >= 906 else data.GetCellTypesArray()), np.int64
    )


def cell_type_name(cell_type: int) -> str:
    """VTK's class name of a cell type id (`vtkQuadraticTetra`)."""
    return _cell_type_utilities().GetClassNameFromTypeId(int(cell_type))


def cell_dimension(data) -> int:
    """The largest dimension (0-3) of `data`'s cells."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkUnstructuredGrid

    if isinstance(data, vtkUnstructuredGrid):
        types = vtk_to_numpy(data.GetDistinctCellTypesArray())
    else:
        types = [data.GetCellType(0)]
    return max(_cell_type_utilities().GetDimension(int(t)) for t in types)


def _array_names(data) -> set[str]:
    return {data.GetPointData().GetArrayName(i) for i in range(data.GetPointData().GetNumberOfArrays())} | {
        data.GetCellData().GetArrayName(i) for i in range(data.GetCellData().GetNumberOfArrays())
    }


def joined(data):
    """`data` with its coincident points (exactly equal coordinates) joined into one."""
    from vtkmodules.vtkFiltersCore import vtkStaticCleanUnstructuredGrid

    clean = vtkStaticCleanUnstructuredGrid()
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
    from vtkmodules.vtkFiltersCore import vtkAppendFilter

    if not data.IsA("vtkCompositeDataSet"):
        return data
    leaves = _leaves(data)
    if not leaves:
        raise ValueError(f"{where}: no block holds any cells")
    dims = [cell_dimension(leaf) for _, leaf in leaves]
    top = max(dims)
    for (name, leaf), d in zip(leaves, dims):
        if d < top:
            _log.info(
                "%s: skipping %r (%d cells of dimension %d, beside a %d-D domain)",
                where,
                name,
                leaf.GetNumberOfCells(),
                d,
                top,
            )
            if surfaces is not None:
                surfaces[name] = leaf
    kept = [(name, leaf) for (name, leaf), d in zip(leaves, dims) if d == top]
    if len(kept) == 1:
        return kept[0][1]
    names = [_array_names(leaf) for _, leaf in kept]
    every = set.union(*names)
    for (name, _), own in zip(kept, names):
        if own != every:
            raise ValueError(
                f"{where}: its blocks hold different arrays: {name!r} lacks {sorted(every - own)} (has "
                f"{sorted(own)}); give every block the same variables"
            )
    append = vtkAppendFilter()
    append.MergePointsOn()
    append.SetTolerance(0.0)
    for _, leaf in kept:
        append.AddInputData(leaf)
    append.Update()
    out = append.GetOutput()
    total = sum(leaf.GetNumberOfPoints() for _, leaf in kept)
    if out.GetNumberOfPoints() == total:
        raise ValueError(
            f"{where}: its {len(kept)} blocks {[n for n, _ in kept]} share no points, so no particle "
            "could cross between them; give blocks that meet on common nodes"
        )
    _log.info(
        "%s: %d blocks merged into one domain (%d cells, %d shared points joined)",
        where,
        len(kept),
        out.GetNumberOfCells(),
        total - out.GetNumberOfPoints(),
    )
    return out
