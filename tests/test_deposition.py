"""Deposition on walls: each particle once, at the crossing time, counted on the face it hit;
inertial particles settling onto a floor and bouncing with a restitution coefficient."""

import numpy as np
import pytest
import vtk
from meshes import mesh

import flowkit as fk
from flowkit.particles import Inertial


def test_uniform_flow_into_an_absorbing_box_wall_deposits_each_particle_once_at_its_time():
    field = fk.fields.Uniform((1.0, 0.0), bounds=((0.0, 0.0), (1.0, 1.0)))
    rng = np.random.default_rng(0)
    seeds = rng.uniform(0.05, 0.95, (200, 2))
    traj = fk.track(field, seeds, 0.0, 1.5, 0.07, boundary=fk.Absorbing(field.bounds), dtype="float64")
    hits = fk.analysis.deposits(traj)
    assert len(hits.particle_id) == 200 and len(set(hits.particle_id.tolist())) == 200
    np.testing.assert_allclose(hits.times, 1.0 - seeds[hits.particle_id, 0], atol=1e-12)
    np.testing.assert_allclose(hits.positions[:, 0], 1.0, atol=1e-12)
    dmap = fk.analysis.deposition_map(traj, field)
    assert dmap.faces[int(np.argmax(dmap.counts))] == "xmax"
    assert dmap.counts.sum() == np.sum(traj.status[-1] == fk.Status.ABSORBED) == 200


def test_mesh_walls_stick_and_the_map_counts_the_boundary_faces_hit(tmp_path):
    points, cells, types = mesh("hexahedron", shape=(6, 4, 4), jitter=0.1)
    field = fk.MeshField.from_arrays(
        points, cells, np.tile([0.8, 0.1, -0.05], (len(points), 1)), cell_types=types, dtype="float64"
    )
    seeds = np.random.default_rng(1).uniform((0.2, 0.2, 0.2), (1.6, 0.8, 0.8), (300, 3))
    traj = fk.track(field, seeds, 0.0, 4.0, 0.05, boundary=fk.MeshWalls("stick"), dtype="float64")
    stuck = traj.status[-1] == fk.Status.ABSORBED
    assert stuck.all()
    dmap = fk.analysis.deposition_map(traj, field)
    assert dmap.counts.sum() == stuck.sum()
    # each impact lies on the face it is counted on: its distance to that face is ~0
    poly = fk.analysis.deposition.surface(dmap.points, dmap.faces)
    for p, f in zip(fk.analysis.deposits(traj).positions[:40], dmap.face_of[:40]):
        cell = poly.GetCell(int(f))
        closest, sub, pcoords, dist2, weights = [0.0] * 3, vtk.reference(0), [0.0] * 3, vtk.reference(0.0), [0.0] * 4
        cell.EvaluatePosition(p.tolist(), closest, sub, pcoords, dist2, weights)
        assert dist2 < 1e-12
    # the crossing time follows the straight path to the wall it reached
    speed = np.array([0.8, 0.1, -0.05])
    hits = fk.analysis.deposits(traj)
    np.testing.assert_allclose(hits.positions, seeds[hits.particle_id] + hits.times[:, None] * speed, atol=1e-9)
    out = fk.analysis.deposition.write_deposition_vtp(traj, tmp_path / "deposition.vtp")
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(out))
    reader.Update()
    assert reader.GetOutput().GetNumberOfPoints() == 300
    assert {reader.GetOutput().GetPointData().GetArrayName(i) for i in range(3)} == {"time", "particle_id", "velocity"}
    surface = fk.analysis.deposition.write_deposition_map_vtp(dmap, tmp_path / "deposition_map.vtp")
    reader.SetFileName(str(surface))
    reader.Update()
    assert reader.GetOutput().GetCellData().GetArray("deposits").GetRange()[1] == dmap.counts.max()


def test_settling_droplets_land_on_the_floor_at_the_closed_form_time():
    still = fk.fields.Uniform((0.0, 0.0, 0.0), bounds=((-1.0, -1.0, 0.0), (1.0, 1.0, 1.0)))
    model = Inertial(50e-6, 1000.0)
    tau = float(model.response_time)
    vt = (1 - 1.2e-3) * 9.81 * tau
    heights = np.array([0.001, 0.002, 0.004])
    seeds = np.stack([np.zeros(3), np.zeros(3), heights], axis=1)
    traj = fk.track(
        still, seeds, 0.0, 0.1, tau / 5, particles=model, boundary=fk.Absorbing(still.bounds), dtype="float64"
    )
    hits = fk.analysis.deposits(traj)
    assert np.all(traj.status[-1] == fk.Status.ABSORBED)
    # time to fall h from rest: solve h = vt (t - τ(1 - e^{-t/τ})) by Newton
    t = heights / vt
    for _ in range(50):
        t -= (vt * (t - tau * (1 - np.exp(-t / tau))) - heights) / (vt * (1 - np.exp(-t / tau)))
    np.testing.assert_allclose(hits.times, t, rtol=1e-4)  # linear in time within the last step
    np.testing.assert_allclose(hits.velocities[:, 2], -vt * (1 - np.exp(-hits.times / tau)), rtol=1e-3)


@pytest.mark.parametrize("restitution", [1.0, 0.5])
def test_a_bouncing_droplet_leaves_the_floor_with_restitution_times_its_impact_speed(restitution):
    still = fk.fields.Uniform((0.0, 0.0), bounds=((-1.0, 0.0), (1.0, 1.0)))
    model = Inertial(
        2e-3, 1000.0, fluid_density=1e-3, viscosity=1e-8, gravity=(0.0, -9.81), restitution=restitution
    )  # heavy: τ ≈ 2e4 s, a ballistic fall
    traj = fk.track(
        still,
        np.array([[0.0, 0.5]]),
        0.0,
        0.6,
        1e-3,
        particles=model,
        boundary=fk.Reflective(still.bounds),
        dtype="float64",
    )
    vy = traj.variables["velocity"][:, 0, 1]
    bounce = int(np.argmax(vy > 0))
    impact = np.sqrt(2 * 9.81 * 0.5)
    np.testing.assert_allclose(vy[bounce - 1], -impact, rtol=1e-2)
    np.testing.assert_allclose(vy[bounce], restitution * impact, rtol=1e-2)
    assert np.all(traj.positions[:, 0, 1] >= 0)
