"""VTK input (structured grids) and output (pathlines, particle clouds), checked with VTK itself."""

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import vtk
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

import flowkit as fk


def _shared_data() -> Path:
    """../shared/data beside the checkout (as CI has it), or where FLOWKIT_SHARED_DATA points."""
    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    return Path(os.environ.get("FLOWKIT_SHARED_DATA", beside))


SHARED = _shared_data()
needs_shared = pytest.mark.skipif(
    not (SHARED / "double_gyre").exists(), reason="../shared/data (VTK oracles) is not beside this checkout"
)


@pytest.fixture(scope="module")
def gyre_pvd(tmp_path_factory):
    return fk.datasets.double_gyre_vti_series(tmp_path_factory.mktemp("vti"), nx=41, ny=21)


def _reference(nx=41, ny=21):
    axes = [np.linspace(0, 2, nx), np.linspace(0, 1, ny)]
    return fk.GridField.from_function(fk.fields.DoubleGyre(), axes, times=np.linspace(0, 5, 11), dtype="float64")


def test_pvd_series_reads_into_the_sampled_grid(gyre_pvd):
    field = fk.io.read_vtk(gyre_pvd, dtype="float64")
    reference = _reference()
    assert field.dim == 2 and field.shape == (41, 21)
    np.testing.assert_array_equal(np.asarray(field.times), np.linspace(0, 5, 11))
    np.testing.assert_allclose(np.asarray(field.values), np.asarray(reference.values), atol=1e-15)


def test_glob_uses_time_values_and_lists_need_times(gyre_pvd):
    files = sorted((gyre_pvd.parent / "double_gyre").glob("*.vti"))
    by_glob = fk.io.read_vtk(str(gyre_pvd.parent / "double_gyre" / "*.vti"), dtype="float64")
    np.testing.assert_array_equal(np.asarray(by_glob.times), np.linspace(0, 5, 11))  # from TimeValue, not file order
    stripped = gyre_pvd.parent / "no_time"
    stripped.mkdir()
    for k, f in enumerate(files[:3]):
        data = fk.io.read_vti_arrays(f)
        fk.io.write_vti(stripped / f"s{k}.vti", data, (0.0, 0.0), (0.05, 0.05))
    plain = sorted(stripped.glob("*.vti"))
    with pytest.raises(ValueError, match="carry no times.*pass times="):
        fk.io.read_vtk(plain)
    field = fk.io.read_vtk(plain, times=[0.0, 0.7, 2.0])
    np.testing.assert_allclose(np.asarray(field.times), [0.0, 0.7, 2.0])


def _image(dims, velocity, name="velocity", spacing=(0.1, 0.1, 0.1)):
    image = vtk.vtkImageData()
    image.SetDimensions(*dims)
    image.SetSpacing(*spacing)
    if velocity is not None:
        array = numpy_to_vtk(np.ascontiguousarray(velocity.reshape(-1, velocity.shape[-1])), deep=True)
        array.SetName(name)
        image.GetPointData().AddArray(array)
    return image


def _vtk_ordered(values):
    """(nx, ny, nz, C) → VTK point order (x fastest)."""
    return np.ascontiguousarray(values.transpose(2, 1, 0, 3))


def test_legacy_and_rectilinear_3d(tmp_path):
    x, y, z = np.linspace(0, 1, 5), np.array([0.0, 0.1, 0.3, 0.7, 1.0]), np.linspace(0, 2, 4)
    mesh = np.stack(np.meshgrid(x, y, z, indexing="ij"), axis=-1)
    velocity = np.stack([mesh[..., 0] + 2 * mesh[..., 1], mesh[..., 2] - mesh[..., 0], 0.5 * mesh[..., 1]], axis=-1)
    grid = vtk.vtkRectilinearGrid()
    grid.SetDimensions(5, 5, 4)
    grid.SetXCoordinates(numpy_to_vtk(x, deep=True))
    grid.SetYCoordinates(numpy_to_vtk(y, deep=True))
    grid.SetZCoordinates(numpy_to_vtk(z, deep=True))
    array = numpy_to_vtk(_vtk_ordered(velocity).reshape(-1, 3), deep=True)
    array.SetName("U")
    grid.GetPointData().AddArray(array)
    for suffix, writer, binary in (
        (".vtr", vtk.vtkXMLRectilinearGridWriter(), None),
        (".vtk", vtk.vtkRectilinearGridWriter(), False),
        ("_b.vtk", vtk.vtkRectilinearGridWriter(), True),
    ):
        path = tmp_path / f"grid{suffix}"
        writer.SetFileName(str(path))
        writer.SetInputData(grid)
        if binary is not None:
            writer.SetFileTypeToBinary() if binary else writer.SetFileTypeToASCII()
        writer.Write()
        field = fk.io.read_vtk(path, dtype="float64")
        assert field.uniform == (True, False, True)
        np.testing.assert_allclose(np.asarray(field.values[0]), velocity, atol=1e-12)
        point = jnp.array([0.33, 0.52, 1.1])
        np.testing.assert_allclose(
            field(0.0, point), [0.33 + 2 * 0.52, 1.1 - 0.33, 0.26], atol=1e-12
        )  # linear data: exact


def _write_vti(path, image):
    writer = vtk.vtkXMLImageDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    writer.Write()
    return path


def test_bad_inputs_have_clear_errors(tmp_path, gyre_pvd):
    good = np.ones((3, 3, 3, 3))
    with pytest.raises(FileNotFoundError, match="missing.vti does not exist"):
        fk.io.read_vtk(tmp_path / "missing.vti")
    broken = shutil.copytree(gyre_pvd.parent, tmp_path / "broken")
    (broken / "double_gyre" / "double_gyre_0_4.vti").unlink()
    with pytest.raises(
        FileNotFoundError, match="double_gyre.pvd: 1 listed file\\(s\\) do not exist.*double_gyre_0_4.vti"
    ):
        fk.io.read_vtk(broken / "double_gyre.pvd")
    whole = (broken / "double_gyre" / "double_gyre_0_1.vti").read_bytes()
    truncated = tmp_path / "truncated.vti"
    truncated.write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(ValueError, match="truncated.vti: VTK could not read this file"):
        fk.io.read_vtk(truncated)
    scalar = _image((3, 3, 3), np.ones((27, 1)), name="p")
    with pytest.raises(ValueError, match="no array is a velocity by its name; point arrays \\{'p': 1\\}"):
        fk.io.read_vtk(_write_vti(tmp_path / "scalar.vti", scalar))
    with pytest.raises(ValueError, match="has 2 components on a 3-D grid"):
        fk.io.read_vtk(_write_vti(tmp_path / "two.vti", _image((3, 3, 3), np.ones((27, 2)))))
    nan = good.copy()
    nan[1, 2, 0, :] = np.nan
    nan[0, 0, 2, 1] = np.inf
    with pytest.raises(ValueError, match="has 2 non-finite points"):
        fk.io.read_vtk(_write_vti(tmp_path / "nan.vti", _image((3, 3, 3), _vtk_ordered(nan))))
    kept = fk.io.read_vtk(tmp_path / "nan.vti", allow_nonfinite=True, dtype="float64")
    assert np.isnan(np.asarray(kept.values)[0, 1, 2, 0]).all()
    with pytest.raises(ValueError, match="empty.vti: the data set is empty"):
        fk.io.read_vtk(_write_vti(tmp_path / "empty.vti", _image((0, 0, 0), None)))
    small = _write_vti(tmp_path / "a.vti", _image((3, 3, 3), _vtk_ordered(good)))
    large = _write_vti(tmp_path / "b.vti", _image((4, 3, 3), np.ones((36, 3))))
    with pytest.raises(ValueError, match="b.vti: its grid \\(\\[4, 3, 3\\] points\\) differs from"):
        fk.io.read_vtk([small, large], times=[0.0, 1.0])
    with pytest.raises(ValueError, match="several vector arrays"):
        image = _image((3, 3, 3), np.ones((27, 3)), name="a")
        second = numpy_to_vtk(np.ones((27, 3)), deep=True)
        second.SetName("b")
        image.GetPointData().AddArray(second)
        fk.io.read_vtk(_write_vti(tmp_path / "two_vectors.vti", image))


def test_cell_data_velocity_is_converted_like_vtk(tmp_path):
    image = vtk.vtkImageData()
    image.SetDimensions(3, 3, 3)
    cells = numpy_to_vtk(np.arange(24, dtype=np.float64).reshape(8, 3), deep=True)
    cells.SetName("velocity")
    image.GetCellData().AddArray(cells)
    field = fk.io.read_vtk(_write_vti(tmp_path / "cells.vti", image), dtype="float64")
    converter = vtk.vtkCellDataToPointData()
    converter.SetInputData(image)
    converter.Update()
    expected = (
        vtk_to_numpy(converter.GetOutput().GetPointData().GetArray("velocity"))
        .reshape(3, 3, 3, 3)
        .transpose(2, 1, 0, 3)
    )
    np.testing.assert_allclose(np.asarray(field.values[0]), expected)


def test_pathlines_vtp_and_particle_clouds_read_back_with_vtk(tmp_path):
    field = fk.fields.DoubleGyre()
    traj = fk.track(
        field,
        fk.seeding.uniform_grid((4, 3), field.bounds),
        0.0,
        1.0,
        0.1,
        save_every=2,
        record_velocity=True,
        boundary=fk.Absorbing(field.bounds),
    )
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(traj.save(tmp_path / "paths.vtp")))
    reader.Update()
    poly = reader.GetOutput()
    assert poly.GetNumberOfLines() == 12 and poly.GetNumberOfPoints() == 12 * 6
    data = poly.GetPointData()
    ids = vtk_to_numpy(data.GetArray("particle_id"))
    xyz = vtk_to_numpy(poly.GetPoints().GetData())
    np.testing.assert_allclose(xyz[ids == 5, :2], traj.positions[:, 5], atol=1e-6)
    np.testing.assert_allclose(vtk_to_numpy(data.GetArray("time"))[ids == 5], traj.times, atol=1e-6)
    np.testing.assert_array_equal(vtk_to_numpy(data.GetArray("status"))[ids == 5], traj.status[:, 5])
    assert data.GetArray("velocity").GetNumberOfComponents() == 3
    pvd = traj.save(tmp_path / "clouds.pvd")
    from flowkit.io.vtk_read import _series

    series = _series(pvd)
    assert [t for _, t in series] == pytest.approx(list(traj.times))
    cloud = vtk.vtkXMLPolyDataReader()
    cloud.SetFileName(str(series[3][0]))
    cloud.Update()
    np.testing.assert_allclose(
        vtk_to_numpy(cloud.GetOutput().GetPoints().GetData())[:, :2], traj.positions[3], atol=1e-6
    )


@needs_shared
def test_probe_matches_vtk_oracle_on_image_data():
    field = fk.io.read_vtk(SHARED / "double_gyre" / "double_gyre.pvd", dtype="float64")
    oracle = np.load(SHARED / "double_gyre" / "oracle_probe.npz")
    assert json.loads(str(oracle["meta"]))["dataset"] == "double_gyre@t=1.5"
    points = jnp.asarray(oracle["points"][:, :2])
    exact = oracle["linear_interp_velocity"][:, :2]
    inside = np.isfinite(exact).all(axis=1)
    ours = np.asarray(jax.vmap(field, in_axes=(None, 0, None))(jnp.asarray(1.5), points, None))
    np.testing.assert_allclose(ours[inside], exact[inside], rtol=0, atol=1e-12)
    vtk_valid = oracle["vtk_valid_mask"].astype(bool)
    ours_valid = np.asarray(jax.vmap(field.in_domain)(points))
    assert np.sum(ours_valid != vtk_valid) <= 1
    np.testing.assert_allclose(ours[vtk_valid & inside], oracle["vtk_velocity"][vtk_valid & inside, :2], atol=2e-7)


@needs_shared
@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-6), ("float32", 1e-5)])
def test_pathlines_match_vtk_particle_path_filter(dtype, tolerance):
    # VTK's scheme: linear in time between files, 2 RK4 steps per file interval (dt = 0.25)
    field = fk.io.read_vtk(SHARED / "double_gyre" / "double_gyre.pvd", dtype=dtype)
    oracle = np.load(SHARED / "double_gyre" / "oracle_pathlines.npz")
    traj = fk.track(field, oracle["seeds"][:, :2], 0.0, 5.0, 0.25, fk.RK4(), save_every=2, dtype=dtype)
    np.testing.assert_allclose(traj.times, oracle["times"])
    assert np.max(np.abs(traj.positions - np.swapaxes(oracle["vtk_positions"][..., :2], 0, 1))) < tolerance


def test_velocity_keeps_the_files_floating_precision():
    """A float32 velocity is read as float32 (a series is not widened to float64 on the host,
    which was most of the read's peak of memory); an integer one becomes float64."""
    from flowkit.io.vtk_arrays import vector_arrays

    grid = vtk.vtkPolyData()
    points = vtk.vtkPoints()
    for p in [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]:
        points.InsertNextPoint(p)
    grid.SetPoints(points)
    values = np.arange(9).reshape(3, 3)
    for name, array in (("single", values.astype(np.float32)), ("whole", values.astype(np.int32))):
        column = numpy_to_vtk(array, deep=True)
        column.SetName(name)
        grid.GetPointData().AddArray(column)
    single, _, _ = vector_arrays(grid, "memory", "single")
    whole, _, _ = vector_arrays(grid, "memory", "whole")
    assert single.dtype == np.float32 and whole.dtype == np.float64
    np.testing.assert_array_equal(single, values)
    np.testing.assert_array_equal(whole, values)


def test_particle_clouds_draw_each_stopped_particle_once_at_short_times(tmp_path):
    """A particle that leaves appears in the cloud of the frame it stopped in, not frozen at the
    exit in every later one; a late release only from its release on; float32 times as written."""
    field = fk.fields.Uniform([1.0, 0.0])
    seeds = np.array([[0.1, 0.5], [0.5, 0.5], [0.9, 0.5]])
    box = fk.GridField.from_function(field, [np.linspace(0, 1, 11), np.linspace(0, 1, 6)])
    traj = fk.track(box, seeds, 0.0, 0.5, 0.05, t_release=[0.0, 0.0, 0.2], save_every=2)
    pvd = traj.save(tmp_path / "clouds.pvd")
    entries = ET.parse(pvd).getroot().findall("./Collection/DataSet")
    assert [e.get("timestep") for e in entries][:3] == ["0.0", "0.1", "0.2"]  # not 0.10000000149011612
    counts = []
    for entry in entries:
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(str(tmp_path / entry.get("file")))
        reader.Update()
        ids = vtk_to_numpy(reader.GetOutput().GetPointData().GetArray("particle_id"))
        counts.append(sorted(ids.tolist()))
    status = np.asarray(traj.status)
    for k, ids in enumerate(counts):
        moving = np.flatnonzero(status[k] == fk.Status.ACTIVE).tolist()
        stopped_now = [i for i in range(3) if status[k, i] > 1 and (k == 0 or status[k - 1, i] <= 1)]
        assert ids == sorted(moving + stopped_now)
    assert status[-1, 2] == fk.Status.OUT_OF_DOMAIN and 2 not in counts[-1] and any(2 in c for c in counts)


def test_pathlines_on_a_sphere_restart_at_the_dateline(tmp_path):
    """A global field's particle crossing 180° E is two polylines on a sphere, not one across the globe."""
    lon, lat = np.linspace(-180, 175, 72), np.linspace(-60, 60, 25)
    values = np.broadcast_to([2.0, 0.0], (72, 25, 2)).copy()  # 2 m/s eastward
    field = fk.GridField.from_arrays(values, [lon, lat], spherical=True, periodic=(360.0, False))
    seeds = np.array([[178.0, 0.0], [0.0, 10.0]])
    traj = fk.track(field, seeds, 0.0, 4 * 86400.0, 3600.0, save_every=6)
    assert np.abs(np.diff(traj.positions[:, 0, 0])).max() > 180  # wrapped into [-180, 180)
    lines = []
    for spherical in (True, False):
        path = traj.save(tmp_path / f"{spherical}.vtp", spherical=spherical)
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(str(path))
        reader.Update()
        lines.append(reader.GetOutput().GetNumberOfLines())
    assert lines == [3, 2]
