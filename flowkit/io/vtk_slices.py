"""One VTK file, read with the `vtk` package, into one time slice's arrays: a grid's axes and
values, or a mesh's topology (processed once per series) and point or cell arrays."""

from pathlib import Path

import numpy as np

from ..fields.cells import merge_cells

_XML_SUFFIXES = {".vti", ".vtr", ".vts", ".vtu", ".vtp", ".pvti", ".pvtr", ".pvts", ".pvtu", ".vtm"}
_VELOCITY_NAMES = ("velocity", "u", "vel", "velocities", "v", "uvw", "flow")


def read_dataset(path: Path):
    """Read one VTK file with the vtk package; VTK's own error text becomes a ValueError."""
    import vtk

    if not path.exists():
        raise FileNotFoundError(f"VTK file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".vtk":
        reader = vtk.vtkGenericDataObjectReader()
    elif suffix in _XML_SUFFIXES:
        reader = vtk.vtkXMLGenericDataObjectReader()
    else:
        raise ValueError(f"{path}: unsupported suffix {path.suffix!r}; expected .vtk, .pvd or one of {sorted(_XML_SUFFIXES)}")
    messages = vtk.vtkStringOutputWindow()
    previous = vtk.vtkOutputWindow.GetInstance()
    vtk.vtkOutputWindow.SetInstance(messages)
    verbosity = vtk.vtkLogger.GetCurrentVerbosityCutoff()
    vtk.vtkLogger.SetStderrVerbosity(vtk.vtkLogger.VERBOSITY_OFF)  # VTK's errors become ours, below
    try:
        reader.SetFileName(str(path))
        reader.Update()
    finally:
        vtk.vtkOutputWindow.SetInstance(previous)
        vtk.vtkLogger.SetStderrVerbosity(verbosity)
    text = messages.GetOutput()
    data = reader.GetOutput()
    if "ERROR" in text or data is None:
        detail = " ".join(line.strip() for line in text.splitlines() if line.strip() and "ERROR" not in line)[:300]
        raise ValueError(f"{path}: VTK could not read this file (truncated or corrupt?): {detail or 'no data returned'}")
    return data


def _vector_arrays(data, path: Path, velocity: str | None, keep_cells: bool = False):
    """`(values, name, on_cells)`: the chosen array as `(n_points, C)` float64 (point data; cell
    data converted to points with VTK's `vtkCellDataToPointData`, which averages the cells
    around a point), or with `keep_cells` cell data left per cell, `(n_cells, C)`, `on_cells` true."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    def listing(attributes):
        return {attributes.GetArrayName(i): attributes.GetArray(i).GetNumberOfComponents() for i in range(attributes.GetNumberOfArrays())}

    point_arrays, cell_arrays = listing(data.GetPointData()), listing(data.GetCellData())
    source = data.GetPointData()
    if velocity is not None:
        if velocity not in point_arrays:
            if velocity not in cell_arrays:
                raise ValueError(f"{path}: no array named {velocity!r}; point arrays {point_arrays}, cell arrays {cell_arrays} (name: components)")
            if keep_cells:
                return np.asarray(vtk_to_numpy(data.GetCellData().GetArray(velocity)), dtype=np.float64).reshape(data.GetNumberOfCells(), -1), velocity, True
            converter = vtk.vtkCellDataToPointData()
            converter.SetInputData(data)
            converter.Update()
            source = converter.GetOutput().GetPointData()
        name = velocity
    else:
        vectors = [n for n, c in point_arrays.items() if c in (2, 3)]
        preferred = [n for key in _VELOCITY_NAMES for n in vectors if n.lower() == key]
        if preferred:
            name = preferred[0]
        elif len(vectors) == 1:
            name = vectors[0]
        elif not vectors:
            cell_vectors = [n for n, c in cell_arrays.items() if c in (2, 3)]
            if len(cell_vectors) != 1:
                raise ValueError(f"{path}: no velocity-like vector array; point arrays {point_arrays}, cell arrays {cell_arrays} (name: components). Pass velocity=NAME")
            return _vector_arrays(data, path, cell_vectors[0], keep_cells)
        else:
            raise ValueError(f"{path}: several vector arrays {vectors}, none named like a velocity; pass velocity=NAME")
    return np.asarray(vtk_to_numpy(source.GetArray(name)), dtype=np.float64).reshape(data.GetNumberOfPoints(), -1), name, False


def _grid_axes(data, path: Path):
    """Per-axis node coordinates `[x, y, z]` of image or rectilinear data, all three axes."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    if isinstance(data, vtk.vtkImageData):
        dims = data.GetDimensions()
        direction = np.array([data.GetDirectionMatrix().GetElement(i, j) for i in range(3) for j in range(3)]).reshape(3, 3)
        if not np.allclose(direction, np.eye(3)):
            raise ValueError(f"{path}: image data with a rotated Direction matrix is not supported (got {direction.tolist()})")
        origin, spacing = data.GetOrigin(), data.GetSpacing()
        return [origin[i] + spacing[i] * np.arange(dims[i]) for i in range(3)]
    if isinstance(data, vtk.vtkRectilinearGrid):
        return [np.asarray(vtk_to_numpy(c), dtype=np.float64) for c in (data.GetXCoordinates(), data.GetYCoordinates(), data.GetZCoordinates())]
    raise TypeError(f"{path}: {data.GetClassName()} is neither image nor rectilinear data")


def is_grid(data) -> bool:
    import vtk

    return isinstance(data, (vtk.vtkImageData, vtk.vtkRectilinearGrid))


def file_time(data):
    field_data = data.GetFieldData()
    time_array = field_data.GetArray("TimeValue") if field_data is not None else None
    return float(time_array.GetTuple1(0)) if time_array is not None else None


def _check_velocity(values, name, path: Path, dim: int, where: str):
    """Velocity rows with `dim` components: 2 in 3-D is an error, a zero third one in 2-D is dropped."""
    if values.shape[1] < dim:
        raise ValueError(f"{path}: velocity {name!r} has {values.shape[1]} components on a {dim}-D {where}; a {dim}-D field needs {dim}")
    return values


def _check_finite(values, name, path: Path, allow_nonfinite: bool, locations) -> None:
    bad = ~np.all(np.isfinite(values), axis=-1)
    if bad.any() and not allow_nonfinite:
        raise ValueError(f"{path}: velocity {name!r} has {int(bad.sum())} non-finite points ({locations(bad)}); pass allow_nonfinite=True to keep them (particles reaching them get status NONFINITE)")


def grid_slice(path: Path, data, velocity, allow_nonfinite) -> dict:
    """A dict with the axes of the non-singleton dimensions, values `(n_1, ..., n_d, d)`, the
    velocity's name and the file's time (or None) of one grid file."""
    if data.GetNumberOfPoints() == 0:
        raise ValueError(f"{path}: the data set is empty (0 points)")
    axes = _grid_axes(data, path)
    values, name, _ = _vector_arrays(data, path, velocity)
    dims = [len(a) for a in axes]
    keep = [i for i in range(3) if dims[i] > 1]
    _check_velocity(values, name, path, len(keep), "grid")
    values = values.reshape(dims[2], dims[1], dims[0], -1).transpose(2, 1, 0, 3)  # VTK: x fastest
    if values.shape[-1] == 3 and len(keep) == 2:
        dropped = ({0, 1, 2} - set(keep)).pop()
        if np.nanmax(np.abs(values[..., dropped])) > 1e-12 * max(1.0, np.nanmax(np.abs(values))):
            raise ValueError(f"{path}: a 2-D grid whose velocity {name!r} has a non-zero component along its flat axis {'xyz'[dropped]}")
    values = values.reshape([dims[i] for i in keep] + [values.shape[-1]])[..., keep] if len(keep) < 3 else values
    _check_finite(values, name, path, allow_nonfinite, lambda bad: f"first grid indices {np.argwhere(bad)[:5].tolist()}")
    return dict(axes=[axes[i] for i in keep], values=values, name=name, time=file_time(data))


_LOWER_DIMENSIONAL = {1, 2, 3, 4}  # vertex, poly-vertex, line, poly-line: no area or volume
_SURFACE = {5, 6, 7, 8, 9}  # triangle, strip, polygon, pixel, quad: boundary patches of a volume mesh


def mesh_slice(path: Path, data, velocity, allow_nonfinite, sample, cell_data: str = "points"):
    """A dict with points, cells, cell_types, values, samples, name, time of one mesh file."""
    import logging

    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    from ..fields import cells as _cells

    if not isinstance(data, vtk.vtkDataSet):
        raise ValueError(f"{path}: holds a {data.GetClassName()} (a composite of several data sets); save a single merged data set (ParaView: Merge Blocks) or list the pieces in a .pvtu")
    if data.GetNumberOfPoints() == 0 or data.GetNumberOfCells() == 0:
        raise ValueError(f"{path}: the mesh is empty ({data.GetNumberOfPoints()} points, {data.GetNumberOfCells()} cells)")
    signature = _topology_signature(data)
    data = _as_unstructured(path, data)
    points = np.asarray(vtk_to_numpy(data.GetPoints().GetData()), dtype=np.float64)
    cell_array = data.GetCells()
    offsets = np.asarray(vtk_to_numpy(cell_array.GetOffsetsArray()), dtype=np.int64)
    connectivity = np.asarray(vtk_to_numpy(cell_array.GetConnectivityArray()), dtype=np.int64)
    version = vtk.vtkVersion.GetVTKMajorVersion() * 100 + vtk.vtkVersion.GetVTKMinorVersion()
    types_array = data.GetCellTypes() if version >= 906 else data.GetCellTypesArray()  # renamed in VTK 9.6
    types = np.asarray(vtk_to_numpy(types_array), dtype=np.int64)
    present = {int(t): int(c) for t, c in zip(*np.unique(types, return_counts=True))}
    name_of = (vtk.vtkCellTypeUtilities if version >= 906 else vtk.vtkCellTypes).GetClassNameFromTypeId
    volume = any(t in _cells.BY_VTK_TYPE and _cells.BY_VTK_TYPE[t].dim == 3 for t in present)
    ignored = {t: c for t, c in present.items() if t in _LOWER_DIMENSIONAL or (volume and t in _SURFACE)}
    unsupported = {t: c for t, c in present.items() if t not in ignored and t not in _cells.BY_VTK_TYPE}
    if unsupported:
        listing = ", ".join(f"{c} {name_of(t)} (type {t})" for t, c in unsupported.items())
        raise ValueError(
            f"{path}: unsupported cell types: {listing}. flowkit interpolates linear cells (tetra, hexahedron, wedge, pyramid, voxel; triangle, quad, pixel); linearise higher-order or polyhedral cells first (e.g. ParaView's Tessellate filter)"
        )
    if ignored:
        logging.getLogger("flowkit").warning("%s: ignoring %s (no volume to interpolate in)", path, ", ".join(f"{c} {name_of(t)}" for t, c in ignored.items()))
    blocks = []
    for t in sorted(set(present) - set(ignored)):
        rows = np.flatnonzero(types == t)
        width = _cells.BY_VTK_TYPE[t].nodes
        if np.any(offsets[rows + 1] - offsets[rows] != width):
            raise ValueError(f"{path}: {name_of(t)} cells must have {width} points each")
        blocks.append((t, connectivity[offsets[rows][:, None] + np.arange(width)]))
    cells, cell_types = merge_cells(blocks)
    dim = 3 if volume else 2
    if dim == 2:
        z = points[:, 2]
        if np.ptp(z) > 1e-9 * max(1.0, np.ptp(points[:, :2])):
            raise ValueError(f"{path}: a surface mesh (triangles/quads) that is not flat in z; flowkit reads 2-D meshes in the z = const plane only")
        points = points[:, :2]
    cell_order = np.concatenate([np.flatnonzero(types == t) for t, _ in blocks])
    topology = dict(points=points, cells=cells, cell_types=cell_types, cell_order=cell_order, signature=signature)
    return dict(topology, **_mesh_arrays(path, data, dict(topology, dim=dim), velocity, allow_nonfinite, sample, cell_data))


def _as_unstructured(path: Path, data):
    """`data` as an unstructured grid with explicit cells, points in the same order (for a
    .pvtu, the pieces' duplicate points on their shared boundaries joined)."""
    import vtk

    if not isinstance(data, vtk.vtkUnstructuredGrid):  # curvilinear grids, polygonal data: explicit cells
        append = vtk.vtkAppendFilter()
        append.AddInputData(data)
        append.Update()
        data = append.GetOutput()
    if path.suffix.lower() == ".pvtu":
        # the pieces duplicate the points on their shared boundaries: merge coincident points
        # (exactly equal coordinates) so that cells across pieces become neighbours
        clean = vtk.vtkStaticCleanUnstructuredGrid()
        clean.SetInputData(data)
        clean.SetTolerance(0.0)
        clean.Update()
        data = clean.GetOutput()
    return data


def _topology_signature(data) -> str:
    """A checksum of a data set's points and cells (CRC-32 of their bytes, with their sizes), to
    check that later files of a series hold the same mesh without processing their topology again."""
    import zlib

    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    arrays, sizes = [data.GetPoints().GetData()], [data.GetClassName(), str(data.GetNumberOfCells())]
    if isinstance(data, vtk.vtkUnstructuredGrid):
        arrays += [data.GetCells().GetOffsetsArray(), data.GetCells().GetConnectivityArray()]
    elif isinstance(data, vtk.vtkStructuredGrid):
        dims = [0, 0, 0]
        data.GetDimensions(dims)
        sizes.append(str(dims))
    crc = 0
    for array in arrays:
        raw = np.ascontiguousarray(vtk_to_numpy(array))
        crc = zlib.crc32(memoryview(raw).cast("B"), crc)
        sizes.append(f"{raw.dtype.str}{raw.shape}")
    return f"{crc:08x}:{':'.join(sizes)}"


def _mesh_arrays(path: Path, data, topology: dict, velocity, allow_nonfinite, sample, cell_data: str = "points") -> dict:
    """The time-dependent arrays of one mesh file (values, samples, name, time, on_cells), laid
    out on `topology` (the series' mesh, processed once from its first file)."""
    dim = topology["dim"]
    values, name, on_cells = _vector_arrays(data, path, velocity, keep_cells=cell_data == "constant")
    if on_cells:  # per-cell values of the cells kept, in the order of `cells`
        values = values[topology["cell_order"]]
    values = _check_velocity(values, name, path, dim, "mesh")
    if dim == 2 and values.shape[1] == 3:
        if np.nanmax(np.abs(values[:, 2]), initial=0) > 1e-12 * max(1.0, np.nanmax(np.abs(values))):
            raise ValueError(f"{path}: a 2-D mesh whose velocity {name!r} has a non-zero z component")
    values = values[:, :dim]
    _check_finite(values, name, path, allow_nonfinite, lambda bad: f"{'cell' if on_cells else 'point'} ids {np.flatnonzero(bad)[:10].tolist()}{' ...' if bad.sum() > 10 else ''}")
    samples = {}
    for key in sample or ():
        array, _, _ = _vector_arrays(data, path, key)
        samples[key] = array[:, 0] if array.shape[1] == 1 else array
    return dict(values=values, samples=samples, name=name, time=file_time(data), on_cells=on_cells)


def series_slice(file: Path, topology: dict, velocity=None, allow_nonfinite=False, sample=None, cell_data="points") -> dict:
    """One later file of a mesh series: its arrays and its topology's signature, the mesh itself
    not processed again (it must equal the first file's: `_VtkFiles` compares the signatures).
    Runs in reader threads."""
    data = read_dataset(file)
    if not is_mesh_data(data):
        raise ValueError(f"{file}: holds a {data.GetClassName()}, not a mesh like the first file of the series")
    signature = _topology_signature(data)
    out = dict(signature=signature, n_points=data.GetNumberOfPoints())
    if signature != topology["signature"] or out["n_points"] != topology["n_points"]:
        return out
    if file.suffix.lower() == ".pvtu":
        data = _as_unstructured(file, data)
    return dict(_mesh_arrays(file, data, topology, velocity, allow_nonfinite, sample, cell_data), **out)


def is_mesh_data(data) -> bool:
    import vtk

    return isinstance(data, vtk.vtkDataSet) and not is_grid(data)
