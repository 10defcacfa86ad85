"""Statistics gathered inside the run against tracks stored and counted afterwards.

Global surface currents (`fk.datasets.write_ocean_sample`: daily NetCDF files, 1 degree), seeds
over the open ocean, RK4 with dt = 1 h for `--days`, a frame every 6 h; the statistics: counts
on a 1-degree grid per day (`GridCounts`) and ten 10 x 10 degree boxes (`PolygonStats`: counts,
entries, exits, connectivity, first arrivals, residence). Each mode runs in its own process,
which prints its particle-steps/s and peak RSS:

- `inside`: `fk.track(..., statistics=[...], tracks=False)`: nothing but the statistics and the
  first and last frames kept;
- `plain`: the same run without statistics, frames kept: the run's cost without them;
- `after` (at `--after-particles` at most): frames kept, then the same statistics computed
  from them with NumPy and shapely (as the tests check them): what a user does without
  statistics in the step.

    python benchmarks/in_run_statistics.py [--particles 1000000] [--days 10] [--after-particles 200000]
        [--batch-size N] [--modes inside plain after] [--events N]

`--events N` logs up to N entries and exits per device and batch (`PolygonStats(events=N)`) in
the `inside` run.

At 10^8 particles only `inside` fits this machine's memory with frames kept for a day or more:
`--particles 100000000 --days 1 --batch-size 10000000 --modes inside`.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EDGES = [np.arange(-180, 181, 1.0), np.arange(-90, 91, 1.0)]


def boxes():
    import shapely

    return [shapely.box(lon, lat, lon + 10, lat + 10) for lon in (-60, -30, 0, 30, 60) for lat in (-30, 10)]


def statistics(fk, events: int = 0):
    return [
        fk.statistics.GridCounts(EDGES, window=86400.0),
        fk.statistics.PolygonStats(boxes(), window=86400.0, events=events),
    ]


def run(mode: str, n: int, days: int, batch_size, folder: str, events: int = 0) -> dict:
    import jax

    import flowkit as fk

    field = fk.io.read(f"{folder}/*.nc")
    seeds = fk.seeding.random_inside(n, field, key=jax.random.key(0))
    kw = dict(save_every=6, batch_size=batch_size)
    t1 = days * 86400.0
    if mode == "inside":
        kw.update(statistics=statistics(fk, events), tracks=False)
    start = time.perf_counter()
    traj = fk.track(field, seeds, 0.0, t1, 3600.0, **kw)
    seconds = time.perf_counter() - start
    if mode == "after":  # the tests' own counting from the frames (tests/test_statistics.py)
        sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
        from test_statistics import grid_reference_2d, polygon_reference

        counted = time.perf_counter()
        grid_reference_2d(traj, EDGES, 86400.0)
        polygon_reference(traj, boxes(), 86400.0)
        seconds, after_s = time.perf_counter() - start, time.perf_counter() - counted
    steps = n * traj.stats.n_steps
    out = dict(mode=mode, n=n, seconds=seconds, rate=steps / seconds, run_rate=traj.stats.particle_steps_per_s)
    out["rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if mode == "after":
        out["after_s"] = after_s
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--particles", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--after-particles", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--modes", nargs="+", default=["inside", "plain", "after"], choices=["inside", "plain", "after"]
    )
    parser.add_argument("--events", type=int, default=0, help="PolygonStats(events=): log entries and exits")
    parser.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run(args.mode, args.particles, args.days, args.batch_size, args.folder, args.events)))
        return
    import flowkit as fk

    folder = tempfile.mkdtemp()
    fk.datasets.write_ocean_sample(folder, days=args.days + 1)
    print(f"{args.particles} particles x {args.days * 24} RK4 steps of 1 h, a frame every 6 h; daily windows")
    for mode in args.modes:
        n = min(args.particles, args.after_particles) if mode == "after" else args.particles
        command = [
            sys.executable,
            __file__,
            "--mode",
            mode,
            "--particles",
            str(n),
            "--days",
            str(args.days),
            "--folder",
            folder,
        ]
        if args.batch_size:
            command += ["--batch-size", str(args.batch_size)]
        command += ["--events", str(args.events)]
        line = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        extra = f", of which counting from the frames {line['after_s']:.2f} s" if "after_s" in line else ""
        print(
            f"{mode:6s} N={line['n']:>9d}: {line['seconds']:.2f} s end to end "
            f"({line['rate'] / 1e6:.2f} M particle-steps/s{extra}; run alone {line['run_rate'] / 1e6:.2f} M/s), "
            f"peak RSS {line['rss_gb']:.2f} GB",
            flush=True,
        )


if __name__ == "__main__":
    main()
