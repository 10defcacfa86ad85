"""What inlets and mesh walls cost: throughput with InletOutlet (grid/random/flux) and mesh walls
beside a plain reflective box, on the same field and particles, in one process (issue 4).

- channel: 2-D plane Poiseuille flow `u = 4y(1-y)` on a 201 × 101 grid over [0, 2] × [0, 1],
  N random particles, RK4, dt = 0.01; particles cross in 2 time units, so with STEPS = 400
  most restart at least once.
- pipe: Poiseuille flow through the sample pipe mesh (`fk.datasets.pipe_mesh`, 28 800 tets),
  N particles inside, RK4, dt = 0.02.

Each configuration is compiled first (compile time printed), then run `--repeat` times; the
median particle-steps/s and its ratio to the reflective box on the same field are printed, with
the number of restarts. The issue's bar: InletOutlet / Reflective >= 0.7.

    python benchmarks/boundaries.py [--n 200000] [--n-pipe 50000] [--steps 400] [--repeat 3]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts


def channel():
    flow = fk.fields.Analytic(
        lambda t, x, args: jnp.stack([4 * x[1] * (1 - x[1]), 0 * x[0]]), bounds=((0.0, 0.0), (2.0, 1.0)), dim=2
    )
    return fk.GridField.from_function(flow, [np.linspace(0, 2, 201), np.linspace(0, 1, 101)])


def pipe():
    points, tets = fk.datasets.pipe_mesh()
    return fk.MeshField.from_arrays(points, tets, fk.datasets.poiseuille(points))


def pipe_seeds(n, rng):
    r = 0.48 * np.sqrt(rng.uniform(size=n))
    a = rng.uniform(0, 2 * np.pi, n)
    return np.stack([rng.uniform(0, 4, n), r * np.cos(a), r * np.sin(a)], axis=1)


def measure(field, seeds, dt, steps, boundary, repeat):
    run = fk.tracker.TrackRun(field, seeds, 0.0, steps * dt, dt, fk.RK4(), boundary, steps, key=jax.random.key(0))
    start = time.perf_counter()
    run.compile()
    compile_s = time.perf_counter() - start
    rates, traj = [], None
    for _ in range(repeat):
        traj = run.run()
        rates.append(traj.stats.particle_steps_per_s)
    restarts = int(traj.generation[-1].sum()) if traj.generation is not None else 0
    return float(np.median(rates)), compile_s, restarts


def report(title, field, seeds, dt, steps, cases, repeat):
    print(f"\n{title}: {len(seeds)} particles × {steps} steps, RK4, dt={dt}")
    print(f"{'boundary':<34}{'M steps/s':>11}{'ratio':>8}{'compile s':>11}{'restarts':>10}")
    base = None
    for name, boundary in cases:
        rate, compile_s, restarts = measure(field, seeds, dt, steps, boundary, repeat)
        base = rate if base is None else base
        print(f"{name:<34}{rate / 1e6:>11.2f}{rate / base:>8.2f}{compile_s:>11.2f}{restarts:>10}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--n-pipe", type=int, default=50_000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind} × {len(jax.devices())}")
    rng = np.random.default_rng(0)

    field = channel()
    seeds = rng.uniform((0, 0.01), (2, 0.99), (args.n, 2))
    report(
        "channel (GridField)",
        field,
        seeds,
        0.01,
        args.steps,
        [
            ("Reflective (box)", fk.Reflective(field.bounds)),
            ("InletOutlet grid, reflect walls", fk.InletOutlet("xmin", "xmax", "grid", walls="reflect")),
            ("InletOutlet random, reflect walls", fk.InletOutlet("xmin", "xmax", "random", walls="reflect")),
            ("InletOutlet flux, reflect walls", fk.InletOutlet("xmin", "xmax", "flux", walls="reflect")),
        ],
        args.repeat,
    )

    field = pipe()
    seeds = pipe_seeds(args.n_pipe, rng)
    report(
        "pipe (MeshField, 28 800 tets)",
        field,
        seeds,
        0.02,
        args.steps // 2,
        [
            ("Reflective (box)", fk.Reflective(field.bounds)),
            ("MeshWalls reflect", fk.MeshWalls("reflect")),
            ("InletOutlet grid, mesh walls", fk.InletOutlet("xmin", "xmax", "grid", walls="reflect")),
            ("InletOutlet flux, mesh walls", fk.InletOutlet("xmin", "xmax", "flux", walls="reflect")),
        ],
        args.repeat,
    )


if __name__ == "__main__":
    main()
