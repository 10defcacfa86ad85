"""Particle-steps per second against the number of particles N (issue 6: where does it saturate?).

The W1 workload of `benchmarks/throughput.py` (the ABC flow on a 64³ periodic float32 grid, RK4,
dt = 0.01), frames saved at t0 and t1 only, N from 10³ to 10⁷; the number of steps shrinks as N
grows (at least 20) so each size runs a few seconds. Every size is compiled and warmed up
(`warmup=True`) before the timed run; the best of `--repeat` runs is printed with the compile
time and the device.

    python benchmarks/scale.py [--sizes 1000 10000 100000 1000000 10000000] [--repeat 2]
"""

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

import flowkit as fk

sys.path.insert(0, str(Path(__file__).parent))
from throughput import DT, L, abc_grid  # noqa: E402

fk.configure()  # one CPU device per core, before JAX starts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--budget", type=float, default=2e8, help="particle-steps per size (steps = budget / N, 20..1000)"
    )
    args = parser.parse_args()
    device = jax.devices()[0]
    print(f"jax {jax.__version__} on {device.platform} {device.device_kind} × {len(jax.devices())}")
    field = abc_grid()
    print(f"{'N':>10}{'steps':>7}{'M particle-steps/s':>20}{'compile s':>11}{'run s':>8}")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        steps = int(np.clip(args.budget // n, 20, 1000))
        seeds = rng.uniform(0, L, (n, 3))
        best, compile_s = None, 0.0
        for _ in range(args.repeat):
            info = fk.track(field, seeds, 0.0, steps * DT, DT, fk.RK4(), save_every=steps, warmup=True).stats
            compile_s += info.compile_s  # the first run of a size compiles; later ones reuse it
            best = info if best is None or info.run_s < best.run_s else best
        print(
            f"{n:>10}{steps:>7}{best.particle_steps_per_s / 1e6:>20.1f}{compile_s:>11.2f}{best.run_s:>8.2f}", flush=True
        )


if __name__ == "__main__":
    main()
