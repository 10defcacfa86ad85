"""ROMS: surface drifters beaching on the Norwegian coast

MET Norway's ROMS Nordic 4 km model (`ocean-real/Nordic_subset.nc`, a cut of three daily means
that OpenDrift tests with), read as ROMS writes it: the C-grid `u`/`v` turned east and north by
`angle`, the s-levels from `h`, `zeta`, `hc`, `Cs_r` and `Vtransform`, land from `mask_rho`.
Two thousand drifters start at random over the water at the surface (seeds given as lon, lat
start there) and drift for two days with RK4 at 30-minute steps. A drifter whose step ends where
the land mask reaches one half stops `BEACHED` at its last wet position; nothing is dropped."""

import jax
import numpy as np

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(shared("ocean-real", "Nordic_subset.nc"))
print(field.time_origin)
seeds = fk.seeding.random_inside(2000, field, key=jax.random.key(0))[:, :2]  # lon, lat: at the surface
traj = fk.track(field, seeds, "2016-02-02T12", "2016-02-04T12", "30min", save_every=2)
final = np.asarray(traj.status[-1])
for status in (fk.Status.ACTIVE, fk.Status.BEACHED, fk.Status.OUT_OF_DOMAIN):
    print(f"{status.name.lower():>13}: {np.sum(final == status)} of {len(final)}")
fk.analysis.plot_pathlines(traj, "pathlines.png", field=field, title="ROMS Nordic: two days of surface drift")
fk.analysis.animate(traj, "drift.mp4", field=field, progress=False)
