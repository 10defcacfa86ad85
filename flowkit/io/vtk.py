"""Writing results for ParaView with the `vtk` package."""

from pathlib import Path

import numpy as np


def write_vti(path, arrays: dict, origin, spacing, time: float | None = None) -> Path:
    """Write point data on a regular grid as a `.vti` (`vtkImageData`, compressed XML).

    `arrays` maps names to `(nx, ny[, nz])` scalars or `(nx, ny[, nz], C)` vectors on the same
    grid; `origin` and `spacing` have one entry per axis (a 2-D grid is written at z = 0);
    `time` is stored as `TimeValue` field data, as ParaView does.
    """
    import vtk
    from vtk.util.numpy_support import numpy_to_vtk

    path = Path(path)
    dim = len(origin)
    if dim not in (2, 3) or len(spacing) != dim:
        raise ValueError(f"write_vti: origin and spacing need 2 or 3 entries each, got {origin} and {spacing}")
    shape = np.asarray(next(iter(arrays.values()))).shape[:dim]
    image = vtk.vtkImageData()
    image.SetDimensions(*(list(shape) + [1] * (3 - dim)))
    image.SetOrigin(*(list(map(float, origin)) + [0.0] * (3 - dim)))
    image.SetSpacing(*(list(map(float, spacing)) + [1.0] * (3 - dim)))
    for name, values in arrays.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape[:dim] != shape:
            raise ValueError(f"write_vti: array {name!r} has shape {values.shape}, expected {shape} (+ components)")
        components = values.reshape(shape + (-1,))
        # VTK orders points with x fastest: reverse the spatial axes before flattening
        flat = np.ascontiguousarray(np.transpose(components, tuple(range(dim))[::-1] + (dim,)).reshape(-1, components.shape[-1]))
        array = numpy_to_vtk(flat if flat.shape[1] > 1 else flat[:, 0], deep=True)
        array.SetName(name)
        image.GetPointData().AddArray(array)
    if time is not None:
        stamp = vtk.vtkDoubleArray()
        stamp.SetName("TimeValue")
        stamp.InsertNextValue(float(time))
        image.GetFieldData().AddArray(stamp)
    writer = vtk.vtkXMLImageDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    if writer.Write() != 1:
        raise OSError(f"vtk could not write {path}")
    return path


def read_vti_arrays(path) -> dict:
    """Point arrays of a `.vti` file as `(nx, ny[, nz][, C])` NumPy arrays (x first), for checks."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    reader = vtk.vtkXMLImageDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    image = reader.GetOutput()
    dims = [d for d in image.GetDimensions() if d > 1]
    data = image.GetPointData()
    out = {}
    for i in range(data.GetNumberOfArrays()):
        values = vtk_to_numpy(data.GetArray(i))
        values = values.reshape(tuple(dims[::-1]) + values.shape[1:])
        out[data.GetArrayName(i)] = np.transpose(values, tuple(range(len(dims)))[::-1] + tuple(range(len(dims), values.ndim)))
    return out


def _polydata(points, point_arrays: dict, lines=None):
    import vtk
    from vtk.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray

    poly = vtk.vtkPolyData()
    pts = np.asarray(points, dtype=np.float64)
    if pts.shape[1] == 2:
        pts = np.concatenate([pts, np.zeros((len(pts), 1))], axis=1)
    vtk_points = vtk.vtkPoints()
    vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(pts), deep=True))
    poly.SetPoints(vtk_points)
    cells = vtk.vtkCellArray()
    if lines is None:  # one vertex per point
        offsets = np.arange(len(pts) + 1, dtype=np.int64)
        connectivity = np.arange(len(pts), dtype=np.int64)
    else:
        offsets, connectivity = lines
    cells.SetData(numpy_to_vtkIdTypeArray(np.ascontiguousarray(offsets, dtype=np.int64), deep=True), numpy_to_vtkIdTypeArray(np.ascontiguousarray(connectivity, dtype=np.int64), deep=True))
    if lines is None:
        poly.SetVerts(cells)
    else:
        poly.SetLines(cells)
    for name, values in point_arrays.items():
        values = np.ascontiguousarray(values)
        if values.ndim == 2 and values.shape[1] == 2:  # 2-D vectors as 3-D for ParaView glyphs
            values = np.concatenate([values, np.zeros((len(values), 1), values.dtype)], axis=1)
        array = numpy_to_vtk(values, deep=True)
        array.SetName(name)
        poly.GetPointData().AddArray(array)
    return poly


def _write_polydata(poly, path: Path) -> Path:
    import vtk

    writer = vtk.vtkXMLPolyDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(poly)
    writer.SetDataModeToAppended()
    writer.SetCompressorTypeToZLib()
    if writer.Write() != 1:
        raise OSError(f"vtk could not write {path}")
    return path


def write_pathlines_vtp(traj, path) -> Path:
    """One polyline per particle through all its saved positions (`.vtp`, for ParaView).

    Point arrays: `time`, `particle_id`, `status` (a stopped particle's line ends in repeated
    points with its stop status; threshold on `status == 0` to see only active motion), and
    `velocity` when recorded.
    """
    positions = np.asarray(traj.positions)
    n_frames, n, dim = positions.shape
    points = np.swapaxes(positions, 0, 1).reshape(-1, dim)  # particle-major: each line contiguous
    arrays = {
        "time": np.tile(np.asarray(traj.times, dtype=np.float64), n),
        "particle_id": np.repeat(np.arange(n, dtype=np.int64), n_frames),
        "status": np.swapaxes(np.asarray(traj.status), 0, 1).reshape(-1).astype(np.int32),
    }
    if traj.velocities is not None:
        arrays["velocity"] = np.swapaxes(np.asarray(traj.velocities), 0, 1).reshape(-1, dim)
    offsets = np.arange(n + 1, dtype=np.int64) * n_frames
    return _write_polydata(_polydata(points, arrays, lines=(offsets, np.arange(n * n_frames, dtype=np.int64))), Path(path))


def write_particle_clouds_pvd(traj, path) -> Path:
    """A `.pvd` collection of one `.vtp` particle cloud per saved time (for animation in ParaView).

    The clouds go to a folder named like the `.pvd` (ParaView's own layout), each with point
    arrays `particle_id`, `status` (and `velocity` when recorded).
    """
    path = Path(path)
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    n = traj.positions.shape[1]
    files = []
    for k in range(len(traj.times)):
        arrays = {"particle_id": np.arange(n, dtype=np.int64), "status": np.asarray(traj.status[k]).astype(np.int32)}
        if traj.velocities is not None:
            arrays["velocity"] = np.asarray(traj.velocities[k])
        files.append(_write_polydata(_polydata(np.asarray(traj.positions[k]), arrays), folder / f"{folder.name}_0_{k}.vtp"))
    return write_pvd(path, files, np.asarray(traj.times, dtype=np.float64))


def write_pvd(path, files, times) -> Path:
    """A ParaView `.pvd` collection listing `files` (paths) at `times`, with paths relative to it."""
    import os
    import xml.etree.ElementTree as ET

    path = Path(path)
    collection = ET.Element("VTKFile", type="Collection", version="1.0", byte_order="LittleEndian")
    datasets = ET.SubElement(collection, "Collection")
    for file, t in zip(files, times):
        ET.SubElement(datasets, "DataSet", timestep=repr(float(t)), part="0", file=os.path.relpath(file, path.parent))
    ET.ElementTree(collection).write(path, xml_declaration=True)
    return path


_XML_SUFFIXES = {".vti", ".vtr", ".vts", ".vtu", ".vtp", ".pvti", ".pvtr", ".pvts", ".pvtu", ".vtm"}
_VELOCITY_NAMES = ("velocity", "u", "vel", "velocities", "v", "uvw", "flow")


def _read_dataset(path: Path):
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
    try:
        reader.SetFileName(str(path))
        reader.Update()
    finally:
        vtk.vtkOutputWindow.SetInstance(previous)
    text = messages.GetOutput()
    data = reader.GetOutput()
    if "ERROR" in text or data is None:
        detail = " ".join(line.strip() for line in text.splitlines() if line.strip() and "ERROR" not in line)[:300]
        raise ValueError(f"{path}: VTK could not read this file (truncated or corrupt?): {detail or 'no data returned'}")
    return data


def _vector_arrays(data, path: Path, velocity: str | None):
    """The chosen velocity array as (n_points, C) float64 and its name (point data; cell data
    converted to points with VTK's `vtkCellDataToPointData`, which averages the cells around a point)."""
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
            return _vector_arrays(data, path, cell_vectors[0])
        else:
            raise ValueError(f"{path}: several vector arrays {vectors}, none named like a velocity; pass velocity=NAME")
    return np.asarray(vtk_to_numpy(source.GetArray(name)), dtype=np.float64).reshape(data.GetNumberOfPoints(), -1), name


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
    raise ValueError(
        f"{path}: holds a {data.GetClassName()}; this version of flowkit reads image data (.vti, legacy "
        "STRUCTURED_POINTS) and rectilinear grids (.vtr, legacy RECTILINEAR_GRID) into a GridField; "
        "unstructured and curvilinear meshes (MeshField) are not available yet"
    )


def _grid_slice(path: Path, velocity, allow_nonfinite):
    """(axes of the non-singleton dimensions, values (n_1, ..., n_d, d), velocity name, time or None)."""
    data = _read_dataset(path)
    if data.GetNumberOfPoints() == 0:
        raise ValueError(f"{path}: the data set is empty (0 points)")
    axes = _grid_axes(data, path)
    values, name = _vector_arrays(data, path, velocity)
    dims = [len(a) for a in axes]
    keep = [i for i in range(3) if dims[i] > 1]
    if values.shape[1] == 2 and len(keep) == 3:
        raise ValueError(f"{path}: velocity {name!r} has 2 components on a 3-D grid; a 3-D field needs 3")
    values = values.reshape(dims[2], dims[1], dims[0], -1).transpose(2, 1, 0, 3)  # VTK: x fastest
    if values.shape[-1] == 3 and len(keep) == 2:
        dropped = ({0, 1, 2} - set(keep)).pop()
        if np.nanmax(np.abs(values[..., dropped])) > 1e-12 * max(1.0, np.nanmax(np.abs(values))):
            raise ValueError(f"{path}: a 2-D grid whose velocity {name!r} has a non-zero component along its flat axis {'xyz'[dropped]}")
    values = values.reshape([dims[i] for i in keep] + [values.shape[-1]])[..., keep] if len(keep) < 3 else values
    bad = ~np.all(np.isfinite(values), axis=-1)
    if bad.any() and not allow_nonfinite:
        ids = np.argwhere(bad)[:5].tolist()
        raise ValueError(f"{path}: velocity {name!r} has {int(bad.sum())} non-finite points (first grid indices {ids}); pass allow_nonfinite=True to keep them (particles reaching them get status NONFINITE)")
    field_data = data.GetFieldData()
    time_array = field_data.GetArray("TimeValue") if field_data is not None else None
    time = float(time_array.GetTuple1(0)) if time_array is not None else None
    return [axes[i] for i in keep], values, name, time


def _series(path):
    """[(file, time or None)] for a .pvd, a glob pattern, a list of files or one file."""
    import glob
    import xml.etree.ElementTree as ET

    if isinstance(path, (list, tuple)):
        return [(Path(p), None) for p in path]
    path = Path(path)
    if path.suffix.lower() == ".pvd":
        if not path.exists():
            raise FileNotFoundError(f"collection {path} does not exist")
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as err:
            raise ValueError(f"{path}: not a valid .pvd collection ({err})") from None
        entries = root.findall("./Collection/DataSet")
        if not entries:
            raise ValueError(f"{path}: the collection lists no DataSet entries")
        parts = {e.get("part", "0") for e in entries}
        if len(parts) > 1:
            raise ValueError(f"{path}: {len(parts)} parts per time step; multi-part grids are not supported (merge them first)")
        series = sorted(((path.parent / e.get("file"), float(e.get("timestep", "nan"))) for e in entries), key=lambda item: item[1])
        missing = [str(f) for f, _ in series if not f.exists()]
        if missing:
            raise FileNotFoundError(f"{path}: {len(missing)} listed file(s) do not exist: {missing}")
        return series
    if any(ch in str(path) for ch in "*?["):
        files = sorted(glob.glob(str(path)))
        if not files:
            raise FileNotFoundError(f"no files match {path}")
        return [(Path(f), None) for f in files]
    return [(path, None)]


def read_vtk(path, velocity: str | None = None, times=None, *, allow_nonfinite: bool = False, dtype="float32", interpolation: str = "linear", periodic=False):
    """A field from VTK files as ParaView writes them, read with the `vtk` package.

    **Arguments:**

    - `path`: one file (`.vti`, `.vtr`, legacy `.vtk`), a `.pvd` collection (times from its
      `timestep` attributes, possibly non-uniform), a glob pattern or a list of files (times from
      each file's `TimeValue` field data, else from `times=`, else an error — never file indices).
    - `velocity`: the array to use; by default the vector point array named like a velocity
      (`velocity`, `U`, `u`, `vel`, ... case-insensitive) or the only vector array. Cell-data-only
      velocity is converted to points by `vtkCellDataToPointData` (the mean of the cells around
      each point). The chosen name is logged.
    - `allow_nonfinite`: keep NaN/Inf values (otherwise an error says how many and where).

    **Returns:** a `GridField` (steady for one file, else a time series). Grids with one point
    along an axis become 2-D (their velocity component along that axis must be zero).

    **Raises:** `FileNotFoundError` for missing files (also those a `.pvd` lists), `ValueError`
    naming the file for truncated/corrupt files, empty data, no or ambiguous vector arrays,
    2-component velocities on 3-D grids, non-finite values, geometry that changes between steps,
    missing times, and unstructured meshes (not supported by this version).
    """
    import logging

    from ..fields.grid import GridField

    series = _series(path)
    slices = [(file,) + _grid_slice(file, velocity, allow_nonfinite) + (t,) for file, t in series]
    first_file, axes, _, name, _, _ = slices[0]
    logging.getLogger("flowkit").info("read_vtk: velocity array %r from %d file(s) starting %s", name, len(slices), first_file)
    for file, other_axes, values, _, _, _ in slices[1:]:
        if len(other_axes) != len(axes) or any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(axes, other_axes)):
            raise ValueError(f"{file}: its grid ({[len(a) for a in other_axes]} points) differs from {first_file} ({[len(a) for a in axes]}); moving or remeshed grids are not supported")
    if len(slices) == 1:
        return GridField(slices[0][2], axes, periodic=periodic, interpolation=interpolation, dtype=dtype)
    file_times = [s[5] if s[5] is not None else s[4] for s in slices]
    if any(t is None or not np.isfinite(t) for t in file_times):
        if times is None:
            raise ValueError(f"{path}: the files carry no times (no .pvd timestep, no TimeValue field data); pass times=[...] with one time per file")
        file_times = list(np.asarray(times, dtype=np.float64))
        if len(file_times) != len(slices):
            raise ValueError(f"times: {len(file_times)} values for {len(slices)} files")
    order = np.argsort(file_times)
    data = np.stack([slices[i][2] for i in order])
    return GridField(data, axes, times=np.asarray(file_times)[order], periodic=periodic, interpolation=interpolation, dtype=dtype)
