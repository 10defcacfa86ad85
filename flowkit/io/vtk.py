"""Writing results for ParaView with the `vtk` package."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from jaxtyping import ArrayLike

from .._custom_types import PathLike, PointsLike, TimesLike
from .._status import Status
from ..trajectory import WRITERS


def write_vti(path: PathLike, arrays: dict, origin: PointsLike, spacing: PointsLike, time: float | None = None) -> Path:
    """Write point data on a regular grid as a `.vti` (`vtkImageData`, compressed XML).

    `arrays` maps names to `(nx, ny[, nz])` scalars or `(nx, ny[, nz], C)` vectors on the same
    grid; `origin` and `spacing` have one entry per axis (a 2-D grid is written at z = 0);
    `time` is stored as `TimeValue` field data, as ParaView does.
    """
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkDoubleArray
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    path = Path(path)
    dim = len(origin)
    if dim not in (2, 3) or len(spacing) != dim:
        raise ValueError(f"write_vti: origin and spacing need 2 or 3 entries each, got {origin} and {spacing}")
    shape = np.asarray(next(iter(arrays.values()))).shape[:dim]
    image = vtkImageData()
    image.SetDimensions(*(list(shape) + [1] * (3 - dim)))
    image.SetOrigin(*(list(map(float, origin)) + [0.0] * (3 - dim)))
    image.SetSpacing(*(list(map(float, spacing)) + [1.0] * (3 - dim)))
    for name, values in arrays.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape[:dim] != shape:
            raise ValueError(f"write_vti: array {name!r} has shape {values.shape}, expected {shape} (+ components)")
        components = values.reshape(shape + (-1,))
        # VTK orders points with x fastest: reverse the spatial axes before flattening
        flat = np.ascontiguousarray(
            np.transpose(components, tuple(range(dim))[::-1] + (dim,)).reshape(-1, components.shape[-1])
        )
        array = numpy_to_vtk(flat if flat.shape[1] > 1 else flat[:, 0], deep=True)
        array.SetName(name)
        image.GetPointData().AddArray(array)
    if time is not None:
        stamp = vtkDoubleArray()
        stamp.SetName("TimeValue")
        stamp.InsertNextValue(float(time))
        image.GetFieldData().AddArray(stamp)
    return write_xml(vtkXMLImageDataWriter(), image, path)


def write_xml(writer, data, path: PathLike) -> Path:
    """Write `data` with one of VTK's XML `writer`s, whole or not at all (`atomic.written`),
    replacing `path`; a failure is one `OSError` naming `path` (a full disk by its errno)."""
    import errno

    from vtkmodules.vtkCommonMisc import vtkErrorCode

    from .._files import written

    with written(path, overwrite=True) as temporary:
        writer.SetFileName(str(temporary))
        writer.SetInputData(data)
        if writer.Write() != 1:
            full = writer.GetErrorCode() == vtkErrorCode.OutOfDiskSpaceError
            raise OSError(errno.ENOSPC if full else errno.EIO, f"vtk could not write {path}")
    return Path(path)


def read_vti_arrays(path: PathLike) -> dict:
    """Point arrays of a `.vti` file as `(nx, ny[, nz][, C])` NumPy arrays (x first), for checks."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader

    reader = vtkXMLImageDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    image = reader.GetOutput()
    dims = [d for d in image.GetDimensions() if d > 1]
    data = image.GetPointData()
    out = {}
    for i in range(data.GetNumberOfArrays()):
        values = vtk_to_numpy(data.GetArray(i))
        values = values.reshape(tuple(dims[::-1]) + values.shape[1:])
        out[data.GetArrayName(i)] = np.transpose(
            values, tuple(range(len(dims)))[::-1] + tuple(range(len(dims), values.ndim))
        )
    return out


def polydata(points: ArrayLike, point_arrays: dict, lines: tuple | None = None):
    from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData

    poly = vtkPolyData()
    pts = np.asarray(points, dtype=np.float64)
    if pts.shape[1] == 2:
        pts = np.concatenate([pts, np.zeros((len(pts), 1))], axis=1)
    vtk_points = vtkPoints()
    vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(pts), deep=True))
    poly.SetPoints(vtk_points)
    cells = vtkCellArray()
    if lines is None:  # one vertex per point
        offsets = np.arange(len(pts) + 1, dtype=np.int64)
        connectivity = np.arange(len(pts), dtype=np.int64)
    else:
        offsets, connectivity = lines
    cells.SetData(
        numpy_to_vtkIdTypeArray(np.ascontiguousarray(offsets, dtype=np.int64), deep=True),
        numpy_to_vtkIdTypeArray(np.ascontiguousarray(connectivity, dtype=np.int64), deep=True),
    )
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


def write_polydata(poly, path: Path) -> Path:
    from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

    writer = vtkXMLPolyDataWriter()
    writer.SetDataModeToAppended()
    writer.SetCompressorTypeToZLib()
    return write_xml(writer, poly, path)


def write_pathlines_vtp(traj, path: PathLike, spherical: bool = False) -> Path:
    """One polyline per path through its saved positions (`.vtp`, for ParaView).

    A path is a particle, or with inlets (`Trajectory.generation`) one life of a slot: a slot
    restarted on the inlet begins a new polyline, so no line jumps from the outlet back to the
    inlet (spare slots never released draw nothing). Point arrays: `time`, `particle_id`,
    `status` (a stopped particle's line ends in repeated points with its stop status; threshold
    on `status == 0` to see only active motion), `velocity` when recorded, and every sampled
    array (`Trajectory.samples`) under its name. On a sphere (`spherical`: lon, lat), a step
    across the dateline starts a new polyline, so none is drawn across the globe.
    """
    positions = np.asarray(traj.positions)
    n_frames, n, dim = positions.shape
    major = lambda a: np.swapaxes(np.asarray(a), 0, 1).reshape((n * n_frames,) + np.shape(a)[2:])  # noqa: E731  particle-major
    ids = major(traj.particle_id)
    status = major(traj.status).astype(np.int32)
    arrays = {"time": np.tile(np.asarray(traj.times, dtype=np.float64), n), "particle_id": ids, "status": status}
    if traj.velocities is not None:
        arrays["velocity"] = major(traj.velocities)
    for name, values in (traj.samples or {}).items():
        arrays[name] = major(values)
    for name, values in (traj.variables or {}).items():  # a particle model's: its velocity beside the fluid's
        arrays[f"particle_{name}"] = major(values)
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    keep = np.ones(n * n_frames, bool)
    if traj.generation is not None:  # drop lives that never started (spare slots still waiting)
        idle = np.maximum.reduceat((status != Status.NOT_RELEASED).astype(np.int8), starts) == 0
        keep = np.repeat(~idle, np.diff(np.append(starts, n * n_frames)))
        starts = (
            np.flatnonzero(np.concatenate([[True], ids[keep][1:] != ids[keep][:-1]]))
            if keep.any()
            else np.zeros(0, np.int64)
        )
    count = int(keep.sum())
    points = major(positions)[keep]
    if spherical:
        starts = np.union1d(starts, _dateline(points, starts))
    offsets = np.append(starts, count).astype(np.int64)
    arrays = {name: values[keep] for name, values in arrays.items()}
    return write_polydata(polydata(points, arrays, lines=(offsets, np.arange(count, dtype=np.int64))), Path(path))


def _dateline(points: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Indices of points whose longitude jumps by more than 180° from the point before along a
    line (the dateline crossed, positions wrapped): where a polyline must restart."""
    if len(points) < 2:
        return np.zeros(0, np.int64)
    jump = np.abs(np.diff(points[:, 0])) > 180.0
    jump[starts[starts > 0] - 1] = False  # already a line's first point
    return np.flatnonzero(jump) + 1


def write_particle_clouds_pvd(traj, path: PathLike, overwrite: bool = False) -> Path:
    """A `.pvd` collection of one `.vtp` particle cloud per saved time (for animation in ParaView).

    The clouds go to a folder named like the `.pvd` (ParaView's own layout), each with point
    arrays `particle_id`, `status`, `age` (time since release), `velocity` when recorded, the
    samples and the particle model's variables. A cloud holds the particles moving at its time
    and those that stopped since the frame before, where they stopped (left, beached,
    absorbed); particles not yet released, or stopped earlier, are not drawn again. Folder and collection are
    written under temporary names and renamed when whole; existing ones are refused unless
    `overwrite`.
    """
    from .._files import refuse_existing, written

    path = Path(path)
    folder = path.with_suffix("")
    refuse_existing(path, overwrite)  # the path asked for is named first, before its folder
    refuse_existing(folder, overwrite, f" (the clouds of {path.name})")
    with written(path, overwrite) as collection, written(folder, overwrite) as clouds:
        clouds.mkdir()
        files = []
        status = np.asarray(traj.status)
        for k in range(len(traj.times)):
            before = status[k - 1] if k else np.full_like(status[0], Status.ACTIVE)
            shown = (status[k] == Status.ACTIVE) | (
                (status[k] != Status.NOT_RELEASED) & (before <= Status.NOT_RELEASED)
            )
            arrays = {
                "particle_id": np.asarray(traj.particle_id[k]),
                "status": np.asarray(traj.status[k]).astype(np.int32),
            }
            arrays["age"] = np.maximum(np.abs(float(traj.times[k]) - np.asarray(traj.t_release, np.float64)), 0.0) * (
                np.asarray(traj.status[k]) != Status.NOT_RELEASED
            )
            if traj.velocities is not None:
                arrays["velocity"] = np.asarray(traj.velocities[k])
            for name, values in (traj.samples or {}).items():
                arrays[name] = np.asarray(values[k])
            for name, values in (traj.variables or {}).items():
                arrays[f"particle_{name}"] = np.asarray(values[k])
            arrays = {key: value[shown] for key, value in arrays.items()}
            name = f"{folder.name}_0_{k}.vtp"
            write_polydata(polydata(np.asarray(traj.positions[k])[shown], arrays), clouds / name)
            files.append(folder / name)  # where it will be once the folder is renamed
        write_pvd(collection, files, np.asarray(traj.times), relative_to=path.parent)
    return path


def write_pvd(path: PathLike, files: Sequence[PathLike], times: TimesLike, relative_to: PathLike | None = None) -> Path:
    """A ParaView `.pvd` collection listing `files` (paths) at `times`, with paths relative to
    its folder (or to `relative_to`, where it will be moved). Each time is written as the
    shortest decimal of its own precision (a float32 0.05 as `0.05`, not `0.05000000074505806`)."""
    import os
    import xml.etree.ElementTree as ET

    path = Path(path)
    collection = ET.Element("VTKFile", type="Collection", version="1.0", byte_order="LittleEndian")
    datasets = ET.SubElement(collection, "Collection")
    for file, t in zip(files, np.asarray(times)):
        ET.SubElement(
            datasets,
            "DataSet",
            timestep=np.format_float_positional(t, unique=True, trim="0"),
            part="0",
            file=os.path.relpath(file, path.parent if relative_to is None else relative_to),
        )
    ET.ElementTree(collection).write(path, xml_declaration=True)
    return path


def unstructured_grid(points, cells, cell_types, point_arrays: dict | None = None, time: float | None = None):
    """A `vtkUnstructuredGrid` from `(P, 2|3)` points, `(C, k)` node ids (-1 padded for mixed
    meshes) and `(C,)` VTK cell type ids, with point arrays `{name: (P[, c])}`."""
    from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
    from vtkmodules.vtkCommonCore import VTK_UNSIGNED_CHAR, vtkDoubleArray, vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkUnstructuredGrid

    points = np.asarray(points, dtype=np.float64)
    if points.shape[1] == 2:
        points = np.concatenate([points, np.zeros((len(points), 1))], axis=1)
    cells = np.asarray(cells, dtype=np.int64)
    sizes = np.sum(cells >= 0, axis=1)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    connectivity = cells[cells >= 0]
    grid = vtkUnstructuredGrid()
    vtk_points = vtkPoints()
    vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(points), deep=True))
    grid.SetPoints(vtk_points)
    cell_array = vtkCellArray()
    cell_array.SetData(
        numpy_to_vtkIdTypeArray(offsets, deep=True),
        numpy_to_vtkIdTypeArray(np.ascontiguousarray(connectivity), deep=True),
    )
    types = numpy_to_vtk(np.asarray(cell_types, dtype=np.uint8), deep=True, array_type=VTK_UNSIGNED_CHAR)
    grid.SetCells(types, cell_array)
    for name, values in (point_arrays or {}).items():
        array = numpy_to_vtk(np.ascontiguousarray(values), deep=True)
        array.SetName(name)
        grid.GetPointData().AddArray(array)
    if time is not None:
        stamp = vtkDoubleArray()
        stamp.SetName("TimeValue")
        stamp.InsertNextValue(float(time))
        grid.GetFieldData().AddArray(stamp)
    return grid


def write_vtu(
    path: PathLike, points, cells, cell_types, point_arrays: dict | None = None, time: float | None = None
) -> Path:
    """Write an unstructured mesh as ParaView does: `.vtu`, appended raw data, zlib-compressed
    (see `unstructured_grid` for the arguments)."""
    from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridWriter

    writer = vtkXMLUnstructuredGridWriter()
    writer.SetDataModeToAppended()
    writer.EncodeAppendedDataOff()
    writer.SetCompressorTypeToZLib()
    return write_xml(writer, unstructured_grid(points, cells, cell_types, point_arrays, time), path)


def _save_pathlines(trajectory, path: Path, *, spherical: bool, overwrite: bool) -> Path:
    from .._files import refuse_existing

    refuse_existing(path, overwrite)
    return write_pathlines_vtp(trajectory, path, spherical)  # written whole or not at all


def _save_clouds(trajectory, path: Path, *, spherical: bool, overwrite: bool) -> Path:
    return write_particle_clouds_pvd(trajectory, path, overwrite=overwrite)


WRITERS.update({".vtp": _save_pathlines, ".pvd": _save_clouds})
