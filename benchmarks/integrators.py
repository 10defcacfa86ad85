"""Native RK4 vs `fk.Diffrax(Tsit5)` at equal accuracy (the diffrax issue's benchmark).

The analytic double gyre, N particles on a grid, t = 0 → 10, float64. The reference is RK4 with
dt = 1e-3. For each setting it prints the max position error at t = 10, the wall time of the run
(compile excluded: a warm-up run first), and particle-steps per second (tracker steps for RK4;
for Tsit5 the solver's own steps, counted on a sample of particles with `Diffrax.solve`).

    python benchmarks/integrators.py [--n 10000] [--repeat 3]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts

jax.config.update("jax_enable_x64", True)
T1 = 10.0


def run(field, seeds, dt, integrator, repeat):
    fk.track(field, seeds, 0.0, T1, dt, integrator, save_every=10**9, dtype="float64")  # warm-up (compile)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        traj = fk.track(field, seeds, 0.0, T1, dt, integrator, save_every=10**9, dtype="float64")
        times.append(time.perf_counter() - start)
    return traj.positions[-1], float(np.median(times))


def solver_steps(field, seeds, integrator, interval, sample=64):
    """Mean number of accepted+rejected diffrax steps per particle over [0, T1]."""
    total = 0
    chosen = jnp.asarray(seeds[:: max(1, len(seeds) // sample)])
    x = chosen
    for k in range(int(round(T1 / interval))):
        term = fk.integrators.FlowTerm(field)
        sols = jax.vmap(lambda y: integrator.solve(term, y, jnp.asarray(k * interval), jnp.asarray(interval)))(x)
        total += int(jnp.sum(sols.stats["num_steps"]))
        x = sols.ys[:, 0]
    return total / len(chosen)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    field = fk.fields.DoubleGyre()
    side = int(np.sqrt(opts.n / 2))
    seeds = fk.seeding.uniform_grid((2 * side, side), field.bounds, include_boundaries=False)
    n = len(seeds)
    reference = fk.track(field, seeds, 0.0, T1, 1e-3, fk.RK4(), save_every=10**9, dtype="float64").positions[-1]
    print(
        f"jax {jax.__version__}, {jax.devices()[0].platform} × {len(jax.devices())}; double gyre, "
        f"{n} particles, t = 0 → {T1}, float64, median of {opts.repeat}"
    )
    print(f"{'integrator':<34} {'max error':>10} {'wall s':>8} {'steps/particle':>15} {'M particle-steps/s':>19}")
    for dt in (0.1, 0.05, 0.02, 0.01):
        final, seconds = run(field, seeds, dt, fk.RK4(), opts.repeat)
        steps = T1 / dt
        print(
            f"{'RK4 dt=' + str(dt):<34} {np.abs(final - reference).max():>10.1e} {seconds:>8.3f} "
            f"{steps:>15.0f} {n * steps / seconds / 1e6:>19.2f}"
        )
    interval = 0.5
    for rtol in (1e-4, 1e-6, 1e-8):
        integrator = fk.Diffrax(rtol=rtol, atol=rtol * 1e-2)
        final, seconds = run(field, seeds, interval, integrator, opts.repeat)
        steps = solver_steps(field, seeds, integrator, interval)
        label = f"Diffrax(Tsit5) rtol={rtol:g} (dt={interval})"
        print(
            f"{label:<34} {np.abs(final - reference).max():>10.1e} {seconds:>8.3f} {steps:>15.0f} "
            f"{n * steps / seconds / 1e6:>19.2f}"
        )


if __name__ == "__main__":
    main()
