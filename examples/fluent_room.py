"""Fluent: air in a ventilated room, from a CFF case and data file

A 2-D room flow written by Ansys Fluent in its HDF5 format (`real/fluent_cff_room`, VTK's test
data: `room.cas.h5` and `room.dat.h5`, 4 338 quadrilaterals, cell values `SV_U`, `SV_V`), read
by VTK's `vtkFLUENTCFFReader` with the data file found beside the case. Cell values are
interpolated to the points as ParaView's tracer does. Particles released along the room's
floor are carried by the jet and its recirculation for 20 s. The case's walls reflect them and
the ducts' ends at the top are open, so those that reach the outlet duct's end leave there
(`OUT_OF_DOMAIN`, kept in the arrays where they left)."""

import numpy as np

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(shared("real", "fluent_cff_room", "room.cas.h5"))
print(type(field).__name__, field.describe())
seeds = fk.seeding.line((0.2, 0.3), (3.8, 0.3), 300)
walls = fk.MeshWalls("reflect", open=["ymax"])  # the two ducts end at the top: inflow and outlet
traj = fk.track(field, seeds, 0.0, 20.0, 0.0025, save_every=40, boundary=walls)
final = np.asarray(traj.status[-1])
gone = np.sum(final == fk.Status.OUT_OF_DOMAIN)
print(f"after 20 s: {np.sum(final == fk.Status.ACTIVE)} in the room, {gone} gone by the outlet")
fk.analysis.plot_pathlines(traj, "pathlines.png", field=field, color_by="speed", title="Fluent room: 20 s of air")
fk.analysis.animate(traj, "room.mp4", field=field, progress=False)
