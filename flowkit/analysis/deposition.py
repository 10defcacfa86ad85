"""Where particles deposited on walls: impact points, times and velocities, and counts per
boundary face (aerosol deposition in an airway, sediment on a bed)."""

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._custom_types import PathLike
from .._status import Status
from ..fields.base import AbstractField
from ..fields.mesh import AbstractMeshField
from ..trajectory import Trajectory

SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


class Deposits(NamedTuple):
    """One row per deposited path (status `ABSORBED`): its `particle_id`, the impact `positions`
    `(D, dim)`, `times` `(D,)` (the crossing time of the wall, interpolated along the step; a
    restarted slot's earlier paths have their saved frame's time) and `velocities` `(D, dim)`:
    the particle's own at impact for models that carry one, else the recorded fluid velocity
    before it, else NaN."""

    particle_id: np.ndarray
    positions: np.ndarray
    times: np.ndarray
    velocities: np.ndarray


def deposits(traj: Trajectory) -> Deposits:
    """The deposited paths of `traj`, each once, at the frame where it first shows `ABSORBED`."""
    status = np.asarray(traj.status)
    ids = np.asarray(traj.particle_id)
    absorbed = status == Status.ABSORBED
    first = absorbed & ~np.concatenate([np.zeros_like(absorbed[:1]), absorbed[:-1] & (ids[:-1] == ids[1:])])
    frame, slot = np.nonzero(first)
    order = np.lexsort((frame, slot))
    frame, slot = frame[order], slot[order]
    times = np.asarray(traj.times)[frame].astype(np.float64)
    last_path = ids[frame, slot] == ids[-1, slot]
    times = np.where(last_path, np.asarray(traj.exit_time)[slot], times)
    velocity = (traj.variables or {}).get("velocity")
    if velocity is not None:
        velocities = np.asarray(velocity)[frame, slot]
    elif traj.velocities is not None:
        velocities = np.asarray(traj.velocities)[np.maximum(frame - 1, 0), slot]
    else:
        velocities = np.full((len(slot), traj.positions.shape[-1]), np.nan)
    return Deposits(ids[frame, slot], np.asarray(traj.positions)[frame, slot], times, velocities)


class DepositionMap(NamedTuple):
    """Deposited paths per boundary face: `counts[f]` for face `faces[f]` (node ids into
    `points` for a mesh, `(F, k)` padded with -1; side names `"xmin"`, ... for a box), and the
    face each deposit landed on (`face_of`, aligned with `deposits(traj)`)."""

    counts: np.ndarray
    faces: np.ndarray | tuple[str, ...]
    points: np.ndarray | None
    face_of: np.ndarray


def deposition_map(traj: Trajectory, field: AbstractField) -> DepositionMap:
    """Count the deposits of `traj` on each boundary face of `field`: the faces of a mesh's
    boundary (the closest, found by VTK's cell locator on the boundary surface), or the sides
    of any other field's box. Every deposit is counted on exactly one face."""
    hits = deposits(traj)
    if isinstance(field, AbstractMeshField):
        faces, points = _mesh_faces(field.as_mesh())
        face_of = _closest_faces(points, faces, hits.positions)
    else:
        lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
        dim = lo.shape[0]
        faces = SIDES[: 2 * dim]
        gaps = np.concatenate(
            [(hits.positions - lo) / (hi - lo), (hi - hits.positions) / (hi - lo)], axis=1
        )  # (D, 2 dim)
        gaps = gaps.reshape(len(gaps), 2, dim).transpose(0, 2, 1).reshape(len(gaps), 2 * dim)  # xmin, xmax, ymin, ...
        face_of, points = np.argmin(np.abs(gaps), axis=1), None
    counts = np.bincount(face_of, minlength=len(faces))
    return DepositionMap(counts, faces, points, face_of)


def _mesh_faces(mesh):
    """The mesh's boundary faces as `(F, k)` node ids (repeats dropped, padded with -1) and its points."""
    _, _, nodes = mesh.boundary_faces()
    rows = [list(dict.fromkeys(row.tolist())) for row in nodes]
    width = max(len(r) for r in rows)
    faces = np.array([r + [-1] * (width - len(r)) for r in rows], np.int64)
    return faces, np.asarray(mesh.points, np.float64)


def surface(points, faces):
    """The boundary faces as a `vtkPolyData` (polygons in 3-D, lines in 2-D)."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData

    poly = vtkPolyData()
    pts = points if points.shape[1] == 3 else np.concatenate([points, np.zeros((len(points), 1))], axis=1)
    vtk_points = vtkPoints()
    vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(pts), deep=True))
    poly.SetPoints(vtk_points)
    cells = vtkCellArray()
    for row in faces:
        ids = row[row >= 0]
        cells.InsertNextCell(len(ids), ids.tolist())
    if points.shape[1] == 3:
        poly.SetPolys(cells)
    else:
        poly.SetLines(cells)
    return poly


def _closest_faces(points, faces, positions) -> np.ndarray:
    from vtkmodules.vtkCommonCore import reference
    from vtkmodules.vtkCommonDataModel import vtkStaticCellLocator

    locator = vtkStaticCellLocator()
    locator.SetDataSet(surface(points, faces))
    locator.BuildLocator()
    closest, cell, sub, distance = [0.0] * 3, reference(0), reference(0), reference(0.0)
    out = np.empty(len(positions), np.int64)
    for i, p in enumerate(positions):
        q = [float(v) for v in p] + [0.0] * (3 - len(p))
        locator.FindClosestPoint(q, closest, cell, sub, distance)
        out[i] = int(cell)
    return out


def write_deposition_vtp(traj: Trajectory, path: PathLike) -> Path:
    """The deposited particles' impact points for ParaView: point arrays `time`, `particle_id`
    and `velocity` (see `deposits`)."""
    from ..io.vtk import polydata, write_polydata

    hits = deposits(traj)
    arrays = {
        "time": hits.times.astype(np.float64),
        "particle_id": hits.particle_id.astype(np.int64),
        "velocity": hits.velocities.astype(np.float64),
    }
    return write_polydata(polydata(hits.positions.reshape(-1, traj.positions.shape[-1]), arrays), Path(path))


def write_deposition_map_vtp(dmap, path: PathLike) -> Path:
    """A mesh's boundary surface with the deposits per face as the cell array `deposits`."""
    from vtkmodules.util.numpy_support import numpy_to_vtk

    from ..io.vtk import write_polydata

    if dmap.points is None:
        raise ValueError(
            "write_deposition_map_vtp: this map counts the sides of a box (no mesh surface); read "
            "dmap.counts per dmap.faces"
        )
    poly = surface(dmap.points, dmap.faces)
    counts = numpy_to_vtk(np.ascontiguousarray(dmap.counts, dtype=np.int64), deep=True)
    counts.SetName("deposits")
    poly.GetCellData().AddArray(counts)
    return write_polydata(poly, Path(path))
