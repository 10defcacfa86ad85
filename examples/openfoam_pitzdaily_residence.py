"""OpenFOAM: pathlines and residence times behind a backward-facing step

The `pitzDaily` tutorial as simpleFoam ran it (`real/openfoam_pitzdaily`, k-epsilon, converged at
iteration 282), read from the case folder by VTK's OpenFOAM reader: 12 225 hexahedra, the cell
values of `U` interpolated to the points as ParaView does. The case is one cell thick, so
particles move in its middle plane. Eight hundred particles start on a line across the channel
3 cm behind the step and are tracked with RK4 for 0.3 s, until they leave through the outlet
(the walls and the outlet as the case's patches have them); how long each stays behind the
step (x from 0 to 0.1 m) is measured from the tracks: those in the shear layer are swept out in
milliseconds, those in the recirculation bubble circulate for the whole run."""

import matplotlib.pyplot as plt
import numpy as np

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(shared("real", "openfoam_pitzdaily", "pitzDaily"))
print(type(field).__name__, field.describe())
lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
z = 0.5 * (lo[2] + hi[2])
seeds = fk.seeding.line((0.03, -0.0245, z), (0.03, 0.0245, z), 800)
traj = fk.track(field, seeds, 0.0, 0.3, 2e-5, save_every=25)
behind_step = ((0.0, -0.0254, lo[2]), (0.1, 0.0254, hi[2]))
residence = fk.analysis.residence_time(traj, behind_step)
print(f"left through the outlet: {np.sum(np.asarray(traj.status[-1]) == fk.Status.OUT_OF_DOMAIN)} of {len(seeds)}")
median, ninety = 1e3 * np.quantile(residence, [0.5, 0.9])
print(f"residence behind the step: median {median:.1f} ms, 90 % of the particles within {ninety:.1f} ms")
fk.analysis.plot_pathlines(traj, "pathlines.png", field=field, color_by="speed", title="pitzDaily: pathlines")
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.scatter(1e3 * seeds[:, 1], 1e3 * residence, s=3)
ax.set(xlabel="release height (mm, the step's lip at 0)", ylabel="time behind the step (ms)")
fig.savefig("residence_times.png", dpi=120)
