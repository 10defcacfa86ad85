"""A series' later `.vtu` files read against the first without VTK's reader: every layout VTK's
writer makes decodes to VTK's own arrays, and anything else goes through VTK's reader with its
checks."""

import itertools

import meshes
import numpy as np
import pytest
import vtk
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

import flowkit as fk
from flowkit.io.vtk import unstructured_grid, write_pvd
from flowkit.io.vtu_series import SharedMesh, read_vtu


def _mixed_grid(seed=0):
    """A mesh of hexahedra, wedges, pyramids and tetrahedra with float32, float64 and int point
    arrays, an int cell array and a time."""
    rng = np.random.default_rng(seed)
    points, cells, types = meshes.mesh("mixed")
    arrays = {
        "velocity": rng.standard_normal((len(points), 3)).astype(np.float32),
        "p": rng.standard_normal(len(points)),
        "label": rng.integers(-9, 9, len(points)).astype(np.int16),
    }
    grid = unstructured_grid(points, cells, types, arrays, time=2.5)
    cell_ids = numpy_to_vtk(rng.integers(0, 1000, len(cells)).astype(np.int64), deep=True)
    cell_ids.SetName("zone")
    grid.GetCellData().AddArray(cell_ids)
    return grid


def _write(path, grid, mode="raw", compressor="zlib", header=64, block=32768):
    """`grid` written by VTK's writer with appended data (`mode` "raw" or "base64"), inline
    base64 ("binary") or inline text ("ascii")."""
    writer = vtk.vtkXMLUnstructuredGridWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(grid)
    {"binary": writer.SetDataModeToBinary, "ascii": writer.SetDataModeToAscii}.get(mode, writer.SetDataModeToAppended)()
    writer.SetEncodeAppendedData(mode == "base64")
    {
        "zlib": writer.SetCompressorTypeToZLib,
        "none": writer.SetCompressorTypeToNone,
        "lz4": writer.SetCompressorTypeToLZ4,
    }[compressor]()
    (writer.SetHeaderTypeToUInt32 if header == 32 else writer.SetHeaderTypeToUInt64)()
    writer.SetBlockSize(block)
    assert writer.Write() == 1
    return path


@pytest.mark.parametrize("encode,compressor,header", list(itertools.product((False, True), ("zlib", "none"), (32, 64))))
def test_every_layout_of_vtks_writer_decodes_to_vtks_arrays(tmp_path, encode, compressor, header):
    path = _write(tmp_path / "mixed.vtu", _mixed_grid(), encode, compressor, header, block=1000)  # several blocks
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    data = reader.GetOutput()
    layout = read_vtu(path)
    assert layout is not None
    seen = set()
    for key, attributes in (
        ("point", data.GetPointData()),
        ("cell", data.GetCellData()),
        ("field", data.GetFieldData()),
    ):
        for array in layout.arrays[key]:
            ours, theirs = layout.decoded(array), vtk_to_numpy(attributes.GetArray(array.name))
            assert ours.dtype == theirs.dtype
            np.testing.assert_array_equal(ours, theirs.reshape(len(ours), -1))
            seen.add(array.name)
    assert seen == {"velocity", "p", "label", "zone", "TimeValue"}


def test_layouts_it_does_not_read_are_left_to_vtk(tmp_path):
    grid = _mixed_grid()
    assert read_vtu(_write(tmp_path / "lz4.vtu", grid, compressor="lz4")) is None
    assert read_vtu(_write(tmp_path / "ascii.vtu", grid, mode="ascii")) is None


def _series(folder, n=3, **layout):
    """`n` files of one mesh, the velocity changing in time, and a `.pvd` of them."""
    grid = _mixed_grid()
    files = []
    for k in range(n):
        step = vtk.vtkUnstructuredGrid()
        step.DeepCopy(grid)
        velocity = vtk_to_numpy(step.GetPointData().GetArray("velocity"))
        velocity *= 1.0 + k
        step.GetFieldData().GetArray("TimeValue").SetValue(0, float(k))
        files.append(_write(folder / f"s_{k}.vtu", step, **layout))
    return write_pvd(folder / "s.pvd", files, [float(k) for k in range(n)])


@pytest.mark.parametrize("mode", ["raw", "base64", "binary"])
def test_later_files_are_read_against_the_first_and_equal_vtks_read(tmp_path, monkeypatch, mode):
    pvd = _series(tmp_path, mode=mode)
    decoded = []
    read = SharedMesh.read

    def counted(self, path):
        data = read(self, path)
        decoded.append(data is not None)
        return data

    monkeypatch.setattr(SharedMesh, "read", counted)
    ours = fk.io.read_vtk(pvd, dtype="float64", stream=False)
    assert decoded == [True, True]
    monkeypatch.setattr(SharedMesh, "read", lambda self, path: None)  # every file through VTK's reader
    theirs = fk.io.read_vtk(pvd, dtype="float64", stream=False)
    np.testing.assert_array_equal(np.asarray(ours.values), np.asarray(theirs.values))
    np.testing.assert_array_equal(np.asarray(ours.times), [0.0, 1.0, 2.0])


def test_a_later_file_written_otherwise_goes_through_vtks_reader(tmp_path):
    """A later file of the same mesh stored otherwise (base64, inline, LZ4, text) is read by
    VTK; one whose velocity is corrupt is named as before."""
    pvd = _series(tmp_path)
    base = np.asarray(fk.io.read_vtk(pvd, dtype="float64", stream=False).values)
    grid = vtk.vtkXMLUnstructuredGridReader()
    grid.SetFileName(str(tmp_path / "s_1.vtu"))
    grid.Update()
    for layout in (dict(mode="base64"), dict(mode="binary"), dict(compressor="lz4"), dict(mode="ascii")):
        _write(tmp_path / "s_1.vtu", grid.GetOutput(), **layout)
        np.testing.assert_array_equal(np.asarray(fk.io.read_vtk(pvd, dtype="float64", stream=False).values), base)
    _write(tmp_path / "s_1.vtu", grid.GetOutput())
    raw = bytearray((tmp_path / "s_1.vtu").read_bytes())
    layout = read_vtu(tmp_path / "s_1.vtu")
    velocity = next(a for a in layout.arrays["point"] if a.name == "velocity")
    at = velocity.at + 40
    raw[at : at + 16] = b"x" * 16
    (tmp_path / "s_1.vtu").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="s_1.vtu: VTK could not read this file"):
        fk.io.read_vtk(pvd, stream=False)


def test_a_paraview_json_series_reads_as_its_pvd(tmp_path):
    """`s.vtu.series` as `foamToVTK` and ParaView write it lists the same files and times as the
    `.pvd`; a broken one is refused naming the layout."""
    import json

    pvd = _series(tmp_path)
    listed = {"file-series-version": "1.0", "files": [{"name": f"s_{k}.vtu", "time": 0.5 * k} for k in (2, 0, 1)]}
    (tmp_path / "s.vtu.series").write_text(json.dumps(listed))
    series = fk.io.read(tmp_path / "s.vtu.series", dtype="float64", stream=False)
    collection = fk.io.read(pvd, dtype="float64", stream=False)
    np.testing.assert_array_equal(np.asarray(series.values), np.asarray(collection.values))
    np.testing.assert_array_equal(np.asarray(series.times), [0.0, 0.5, 1.0])
    (tmp_path / "broken.vtm.series").write_text('{"files": [{"file": "s_0.vtu"}]}')
    with pytest.raises(ValueError, match=r"broken\.vtm\.series: not a ParaView series file .*\"file-series-version\""):
        fk.io.read(tmp_path / "broken.vtm.series")
