"""Real solver output (`tests/data/cfd`, provenance in its README): the velocity flowkit reads
equals the solver's own numbers, read here by hand: Fluent's HDF5 datasets, CGNS' momentum over
density, EnSight's binary node values, OpenFOAM's ASCII cell values; a file VTK misreads is
refused; and the app runs a real 2-D case with `boundary=auto`."""

import json
import logging
import lzma
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
from helpers import APP_CACHE, HANG
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkFiltersCore import vtkCellCenters

import flowkit as fk
from flowkit.analysis.picture import speeds_at
from flowkit.app_outputs import velocity_record

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cfd"


def _cell_centres(data) -> np.ndarray:
    centres = vtkCellCenters()
    centres.SetInputData(data)
    centres.Update()
    return vtk_to_numpy(centres.GetOutput().GetPoints().GetData())


def _leaves(data):
    it = data.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        yield it.GetCurrentDataObject()
        it.GoToNextItem()


def test_fluent_room_velocity_is_its_sv_u_and_sv_v_cell_by_cell():
    """Fluent CFF: the velocity is `SV_U`, `SV_V` (not the body force `SV_BF_V`), equal in every
    cell to the `.dat.h5` datasets; Fluent's median cell speed is 2.6 m/s."""
    from vtkmodules.vtkIOFLUENTCFF import vtkFLUENTCFFReader

    case = DATA / "fluent_room" / "room.cas.h5"
    with h5py.File(DATA / "fluent_room" / "room.dat.h5") as data:
        cells = data["results/1/phase-1/cells"]
        u, v = cells["SV_U/1"][:], cells["SV_V/1"][:]
    assert np.median(np.hypot(u, v)) == pytest.approx(2.61, abs=0.01)
    reader = vtkFLUENTCFFReader()
    reader.SetFileName(str(case))
    reader.Update()
    centres = _cell_centres(reader.GetOutput().GetBlock(0))[:, :2]  # Fluent's cells, in file order

    field = fk.io.read(case, cell_data="constant")
    assert field.velocity_array == "SV_U,SV_V" and velocity_record(field)["meaning"] == "components"
    np.testing.assert_array_equal(speeds_at(field, 0.0, centres), np.column_stack([u, v]))
    at_nodes = speeds_at(fk.io.read(case), 0.0, centres)  # the default: cell values averaged to the nodes
    gap = np.linalg.norm(at_nodes - np.column_stack([u, v]), axis=1)
    assert np.median(gap) < 0.01 * np.median(np.hypot(u, v))


def test_compressible_cgns_velocity_is_momentum_over_density_cell_by_cell(caplog):
    """A compressible solver's CGNS (ADF) file holds `Momentum` and `Density`, no velocity: the
    velocity is their quotient in every cell of its 12 zones, said in the log and the record."""
    from vtkmodules.vtkIOCGNSReader import vtkCGNSReader

    path = DATA / "cgns" / "sqnz_s.adf.cgns"
    reader = vtkCGNSReader()
    reader.SetFileName(str(path))
    reader.UpdateInformation()
    reader.EnableAllCellArrays()
    reader.Update()
    centres, expected = [], []
    for zone in _leaves(reader.GetOutput()):
        arrays = zone.GetCellData()
        momentum, density = (vtk_to_numpy(arrays.GetArray(name)) for name in ("Momentum", "Density"))
        centres.append(_cell_centres(zone))
        expected.append(momentum / density[:, None])
    centres, expected = np.concatenate(centres), np.concatenate(expected)
    assert len(centres) == 11264 and np.ptp(expected[:, 0]) > 0.3

    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(path, cell_data="constant", dtype="float64")
    assert "the velocity is Momentum/Density (momentum over density" in caplog.text
    assert velocity_record(field) == {
        "array": "Momentum/Density",
        "meaning": "momentum over density (the file holds no velocity)",
    }
    np.testing.assert_allclose(speeds_at(field, 0.0, centres), expected, rtol=1e-12, atol=1e-15)


def _ensight_fluid_part(stem: Path) -> tuple[np.ndarray, np.ndarray]:
    """`(node coordinates, velocity)` of the first part (`fluid`) of an EnSight Gold C-binary
    case, parsed by its documented layout: 80-character lines, int32 counts, float32 columns."""
    geo, vel = stem.with_suffix(".geo").read_bytes(), stem.with_suffix(".vel").read_bytes()
    line = lambda buf, at: buf[at : at + 80].split(b"\0")[0].decode().strip()  # noqa: E731
    assert [line(geo, 80 * k) for k in (0, 3, 4, 5)] == ["C Binary", "node id assign", "element id assign", "part"]
    at = 6 * 80 + 4  # past the header, "part" and its number
    assert (line(geo, at), line(geo, at + 80)) == ("fluid", "coordinates")
    at += 160
    n = int(np.frombuffer(geo, "<i4", 1, at)[0])
    points = np.frombuffer(geo, "<f4", 3 * n, at + 4).reshape(3, n).T
    assert (line(vel, 80), line(vel, 164)) == ("part", "coordinates")
    return points, np.frombuffer(vel, "<f4", 3 * n, 244).reshape(3, n).T


def test_ensight_2d_cylinder_velocity_is_its_node_values():
    """A 2-D EnSight case exported by Fluent: a 2-D mesh of triangles and quads whose velocity
    at every node is the `.vel` file's; its boundary parts are lines in its plane, named as the
    open and wall regions they are."""
    stem = DATA / "ensight_cylinder" / "cylinder_Re35"
    points, velocity = _ensight_fluid_part(stem)
    assert np.all(points[:, 2] == 0) and np.all(velocity[:, 2] == 0)
    field = fk.io.read(stem.with_suffix(".case"), dtype="float64")
    assert field.dim == 2 and set(field.kinds) == {"triangle", "quad"} and field.velocity_array == "velocity"
    np.testing.assert_allclose(speeds_at(field, 0.0, points[:, :2]), velocity[:, :2], rtol=1e-6, atol=1e-5)
    inlet, outlet = field.regions["patch:inlet"], field.regions["patch:outlet"]
    np.testing.assert_allclose(inlet["normal"], [-1, 0], atol=1e-9)  # pointing out of the domain
    np.testing.assert_allclose(outlet["point"], [15, 0], atol=1e-6)
    assert {name: r["kind"] for name, r in field.regions.items()} == {
        "patch:inlet": "open",
        "patch:outlet": "open",
        "patch:outlet_top": "open",
        "patch:outlet_bottom": "open",
        "patch:wall_cylinder": "wall",
    }


def _foam_vectors(path: Path) -> np.ndarray:
    """An OpenFOAM ASCII `volVectorField`'s `internalField` as `(n, 3)`."""
    text = path.read_text().split("internalField", 1)[1]
    count, body = text.split("(", 1)[0].split()[-1], text.split("(", 1)[1]
    rows = [row.strip("() ").split() for row in body.splitlines()[: int(count) + 1] if row.startswith("(")]
    return np.array(rows[: int(count)], np.float64)


def test_openfoam_cavity_velocity_is_its_u_cell_by_cell(tmp_path):
    """OpenFOAM's cavity as icoFoam ran it: times 0.5 to 2.5 s (0, the initial state, skipped
    as ParaView does), and at each the cell values of its `U` file, cell `i + 20 j` of the
    20 × 20 blockMesh at ((i + ½) h, (j + ½) h) with h = 5 mm."""
    with zipfile.ZipFile(DATA / "OpenFOAM.zip") as archive:
        archive.extractall(tmp_path)
    case = tmp_path / "OpenFOAM" / "cavity"
    field = fk.io.read(case, cell_data="constant", dtype="float64")
    np.testing.assert_array_equal(np.asarray(field.times), [0.5, 1.0, 1.5, 2.0, 2.5])
    j, i = np.divmod(np.arange(400), 20)
    centres = np.column_stack([(i + 0.5) * 0.005, (j + 0.5) * 0.005, np.full(400, 0.005)])
    for t in ("0.5", "2.5"):
        np.testing.assert_allclose(speeds_at(field, float(t), centres), _foam_vectors(case / t / "U"), atol=1e-12)


def test_a_fluent_case_vtk_misreads_is_refused_with_vtks_words(tmp_path):
    """VTK's legacy Fluent reader logs that it cannot parse this real case and returns values of
    1e307: refused in one line naming the file, never tracked."""
    for name in ("cylinder_tutorial.cas", "cylinder_tutorial.dat"):
        (tmp_path / name).write_bytes(lzma.decompress((DATA / "fluent_legacy" / f"{name}.xz").read_bytes()))
    with pytest.raises(
        ValueError, match=r"cylinder_tutorial\.cas: VTK could not read .*failed to get the converted dim"
    ):
        fk.io.read(tmp_path / "cylinder_tutorial.cas")


@pytest.mark.slow
def test_app_tracks_a_real_2d_case_with_the_auto_boundary(tmp_path):
    """The app on the 2-D EnSight cylinder with `boundary=auto`: the parts' names open the inlet
    and outlets and make the cylinder a wall, particles leave only through the open sides, and
    `summary.json` records which array is the velocity."""
    case = DATA / "ensight_cylinder" / "cylinder_Re35.case"
    args = ["field=vtk", f"field.path={case}", "boundary=auto", "seeds.n=300", "t1=0.3", f"hydra.run.dir={tmp_path}"]
    result = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), *args, APP_CACHE],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "open ['patch:inlet', 'patch:outlet', 'patch:outlet_top', 'patch:outlet_bottom'], "
        "walls ['patch:wall_cylinder']" in result.stdout
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["velocity"] == {"array": "velocity", "meaning": "vector"}
    assert {"trajectories.png", "snapshot.png", "density.png"} <= set(summary["files"])
    tracks = np.load(tmp_path / "trajectories.npz")
    left = tracks["status"][-1] == fk.Status.OUT_OF_DOMAIN
    assert left.sum() > 30 and summary["status_counts"]["out_of_domain"] == left.sum()
    last = tracks["positions"][-1, left]
    on_open_side = (last[:, 0] > 15 - 0.1) | (np.abs(last[:, 1]) > 3.75 - 0.1) | (last[:, 0] < 0.1)
    assert np.all(on_open_side)
    distance = np.hypot(*(tracks["positions"] - [2.5, 0.0]).transpose(2, 0, 1))  # from the cylinder's axis
    assert np.nanmin(distance) > 0.5 - 1e-3  # never inside it (radius 0.5)


@pytest.fixture(scope="module")
def pitz_daily(tmp_path_factory):
    """OpenFOAM's pitzDaily as a user ran it (steady, three iterations written) and OpenFOAM's
    own streamlines through it: `(case directory, [streamline points (n, 3)], [U along them])`."""
    import tarfile

    import vtk

    root = tmp_path_factory.mktemp("pitzDaily")
    with tarfile.open(DATA / "pitzDaily.tar.xz") as archive:
        archive.extractall(root, filter="data")
    reader = vtk.vtkPolyDataReader()
    reader.SetFileName(str(root / "postProcessing" / "streamlines" / "262" / "tracks.vtk"))
    reader.ReadAllVectorsOn()
    reader.Update()
    tracks = reader.GetOutput()
    points = vtk_to_numpy(tracks.GetPoints().GetData()).astype(np.float64)
    velocity = vtk_to_numpy(tracks.GetPointData().GetArray("U")).astype(np.float64)
    lines, ids, rows = tracks.GetLines(), vtk.vtkIdList(), []
    lines.InitTraversal()
    while lines.GetNextCell(ids):
        rows.append(np.array([ids.GetId(i) for i in range(ids.GetNumberOfIds())]))
    return root, [points[r] for r in rows], [velocity[r] for r in rows]


def test_steady_openfoam_case_equals_openfoams_streamline_samples_and_its_streamlines(pitz_daily, caplog):
    """The steady case reads as its last iteration (262), not as three times; flowkit's velocity
    at the points of OpenFOAM's streamlines equals the `U` OpenFOAM sampled there (median within
    1e-3 of the mean speed); and flowkit's pathlines from OpenFOAM's seeds follow its
    streamlines to the outlet."""
    from scipy.spatial import cKDTree

    case, lines, sampled = pitz_daily
    with caplog.at_level(logging.INFO, logger="flowkit"):
        field = fk.io.read(case, dtype="float64")
    assert field.times is None and "the last iteration (262) is read as a steady field" in caplog.text
    points, velocity = np.concatenate(lines), np.concatenate(sampled)
    gap = np.linalg.norm(speeds_at(field, 0.0, points) - velocity, axis=1)
    assert np.median(gap) <= 1e-3 * np.linalg.norm(velocity, axis=1).mean()

    seeds = np.column_stack([np.full(10, -0.0205), np.linspace(0.001, 0.0251, 10), np.full(10, 1e-5)])
    traj = fk.track(field, seeds, 0.0, 0.3, "auto", save_every=10, dtype="float64")
    assert np.all(np.asarray(traj.status[-1]) == fk.Status.OUT_OF_DOMAIN)  # all reached the outlet
    for k, line in enumerate(lines):  # OpenFOAM's lines run in seed order
        path = np.asarray(traj.positions)[:, k, :2]
        distance, _ = cKDTree(line[:, :2]).query(path)
        assert np.median(distance) < 2e-4 and distance.max() < 1e-3  # the step is 25.4 mm high
        np.testing.assert_allclose(path[-1], line[-1, :2], atol=1e-3)


def test_inlet_restarts_land_on_a_real_inlet_patch_that_is_not_a_box_face(pitz_daily):
    """pitzDaily's inlet is the channel above the step (y in [0, 25.4 mm] of a box reaching
    down to -25.4 mm): with `InletOutlet`'s default mode, particles leaving by the outlet
    restart on that patch, never below it."""
    field = fk.io.read(pitz_daily[0])
    seeds = fk.seeding.random_inside(200, field, key=jax.random.key(0))
    traj = fk.track(field, seeds, 0.0, 0.03, "auto", boundary=fk.InletOutlet("patch:inlet", "patch:outlet"))
    generation, positions = np.asarray(traj.generation), np.asarray(traj.positions)
    restarted = np.diff(generation, axis=0) > 0
    assert restarted.sum() > 20
    at = positions[1:][restarted]
    assert np.all(at[:, 1] >= -1e-6) and np.all(at[:, 1] <= 0.0254 + 1e-6)  # on the patch's extent
    assert np.all(at[:, 0] < 0.01)  # near the inlet plane x = -0.0206, one frame after the restart


def test_a_real_2d_case_takes_inlets_and_deposits_on_its_walls():
    """The 2-D EnSight cylinder: `InletOutlet` on its named line patches restarts particles on
    the inlet line (x = 0), and absorbing walls hold particles where their steps met the box's
    sides; tracers flow round the cylinder, never onto it."""
    field = fk.io.read(DATA / "ensight_cylinder" / "cylinder_Re35.case")
    seeds = np.column_stack([np.linspace(10.0, 14.5, 60), np.linspace(-3.0, 3.0, 60)])
    flow = fk.track(field, seeds, 0.0, 0.2, "auto", boundary=fk.InletOutlet("patch:inlet", "patch:outlet"))
    restarted = np.diff(np.asarray(flow.generation), axis=0) > 0
    assert restarted.sum() >= 30
    assert np.all(np.asarray(flow.positions)[1:][restarted][:, 0] < 3.0)  # from x = 0, one frame later
    seeds = np.column_stack([np.full(40, 1.0), np.linspace(-0.45, 0.45, 40)])  # upstream of the cylinder
    held = fk.track(field, seeds, 0.0, 0.8, "auto", boundary=fk.MeshWalls("absorb"))
    stuck = np.asarray(held.status[-1]) == fk.Status.ABSORBED
    assert stuck.sum() >= 30
    at = np.asarray(held.positions[-1])[stuck]
    assert np.all((at[:, 0] > 15 - 1e-3) | (np.abs(at[:, 1]) > 3.75 - 1e-3))  # the outlet or the sides
    assert np.hypot(np.asarray(held.positions)[..., 0] - 2.5, np.asarray(held.positions)[..., 1]).min() > 0.5
