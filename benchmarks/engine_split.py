"""Where a layered field's step spends its time, and whether a per-stage compiled probe of the
field (`fields.layered_probe`: location and interpolation of all rows in one FFI call, the rest
of the JAX step unchanged) closes the gap to the fused ocean kernel. OpenDrift's Nordic ROMS
file, `--n` surface seeds in its middle, RK4, dt 1 h, 40 steps; the per-evaluation costs on one
device (median of 10 calls), the whole runs on the process's devices (median of 3).

    PV=1 python benchmarks/engine_split.py [--n 100000]   # the probe evaluates values too
    PV=0 python benchmarks/engine_split.py                # the probe locates, JAX interpolates
"""

import argparse
import dataclasses
import statistics
import subprocess
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import flowkit as fk

NORDIC = "../shared/data/ocean-real/Nordic_subset.nc"


def timed(fn, *args):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(10):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def evaluations(n):
    field = fk.io.read(NORDIC)
    lo, hi = (np.asarray(b) for b in field.bounds)
    rng = np.random.default_rng(0)
    x = rng.uniform(lo[:2] + 0.3 * (hi[:2] - lo[:2]), lo[:2] + 0.7 * (hi[:2] - lo[:2]), (n, 2))
    x = jnp.asarray(np.concatenate([x, np.full((n, 1), 5.0)], 1), jnp.float32)
    t = float(field.times[0]) + 100.0
    velocity = eqx.filter_jit(lambda f, x, h: f.velocity_batch(t, x, None, h))
    locate = eqx.filter_jit(lambda f, x, h: f.locate_batch(x, h))
    settle = eqx.filter_jit(lambda f, x, h: f.settle_batch(t, x, h))
    beached = eqx.filter_jit(lambda f, x, h: f.beached_batch(x, h))
    print(f"per evaluation of {n} rows, ms:  {'JAX':>8s} {'probe':>8s}")
    for name, fn, moved, exact in [
        ("velocity, hinted nowhere", velocity, False, None),
        ("velocity, a stage (moved 1e-4)", velocity, True, False),
        ("velocity, exact hints", velocity, False, True),
        ("location, a stage", locate, True, False),
        ("settling, exact hints", settle, True, True),
        ("land, exact hints", beached, True, True),
    ]:
        row = []
        for on in (False, True):
            f = dataclasses.replace(field, engine=on)
            cold = f.hints(n, jnp.float32)
            hint = cold if exact is None else jax.jit(lambda x, h: f.velocity_batch(t, x, None, h)[1])(x, cold)
            hint = hint if exact is None else hint.marked(exact)
            row.append(timed(fn, f, x + 1e-4 if moved else x, hint))
        print(f"{name:34s} {row[0]:8.2f} {row[1]:8.2f}", flush=True)


def runs(n, native):
    """`(tracer, windage)` particle-steps/s of whole runs."""
    field = fk.io.read(NORDIC, samples={"wind": fk.fields.Uniform([10.0, 0.0])})
    lo, hi = (np.asarray(b) for b in field.bounds)
    rng = np.random.default_rng(0)
    x = rng.uniform(lo[:2] + 0.3 * (hi[:2] - lo[:2]), lo[:2] + 0.7 * (hi[:2] - lo[:2]), (n, 2))
    x = np.concatenate([x, np.zeros((n, 1))], 1)
    out = []
    for particles in (fk.particles.Tracer(), fk.particles.Windage(0.03)):
        rates = []
        for _ in range(3):
            traj = fk.track(field, x, 0.0, 40 * 3600.0, 3600.0, save_every=40, particles=particles, progress=False)
            rates.append(traj.stats.particle_steps_per_s)
        out.append(statistics.median(rates))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs-only", action="store_true")
    args = parser.parse_args()
    if args.runs_only:
        print(*runs(args.n, None))
        return
    evaluations(args.n)
    for native in ("0", "1"):
        env = {"FLOWKIT_NATIVE": native}
        import os

        result = subprocess.run(
            [sys.executable, __file__, "--n", str(args.n), "--runs-only"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        tracer, windage = map(float, result.stdout.split()[-2:])
        what = "JAX step, field in JAX" if native == "0" else "kernel (tracer) / JAX step + probe (windage)"
        print(f"FLOWKIT_NATIVE={native} ({what}): tracer {tracer / 1e6:.2f} M/s, windage {windage / 1e6:.2f} M/s")


if __name__ == "__main__":
    main()
