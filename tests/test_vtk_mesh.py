"""Unstructured VTK input: every format ParaView writes, VTK's own oracles, bad files."""

import hashlib
import json
import logging
import shutil

import jax.numpy as jnp
import meshes
import numpy as np
import pytest
import vtk
from test_vtk import SHARED
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

import flowkit as fk
from flowkit.io.vtk import unstructured_grid

needs_tet_box = pytest.mark.skipif(
    not (SHARED / "tet_box").exists(), reason="../shared/data (VTK oracles) is not beside this checkout"
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """A small cellular-flow series written by flowkit.datasets with VTK's writer."""
    return fk.datasets.cellular_flow_vtu_series(
        tmp_path_factory.mktemp("vtu") / "cell", shape=(6, 5, 5), times=[0.0, 0.5, 1.0]
    )


def _grid(points, cells, types, arrays, cell_arrays=None):
    grid = unstructured_grid(points, cells, types, arrays)
    for name, values in (cell_arrays or {}).items():
        array = numpy_to_vtk(np.ascontiguousarray(values), deep=True)
        array.SetName(name)
        grid.GetCellData().AddArray(array)
    return grid


def _write(writer, path, data):
    writer.SetFileName(str(path))
    writer.SetInputData(data)
    assert writer.Write() == 1
    return path


def test_sample_series_reads_with_times_and_samples(sample):
    field = fk.io.read_vtk(sample, sample=["p"], dtype="float64")
    assert isinstance(field, fk.MeshField) and field.kinds == ("tetra",)
    np.testing.assert_allclose(np.asarray(field.times), [0.0, 0.5, 1.0])
    points, tets = fk.datasets.jittered_tet_box((6, 5, 5), jitter=0.25)
    assert field.n_cells == len(tets)
    x = np.array([[0.3, 0.4, 0.5], [0.8, 0.1, 0.2]])
    values, valid = field.probe(x, t=0.5)
    exact = np.stack([fk.fields.CellularFlow()(0.5, jnp.asarray(p)) for p in x])
    assert valid.all() and np.max(np.abs(values - exact)) < 0.12  # interpolation error of a 5-cell mesh (h ~ 0.2)
    later, _ = field.probe(x, t=0.75)
    np.testing.assert_allclose(later, values + 0.5 * (field.probe(x, t=1.0)[0] - values), atol=1e-12)  # linear in time


@pytest.mark.parametrize("fmt", ["vtu-ascii", "vtu-base64", "vtu-raw", "legacy-ascii", "legacy-binary", "pvtu", "vts"])
def test_every_format_gives_the_same_field(tmp_path, fmt):
    points, cells, types = meshes.mesh("hexahedron", shape=(5, 4, 3))
    values = meshes.velocity(points)
    pressure = points[:, 0] ** 2
    reference = fk.MeshField.from_arrays(points, cells, values, types, dtype="float64")
    grid = _grid(points, cells, types, {"velocity": values, "p": pressure})
    if fmt.startswith("vtu"):
        writer = vtk.vtkXMLUnstructuredGridWriter()
        {
            "vtu-ascii": writer.SetDataModeToAscii,
            "vtu-base64": writer.SetDataModeToBinary,
            "vtu-raw": writer.SetDataModeToAppended,
        }[fmt]()
        if fmt == "vtu-raw":
            writer.EncodeAppendedDataOff()
        path = _write(writer, tmp_path / "m.vtu", grid)
    elif fmt.startswith("legacy"):
        writer = vtk.vtkUnstructuredGridWriter()
        writer.SetFileTypeToASCII() if fmt == "legacy-ascii" else writer.SetFileTypeToBinary()
        path = _write(writer, tmp_path / "m.vtk", grid)
    elif fmt == "pvtu":
        path = _write_pvtu(tmp_path, grid, pieces=3)
    else:  # a curvilinear grid: the same jittered lattice as a vtkStructuredGrid
        structured = vtk.vtkStructuredGrid()
        structured.SetDimensions(5, 4, 3)  # VTK orders x fastest; the lattice has z fastest
        order = np.arange(len(points)).reshape(5, 4, 3).transpose(2, 1, 0).ravel()
        vtk_points = vtk.vtkPoints()
        vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(points[order]), deep=True))
        structured.SetPoints(vtk_points)
        for name, a in {"velocity": values, "p": pressure}.items():
            array = numpy_to_vtk(np.ascontiguousarray(a[order]), deep=True)
            array.SetName(name)
            structured.GetPointData().AddArray(array)
        path = _write(vtk.vtkXMLStructuredGridWriter(), tmp_path / "m.vts", structured)
    field = fk.io.read_vtk(path, sample=["p"], dtype="float64")
    assert isinstance(field, fk.MeshField) and field.kinds == ("hexahedron",)
    assert field.points.shape == reference.points.shape and field.n_cells == reference.n_cells
    x = meshes.probe_points(points, cells, types, n_random=200)
    ours, valid = field.probe(x)
    expected, expected_valid = reference.probe(x)
    np.testing.assert_array_equal(valid, expected_valid)
    np.testing.assert_allclose(ours, expected, atol=1e-12 if fmt != "legacy-ascii" else 1e-5)
    samples = field.sample_batch(jnp.asarray(0.0), jnp.asarray(x[valid]), jnp.full(int(valid.sum()), -1, jnp.int32))
    assert samples["p"].shape == (valid.sum(),)


def _write_pvtu(folder, grid, pieces):
    """Split `grid` into `pieces` .vtu files by cell (points on piece boundaries duplicated, as
    a parallel CFD writer leaves them) and list them in a .pvtu, ParaView's layout."""
    n = grid.GetNumberOfCells()
    names = []
    for k in range(pieces):
        ids = vtk.vtkIdList()
        for c in range(k * n // pieces, (k + 1) * n // pieces):
            ids.InsertNextId(c)
        extract = vtk.vtkExtractCells()
        extract.SetInputData(grid)
        extract.SetCellList(ids)
        extract.Update()
        names.append(f"m_{k}.vtu")
        _write(vtk.vtkXMLUnstructuredGridWriter(), folder / names[-1], extract.GetOutput())
    pieces_xml = "\n".join(f'    <Piece Source="{name}"/>' for name in names)
    (folder / "m.pvtu").write_text(
        '<?xml version="1.0"?>\n<VTKFile type="PUnstructuredGrid" version="1.0" '
        'byte_order="LittleEndian" header_type="UInt64">\n'
        '  <PUnstructuredGrid GhostLevel="0">\n    <PPointData>\n'
        '      <PDataArray type="Float64" Name="velocity" NumberOfComponents="3"/>\n      '
        '<PDataArray type="Float64" Name="p"/>\n'
        '    </PPointData>\n    <PPoints>\n      <PDataArray type="Float64" Name="Points" '
        'NumberOfComponents="3"/>\n    </PPoints>\n'
        f"{pieces_xml}\n  </PUnstructuredGrid>\n</VTKFile>\n"
    )
    return folder / "m.pvtu"


def test_cell_data_velocity_to_points_like_vtk_or_piecewise_constant(tmp_path):
    points, cells, types = meshes.mesh("tetra", shape=(4, 3, 3))
    centres = np.stack([points[c].mean(axis=0) for c in cells])
    grid = _grid(points, cells, types, {}, {"U": meshes.velocity(centres)})
    path = _write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "cells.vtu", grid)
    averaged = fk.io.read_vtk(path, dtype="float64")
    converter = vtk.vtkCellDataToPointData()
    converter.SetInputData(grid)
    converter.Update()
    np.testing.assert_allclose(
        np.asarray(averaged.values[0]), vtk_to_numpy(converter.GetOutput().GetPointData().GetArray("U")), atol=1e-14
    )
    constant = fk.io.read_vtk(path, cell_data="constant", dtype="float64")
    inner = centres + 0.1 * (points[cells[:, 0]] - centres)  # well inside each cell
    values, valid = constant.probe(inner)
    assert valid.all()
    np.testing.assert_allclose(values, meshes.velocity(centres), atol=1e-14)


def test_mixed_mesh_file_with_boundary_patches_and_higher_order_cells(tmp_path, caplog):
    points, cells, types = meshes.mesh("mixed", shape=(4, 3, 3))
    values = meshes.velocity(points)
    # a boundary patch (quads, as OpenFOAM exports walls) is skipped with a log line
    patch = np.array([[0, 1, 4, 3, -1, -1, -1, -1]])
    grid = _grid(
        points,
        np.concatenate(
            [
                cells,
                np.pad(patch, ((0, 0), (0, cells.shape[1] - 8)), constant_values=-1)
                if cells.shape[1] > 8
                else patch[:, : cells.shape[1]],
            ]
        ),
        np.concatenate([types, [9]]),
        {"velocity": values},
    )
    path = _write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "mixed.vtu", grid)
    field = fk.io.read_vtk(path, dtype="float64")
    assert field.n_cells == len(cells) and set(field.kinds) == {"tetra", "hexahedron", "wedge", "pyramid"}
    assert "ignoring 1 vtkQuad" in caplog.text
    x = meshes.probe_points(points, cells, types, n_random=200)
    np.testing.assert_allclose(
        field.probe(x)[0],
        fk.MeshField.from_arrays(points, cells, values, types, dtype="float64").probe(x)[0],
        atol=1e-12,
    )
    quadratic = vtk.vtkUnstructuredGrid()
    quadratic.DeepCopy(grid)
    quadratic.InsertNextCell(vtk.VTK_QUADRATIC_TETRA, 10, list(range(10)))
    quadratic.InsertNextCell(vtk.VTK_QUADRATIC_TETRA, 10, list(range(10, 20)))
    caplog.clear()  # higher-order cells are decomposed into linear ones on their nodes, and logged
    with caplog.at_level(logging.INFO, logger="flowkit"):
        decomposed = fk.io.read_vtk(_write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "quadratic.vtu", quadratic))
    assert "2 vtkQuadraticTetra decomposed into" in caplog.text and decomposed.n_cells > field.n_cells


def test_bad_mesh_files_have_clear_errors(tmp_path, sample):
    points, cells, types = meshes.mesh("hexahedron", shape=(4, 3, 3))
    values = meshes.velocity(points)

    def write(name, arrays, pts=points, cls=cells):
        return _write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / name, _grid(pts, cls, types[: len(cls)], arrays))

    with pytest.raises(
        ValueError, match=r"no_velocity.vtu: no array is a velocity by its name; point arrays \{'p': 1\}"
    ):
        fk.io.read_vtk(write("no_velocity.vtu", {"p": points[:, 0]}))
    with pytest.raises(ValueError, match="two.vtu: velocity 'velocity' has 2 components on a 3-D mesh"):
        fk.io.read_vtk(write("two.vtu", {"velocity": values[:, :2]}))
    bad = values.copy()
    bad[[3, 17], 1] = np.nan
    bad[20] = np.inf
    with pytest.raises(
        ValueError,
        match=r"nan.vtu: velocity 'velocity' has 3 non-finite points \(point ids \[3, 17, 20\]\); pass "
        r"allow_nonfinite=True",
    ):
        fk.io.read_vtk(write("nan.vtu", {"velocity": bad}))
    kept = fk.io.read_vtk(tmp_path / "nan.vtu", allow_nonfinite=True, dtype="float64")
    assert np.isnan(np.asarray(kept.values)[0, 3, 1])
    with pytest.raises(ValueError, match=r"empty.vtu: the mesh is empty \(0 points, 0 cells\)"):
        fk.io.read_vtk(_write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "empty.vtu", vtk.vtkUnstructuredGrid()))
    whole = (tmp_path / "two.vtu").read_bytes()
    (tmp_path / "cut.vtu").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="cut.vtu: VTK could not read this file"):
        fk.io.read_vtk(tmp_path / "cut.vtu")
    broken = shutil.copytree(sample.parent, tmp_path / "series")
    (broken / "cell" / "cell_0_1.vtu").unlink()
    with pytest.raises(FileNotFoundError, match=r"cell.pvd: 1 listed file\(s\) do not exist.*cell_0_1.vtu"):
        fk.io.read_vtk(broken / "cell.pvd")
    small = write("small.vtu", {"velocity": values[:-1]}, points[:-1], cells[:-1])
    with pytest.raises(ValueError, match="point count changes between time steps"):
        fk.io.read_vtk([write("full.vtu", {"velocity": values}), small], times=[0.0, 1.0])
    with pytest.raises(ValueError, match="carry no times.*pass times="):
        fk.io.read_vtk([tmp_path / "full.vtu", tmp_path / "full.vtu"])


@needs_tet_box
@pytest.mark.parametrize(
    "name", ["truncated", "missing_file", "no_velocity", "velocity_2comp", "velocity_nan", "empty", "mismatched_points"]
)
def test_shared_bad_files(name):
    path = SHARED / "bad" / (f"{name}.pvd" if name in ("missing_file", "mismatched_points") else f"{name}.vtu")
    expected = {
        "truncated": "VTK could not read this file",
        "missing_file": r"1 listed file\(s\) do not exist",
        "no_velocity": r"no array is a velocity by its name; point arrays \{'p': 1\}",
        "velocity_2comp": "has 2 components on a 3-D mesh",
        "velocity_nan": r"10 non-finite points \(point ids \[22, 23, 42, 47, 62, 72, 96, 139, 182, 214\]\)",
        "empty": "the mesh is empty",
        "mismatched_points": "250 points, but .* has 225; the point count changes",
    }[name]
    with pytest.raises((ValueError, FileNotFoundError), match=expected):
        fk.io.read_vtk(path)


@needs_tet_box
def test_readers_match_the_manifest():
    manifest = json.loads((SHARED / "manifest.json").read_text())
    for key in ("tet_box/tet_box/tet_box_0_3.vtu", "hex_box/hex_box.vtu", "hex_box/hex_box_openfoam_U.vtu"):
        entry = manifest[key]
        field = fk.io.read_vtk(SHARED / key, velocity="U" if "openfoam" in key else None, dtype="float64")
        assert field.points.shape[0] == entry["n_points"] and field.n_cells == entry["n_cells"]
        name = "U" if "openfoam" in key else "velocity"
        stored = np.asarray(field.values[0]).astype(entry["point_data"][name]["dtype"])
        assert (
            hashlib.sha256(stored.astype("<" + stored.dtype.str[1:]).tobytes()).hexdigest()
            == entry["point_data"][name]["sha256_le"]
        )
        nodes = np.asarray(field.nodes).astype("<i8")
        assert hashlib.sha256(nodes.tobytes()).hexdigest() == entry["connectivity_sha256_int64_le"]


@needs_tet_box
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", ["tet_box", "hex_box", "hex_box_openfoam_U"])
def test_probe_matches_vtk_oracles(case, dtype):
    folder = SHARED / case.split("_openfoam")[0]
    path = folder / ("tet_box.pvd" if case == "tet_box" else f"{case}.vtu")
    oracle = np.load(folder / ("oracle_probe_openfoam_U.npz" if "openfoam" in case else "oracle_probe.npz"))
    field = fk.io.read_vtk(path, sample=["p"] if "openfoam" in case else None, dtype=dtype)
    ours, valid = field.probe(oracle["points"], t=float(oracle["time"]))
    exact = oracle["linear_interp_velocity"]
    inside = np.isfinite(exact).all(axis=1)
    scale = np.abs(oracle["vtk_velocity"]).max()
    assert np.sum(valid != inside) <= 1
    both = valid & inside
    np.testing.assert_allclose(ours[both], exact[both], rtol=0, atol=(1e-9 if dtype == "float64" else 1e-6) * scale)
    vtk_valid = oracle["vtk_valid_mask"].astype(bool) & valid
    error = np.max(np.abs(ours[vtk_valid] - oracle["vtk_velocity"][vtk_valid]), axis=1) / scale
    assert np.mean(error <= 1e-5) >= 0.98 and error.max() <= 2e-4  # VTK extrapolates at ~1 %


@needs_tet_box
@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-5), ("float32", 2e-5)])
def test_mesh_pathlines_match_vtk_particle_path_filter(dtype, tolerance):
    # VTK's scheme: linear in time between files, 2 RK4 steps per file interval (dt = 0.05)
    field = fk.io.read_vtk(SHARED / "tet_box" / "tet_box.pvd", dtype=dtype)
    oracle = np.load(SHARED / "tet_box" / "oracle_pathlines.npz")
    traj = fk.track(field, oracle["seeds"], 0.0, 1.0, 0.05, fk.RK4(), save_every=2, dtype=dtype)
    np.testing.assert_allclose(traj.times, oracle["times"], atol=1e-6)
    assert (traj.status == fk.Status.ACTIVE).all()
    assert np.max(np.abs(traj.positions - np.swapaxes(oracle["vtk_positions"], 0, 1))) < tolerance


def test_mesh_trajectories_with_samples_round_trip_through_vtk(tmp_path):
    points, cells, types = meshes.mesh("mixed", shape=(5, 4, 4))
    swirl = np.stack([0.5 + 0 * points[:, 0], 0.3 * (points[:, 2] - 0.5), -0.3 * (points[:, 1] - 0.5)], axis=1)
    temperature = points @ np.array([1.0, 2.0, 3.0])  # linear: every cell kind interpolates it exactly
    path = _write(
        vtk.vtkXMLUnstructuredGridWriter(),
        tmp_path / "m.vtu",
        _grid(points, cells, types, {"velocity": swirl, "T": temperature}),
    )
    field = fk.io.read_vtk(path, sample=["T"], dtype="float64")
    seeds = np.random.default_rng(0).uniform(0.2, 0.8, (6, 3))
    traj = fk.track(field, seeds, 0.0, 3.0, 0.01, save_every=10, record_velocity=True, dtype="float64")
    assert traj.status[-1].tolist().count(fk.Status.OUT_OF_DOMAIN) >= 1  # some leave through x = 2
    active = traj.status == fk.Status.ACTIVE
    np.testing.assert_allclose(
        traj.samples["T"][active], (traj.positions @ np.array([1.0, 2.0, 3.0]))[active], atol=1e-9
    )
    np.testing.assert_allclose(traj.velocities[active][:, 0], 0.5, atol=1e-12)
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(traj.save(tmp_path / "paths.vtp")))
    reader.Update()
    data = reader.GetOutput().GetPointData()
    ids = vtk_to_numpy(data.GetArray("particle_id"))
    np.testing.assert_allclose(vtk_to_numpy(data.GetArray("T"))[ids == 2], traj.samples["T"][:, 2], atol=1e-12)
    np.testing.assert_allclose(
        vtk_to_numpy(reader.GetOutput().GetPoints().GetData())[ids == 2], traj.positions[:, 2], atol=1e-6
    )


def test_series_read_in_threads_equals_each_file_alone_and_catches_a_moved_mesh(tmp_path):
    """Six files (read ahead in threads, the topology built meanwhile) give the values of each
    file read on its own; a later file whose points moved (same count) is named."""
    pvd = fk.datasets.cellular_flow_vtu_series(tmp_path / "six", shape=(7, 6, 5), times=np.linspace(0.0, 1.0, 6))
    files = sorted((tmp_path / "six" / "six").glob("*.vtu"), key=lambda f: int(f.stem.rsplit("_", 1)[1]))
    series = fk.io.read_vtk(pvd, dtype="float64", stream=False)
    alone = [fk.io.read_vtk(f, dtype="float64") for f in files]
    np.testing.assert_array_equal(np.asarray(series.values), np.stack([np.asarray(a.values[0]) for a in alone]))
    for name in ("neighbours", "nodes", "bin_start", "bin_cells", "affine_map"):
        np.testing.assert_array_equal(np.asarray(getattr(series, name)), np.asarray(getattr(alone[0], name)))
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(files[4]))
    reader.Update()
    moved = reader.GetOutput()
    points = vtk_to_numpy(moved.GetPoints().GetData()).copy()
    points[7] += 1e-3
    moved.GetPoints().SetData(numpy_to_vtk(points, deep=True))
    _write(vtk.vtkXMLUnstructuredGridWriter(), files[4], moved)
    with pytest.raises(ValueError, match=f"{files[4].name}: its mesh differs from .*{files[0].name}"):
        fk.io.read_vtk(pvd, stream=False)
