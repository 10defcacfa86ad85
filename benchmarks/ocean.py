"""Global surface currents from daily NetCDF files, flowkit beside Parcels 4 on the same files.

Writes `days` daily NetCDF4 files of global surface currents at `resolution` degrees
(`fk.datasets.write_ocean_sample`: CF metadata, float32, land as NaN), then tracks `particles`
seeds spread over the open ocean for `run_days` with RK4 at `dt`:

- flowkit: `fk.io.read(glob)` (timed: reading and building the field) and `fk.track`; the
  particle-steps/s of the run and the time end to end;
- Parcels (when `--parcels-python` names an interpreter with `parcels` installed; it is not a
  dependency of flowkit): the same files through `copernicusmarine_to_sgrid` and
  `FieldSet.from_sgrid_conventions(mesh="spherical")`, land filled with 0, `AdvectionRK4`, the
  same seeds (the first `--parcels-particles` of them) and dt, timed in its own process;
- the agreement of the final positions of the particles both ran (median and 99th percentile,
  degrees), and the ratio of particle-steps/s. Parcels converts m/s to degrees with 1852 m per
  arcminute (a radius of 6366.7 km), flowkit with the mean radius 6371 km: over a 10-day path of
  a few degrees that alone moves particles ~2e-3°; and Parcels keeps positions in float32 by
  default, whose round-off is systematic when a particle moves by nearly the same step every
  step (~3e-6° per step at 1/4°). `--parcels-radius` runs both like for like on the first
  `--agreement-particles` seeds: Parcels with float64 positions, flowkit in float64 with
  Parcels' radius; they then agree to round-off (session 12: 1e-14°).

Seeds stay 10° from the dateline (Parcels 4 has no periodic halo here) and 5° off the land.

    python benchmarks/ocean.py [--resolution 0.25] [--days 30] [--particles 100000] [--run-days 10]
        [--parcels-python /path/to/venv/bin/python] [--parcels-particles 10000]
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts

PARCELS = """
import json, sys, time
import numpy as np, xarray as xr, parcels
from parcels._core.particle import get_default_particle
glob, seeds, out, spatial = sys.argv[1], np.load(sys.argv[2]), sys.argv[5], sys.argv[6]
dt, runtime = float(sys.argv[3]), float(sys.argv[4])
start = time.perf_counter()
ds = xr.open_mfdataset(glob).fillna(0.0)
ds = parcels.convert.copernicusmarine_to_sgrid(fields={"U": ds["uo"], "V": ds["vo"]})
fieldset = parcels.FieldSet.from_sgrid_conventions(ds, mesh="spherical")
particle = get_default_particle(np.dtype(spatial).type)
pset = parcels.ParticleSet(fieldset, particle, x=seeds[:, 0], y=seeds[:, 1], z=np.zeros(len(seeds)))
built = time.perf_counter()
seconds = lambda value: np.timedelta64(int(value), "s")  # noqa: E731
pset.execute([parcels.kernels.AdvectionRK4], dt=seconds(dt), runtime=seconds(runtime), verbose_progress=False)
done = time.perf_counter()
np.save(out, np.stack([np.asarray(pset.x, float), np.asarray(pset.y, float)], -1))
print(json.dumps({"build_s": built - start, "run_s": done - built, "version": parcels.__version__}))
"""


def ocean_seeds(n: int, rng) -> np.ndarray:
    """Seeds uniform per area over the sample's open ocean, 10° from the dateline, 5° off land."""
    out = np.empty((0, 2))
    while len(out) < n:
        lon = rng.uniform(-170, 170, 2 * n)
        lat = np.rad2deg(np.arcsin(rng.uniform(np.sin(np.deg2rad(-65)), np.sin(np.deg2rad(65)), 2 * n)))
        wet = ~((lon > -25) & (lon < 45) & (np.abs(lat) < 40))
        out = np.concatenate([out, np.stack([lon[wet], lat[wet]], -1)])
    return out[:n]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resolution", type=float, default=0.25)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--run-days", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=3600.0)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--parcels-python", default=None)
    parser.add_argument("--parcels-particles", type=int, default=10_000)
    parser.add_argument(
        "--parcels-radius",
        action="store_true",
        help="also run both like for like: Parcels with float64 positions, flowkit in float64 with "
        "Parcels' Earth radius (1852 m per arcminute)",
    )
    parser.add_argument("--agreement-particles", type=int, default=2000)
    parser.add_argument("--folder", default=None, help="where the daily files go (default: a temporary folder)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp) / f"glo_{args.resolution:g}_{args.days}"
        if not (folder / "done").exists():
            start = time.perf_counter()
            fk.datasets.write_ocean_sample(folder, days=args.days, resolution=args.resolution)
            (folder / "done").write_text("")
            print(f"wrote {args.days} daily files at {args.resolution:g}° in {time.perf_counter() - start:.1f} s")
        glob = str(folder / "glo_cur_*.nc")
        seeds = ocean_seeds(args.particles, np.random.default_rng(0))
        steps = int(round(args.run_days * 86400 / args.dt))
        start = time.perf_counter()
        field = fk.io.read(glob, dtype=args.dtype)
        read_s = time.perf_counter() - start
        traj = fk.track(
            field, seeds, 0.0, steps * args.dt, args.dt, save_every=steps, integrator=fk.RK4(), dtype=args.dtype
        )
        total_s = time.perf_counter() - start
        stats = traj.stats
        ours = stats.n_particles * steps / stats.run_s
        kind = type(field).__name__
        print(
            f"flowkit {fk.__version__}: {kind}, {args.particles} particles x {steps} steps: read "
            f"{read_s:.2f} s, compile {stats.compile_s:.2f} s, run {stats.run_s:.2f} s, end to end "
            f"{total_s:.2f} s; {ours / 1e6:.2f} M particle-steps/s"
        )
        print(
            f"   final status: {np.bincount(np.asarray(traj.status[-1]), minlength=8).tolist()} (0 active, 7 beached)"
        )
        if args.parcels_python is None:
            print("Parcels: not run (pass --parcels-python)")
            return
        m = min(args.parcels_particles, args.particles)
        np.save(Path(tmp) / "seeds.npy", seeds[:m])
        out = Path(tmp) / "parcels.npy"
        timing = parcels_run(
            args.parcels_python, glob, Path(tmp) / "seeds.npy", args.dt, steps * args.dt, out, "float32"
        )
        theirs = m * steps / timing["run_s"]
        final = np.load(out)
        mine = np.asarray(traj.positions[-1, :m], np.float64)
        both = (np.asarray(traj.status[-1, :m]) == fk.Status.ACTIVE) & np.isfinite(final).all(axis=1)
        gap = np.abs(mine - final)[both]
        gap[:, 0] = np.abs((gap[:, 0] + 180) % 360 - 180)
        distance = np.hypot(gap[:, 0] * np.cos(np.deg2rad(final[both, 1])), gap[:, 1])
        print(
            f"Parcels {timing['version']}: {m} particles x {steps} steps: build "
            f"{timing['build_s']:.2f} s, run {timing['run_s']:.2f} s; {theirs / 1e6:.4f} M "
            "particle-steps/s"
        )
        print(f"flowkit / Parcels: {ours / theirs:.0f}x particle-steps/s")
        print(
            f"agreement after {args.run_days:g} days ({int(both.sum())} particles): median "
            f"{np.median(distance):.2e}°, 99th percentile {np.percentile(distance, 99):.2e}°, max "
            f"{distance.max():.2e}°"
        )
        if args.parcels_radius:  # like for like: float64 positions in both, Parcels' radius in flowkit
            k = min(args.agreement_particles, m)
            np.save(Path(tmp) / "few.npy", seeds[:k])
            parcels_run(args.parcels_python, glob, Path(tmp) / "few.npy", args.dt, steps * args.dt, out, "float64")
            final = np.load(out)
            fk.fields.grid.EARTH_RADIUS = 1852.0 * 60 * 180 / np.pi  # read when the step is traced
            fk.clear_caches()
            same = fk.track(
                fk.io.read(glob, dtype="float64"),
                seeds[:k],
                0.0,
                steps * args.dt,
                args.dt,
                save_every=24,
                integrator=fk.RK4(),
                dtype="float64",
            )  # float64 at 1/12° is streamed: saves within a window
            both = (np.asarray(same.status[-1]) == fk.Status.ACTIVE) & np.isfinite(final).all(axis=1)
            gap = np.asarray(same.positions[-1], np.float64)[both] - final[both]
            gap[:, 0] = (gap[:, 0] + 180) % 360 - 180
            distance = np.hypot(gap[:, 0] * np.cos(np.deg2rad(final[both, 1])), gap[:, 1])
            print(
                f"   like for like ({int(both.sum())} particles; Parcels float64 positions, flowkit "
                f"float64 with Parcels' radius): median {np.median(distance):.2e}°, 99th percentile "
                f"{np.percentile(distance, 99):.2e}°, max {distance.max():.2e}°"
            )


def parcels_run(python, glob, seeds, dt, runtime, out, spatial) -> dict:
    """Parcels on `seeds` in its own interpreter, positions in `spatial` precision; its timings."""
    result = subprocess.run(
        [python, "-c", PARCELS, glob, str(seeds), str(dt), str(runtime), str(out), spatial],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise SystemExit(f"Parcels failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
