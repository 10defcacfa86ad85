"""FTLE of the double gyre on a 500×250 grid: autodiff (forward-mode flow-map Jacobian) vs
central finite differences (4 extra particles per point through the sharded tracker).

t0 = 0, T = 15, RK4, dt = 0.05, float64. Prints wall time (first call, compile included, and
the median of repeats) and the agreement of the two fields.

    python benchmarks/ftle.py [--nx 500 --ny 250] [--repeat 3]
"""

import argparse
import time

import jax
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nx", type=int, default=500)
    parser.add_argument("--ny", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    field = fk.fields.DoubleGyre()
    points = fk.seeding.uniform_grid((opts.nx, opts.ny), field.bounds)
    steps = int(15.0 / 0.05)
    print(
        f"jax {jax.__version__}, {jax.devices()[0].platform} × {len(jax.devices())}; double gyre "
        f"FTLE on {opts.nx}×{opts.ny} points, T = 15, dt = 0.05 ({steps} RK4 steps), float64"
    )
    results = {}
    for method, kwargs in (("autodiff", {}), ("fd", {"delta": 1e-6})):
        start = time.perf_counter()
        values = fk.analysis.ftle(field, points, 0.0, 15.0, 0.05, method=method, **kwargs)
        first = time.perf_counter() - start
        times = []
        for _ in range(opts.repeat):
            start = time.perf_counter()
            values = fk.analysis.ftle(field, points, 0.0, 15.0, 0.05, method=method, **kwargs)
            times.append(time.perf_counter() - start)
        results[method] = values
        rate = len(points) * steps / np.median(times) / 1e6
        print(f"{method:>9}: first call {first:6.2f} s, then {np.median(times):6.2f} s ({rate:.2f} M point-steps/s)")
    difference = np.abs(results["autodiff"] - results["fd"])
    print(
        f"|autodiff - fd|: median {np.nanmedian(difference):.1e}, 90th percentile "
        f"{np.nanpercentile(difference, 90):.1e}, max {np.nanmax(difference):.1e} (at ridges)"
    )


if __name__ == "__main__":
    main()
