"""CGNS files written with h5py as the CGNS/HDF5 mapping lays them out: one HDF5 group per node
with `name`, `label`, `type` and `flags` attributes and its values in a ` data` dataset (arrays
in Fortran order, so their HDF5 shapes are reversed). No CGNS writer comes with the `vtk`
package; this follows the CGNS standard's SIDS and HDF5 file mapping."""

from pathlib import Path

import h5py
import numpy as np

HEXA_8 = 17  # CGNS element type


def _node(parent, name: str, label: str, kind: str = "MT", data=None):
    group = parent.create_group(name, track_order=True)
    group.attrs.create("name", np.array(name.encode(), "S33"))
    group.attrs.create("label", np.array(label.encode(), "S33"))
    group.attrs.create("type", np.array(kind.encode(), "S3"))
    group.attrs.create("flags", np.array([1], np.int32))
    if data is not None:
        group.create_dataset(
            " data", data=np.frombuffer(data.encode(), np.int8) if isinstance(data, str) else np.ascontiguousarray(data)
        )
    return group


def _solutions(zone, points: np.ndarray, velocity, times) -> None:
    """A FlowSolution per time (`VelocityX/Y/Z` at the vertices), named by the zone's pointers."""
    names = [f"FlowSolution{k}" for k in range(len(times))]
    if len(times) > 1:
        pointers = _node(
            _node(zone, "ZoneIterativeData", "ZoneIterativeData_t"), "FlowSolutionPointers", "DataArray_t", "C1"
        )
        pointers.create_dataset(
            " data", data=np.frombuffer(b"".join(n.encode().ljust(32) for n in names), np.int8).reshape(len(times), 32)
        )
    for name, t in zip(names, times):
        solution = _node(zone, name, "FlowSolution_t")
        _node(solution, "GridLocation", "GridLocation_t", "C1", "Vertex")
        values = velocity(points, t)
        for axis, letter in enumerate("XYZ"):
            _node(solution, f"Velocity{letter}", "DataArray_t", "R8", values[..., axis])


def write_cgns(path, structured: list, unstructured: list, velocity, times=(0.0,)) -> Path:
    """A CGNS file of one base: a structured zone per `(ni, nj, nk, 3)` node array of
    `structured`, an unstructured hexahedral zone per `(points, hexes)` of `unstructured`, and
    `velocity(points, t)` at the vertices of each at each of `times`."""
    path = Path(path)
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs.create("name", np.array(b"HDF5 MotherNode", "S33"))
        f.attrs.create("label", np.array(b"Root Node of HDF5 File", "S33"))
        f.attrs.create("type", np.array(b"MT", "S3"))
        f.create_dataset(" format", data=np.frombuffer(b"IEEE_LITTLE_64\0", np.int8))
        f.create_dataset(
            " hdf5version",
            data=np.frombuffer(f"HDF5 Version {h5py.version.hdf5_version}".encode().ljust(33, b"\0"), np.int8),
        )
        _node(f, "CGNSLibraryVersion", "CGNSLibraryVersion_t", "R4", np.array([4.2], np.float32))
        base = _node(f, "Base", "CGNSBase_t", "I4", np.array([3, 3], np.int32))
        if len(times) > 1:
            iterations = _node(base, "BaseIterativeData", "BaseIterativeData_t", "I4", np.array([len(times)], np.int32))
            _node(iterations, "TimeValues", "DataArray_t", "R8", np.asarray(times, np.float64))
        for b, nodes in enumerate(structured):
            shape = np.array(nodes.shape[:3])
            zone = _node(base, f"Block{b}", "Zone_t", "I4", np.array([shape, shape - 1, 0 * shape], np.int32))
            _node(zone, "ZoneType", "ZoneType_t", "C1", "Structured")
            fortran = nodes.transpose(2, 1, 0, 3)  # (nk, nj, ni, 3): i fastest
            coordinates = _node(zone, "GridCoordinates", "GridCoordinates_t")
            for axis, letter in enumerate("XYZ"):
                _node(coordinates, f"Coordinate{letter}", "DataArray_t", "R8", fortran[..., axis])
            _solutions(zone, fortran, velocity, times)
        for u, (points, hexes) in enumerate(unstructured):
            zone = _node(base, f"Mesh{u}", "Zone_t", "I4", np.array([[len(points), len(hexes), 0]], np.int32))
            _node(zone, "ZoneType", "ZoneType_t", "C1", "Unstructured")
            coordinates = _node(zone, "GridCoordinates", "GridCoordinates_t")
            for axis, letter in enumerate("XYZ"):
                _node(coordinates, f"Coordinate{letter}", "DataArray_t", "R8", points[:, axis])
            elements = _node(zone, "Hexa", "Elements_t", "I4", np.array([HEXA_8, 0], np.int32))
            _node(elements, "ElementRange", "IndexRange_t", "I4", np.array([1, len(hexes)], np.int32))
            _node(
                elements, "ElementConnectivity", "DataArray_t", "I4", (np.asarray(hexes) + 1).astype(np.int32).ravel()
            )
            _solutions(zone, points, velocity, times)
    return path
