"""Throughput of flowkit vs two baselines on the same computation (issue: W1 of BENCH_NOTES).

The ABC flow sampled on a 64³ periodic grid (float32), N random particles, RK4, dt = 0.01,
STEPS steps. In the same process it times:

- flowkit: `fk.tracker.TrackRun(...).run()` (saves t0 and t1 only), compile timed separately;
- plain JAX: `jax.jit` + `lax.scan` over steps, a per-particle RK4 (stages in an inner scan)
  `vmap`ped over particles, 8 row gathers from the flat (64³, 3) table — the shape of the old
  JAX tracker's compiled core, on JAX's default single device;
- NumPy: the same trilinear + RK4 vectorised over particles in float64 (fewer steps when N is
  large, to bound its time; the rate is per particle-step either way).

It prints particle-steps/s of each (median of --repeat runs), the ratios, compile times and the
RMS difference of the final positions between the implementations.

    python benchmarks/throughput.py [--n 1000 10000 100000] [--steps 1000] [--repeat 3]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts

N_GRID = 64
L = 2 * np.pi
H = L / N_GRID
DT = 0.01


def abc_grid():
    axes = [np.arange(N_GRID) * H] * 3
    return fk.GridField.from_function(fk.fields.ABCFlow(), axes, periodic=True, dtype="float32")


def numpy_baseline(table, x, steps):
    """Hand-vectorised trilinear + RK4 in float64 over all particles at once."""
    n = N_GRID

    def velocity(p):
        s = np.mod(p / H, n)
        i0 = np.floor(s).astype(np.int64) % n
        w = s - np.floor(s)
        i1 = (i0 + 1) % n
        out = np.zeros_like(p)
        for cx in (0, 1):
            ix, wx = (i1[:, 0], w[:, 0]) if cx else (i0[:, 0], 1 - w[:, 0])
            for cy in (0, 1):
                iy, wy = (i1[:, 1], w[:, 1]) if cy else (i0[:, 1], 1 - w[:, 1])
                for cz in (0, 1):
                    iz, wz = (i1[:, 2], w[:, 2]) if cz else (i0[:, 2], 1 - w[:, 2])
                    out += (wx * wy * wz)[:, None] * table[(ix * n + iy) * n + iz]
        return out

    for _ in range(steps):
        k1 = velocity(x)
        k2 = velocity(x + 0.5 * DT * k1)
        k3 = velocity(x + 0.5 * DT * k2)
        k4 = velocity(x + DT * k3)
        x = x + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


def plain_jax_baseline(table, steps):
    """jit + scan over steps; a per-particle RK4 vmapped over particles; 8 row gathers each."""
    n = N_GRID
    inv_h = np.float32(1 / H)

    def velocity(p):
        s = p * inv_h
        f = jnp.floor(s)
        w = s - f
        i0 = jnp.mod(f.astype(jnp.int32), n)
        i1 = jnp.mod(i0 + 1, n)
        out = jnp.zeros(3, p.dtype)
        for cx in (0, 1):
            for cy in (0, 1):
                for cz in (0, 1):
                    ix, iy, iz = (i1[0] if cx else i0[0]), (i1[1] if cy else i0[1]), (i1[2] if cz else i0[2])
                    weight = (w[0] if cx else 1 - w[0]) * (w[1] if cy else 1 - w[1]) * (w[2] if cz else 1 - w[2])
                    out = out + weight * jnp.take(table, (ix * n + iy) * n + iz, axis=0)
        return out

    a = jnp.asarray([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]], jnp.float32)
    b = jnp.asarray([1 / 6, 1 / 3, 1 / 3, 1 / 6], jnp.float32)

    def rk4(p):
        """RK4 stages as an inner scan over the tableau rows (straight-line RK4 is ~5x slower here)."""
        dt = jnp.float32(DT)

        def stage(k, row):
            i, a_i = row
            return k.at[i].set(velocity(p + dt * (a_i @ k))), None

        k, _ = jax.lax.scan(stage, jnp.zeros((4, 3), p.dtype), (jnp.arange(4), a))
        return p + dt * (b @ k)

    @jax.jit
    def run(x):
        return jax.lax.scan(lambda x, _: (jax.vmap(rk4)(x), None), x, None, length=steps)[0]

    return run


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


def rms(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--numpy-budget", type=float, default=2e7, help="max particle-steps for the NumPy baseline per N"
    )
    opts = parser.parse_args()

    grid = abc_grid()
    table32 = jnp.asarray(grid.values[0].reshape(-1, 3))
    table64 = np.asarray(grid.values[0], dtype=np.float64).reshape(-1, 3)
    devices = jax.devices()
    print(
        f"jax {jax.__version__}, {devices[0].platform} × {len(devices)} devices "
        f"({devices[0].device_kind}); W1: ABC on a {N_GRID}³ periodic grid, RK4, dt={DT}, "
        f"{opts.steps} steps, float32; median of {opts.repeat}"
    )
    header = (
        f"{'N':>8} {'flowkit M/s':>12} {'plain JAX M/s':>14} {'NumPy M/s':>10} {'fk/JAX':>7} "
        f"{'fk/NumPy':>9} {'fk compile s':>13} {'JAX compile s':>14} {'RMS fk-JAX':>11} {'RMS fk-NumPy':>13}"
    )
    print(header)
    for n in opts.n:
        seeds = np.asarray(fk.seeding.random_box(n, grid.bounds, key=jax.random.key(0)), np.float32)
        run = fk.tracker.TrackRun(grid, seeds, 0.0, opts.steps * DT, DT, fk.RK4(), save_every=opts.steps)
        compile_start = time.perf_counter()
        run.compile()
        fk_compile = time.perf_counter() - compile_start
        traj, _ = timed(run.run, 1)  # warm
        traj, fk_s = timed(run.run, opts.repeat)
        fk_final = traj.positions[-1]

        baseline = plain_jax_baseline(table32, opts.steps)
        x0 = jnp.asarray(seeds)
        start = time.perf_counter()
        baseline.lower(x0).compile()
        jax_compile = time.perf_counter() - start
        jax_final, jax_s = timed(lambda: baseline(x0).block_until_ready(), opts.repeat + 1)

        np_steps = max(1, min(opts.steps, int(opts.numpy_budget // n)))
        np_final, np_s = timed(lambda: numpy_baseline(table64, seeds.astype(np.float64), np_steps), 1)
        short = fk.track(grid, seeds, 0.0, np_steps * DT, DT, fk.RK4(), save_every=np_steps).positions[-1]
        # compare positions modulo the period (the baselines do not wrap positions)
        wrap = lambda a: np.mod(np.asarray(a, np.float64), L)  # noqa: E731
        fk_rate, jax_rate, np_rate = n * opts.steps / fk_s, n * opts.steps / jax_s, n * np_steps / np_s
        print(
            f"{n:>8} {fk_rate / 1e6:>12.2f} {jax_rate / 1e6:>14.2f} {np_rate / 1e6:>10.2f} {fk_rate / jax_rate:>7.2f} "
            f"{fk_rate / np_rate:>9.1f} "
            f"{fk_compile:>13.2f} {jax_compile:>14.2f} {rms(wrap(fk_final), wrap(jax_final)):>11.1e} "
            f"{rms(wrap(short), wrap(np_final)):>13.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
