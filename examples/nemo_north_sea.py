"""NEMO: the North Sea and the Norwegian Coastal Current on ORCA025

Five-day means of IPSL's NEMO ORCA025 run (`real/nemo_orca025_northsea`, the cut that Parcels'
tutorials use): separate `U` and `V` files of the C-grid and the grid file `coordinates.nc`
beside them, read as one folder. flowkit finds the grid file, puts the land processors that the
run eliminated (`nav_lon = nav_lat = 0`) back in place from it, averages the faces to the T
points and turns them east by the grid's angle; land is where NEMO wrote exact zeros. A line of
particles across the northern North Sea drifts at the surface for five days."""

import numpy as np

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(shared("real", "nemo_orca025_northsea"))
print(type(field).__name__, field.describe(), field.time_origin)
seeds = fk.seeding.line((-1.5, 58.0), (6.0, 58.0), 400)
traj = fk.track(field, seeds, "2000-01-02T12", "2000-01-07T12", "1h", save_every=3)
final = np.asarray(traj.status[-1])
print(f"beached: {np.sum(final == fk.Status.BEACHED)}, active: {np.sum(final == fk.Status.ACTIVE)} of {len(final)}")
fk.analysis.plot_pathlines(traj, "pathlines.png", field=field, title="NEMO ORCA025: five days from 58°N")
fk.analysis.animate(traj, "drift.mp4", field=field, progress=False)
