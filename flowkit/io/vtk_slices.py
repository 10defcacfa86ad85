"""One VTK file, read with the `vtk` package, into one time slice's arrays: a grid's axes and
values, or a mesh's topology (processed once per series) and point or cell arrays."""

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..fields.cells import merge_cells
from .formats import VTK, format_of
from .solvers import Step
from .vtk_arrays import vector_arrays
from .vtk_blocks import cell_type_ids, cell_type_name, joined, merged, vtk_errors
from .vtu_series import SharedMesh


@dataclasses.dataclass(frozen=True)
class Arrays:
    """What changes in time in one file: the velocity `values` (`(n_1, ..., n_d, d)` on a grid,
    `(P or C, d)` on a mesh), its array's `name`, the file's `time` (None: it has none), the
    `samples` arrays by name, and whether the values are per cell (`on_cells`)."""

    values: np.ndarray
    name: str
    time: float | None
    samples: dict = dataclasses.field(default_factory=dict)
    on_cells: bool = False


@dataclasses.dataclass(frozen=True)
class GridSlice:
    """One grid file: the axes of its non-singleton dimensions and its arrays."""

    axes: list
    arrays: Arrays


@dataclasses.dataclass(frozen=True)
class Remap:
    """How a series' first file became the mesh flowkit reads (`_as_unstructured`): the new
    `mesh`'s structure and, per new point and cell, the original one's index."""

    mesh: Any  # a vtkUnstructuredGrid
    point_map: np.ndarray
    cell_map: np.ndarray


@dataclasses.dataclass(frozen=True)
class SeriesMesh:
    """What a later file of a mesh series needs of the series' mesh, processed once from its
    `first` file: the dimension, the original point count and topology `signature` (which a
    later file must match), the order of the kept cells, the `remap` (None: none), and for a
    `.vtu` series its `shared` mesh (later files are then read without VTK's reader where they
    hold it byte for byte)."""

    first: str
    dim: int
    n_points: int
    signature: str
    cell_order: np.ndarray
    remap: Remap | None
    shared: SharedMesh | None = None


@dataclasses.dataclass(frozen=True)
class MeshSlice:
    """One mesh file: its points, cells (padded node ids in VTK's order) and their VTK types,
    what later files of its series need of it, and its arrays."""

    points: np.ndarray
    cells: np.ndarray
    cell_types: np.ndarray
    series: SeriesMesh
    arrays: Arrays


def read_dataset(path: Path | Step):
    """One data set, read with the vtk package: a VTK file, a solver's file (its only time step),
    or a `solvers.Step` of a solver's case; composites merged into one domain. VTK's own error
    text becomes a ValueError naming the file."""
    from vtkmodules.vtkIOLegacy import vtkGenericDataObjectReader
    from vtkmodules.vtkIOXML import vtkXMLGenericDataObjectReader, vtkXMLMultiBlockDataReader

    if isinstance(path, Step):
        return path.read()
    fmt = format_of(path)
    if not path.exists():
        raise FileNotFoundError(f"{'file' if fmt.make_reader else fmt.name + ' file'} {path} does not exist")
    if fmt.make_reader is not None:
        case = fmt.open_case(path)
        if len(case.times) > 1:
            raise ValueError(
                f"{path}: holds {len(case.times)} time steps; give it alone (not in a list or pattern) to "
                "read them as the series"
            )
        return case.dataset(0)
    if fmt is not VTK or path.suffix.lower() == ".pvd":
        raise ValueError(f"{path}: a {fmt.name} file among VTK files; give it alone")
    suffix = path.suffix.lower()
    reader = (
        vtkGenericDataObjectReader()
        if suffix == ".vtk"
        else vtkXMLMultiBlockDataReader()
        if suffix == ".vtmb"
        else vtkXMLGenericDataObjectReader()
    )
    with vtk_errors(path):
        reader.SetFileName(str(path))
        reader.Update()
    data = reader.GetOutput()
    if data is None:
        raise ValueError(f"{path}: VTK could not read this file (truncated or corrupt?): no data returned")
    return merged(data, path)


def _grid_axes(data, path: Path | Step):
    """Per-axis node coordinates `[x, y, z]` of image or rectilinear data, all three axes."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkImageData, vtkRectilinearGrid

    if isinstance(data, vtkImageData):
        dims = data.GetDimensions()
        direction = np.array([data.GetDirectionMatrix().GetElement(i, j) for i in range(3) for j in range(3)]).reshape(
            3, 3
        )
        if not np.allclose(direction, np.eye(3)):
            raise ValueError(
                f"{path}: image data with a rotated Direction matrix is not supported (got {direction.tolist()})"
            )
        origin, spacing = data.GetOrigin(), data.GetSpacing()
        return [origin[i] + spacing[i] * np.arange(dims[i]) for i in range(3)]
    if isinstance(data, vtkRectilinearGrid):
        return [
            np.asarray(vtk_to_numpy(c), dtype=np.float64)
            for c in (data.GetXCoordinates(), data.GetYCoordinates(), data.GetZCoordinates())
        ]
    raise TypeError(f"{path}: {data.GetClassName()} is neither image nor rectilinear data")


def is_grid(data) -> bool:
    from vtkmodules.vtkCommonDataModel import vtkImageData, vtkRectilinearGrid

    return isinstance(data, (vtkImageData, vtkRectilinearGrid))


def file_time(data):
    field_data = data.GetFieldData()
    time_array = field_data.GetArray("TimeValue") if field_data is not None else None
    return float(time_array.GetTuple1(0)) if time_array is not None else None


def _check_velocity(values, name, path: Path | Step, dim: int, where: str):
    """Velocity rows with `dim` components: 2 in 3-D is an error, a zero third one in 2-D is dropped."""
    if values.shape[1] < dim:
        raise ValueError(
            f"{path}: velocity {name!r} has {values.shape[1]} components on a {dim}-D {where}; a "
            f"{dim}-D field needs {dim}"
        )
    return values


def _check_finite(values, name, path: Path | Step, allow_nonfinite: bool, locations) -> None:
    bad = ~np.all(np.isfinite(values), axis=-1)
    if bad.any() and not allow_nonfinite:
        raise ValueError(
            f"{path}: velocity {name!r} has {int(bad.sum())} non-finite points ({locations(bad)}); "
            "pass allow_nonfinite=True to keep them (particles reaching them get status NONFINITE)"
        )


def grid_slice(path: Path | Step, data, velocity, allow_nonfinite: bool) -> GridSlice:
    """One grid file's axes and arrays."""
    if data.GetNumberOfPoints() == 0:
        raise ValueError(f"{path}: the data set is empty (0 points)")
    axes = _grid_axes(data, path)
    values, name, _ = vector_arrays(data, path, velocity)
    dims = [len(a) for a in axes]
    keep = [i for i in range(3) if dims[i] > 1]
    _check_velocity(values, name, path, len(keep), "grid")
    values = values.reshape(dims[2], dims[1], dims[0], -1).transpose(2, 1, 0, 3)  # VTK: x fastest
    if values.shape[-1] == 3 and len(keep) == 2:
        dropped = ({0, 1, 2} - set(keep)).pop()
        if np.nanmax(np.abs(values[..., dropped])) > 1e-12 * max(1.0, np.nanmax(np.abs(values))):
            raise ValueError(
                f"{path}: a 2-D grid whose velocity {name!r} has a non-zero component along its flat axis "
                f"{'xyz'[dropped]}"
            )
    values = values.reshape([dims[i] for i in keep] + [values.shape[-1]])[..., keep] if len(keep) < 3 else values
    _check_finite(
        values, name, path, allow_nonfinite, lambda bad: f"first grid indices {np.argwhere(bad)[:5].tolist()}"
    )
    return GridSlice([axes[i] for i in keep], Arrays(values, name, file_time(data)))


_LOWER_DIMENSIONAL = {1, 2, 3, 4}  # vertex, poly-vertex, line, poly-line: no area or volume
_SURFACE = {5, 6, 7, 8, 9}  # triangle, strip, polygon, pixel, quad: boundary patches of a volume mesh


def mesh_slice(
    path: Path | Step,
    data,
    velocity,
    allow_nonfinite: bool,
    sample,
    cell_data: str = "points",
    later_files: bool = False,
) -> MeshSlice:
    """The first (or only) file of a mesh series: its mesh, processed, and its arrays. With
    `later_files`, what they are read against (`SharedMesh`) is kept too."""
    import logging

    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkDataSet

    from ..fields import cells as _cells

    if not isinstance(data, vtkDataSet):
        raise ValueError(f"{path}: holds a {data.GetClassName()}, not a mesh")
    if data.GetNumberOfPoints() == 0 or data.GetNumberOfCells() == 0:
        raise ValueError(
            f"{path}: the mesh is empty ({data.GetNumberOfPoints()} points, {data.GetNumberOfCells()} cells)"
        )
    signature, n_points = _topology_signature(data), data.GetNumberOfPoints()
    data, remap = _as_unstructured(path, data)
    points = np.asarray(vtk_to_numpy(data.GetPoints().GetData()), dtype=np.float64)
    bad = ~np.isfinite(points).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{path}: {int(bad.sum())} of {len(points)} point coordinates are not finite (the first: point "
            f"{int(np.argmax(bad))})"
        )
    cell_array = data.GetCells()
    offsets = np.asarray(vtk_to_numpy(cell_array.GetOffsetsArray()), dtype=np.int64)
    connectivity = np.asarray(vtk_to_numpy(cell_array.GetConnectivityArray()), dtype=np.int64)
    types = cell_type_ids(data)
    present = {int(t): int(c) for t, c in zip(*np.unique(types, return_counts=True))}
    volume = any(t in _cells.BY_VTK_TYPE and _cells.BY_VTK_TYPE[t].dim == 3 for t in present)
    ignored = {t: c for t, c in present.items() if t in _LOWER_DIMENSIONAL or (volume and t in _SURFACE)}
    unsupported = {t: c for t, c in present.items() if t not in ignored and t not in _cells.BY_VTK_TYPE}
    if unsupported:
        listing = ", ".join(f"{c} {cell_type_name(t)} (type {t})" for t, c in unsupported.items())
        raise ValueError(
            f"{path}: unsupported cell types: {listing}. flowkit interpolates linear cells (tetra, "
            "hexahedron, wedge, pyramid, voxel; triangle, quad, pixel); linearise higher-order or "
            "polyhedral cells first (e.g. ParaView's Tessellate filter)"
        )
    if ignored:
        logging.getLogger("flowkit").warning(
            "%s: ignoring %s (no volume to interpolate in)",
            path,
            ", ".join(f"{c} {cell_type_name(t)}" for t, c in ignored.items()),
        )
    blocks = []
    for t in sorted(set(present) - set(ignored)):
        rows = np.flatnonzero(types == t)
        width = _cells.BY_VTK_TYPE[t].nodes
        if np.any(offsets[rows + 1] - offsets[rows] != width):
            raise ValueError(f"{path}: {cell_type_name(t)} cells must have {width} points each")
        whole = len(rows) == len(types) and offsets[0] == 0  # one kind: the connectivity as it is, in rows
        blocks.append(
            (t, connectivity.reshape(-1, width) if whole else connectivity[offsets[rows][:, None] + np.arange(width)])
        )
    cells, cell_types = merge_cells(blocks)
    dim = 3 if volume else 2
    if dim == 2:
        z = points[:, 2]
        if np.ptp(z) > 1e-9 * max(1.0, np.ptp(points[:, :2])):
            raise ValueError(
                f"{path}: a surface mesh (triangles/quads) that is not flat in z; flowkit reads 2-D "
                "meshes in the z = const plane only"
            )
        points = points[:, :2]
    cell_order = np.concatenate([np.flatnonzero(types == t) for t, _ in blocks])
    shared = SharedMesh.of(path, data) if later_files and remap is None else None
    series = SeriesMesh(str(path), dim, n_points, signature, cell_order, remap, shared)
    return MeshSlice(
        points,
        cells,
        cell_types,
        series,
        _mesh_arrays(path, data, series, velocity, allow_nonfinite, sample, cell_data),
    )


_POINT_ID, _CELL_ID = "flowkit original point id", "flowkit original cell id"


def _as_unstructured(path, data):
    """`(data, remap)`: `data` as an unstructured grid of linear cells. Curvilinear grids and
    polygonal data get explicit cells, points in the same order (`remap` None). Where the points
    or cells change, `remap` is `(mesh, point_map, cell_map)`, so that each later file of a series
    gets the same mesh by indexing its arrays (`remapped`) instead of going through this again:
    a .pvtu's pieces' duplicate points on their shared boundaries joined; polyhedra and
    higher-order cells decomposed into linear cells on their own nodes (VTK's
    `vtkDataSetTriangleFilter`), with a log line."""
    from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
    from vtkmodules.vtkCommonCore import VTK_ID_TYPE
    from vtkmodules.vtkCommonDataModel import vtkUnstructuredGrid
    from vtkmodules.vtkFiltersCore import vtkAppendFilter

    if not isinstance(data, vtkUnstructuredGrid):  # curvilinear grids, polygonal data: explicit cells
        append = vtkAppendFilter()
        append.AddInputData(data)
        append.Update()
        data = append.GetOutput()
    pieces = str(path).lower().endswith(".pvtu")
    odd = _nonlinear_types(data)
    if not pieces and not odd:
        return data, None
    tagged = data.NewInstance()
    tagged.ShallowCopy(data)
    for attributes, name, count in (
        (tagged.GetPointData(), _POINT_ID, data.GetNumberOfPoints()),
        (tagged.GetCellData(), _CELL_ID, data.GetNumberOfCells()),
    ):
        ids = numpy_to_vtk(np.arange(count), deep=True, array_type=VTK_ID_TYPE)
        ids.SetName(name)
        attributes.AddArray(ids)
    if pieces:
        # the pieces duplicate the points on their shared boundaries: merge coincident points
        # (exactly equal coordinates) so that cells across pieces become neighbours
        tagged = joined(tagged)
    if odd:
        tagged = _linearised(path, tagged, odd)
    point_map = np.asarray(vtk_to_numpy(tagged.GetPointData().GetArray(_POINT_ID)), np.int64).copy()
    cell_map = np.asarray(vtk_to_numpy(tagged.GetCellData().GetArray(_CELL_ID)), np.int64).copy()
    tagged.GetPointData().RemoveArray(_POINT_ID)
    tagged.GetCellData().RemoveArray(_CELL_ID)
    mesh = vtkUnstructuredGrid()
    mesh.CopyStructure(tagged)
    return tagged, Remap(mesh, point_map, cell_map)


def remapped(remap: Remap, data):
    """A later file's `data` on the mesh `_as_unstructured` made of the first file: its point and
    cell arrays indexed by the maps, its field data (the time) kept."""
    from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy

    mesh, point_map, cell_map = remap.mesh, remap.point_map, remap.cell_map
    out = mesh.NewInstance()
    out.CopyStructure(mesh)
    for source, target, rows in (
        (data.GetPointData(), out.GetPointData(), point_map),
        (data.GetCellData(), out.GetCellData(), cell_map),
    ):
        for i in range(source.GetNumberOfArrays()):
            array = source.GetArray(i)
            if array is None:  # not a numeric array
                continue
            values = vtk_to_numpy(array)
            copy = numpy_to_vtk(np.ascontiguousarray(values[rows]), deep=True, array_type=array.GetDataType())
            copy.SetName(array.GetName())
            target.AddArray(copy)
    out.GetFieldData().ShallowCopy(data.GetFieldData())
    return out


def _nonlinear_types(data) -> list[int]:
    """The VTK types of `data`'s cells that flowkit does not interpolate as they are: polyhedra
    and higher-order cells."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    from ..fields import cells as _cells

    distinct = vtk_to_numpy(data.GetDistinctCellTypesArray())
    return [
        int(t) for t in distinct if int(t) not in _cells.BY_VTK_TYPE and int(t) not in _LOWER_DIMENSIONAL | _SURFACE
    ]


def _linearised(path, data, odd: list[int]):
    """`data` with its cells of the types `odd` (polyhedral, quadratic, Lagrange, ...) split into
    linear simplices on their own nodes; linear cells kept as they are."""
    import logging

    from vtkmodules.vtkCommonCore import vtkIdList
    from vtkmodules.vtkFiltersCore import vtkAppendFilter, vtkExtractCells
    from vtkmodules.vtkFiltersGeneral import vtkDataSetTriangleFilter

    types = cell_type_ids(data)
    is_odd = np.isin(types, odd)

    def extract(rows):
        ids = vtkIdList()
        ids.SetNumberOfIds(len(rows))
        for k, row in enumerate(rows):
            ids.SetId(k, int(row))
        cut = vtkExtractCells()
        cut.SetInputData(data)
        cut.SetCellList(ids)
        cut.Update()
        return cut.GetOutput()

    split = vtkDataSetTriangleFilter()
    split.SetInputData(extract(np.flatnonzero(is_odd)))
    split.Update()
    append = vtkAppendFilter()
    append.MergePointsOn()
    append.SetTolerance(0.0)
    if not is_odd.all():
        append.AddInputData(extract(np.flatnonzero(~is_odd)))
    append.AddInputData(split.GetOutput())
    append.Update()
    counts = ", ".join(f"{int(np.sum(types == t))} {cell_type_name(t)}" for t in odd)
    logging.getLogger("flowkit").info(
        "%s: %s decomposed into %d linear cells on their own nodes (interpolation is linear on each)",
        path,
        counts,
        split.GetOutput().GetNumberOfCells(),
    )
    return append.GetOutput()


def _topology_signature(data) -> str:
    """A checksum of a data set's points and cells (CRC-32 of their bytes, with their sizes), to
    check that later files of a series hold the same mesh without processing their topology again."""
    import zlib

    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkStructuredGrid, vtkUnstructuredGrid

    arrays, sizes = [data.GetPoints().GetData()], [data.GetClassName(), str(data.GetNumberOfCells())]
    if isinstance(data, vtkUnstructuredGrid):
        arrays += [data.GetCells().GetOffsetsArray(), data.GetCells().GetConnectivityArray()]
    elif isinstance(data, vtkStructuredGrid):
        dims = [0, 0, 0]
        data.GetDimensions(dims)
        sizes.append(str(dims))
    crc = 0
    for array in arrays:
        raw = np.ascontiguousarray(vtk_to_numpy(array))
        crc = zlib.crc32(memoryview(raw).cast("B"), crc)
        sizes.append(f"{raw.dtype.str}{raw.shape}")
    return f"{crc:08x}:{':'.join(sizes)}"


def _mesh_arrays(
    path: Path | Step, data, series: SeriesMesh, velocity, allow_nonfinite, sample, cell_data: str = "points"
) -> Arrays:
    """The time-dependent arrays of one mesh file, laid out on the `series`' mesh."""
    dim = series.dim
    values, name, on_cells = vector_arrays(data, path, velocity, keep_cells=cell_data == "constant")
    if on_cells:  # per-cell values of the cells kept, in the order of `cells`
        values = values[series.cell_order]
    values = _check_velocity(values, name, path, dim, "mesh")
    if dim == 2 and values.shape[1] == 3:
        if np.nanmax(np.abs(values[:, 2]), initial=0) > 1e-12 * max(1.0, np.nanmax(np.abs(values))):
            raise ValueError(f"{path}: a 2-D mesh whose velocity {name!r} has a non-zero z component")
    values = values[:, :dim]
    _check_finite(
        values,
        name,
        path,
        allow_nonfinite,
        lambda bad: f"{'cell' if on_cells else 'point'} ids {_first_ids(bad)}",
    )
    samples = {}
    for key in sample or ():
        array, _, _ = vector_arrays(data, path, key)
        samples[key] = array[:, 0] if array.shape[1] == 1 else array
    return Arrays(values, name, file_time(data), samples, on_cells)


def _first_ids(bad) -> str:
    """The first ten indices where `bad` holds, for an error message."""
    return f"{np.flatnonzero(bad)[:10].tolist()}{' ...' if bad.sum() > 10 else ''}"


def series_slice(
    file: Path | Step, series: SeriesMesh, velocity=None, allow_nonfinite: bool = False, sample=None, cell_data="points"
) -> Arrays:
    """The arrays of a later file of a mesh series, its mesh not processed again: it must equal
    the first file's (same point count and topology signature). Runs in reader threads."""
    data = series.shared.read(file) if series.shared is not None and isinstance(file, Path) else None
    if data is not None:
        return _mesh_arrays(file, data, series, velocity, allow_nonfinite, sample, cell_data)
    data = read_dataset(file)
    if not is_mesh_data(data):
        raise ValueError(f"{file}: holds a {data.GetClassName()}, not a mesh like the first file of the series")
    if data.GetNumberOfPoints() != series.n_points:
        raise ValueError(
            f"{file}: {data.GetNumberOfPoints()} points, but {series.first} has {series.n_points}; "
            "the point count changes between time steps (moving or remeshed meshes are not "
            "supported)"
        )
    if _topology_signature(data) != series.signature:
        raise ValueError(
            f"{file}: its mesh differs from {series.first} (same point count, different coordinates "
            "or cells); moving or remeshed meshes are not supported"
        )
    if series.remap is not None:
        data = remapped(series.remap, data)
    return _mesh_arrays(file, data, series, velocity, allow_nonfinite, sample, cell_data)


def is_mesh_data(data) -> bool:
    from vtkmodules.vtkCommonDataModel import vtkDataSet

    return isinstance(data, vtkDataSet) and not is_grid(data)
