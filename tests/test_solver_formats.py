"""`fk.io.read` on the solver formats with no writer in the `vtk` package, written here from
their specifications: CGNS (structured and unstructured zones, a time series), Fluent (`.cas` +
`.dat`, cell-centred, several cell zones) and Nek5000 (spectral elements, a time series). Values
are checked against VTK's own reader and probe filter on the same file, and pathlines against
the flow written."""

import logging

import meshes
import numpy as np
import pytest
import vtk
from cgns import write_cgns
from fluent import write_fluent
from helpers import agrees_with_vtk
from nek import box_elements, write_nek5000
from scipy.integrate import solve_ivp

import flowkit as fk


def flow(p):
    """A linear flow: interpolation on linear cells reproduces it, so paths can be exact."""
    return np.stack([1 + 0.5 * p[..., 1], 0.2 * p[..., 0], -0.1 * p[..., 2]], axis=-1)


def growing(p, t):
    """`flow` growing linearly in time: linear interpolation between time steps is exact too."""
    return flow(p) * (1 + t)


def _exact_path(x0, t1):
    return solve_ivp(lambda t, x: growing(x, t), (0.0, t1), x0, rtol=1e-12, atol=1e-12).y[:, -1]


def test_cgns_structured_and_unstructured_zones_are_one_domain_through_time(tmp_path):
    """A structured (curvilinear) zone and an unstructured hexahedral zone meeting on a common
    plane of nodes, three time steps: one mesh with the shared nodes joined, the series at the
    file's times, values equal VTK's CGNS reader and probe, and a pathline crossing the zone
    interface matches the flow."""
    shape = (7, 4, 4)
    lattice = fk.datasets.jittered_lattice(shape, (2.0, 1.0, 1.0), 0.2, 3).reshape(*shape, 3)
    block = lattice[:4]  # x from 0 to about 1, as a structured zone
    points = lattice[3:].reshape(-1, 3)
    hexes = meshes.mesh("hexahedron", shape=(4, 4, 4))[1]  # the same lattice order, ids of lattice[3:]
    times = [0.0, 0.5, 1.5]
    path = write_cgns(tmp_path / "flow.cgns", [block], [(points, hexes)], growing, times)

    field = fk.io.read(path, dtype="float64")
    assert isinstance(field, fk.MeshField) and field.n_cells == 2 * 27 and len(field.points) == np.prod(shape)
    np.testing.assert_array_equal(np.asarray(field.times), times)
    for k, t in enumerate(times):
        np.testing.assert_allclose(np.asarray(field.values)[k], growing(np.asarray(field.points), t), rtol=1e-12)
    reader = vtk.vtkCGNSReader()
    reader.SetFileName(str(path))
    reader.UpdateInformation()
    reader.EnableAllPointArrays()
    agrees_with_vtk(field, reader, "Velocity", t=0.5)

    seed = np.array([0.2, 0.5, 0.5])
    traj = fk.track(field, seed[None], 0.0, 0.8, 0.01, fk.RK4(), dtype="float64")
    assert traj.status[-1, 0] == fk.Status.ACTIVE and traj.positions[-1, 0, 0] > 1.2
    np.testing.assert_allclose(traj.positions[-1, 0], _exact_path(seed, 0.8), atol=1e-8)


def _fluent_case(tmp_path, velocity=flow):
    """Two cell zones of hexahedra (x below and above 1), cell-centred values of `velocity`."""
    points, hexes, _ = meshes.mesh("hexahedron", shape=(6, 5, 5))
    right = points[hexes].mean(axis=1)[:, 0] > 1.0
    hexes = np.concatenate([hexes[~right], hexes[right]])
    centres = points[hexes].mean(axis=1)
    zones = np.repeat([0, 1], [np.sum(~right), np.sum(right)])
    return (
        write_fluent(tmp_path / "duct.cas", points, hexes, velocity(centres), zones, pressure=centres[:, 0]),
        points,
        hexes,
    )


def _fluent_reader(path):
    """VTK's Fluent reader on the fluid zones, its X/Y/Z_VELOCITY joined into a vector `v`."""
    reader = vtk.vtkFLUENTReader()
    reader.SetFileName(str(path))
    reader.UpdateInformation()
    zones = reader.GetZoneSectionSelection()
    for name in [zones.GetArrayName(i) for i in range(zones.GetNumberOfArrays())]:
        if not name.endswith(":fluid"):
            zones.DisableArray(name)
    merge = vtk.vtkMergeBlocks()
    merge.SetInputConnection(reader.GetOutputPort())
    vector = vtk.vtkArrayCalculator()
    vector.SetInputConnection(merge.GetOutputPort())
    vector.SetAttributeTypeToCellData()
    for name in ("X_VELOCITY", "Y_VELOCITY", "Z_VELOCITY"):
        vector.AddScalarArrayName(name)
    vector.SetFunction("X_VELOCITY*iHat + Y_VELOCITY*jHat + Z_VELOCITY*kHat")
    vector.SetResultArrayName("v")
    return vector


def test_fluent_case_cell_values_zones_and_velocity_components(tmp_path, caplog):
    """A Fluent case: the fluid zones merged into one mesh (face zones left out with a log line),
    the velocity found in X/Y/Z_VELOCITY, the solver's cell values with `cell_data="constant"` and
    VTK's cell-to-point average by default, both equal to VTK's reader and probe."""
    path, points, hexes = _fluent_case(tmp_path)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        constant = fk.io.read(path, dtype="float64", cell_data="constant")
    assert "leaving out ['default-interior:interior', 'walls:wall']" in caplog.text
    assert "X_VELOCITY,Y_VELOCITY,Z_VELOCITY" in caplog.text
    assert constant.n_cells == len(hexes) and len(constant.points) == len(points)
    vector = _fluent_reader(path)
    agrees_with_vtk(constant, vector, "v")
    averaged = vtk.vtkCellDataToPointData()
    averaged.SetInputConnection(vector.GetOutputPort())
    agrees_with_vtk(fk.io.read(path, dtype="float64"), averaged, "v")


def test_fluent_pathline_and_bad_cases(tmp_path):
    """In a uniform flow the cell values are exact, so a pathline across both zones is too; a
    case with no fluid zone, or without its `.dat`, is refused naming the file."""
    uniform = np.array([1.0, 0.2, -0.1])
    path, _, _ = _fluent_case(tmp_path, lambda p: np.tile(uniform, (len(p), 1)))
    field = fk.io.read(path, dtype="float64", cell_data="constant")
    seed = np.array([[0.1, 0.4, 0.6]])
    traj = fk.track(field, seed, 0.0, 1.5, 0.1, fk.RK4(), dtype="float64")
    assert traj.status[-1, 0] == fk.Status.ACTIVE
    np.testing.assert_allclose(traj.positions[-1, 0], seed[0] + 1.5 * uniform, atol=1e-12)

    solid = tmp_path / "solid.cas"
    solid.write_text(path.read_text().replace(" fluid fluid-", " solid fluid-"))
    solid.with_suffix(".dat").write_text(path.with_suffix(".dat").read_text())
    with pytest.raises(ValueError, match=r"solid\.cas: no fluid cell zone"):
        fk.io.read(solid)
    lonely = tmp_path / "lonely.cas"
    lonely.write_text(path.read_text())
    with pytest.raises(FileNotFoundError, match=r"lonely\.cas: Fluent case without its data file lonely\.dat"):
        fk.io.read(lonely)


def test_nek5000_spectral_elements_through_time(tmp_path):
    """Nek5000 output: each element's GLL nodes become linear hexahedra, the nodes that elements
    share joined (so particles walk from element to element), the steps at their header times,
    values equal VTK's Nek5000 reader and probe, and a pathline follows the flow (float32 data)."""
    elements = box_elements((3, 2, 2))
    times = [0.0, 0.5, 1.0]
    path = write_nek5000(tmp_path, "channel", elements, growing, times)
    field = fk.io.read(path, dtype="float64")
    assert field.n_cells == 12 * 27 and len(field.points) == 10 * 7 * 7
    np.testing.assert_allclose(np.asarray(field.times), times)
    np.testing.assert_allclose(np.asarray(field.values)[1], growing(np.asarray(field.points), 0.5), rtol=1e-6)
    assert len(field.boundary_faces()[0]) == 2 * (9 * 6 + 9 * 6 + 6 * 6)  # the box's sides only
    reader = vtk.vtkNek5000Reader()
    reader.SetFileName(str(path))
    reader.CleanGridOn()
    agrees_with_vtk(field, reader, "Velocity", t=0.5)

    seed = np.array([0.2, 0.5, 0.5])
    traj = fk.track(field, seed[None], 0.0, 0.8, 0.01, fk.RK4(), dtype="float64")
    assert traj.status[-1, 0] == fk.Status.ACTIVE
    np.testing.assert_allclose(traj.positions[-1, 0], _exact_path(seed, 0.8), atol=2e-6)
