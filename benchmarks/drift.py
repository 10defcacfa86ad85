"""What drifting costs beside tracers on gridded products (issue 84): the CPU grid kernel with the
drift rules (`native/drift_rules.h`) against its own tracer run and against the JAX step.

Writes `days` daily files of global 1° surface currents (`fk.datasets.write_ocean_sample`, as
`benchmarks/ocean.py`), reads them with `fk.io.read`, and attaches forcings built in memory as
reanalyses give them: a 10 m wind at 0.5°, 3-hourly, longitudes on [0, 360) (ERA5's layout), and
a surface Stokes drift at 1°, 3-hourly (a wave model's), both float32. Then `particles` seeds over
the open ocean run for `run_days` with RK4 at `dt` as tracers, with 3 % windage, with Stokes
drift, as leeway (a person in water's slopes) and with windage and Stokes drift combined; each
with the kernels on (`FLOWKIT_NATIVE=1`) and off (the JAX step), alternating, `repeat` times.
Rates are of the compiled run (`RunStats.run_s`), in million particle-steps per second; the cost
of each model is its time over the tracer's in the same path.

    python benchmarks/drift.py [--particles 20000 100000] [--days 5] [--run-days 3] [--repeat 2]

The last model is the leeway table's PIW-1 with each element's own coefficients and jibes.
`--roms FILE` times the same models on a ROMS file instead (the shared `Nordic_subset.nc`: the
ocean kernel), with a uniform 10 m wind and Stokes drift, seeds at the surface over its open
water, `--run-days` of RK4 at `--dt`:

    python benchmarks/drift.py --roms ../shared/data/ocean-real/Nordic_subset.nc --run-days 0.5 --dt 600
"""

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import jax
import numpy as np

import flowkit as fk
from flowkit.particles import Buoyant, Combined, Leeway, StokesDrift, Tracer, Windage

fk.configure()  # one CPU device per core, before JAX starts

HOUR = 3600.0


def forcings(days: int) -> dict:
    """The wind (0.5°, [0, 360)) and the Stokes drift (1°) over `days`, 3-hourly, float32 (m/s)."""

    def series(step, scale):
        lon, lat = np.arange(0.0, 360.0, step), np.arange(-90.0, 90.0 + step / 2, step)
        a, b = np.meshgrid(np.radians(lon), np.radians(lat), indexing="ij")
        times = np.arange(days * 8 + 1) * 3 * HOUR
        values = np.empty((len(times), len(lon), len(lat), 2), np.float32)
        for k, t in enumerate(times):
            phase = 2 * np.pi * t / (4 * 86400.0)
            values[k, ..., 0] = scale * (np.cos(2 * b) + 0.4 * np.sin(3 * a + phase))
            values[k, ..., 1] = scale * 0.6 * np.sin(2 * a - phase) * np.cos(b)
        return fk.GridField.from_arrays(values, [lon, lat], times, periodic=(True, False), spherical=True)

    return {"wind": series(0.5, 8.0), "stokes": series(1.0, 0.1)}


MODELS = {
    "tracer": Tracer(),
    "windage 3 %": Windage(0.03),
    "Stokes drift": StokesDrift(),
    "leeway (PIW)": Leeway(0.96, 0.0, 0.0, 0.0),
    "windage + Stokes": Combined(Windage(0.03), StokesDrift()),
    "buoyant": Buoyant(1e-7, axis=1),
}


def rate(field, seeds, steps, dt, particles, native: bool) -> tuple[float, str | None]:
    """M particle-steps/s of one compiled run, and the kernel that stepped it (None: the JAX step)."""
    os.environ["FLOWKIT_NATIVE"] = "1" if native else "0"
    run = fk.tracker.TrackRun(
        field, seeds, 0.0, steps * dt, dt, fk.RK4(), None, steps, particles=particles, key=jax.random.key(0)
    )
    traj = run.run()
    return traj.stats.n_particles * steps / traj.stats.run_s / 1e6, run._kwargs()["kernel"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--particles", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--run-days", type=float, default=3.0)
    parser.add_argument("--dt", type=float, default=HOUR)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--folder", default=None, help="where the daily files go (default: a temporary folder)")
    parser.add_argument("--roms", type=Path, default=None, help="a ROMS file to time the ocean kernel on instead")
    args = parser.parse_args()
    from ocean import ocean_seeds

    with tempfile.TemporaryDirectory() as tmp:
        if args.roms is not None:
            uniform = {"wind": fk.fields.Uniform([-7.0, 7.0]), "stokes": fk.fields.Uniform([0.05, 0.03])}
            field, kernel_name = fk.io.read(args.roms, samples=uniform), "ocean"

        else:
            folder = Path(args.folder or tmp) / f"glo_1_{args.days}"
            if not (folder / "done").exists():
                fk.datasets.write_ocean_sample(folder, days=args.days, resolution=1.0)
                (folder / "done").write_text("")
            field = fk.fields.forcing.attach(fk.io.read(str(folder / "glo_cur_*.nc")), forcings(args.days))
            kernel_name = "grid"
        models = {**MODELS, "leeway (PIW-1 each)": fk.io.leeway("PIW-1")}  # its spread and jibes
        steps = int(round(args.run_days * 86400 / args.dt))
        for n in args.particles:
            rng = np.random.default_rng(0)
            if args.roms is not None:  # the Nordic file's open water, at the surface
                seeds = np.column_stack([rng.uniform(13.5, 15.0, n), rng.uniform(67.2, 67.9, n), np.zeros(n)])
            else:
                seeds = ocean_seeds(n, rng)
            rates: dict = {}
            for _ in range(args.repeat):  # the paths and models alternate
                for name, particles in models.items():
                    for native in (True, False):
                        value, kernel = rate(field, seeds, steps, args.dt, particles, native)
                        rates.setdefault((name, native), []).append(value)
                        assert (kernel == kernel_name) == native, (name, kernel)
            print(f"\n{n} particles x {steps} steps, RK4, dt {args.dt:g} s: M particle-steps/s (cost vs tracer)")
            print(f"{'model':20s} {kernel_name + ' kernel':>24s} {'JAX step':>24s}")
            base = {native: statistics.median(rates[("tracer", native)]) for native in (True, False)}
            for name in models:
                cells = []
                for native in (True, False):
                    values = rates[(name, native)]
                    cost = base[native] / statistics.median(values)
                    cells.append(f"{', '.join(f'{v:.2f}' for v in values)} ({cost:.2f}x)")
                print(f"{name:20s} {cells[0]:>24s} {cells[1]:>24s}")


if __name__ == "__main__":
    main()
