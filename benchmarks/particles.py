"""What particle models cost beside tracers (issue: particles), on the W1 grid and the brief-sized mesh.

- `grid`: the ABC flow on a 64³ periodic float32 grid (W1 of BENCH_NOTES), RK4, dt = 0.01;
- `mesh`: the brief-sized jittered tetrahedral box (96 x 48 x 40 lattice, ~870 000 tets, the
  steady `CellularFlow`), RK4, reflecting walls.

On each, the same seeds and steps run as tracers, as inertial particles with the drag stepped by
RK4 (dt/τ = 0.2) and exponentially (dt/τ = 20), as buoyant particles, and as tracers carrying
age and distance (`Combined`). It prints particle-steps/s (median of --repeat timed runs,
compilation apart) and each model's cost relative to tracers (the issue asks for ≤ 2x for
inertial particles).

    python benchmarks/particles.py [--n 100000] [--steps 200] [--mesh-n 20000] [--mesh-steps 200]
        [--repeat 3] [--cases grid mesh]
"""

import argparse
import statistics

import numpy as np

import flowkit as fk
from flowkit.particles import Aging, Buoyant, Combined, Distance, Inertial, Tracer

fk.configure()  # one CPU device per core, before JAX starts

EXTENT = (25.6, 10.3, 2.1)


def inertial(tau: float, scheme: str) -> Inertial:
    """An inertial particle of response time `tau` (nondimensional flows: ρ_p = 1, d = 1e-3)."""
    diameter = 1e-3
    return Inertial(diameter, 1.0, fluid_density=1e-3, viscosity=diameter**2 / (18 * tau), gravity=0.1, scheme=scheme)


def models(dt: float) -> dict:
    return {
        "tracer": Tracer(),
        "inertial rk (dt/τ 0.2)": inertial(5 * dt, "rk"),
        "inertial exponential (dt/τ 20)": inertial(dt / 20, "exponential"),
        "buoyant": Buoyant(0.05),
        "tracer + age + distance": Combined(Tracer(), Aging(), Distance()),
    }


def measure(field, seeds, dt, steps, particles, boundary, repeat):
    rates, compile_s = [], 0.0
    for _ in range(repeat):
        run = fk.tracker.TrackRun(
            field, seeds, 0.0, steps * dt, dt, fk.RK4(), boundary, steps, particles=particles, warmup=True
        )
        traj = run.run()
        rates.append(traj.stats.particle_steps_per_s)
        compile_s = max(compile_s, traj.stats.compile_s)
    return statistics.median(rates), compile_s


def report(title, field, seeds, dt, steps, boundary, repeat):
    print(f"\n{title}: {len(seeds)} particles x {steps} steps, RK4, dt={dt}")
    print(f"{'model':34s} {'M steps/s':>10s} {'compile s':>10s} {'cost vs tracer':>15s}")
    base = None
    for name, particles in models(dt).items():
        rate, compile_s = measure(field, seeds, dt, steps, particles, boundary, repeat)
        base = rate if base is None else base
        print(f"{name:34s} {rate / 1e6:10.2f} {compile_s:10.2f} {base / rate:14.2f}x", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--mesh-n", type=int, default=20_000)
    parser.add_argument("--mesh-steps", type=int, default=200)
    parser.add_argument("--mesh-shape", type=int, nargs=3, default=(96, 48, 40))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=["grid", "mesh"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    if "grid" in args.cases:
        axes = [np.arange(64) * (2 * np.pi / 64)] * 3
        field = fk.GridField.from_function(fk.fields.ABCFlow(), axes, periodic=True, dtype="float32")
        seeds = rng.uniform(0, 2 * np.pi, (args.n, 3))
        report("W1 grid (ABC, 64³ periodic)", field, seeds, 0.01, args.steps, None, args.repeat)
    if "mesh" in args.cases:
        import jax
        import jax.numpy as jnp

        points, tets = fk.datasets.jittered_tet_box(tuple(args.mesh_shape), EXTENT, 0.25)
        flow = fk.fields.CellularFlow(EXTENT)
        values = np.asarray(jax.jit(jax.vmap(lambda x: flow(0.0, x)))(jnp.asarray(points)))
        field = fk.MeshField.from_arrays(points, tets, values, dtype="float32")
        seeds = rng.uniform(0.05, 0.95, (args.mesh_n, 3)) * np.asarray(EXTENT)
        report(
            f"brief-sized mesh ({len(tets)} tets, steady CellularFlow)",
            field,
            seeds,
            0.005,
            args.mesh_steps,
            fk.MeshWalls("reflect"),
            args.repeat,
        )


if __name__ == "__main__":
    main()
