"""Writing results for ParaView with the `vtk` package."""

from pathlib import Path

import numpy as np


def write_vti(path, arrays: dict, origin, spacing) -> Path:
    """Write point data on a regular grid as a `.vti` (`vtkImageData`, compressed XML).

    `arrays` maps names to `(nx, ny[, nz])` scalars or `(nx, ny[, nz], C)` vectors on the same
    grid; `origin` and `spacing` have one entry per axis (a 2-D grid is written at z = 0).
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
