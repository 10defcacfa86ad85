"""float32 runs beside float64 runs where coordinates are large, and what keeping float32's
positions exact costs: NOAA's FVCOM San Francisco Bay subset (longitudes of 237.5°) and
OceanTracker's SCHISM demo (UTM metres, x 1.6·10⁶, y 5.5·10⁶), from `../shared/data/real`.

- agreement: `--seeds` seeds over the middle of each mesh, 6 h of `--dt` steps of RK4 (the
  kernel's), float32 against float64: the median, 90th percentile and largest distance (m)
  between their final positions, of the particles active in both; beside it the float64 run
  against a float64 run from seeds moved by `--nudge` metres (the flow's own sensitivity: what
  any difference of that size grows into by the end);
- throughput: float32 runs of `--particles` particles, `--steps` steps (median of `--repeat`
  whole `fk.track` calls, compiled before), particle-steps/s.

Run it from two checkouts in turn to compare them (`PYTHONPATH=<checkout> python ...`).

    python benchmarks/precision.py [--seeds 2000] [--dt 60] [--particles 100000] [--steps 120]
"""

import argparse
import statistics
from pathlib import Path

import numpy as np

import flowkit as fk

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
FILES = {
    "FVCOM 237.5° E": REAL / "fvcom_sfbofs" / "tri_grid_example-FVCOM.nc",
    "SCHISM UTM": REAL / "schism_v10" / "demo_hindcast_schisim3D_00.nc",
}


def seeds_in(field, n, seed=0):
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    x = lo[:2] + np.random.default_rng(seed).uniform(0.2, 0.8, (n, 2)) * (hi[:2] - lo[:2])
    return np.column_stack([x, np.ones(n)]) if field.dim == 3 else x


def metres_per_unit(field):
    lat = float(np.asarray(field.bounds[0])[1])
    return np.array([111_195.0 * np.cos(np.deg2rad(lat)), 111_195.0]) if field.spherical else np.ones(2)


def final(field, seeds, dtype, dt):
    t0 = float(field.time_range[0])
    traj = fk.track(field, seeds, t0, t0 + 6 * 3600.0, dt, save_every=int(6 * 3600 / dt), dtype=dtype, progress=False)
    return np.asarray(traj.positions[-1], np.float64), np.asarray(traj.status[-1]) == fk.Status.ACTIVE


def gaps(a, b, metres):
    (xa, ok_a), (xb, ok_b) = a, b
    both = ok_a & ok_b
    d = np.hypot(*((xa - xb)[both, :2] * metres).T)
    return f"median {np.median(d):6.2f}, 90 % {np.percentile(d, 90):6.2f}, max {d.max():7.2f} m ({both.sum()} active)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--dt", type=float, default=60.0)
    parser.add_argument("--nudge", type=float, default=0.5)
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"flowkit {fk.__file__}")
    for name, path in FILES.items():
        field = fk.io.read(path)
        metres = metres_per_unit(field)
        seeds = seeds_in(field, args.seeds)
        nudged = seeds.copy()
        nudged[:, 0] += args.nudge / metres[0]
        f64 = final(field, seeds, "float64", args.dt)
        print(f"{name}: float32 vs float64      {gaps(final(field, seeds, 'float32', args.dt), f64, metres)}")
        print(f"{name}: float64, seeds +{args.nudge} m  {gaps(final(field, nudged, 'float64', args.dt), f64, metres)}")
        many = seeds_in(field, args.particles, seed=1)
        t0 = float(field.time_range[0])
        rates = []
        for _ in range(args.repeat + 1):
            traj = fk.track(field, many, t0, t0 + args.steps * args.dt, args.dt, save_every=args.steps, progress=False)
            rates.append(traj.stats.particle_steps_per_s)
        print(
            f"{name}: float32, {args.particles} particles x {args.steps} steps: "
            f"{statistics.median(rates[1:]) / 1e6:.2f} M particle-steps/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
