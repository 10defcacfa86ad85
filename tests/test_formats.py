"""`fk.io.read` on what solvers write: files made here by each format's own writer (VTK's
EnSight, IOSS/Exodus, VTKHDF and multi-block writers) or as the plain-text dictionaries they are
(OpenFOAM), from known flows; values checked against VTK's own reader and probe filter on the
same file, and against the flow."""

import logging
from pathlib import Path

import foam
import meshes
import numpy as np
import pytest
import vtk
from ensight import write_ensight
from helpers import agrees_with_vtk
from vtk.util.vtkAlgorithm import VTKPythonAlgorithmBase

import flowkit as fk
from flowkit.io.vtk import unstructured_grid


def _write(writer, path, data):
    writer.SetFileName(str(path))
    writer.SetInputData(data)
    assert writer.Write() == 1
    return path


def _hexes(shape=(6, 5, 5), arrays=None):
    points, cells, types = meshes.mesh("hexahedron", shape=shape)
    arrays = {"velocity": meshes.velocity(points), "p": points[:, 0]} if arrays is None else arrays(points)
    return unstructured_grid(points, cells, types, arrays), points


class _Temporal(VTKPythonAlgorithmBase):
    """A VTK source with time steps: `make(t)` is the data set at time `t` (what a writer of
    transient files pulls step by step)."""

    def __init__(self, make, times):
        VTKPythonAlgorithmBase.__init__(self, nInputPorts=0, nOutputPorts=1, outputType="vtkUnstructuredGrid")
        self.make, self.times = make, list(times)

    def RequestInformation(self, request, in_info, out_info):
        info = out_info.GetInformationObject(0)
        info.Set(vtk.vtkStreamingDemandDrivenPipeline.TIME_STEPS(), self.times, len(self.times))
        info.Set(vtk.vtkStreamingDemandDrivenPipeline.TIME_RANGE(), [self.times[0], self.times[-1]], 2)
        return 1

    def RequestData(self, request, in_info, out_info):
        info = out_info.GetInformationObject(0)
        key = vtk.vtkStreamingDemandDrivenPipeline.UPDATE_TIME_STEP()
        t = info.Get(key) if info.Has(key) else self.times[0]
        out = vtk.vtkUnstructuredGrid.GetData(out_info)
        out.ShallowCopy(self.make(t))
        out.GetInformation().Set(vtk.vtkDataObject.DATA_TIME_STEP(), t)
        return 1


def test_exodus_ensight_vtkhdf_and_multiblock_read_like_vtk(tmp_path):
    """Each writer's file reads into the mesh and values VTK's own reader gives."""
    grid, points = _hexes()
    exo = _write(vtk.vtkIOSSWriter(), tmp_path / "flow.exo", grid)
    hdf = _write(vtk.vtkHDFWriter(), tmp_path / "flow.vtkhdf", grid)
    case = write_ensight(tmp_path, "flow", [grid])
    readers = {exo: vtk.vtkIOSSReader(), hdf: vtk.vtkHDFReader(), case: vtk.vtkGenericEnSightReader()}
    for path, reader in readers.items():
        (reader.SetCaseFileName if path == case else reader.SetFileName)(str(path))
        field = fk.io.read(path, dtype="float64")
        assert (
            isinstance(field, fk.MeshField)
            and field.n_cells == grid.GetNumberOfCells()
            and field.kinds == ("hexahedron",)
        )
        agrees_with_vtk(field, reader, "velocity_n" if path == case else "velocity")


def test_multiblock_blocks_are_one_domain_that_particles_cross(tmp_path):
    """A .vtm of three blocks cut from one mesh reads as that mesh (shared points joined), and a
    particle crosses both interfaces without being stopped."""
    grid, points = _hexes(arrays=lambda p: {"velocity": np.tile([1.0, 0.0, 0.0], (len(p), 1))})
    centres = np.array(
        [
            np.mean([grid.GetPoint(grid.GetCell(c).GetPointId(k)) for k in range(8)], axis=0)
            for c in range(grid.GetNumberOfCells())
        ]
    )
    blocks = vtk.vtkMultiBlockDataSet()
    for b, (lo, hi) in enumerate(((0.0, 0.7), (0.7, 1.3), (1.3, 2.0))):
        ids = vtk.vtkIdList()
        for c in np.flatnonzero((centres[:, 0] >= lo) & (centres[:, 0] < hi)):
            ids.InsertNextId(int(c))
        cut = vtk.vtkExtractCells()
        cut.SetInputData(grid)
        cut.SetCellList(ids)
        cut.Update()
        blocks.SetBlock(b, cut.GetOutput())
    path = _write(vtk.vtkXMLMultiBlockDataWriter(), tmp_path / "blocks.vtm", blocks)
    field = fk.io.read(path, dtype="float64")
    assert field.n_cells == grid.GetNumberOfCells() and len(field.points) == grid.GetNumberOfPoints()
    seeds = np.array([[0.05, 0.5, 0.5], [0.05, 0.3, 0.7]])
    traj = fk.track(field, seeds, 0.0, 1.8, 0.05, fk.RK4(), dtype="float64")
    assert np.all(traj.status == fk.Status.ACTIVE)
    np.testing.assert_allclose(traj.positions[-1], seeds + [1.8, 0.0, 0.0], atol=1e-9)


def test_openfoam_case_series_patches_skipped_and_cell_values(tmp_path, caplog):
    """An OpenFOAM case: its time directories are the series (0/ left out when it holds no U),
    values equal VTK's OpenFOAM reader probed at the same time, `cell_data="constant"` gives the
    solver's cell values, and a pathline follows the flow."""

    def flow(t, x):
        return np.stack([1.0 + t + 0 * x[:, 0], 0.2 + 0.1 * x[:, 0], 0.05 * x[:, 1]], axis=1)

    root = foam.write_case(tmp_path / "case", flow, times=(0.0, 0.5, 1.0, 1.5), zero_holds_u=False)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(root, dtype="float64")
    assert "time directory 0 holds no U" in caplog.text and "'U'" in caplog.text
    assert "skipping 'walls' (108 cells of dimension 2" in caplog.text and sorted(field.regions) == [
        "patch:inlet",
        "patch:outlet",
        "patch:walls",
    ]
    np.testing.assert_allclose(field.regions["patch:outlet"]["normal"], [1.0, 0.0, 0.0], atol=1e-12)
    with pytest.raises(
        ValueError, match=r"'patch:walls' is a curved patch.*planar patches are \['patch:inlet', 'patch:outlet'\]"
    ):
        fk.InletOutlet("patch:walls", "patch:outlet").bind(field)
    np.testing.assert_array_equal(np.asarray(field.times), [0.5, 1.0, 1.5])
    reader = vtk.vtkOpenFOAMReader()
    reader.SetFileName(str(root / "system" / "controlDict"))
    for t in (0.5, 0.75, 1.5):
        if t != 0.75:  # between snapshots flowkit interpolates in time; VTK's reader holds a step
            agrees_with_vtk(field, reader, "U", t=t, hi=(1.0, 1.0, 1.0))
    for spelling in (root / "system" / "controlDict", root / "case.foam"):
        spelling.touch()
        assert np.array_equal(np.asarray(fk.io.read(spelling, dtype="float64").times), [0.5, 1.0, 1.5])
    constant = fk.io.read(root, cell_data="constant", dtype="float64")
    centres = foam.box_mesh()[5]
    values, inside = constant.probe(centres + 1e-3, 1.0)
    assert inside.all()
    np.testing.assert_allclose(values, flow(1.0, centres), rtol=1e-6)  # VTK's OpenFOAM reader gives float32
    seeds = np.array([[0.1, 0.2, 0.3], [0.05, 0.6, 0.5]])
    traj = fk.track(field, seeds, 0.5, 1.0, 0.01, fk.RK4(), dtype="float64")
    assert np.all(traj.status == fk.Status.ACTIVE)
    # u = 1 + t is exact at the points (uniform in space, linear in time): x(t) = x0 + [t + t²/2]
    np.testing.assert_allclose(traj.positions[-1, :, 0], seeds[:, 0] + (1.0 + 0.5) - (0.5 + 0.125), atol=1e-9)


@pytest.mark.parametrize("zero_holds_u", [False, True])
def test_openfoam_time_zero_is_skipped_unless_asked_for_and_holding_the_velocity(tmp_path, caplog, zero_holds_u):
    """A multiphase-style velocity `U.air`: 0/ (the initial condition) is skipped by default, as
    ParaView does; with `skip_zero_time=False` it joins the series exactly when it holds that
    field, whether the velocity is found by its name or given (`velocity="U.air"`)."""

    def flow(t, x):
        return np.stack([1.0 + t + 0 * x[:, 0], 0.2 + 0 * x[:, 0], 0 * x[:, 0]], axis=1)

    root = foam.write_case(tmp_path / "air", flow, times=(0.0, 0.5, 1.0), zero_holds_u=zero_holds_u, name="U.air")
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(root, dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.5, 1.0])
    assert (
        "initial condition, skipped as ParaView does" in caplog.text
    ) == zero_holds_u and "2 time step(s) read: 0.5, 1" in caplog.text
    expected = [0.0, 0.5, 1.0] if zero_holds_u else [0.5, 1.0]
    for velocity in (None, "U.air"):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="flowkit"):
            field = fk.io.read(root, velocity, dtype="float64", skip_zero_time=False)
        np.testing.assert_array_equal(np.asarray(field.times), expected)
        assert ("time directory 0 holds no U.air" in caplog.text) != zero_holds_u
        np.testing.assert_allclose(
            field.probe(np.array([[0.5, 0.5, 0.5]]), expected[-1])[0], [[2.0, 0.2, 0.0]], rtol=1e-6
        )


@pytest.mark.parametrize("said_by", ["application", "fvSchemes"])
def test_a_steady_openfoam_case_is_its_last_iteration(tmp_path, caplog, said_by):
    """simpleFoam's iterations 100, 200, 282 are not times: the converged last one is the field."""

    def flow(t, x):
        return np.stack([t / 282 + 0 * x[:, 0], 0.2 + 0 * x[:, 0], 0 * x[:, 0]], axis=1)

    application = "simpleFoam" if said_by == "application" else "icoFoam"
    root = foam.write_case(tmp_path / "steady", flow, times=(0.0, 100.0, 200.0, 282.0), application=application)
    if said_by == "fvSchemes":
        (root / "system" / "fvSchemes").write_text("ddtSchemes\n{\n    default         steadyState; // steady\n}\n")
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(root, dtype="float64")
    assert field.times is None and "the last iteration (282) is read as a steady field" in caplog.text
    np.testing.assert_allclose(field.probe(np.array([[0.5, 0.5, 0.5]]), 0.0)[0], [[1.0, 0.2, 0.0]], rtol=1e-6)
    assert np.asarray(fk.io.read(root, dtype="float64", steady=False).times).tolist() == [100.0, 200.0, 282.0]


def test_openfoam_case_with_polyhedral_cells(tmp_path, caplog):
    """Split faces make polyhedra on both sides, as snappyHexMesh leaves them. They are
    decomposed into tetrahedra on their own nodes (VTK 9's OpenFOAM reader no longer has its
    decompose option) once, later steps indexed onto that mesh, and the values equal VTK's reader followed by VTK's own
    `vtkDataSetTriangleFilter` and probe. VTK's probe on the reader's `vtkPolyhedron` cells
    themselves is off by up to 0.45 here (their coplanar split faces), so it is no oracle.
    A linear flow comes out as well as the reader's cell-to-point averaging makes it on hexahedra."""
    gradient = np.array([[0.5, 0.1, 0.0], [-0.2, 0.3, 0.4], [0.0, 0.1, -0.6]])

    def flow(t, x):
        return x @ gradient.T + [1.0, 0.0, 0.5]

    root = foam.write_case(tmp_path / "poly", flow, times=(0.0, 1.0), split=1)  # every cell a polyhedron
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(root, dtype="float64")
    assert "120 vtkPolyhedron decomposed into" in caplog.text
    assert caplog.text.count("decomposed into") == 1  # the later step reuses the first's decomposition
    reader = vtk.vtkOpenFOAMReader()
    reader.SetFileName(str(root / "system" / "controlDict"))
    tetrahedra = vtk.vtkDataSetTriangleFilter()
    tetrahedra.SetInputConnection(reader.GetOutputPort())
    agrees_with_vtk(field, tetrahedra, "U", t=1.0, hi=(1.0, 1.0, 1.0))
    x = np.random.default_rng(4).uniform(0.05, 0.95, (300, 3))
    values, inside = field.probe(x, 1.0)
    hexes = fk.io.read(foam.write_case(tmp_path / "hex", flow, times=(0.0, 1.0)), dtype="float64").probe(x, 1.0)[0]
    assert inside.all()
    assert np.abs(values - flow(1.0, x)).max() <= 1.05 * np.abs(hexes - flow(1.0, x)).max()


def test_polyhedra_and_quadratic_cells_are_decomposed_exactly(tmp_path, caplog):
    """Polyhedral and quadratic cells become linear cells on their own nodes, logged; a linear
    flow is interpolated exactly on them."""
    grid, points = _hexes(
        shape=(4, 3, 3),
        arrays=lambda p: {
            "velocity": p @ np.array([[0.5, 0.1, 0.0], [-0.2, 0.3, 0.4], [0.0, 0.1, -0.6]]).T + [1.0, 0.0, 0.5]
        },
    )
    poly = vtk.vtkUnstructuredGrid()
    poly.SetPoints(grid.GetPoints())
    poly.GetPointData().ShallowCopy(grid.GetPointData())
    for c in range(grid.GetNumberOfCells()):
        cell = grid.GetCell(c)
        ids = [cell.GetPointId(k) for k in range(8)]
        if c % 2:
            poly.InsertNextCell(vtk.VTK_HEXAHEDRON, 8, ids)
            continue
        faces = vtk.vtkCellArray()
        for face in meshes.HEX_FACES:
            faces.InsertNextCell(4, [ids[k] for k in face])
        poly.InsertNextCell(vtk.VTK_POLYHEDRON, 8, ids, faces)
    path = _write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "poly.vtu", poly)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(path, dtype="float64")
    assert "vtkPolyhedron decomposed into" in caplog.text
    x = np.random.default_rng(1).uniform([0.1, 0.1, 0.1], [1.9, 0.9, 0.9], (300, 3))
    values, inside = field.probe(x)
    assert inside.all()
    np.testing.assert_allclose(
        values, x @ np.array([[0.5, 0.1, 0.0], [-0.2, 0.3, 0.4], [0.0, 0.1, -0.6]]).T + [1.0, 0.0, 0.5], atol=1e-12
    )


def test_velocity_by_expression_by_first_word_or_refused_when_ambiguous(tmp_path, caplog):
    """`velocity="Momentum/Density"` divides at the nodes; `velocity_liq (m/s)` is recognised
    and the choice logged; two velocity-like arrays are refused with their names."""
    grid, points = _hexes(
        shape=(4, 3, 3),
        arrays=lambda p: {"Momentum": 2.0 * meshes.velocity(p) * (1 + p[:, :1]), "Density": 2.0 * (1 + p[:, 0])},
    )
    path = _write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "conserved.vtu", grid)
    field = fk.io.read(path, velocity="Momentum/Density", dtype="float64")
    np.testing.assert_allclose(np.asarray(field.values)[0], meshes.velocity(points), rtol=1e-12)
    with pytest.raises(ValueError, match=r"conserved.vtu.*velocity expression 'Momentum/Densty' does not evaluate"):
        fk.io.read(path, velocity="Momentum/Densty")
    named, _ = _hexes(
        shape=(4, 3, 3), arrays=lambda p: {"velocity_liq (m/s)": meshes.velocity(p), "grad": meshes.velocity(p)}
    )
    with caplog.at_level(logging.INFO, logger="flowkit"):
        fk.io.read(_write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "named.vtu", named))
    assert "velocity array 'velocity_liq (m/s)'" in caplog.text
    two, _ = _hexes(
        shape=(4, 3, 3), arrays=lambda p: {"velocity_liq": meshes.velocity(p), "velocity_gas": meshes.velocity(p)}
    )
    with pytest.raises(
        ValueError,
        match=r"two.vtu: several vector arrays are named like a velocity: \['velocity_liq', 'velocity_gas'\]",
    ):
        fk.io.read(_write(vtk.vtkXMLUnstructuredGridWriter(), tmp_path / "two.vtu", two))


def test_bad_solver_output_is_refused_naming_what_is_wrong(tmp_path):
    """A directory that is no case, a case with no velocity, a .case without its geometry,
    an Exodus file without a nodal vector, blocks with different arrays, blocks that do not touch."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty: a directory, but not an OpenFOAM case"):
        fk.io.read(tmp_path / "empty")
    root = foam.write_case(tmp_path / "no_u", lambda t, x: np.ones_like(x), times=(0.0, 1.0))
    for folder in ("0", "1"):
        (root / folder / "U").unlink()
    with pytest.raises(ValueError, match=r"no_u \(time 1\): no array is a velocity by its name"):
        fk.io.read(root)
    grid, _ = _hexes(shape=(4, 3, 3))
    lost = write_ensight(tmp_path, "lost", [grid])
    for geometry in tmp_path.glob("lost*.geo"):
        geometry.unlink()
    with pytest.raises(ValueError, match=r"lost.*\.case"):
        fk.io.read(lost)
    scalar, _ = _hexes(shape=(4, 3, 3), arrays=lambda p: {"p": p[:, 0]})
    exo = _write(vtk.vtkIOSSWriter(), tmp_path / "scalar.exo", scalar)
    with pytest.raises(ValueError, match="scalar.exo.*no array is a velocity by its name"):
        fk.io.read(exo)
    apart = vtk.vtkMultiBlockDataSet()
    with_p, _ = _hexes(shape=(3, 3, 3))
    without_p, _ = _hexes(shape=(3, 3, 3), arrays=lambda p: {"velocity": meshes.velocity(p)})
    apart.SetBlock(0, with_p)
    apart.SetBlock(1, without_p)
    with pytest.raises(ValueError, match=r"different.vtm: its blocks hold different arrays: 'block 1' lacks \['p'\]"):
        fk.io.read(_write(vtk.vtkXMLMultiBlockDataWriter(), tmp_path / "different.vtm", apart))
    moved, _ = _hexes(shape=(3, 3, 3))
    shift = vtk.vtkTransform()
    shift.Translate(5.0, 0.0, 0.0)
    away = vtk.vtkTransformFilter()
    away.SetTransform(shift)
    away.SetInputData(moved)
    away.Update()
    apart.SetBlock(0, _hexes(shape=(3, 3, 3))[0])
    apart.SetBlock(1, away.GetOutput())
    with pytest.raises(ValueError, match="apart.vtm: its 2 blocks .* share no points"):
        fk.io.read(_write(vtk.vtkXMLMultiBlockDataWriter(), tmp_path / "apart.vtm", apart))


def test_decomposed_openfoam_case_equals_the_reconstructed_one(tmp_path):
    """`processor*/` shares read as one mesh (interface points joined): the same cells, points,
    times, patches and values as the reconstructed case, and particles cross the processor
    interfaces between mesh walls without meeting a wall there."""

    def flow(t, x):
        return np.stack([0.5 + 0.2 * t + 0 * x[:, 0], 0.1 * np.sin(3 * x[:, 0]), 0.2 * x[:, 1] - 0.1], axis=1)

    whole = fk.io.read(foam.write_case(tmp_path / "whole", flow, times=(0.0, 1.0)), dtype="float64")
    shares = fk.io.read(foam.write_case(tmp_path / "shares", flow, times=(0.0, 1.0), processors=3), dtype="float64")
    assert (shares.n_cells, len(shares.points)) == (whole.n_cells, len(whole.points)) and sorted(shares.regions) == [
        "patch:inlet",
        "patch:outlet",
        "patch:walls",
    ]
    np.testing.assert_array_equal(np.asarray(shares.times), np.asarray(whole.times))
    for cell_data in ("constant", "points"):
        a, b = (fk.io.read(tmp_path / name, cell_data=cell_data, dtype="float64") for name in ("whole", "shares"))
        x = np.random.default_rng(2).uniform(0.01, 0.99, (300, 3))
        tolerance = 0 if cell_data == "constant" else 0.05  # points on the interfaces average over one share's cells
        np.testing.assert_allclose(b.probe(x, 0.5)[0], a.probe(x, 0.5)[0], atol=tolerance)
    seeds = np.array([[0.1, 0.5, 0.5], [0.15, 0.2, 0.8]])  # x moves by 0.6: across both interfaces
    walls = fk.MeshWalls("reflect", open=["patch:outlet"])
    paths = [fk.track(field, seeds, 0.0, 1.0, 0.01, fk.RK4(), walls, dtype="float64") for field in (whole, shares)]
    assert np.all(paths[1].status == fk.Status.ACTIVE) and paths[1].positions[-1, :, 0].min() > 0.68
    np.testing.assert_allclose(paths[1].positions, paths[0].positions, atol=0.02)


def test_transient_vtkhdf_ensight_and_exodus_time_steps_are_the_series(tmp_path):
    """A transient VTKHDF file, an EnSight case with a time set and an Exodus II file with time
    steps (IOSS's writer; it takes the steps as a partitioned collection) read as time series
    at their own (non-uniform) times, each step's values those written."""
    points, cells, types = meshes.mesh("hexahedron", shape=(4, 3, 3))
    times = [0.0, 0.5, 2.0]
    source = _Temporal(
        lambda t: unstructured_grid(points, cells, types, {"velocity": meshes.velocity(points) * (1 + t)}), times
    )
    hdf = vtk.vtkHDFWriter()
    hdf.SetFileName(str(tmp_path / "flow.vtkhdf"))
    hdf.SetInputConnection(source.GetOutputPort())
    hdf.SetWriteAllTimeSteps(True)
    assert hdf.Write() == 1
    snapshots = []
    for t in times:
        source.UpdateTimeStep(t)
        snapshot = vtk.vtkUnstructuredGrid()
        snapshot.DeepCopy(source.GetOutputDataObject(0))
        snapshots.append(snapshot)
    case = write_ensight(tmp_path, "flow", snapshots, times)  # the writer numbers steps; a solver writes its times
    collection = vtk.vtkConvertToPartitionedDataSetCollection()
    collection.SetInputConnection(source.GetOutputPort())
    exodus = vtk.vtkIOSSWriter()
    exodus.SetFileName(str(tmp_path / "flow.e"))
    exodus.SetInputConnection(collection.GetOutputPort())
    assert exodus.Write() == 1
    for path in (tmp_path / "flow.vtkhdf", case, tmp_path / "flow.e"):
        field = fk.io.read(path, dtype="float64")
        np.testing.assert_array_equal(np.asarray(field.times), times)
        for k, t in enumerate(times):
            np.testing.assert_allclose(
                np.asarray(field.values)[k], meshes.velocity(points) * (1 + t), rtol=1e-6, err_msg=str(path)
            )


def test_plot3d_and_tecplot_with_velocity_from_their_variables(tmp_path):
    """PLOT3D (`.xyz` + `.q`: the reader's Velocity from momentum and density) and a Tecplot
    ASCII brick zone (velocity as the scalar variables U, V, W) read into the flow written."""
    shape = (5, 4, 3)
    axes = np.meshgrid(
        np.linspace(0, 2, shape[0]), np.linspace(0, 1, shape[1]), np.linspace(0, 1, shape[2]), indexing="ij"
    )
    xyz = np.stack([a.ravel(order="F") for a in axes])  # PLOT3D: i fastest
    density = 1 + xyz[0]

    def linear(p):
        return np.stack([1 + 0.5 * p[:, 1], 0.2 * p[:, 0], -0.1 * p[:, 2]], axis=1)

    with open(tmp_path / "wing.xyz", "wb") as f:
        np.array(shape, np.int32).tofile(f)
        xyz.astype(np.float32).tofile(f)
    with open(tmp_path / "wing.q", "wb") as f:
        np.array(shape, np.int32).tofile(f)
        np.array([0.5, 0.0, 1e6, 0.0], np.float32).tofile(f)  # Mach, alpha, Reynolds, time
        np.concatenate([density[None], (density[:, None] * linear(xyz.T)).T, np.full((1, xyz.shape[1]), 2.5)]).astype(
            np.float32
        ).tofile(f)
    field = fk.io.read(tmp_path / "wing.xyz", dtype="float64")
    x = np.random.default_rng(3).uniform([0.05, 0.05, 0.05], [1.95, 0.95, 0.95], (200, 3))
    np.testing.assert_allclose(field.probe(x)[0], linear(x), rtol=1e-6)

    points, cells, types = meshes.mesh("hexahedron", shape=(4, 3, 3))
    values = meshes.velocity(points)
    lines = [
        'TITLE = "room"',
        'VARIABLES = "X", "Y", "Z", "U", "V", "W"',
        f'ZONE T="fluid", N={len(points)}, E={len(cells)}, DATAPACKING=POINT, ZONETYPE=FEBRICK',
    ]
    lines += [" ".join(f"{v:.17g}" for v in row) for row in np.concatenate([points, values], axis=1)]
    lines += [" ".join(str(i + 1) for i in cell) for cell in cells]
    (tmp_path / "room.tec").write_text("\n".join(lines) + "\n")
    field = fk.io.read(tmp_path / "room.tec", dtype="float64")
    x = np.random.default_rng(4).uniform([0.05, 0.05, 0.05], [1.95, 0.95, 0.95], (200, 3))
    ours, inside = field.probe(x)
    assert inside.all()  # the reader stores float32: compare to float32 rounding
    np.testing.assert_allclose(
        ours, fk.MeshField.from_arrays(points, cells, values, types, dtype="float64").probe(x)[0], rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    "name", ["broken.cgns", "broken.cas", "broken.nek5000", "broken.exo", "broken.vtkhdf", "broken.case"]
)
def test_each_solver_format_refuses_a_corrupt_file_naming_it(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x00\x01 not what the reader expects \xff" * 20)
    if name == "broken.cas":  # with its data file, so that the case itself is what is refused
        path.with_suffix(".dat").write_bytes(path.read_bytes())
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        fk.io.read(path)


def test_one_format_table_dispatches_every_kind_and_refuses_what_a_format_does_not_take(tmp_path):
    """`fk.io.read` finds each kind by its name's ending in `FORMATS` (a compound `.cas.h5`
    whole; a glob or list by its first file); an unknown ending, or an option the format does
    not take, is refused naming the file, the option and what the format takes."""
    from flowkit.io.formats import FORMATS, format_of

    names = {fmt.name for fmt in FORMATS}
    assert {"NetCDF/zarr", "TELEMAC Selafin", "VTK", "OpenFOAM", "Fluent", "Fluent CFF", "CGNS"} <= names
    assert format_of(Path("run/flow.cas.h5")).name == "Fluent CFF" and format_of(Path("run/flow.cas")).name == "Fluent"
    assert format_of("glo_cur_*.nc").name == "NetCDF/zarr" and format_of([Path("a.vtu"), Path("b.vtu")]).name == "VTK"
    assert all(
        fmt.make_reader is not None
        for fmt in FORMATS
        if fmt.name not in ("NetCDF/zarr", "TELEMAC Selafin", "MITgcm MDS", "VTK")
    )
    with pytest.raises(ValueError, match=r"flow\.txt: unsupported suffix '\.txt'; flowkit reads \[.*'\.slf'.*'\.vtu'"):
        fk.io.read(tmp_path / "flow.txt")
    grid = fk.datasets.sample_vtk(tmp_path)
    with pytest.raises(
        ValueError, match=r"tide\.slf: cell_data do\(es\) not apply to TELEMAC Selafin files; they take \['dtype'\]"
    ):
        fk.io.read(tmp_path / "tide.slf", cell_data="constant")
    assert isinstance(fk.io.read(grid), fk.MeshField | fk.GridField)
