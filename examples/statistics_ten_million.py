"""In-run statistics: ten million particles, no tracks stored

For runs too large to keep their tracks, statistics are gathered inside the compiled run at every
saved frame. Ten million particles start uniformly over the ocean of flowkit's 1° global sample
(daily CF files it writes itself: a zonal jet with a swinging meander, a continent, Antarctica)
and drift for two days; `GridCounts` counts them per 2° cell and per 12-hour window and
`PolygonStats` follows them through two boxes, without a single frame of their tracks kept
(`tracks=False`). Each statistic equals the same statistic computed from stored frames (the
tests check it)."""

import time

import jax
import numpy as np
import shapely

import flowkit as fk

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(fk.datasets.sample_ocean())
seeds = fk.seeding.random_inside(10_000_000, field, key=jax.random.key(0))
grid = fk.statistics.GridCounts([np.arange(-180, 181, 2.0), np.arange(-90, 91, 2.0)], window=12 * 3600.0)
boxes = fk.statistics.PolygonStats([shapely.box(-60, -10, -40, 10), shapely.box(60, -10, 80, 10)], window=12 * 3600.0)
start = time.perf_counter()
traj = fk.track(field, seeds, 0.0, 2 * 86400.0, 3600.0, save_every=3, statistics=[grid, boxes], tracks=False)
seconds = time.perf_counter() - start
rate = len(seeds) * 48 / seconds / 1e6
print(f"{len(seeds):.1e} particles x 48 steps in {seconds:.1f} s ({rate:.0f} M particle-steps/s, compile included)")
gridded = traj.statistics["grid_counts"]
print(gridded["count"].sizes, "frames per window:", gridded["frames"].values)
boxed = traj.statistics["polygons"]
print("particles in each box, summed over each window's frames:\n", boxed["count"].to_pandas())
print("entries per window:\n", boxed["entries"].to_pandas())
print("connectivity (released in a box -> reached a box):\n", boxed["connectivity"].to_pandas())
last = gridded["count"].isel(time=-1).values.T / int(gridded["frames"][-1])  # per cell (lon, lat), the window's mean
fk.analysis.plot_density(last, ((-180.0, -90.0), (180.0, 90.0)), "density_last_window.png", field=field)
