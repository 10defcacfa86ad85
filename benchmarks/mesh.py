"""Unstructured-mesh tracking at the size of the brief (issue: real CFD data).

A jittered tetrahedral mesh of an anisotropic box (25.6 × 10.3 × 2.1, lattice 96 × 48 × 40:
184 320 points, ~870 000 tetrahedra with 5:1 cells), `CellularFlow` sampled at its nodes at 40
times (float32, 88 MB), 7 500 random particles × 1 500 RK4 steps. In one process it reports:

- locator build: `fk.MeshField(...)` on the host (face neighbours, the complete bin grid,
  per-tet inverse maps) plus the copy to the device;
- compile time and run time of the tracking run (`fk.tracker.TrackRun`), particle-steps/s;
- baselines on a small subset, in the same run: a brute-force point location (every query tests
  every cell, the cost the complete search avoids) and the old tracker's nearest-node search
  (particles × nodes per evaluation), each as located points per second, beside flowkit's cold
  search (no hints: the bin grid) and the in-run rate (hints and walking; 5 locations per RK4
  step), and a check that the brute-force cells give the same velocities.

    python benchmarks/mesh.py [--particles 7500] [--steps 1500] [--shape 96 48 40] [--times 40]
"""

import argparse
import time

import flowkit as fk  # before JAX: one CPU device per core
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flowkit.fields.mesh import brute_force_locate

EXTENT = (25.6, 10.3, 2.1)


def timed(fn, *args):
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--particles", type=int, default=7500)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--shape", type=int, nargs=3, default=(96, 48, 40))
    parser.add_argument("--times", type=int, default=40)
    parser.add_argument("--subset", type=int, default=32, help="query points for the brute-force baselines")
    args = parser.parse_args()

    start = time.perf_counter()
    points, tets = fk.datasets.jittered_tet_box(args.shape, EXTENT, jitter=0.25, seed=0)
    points = points.astype(np.float32).astype(np.float64)
    flow = jax.jit(jax.vmap(fk.fields.CellularFlow(EXTENT), in_axes=(None, 0)))
    times = np.linspace(0.0, 2.0, args.times)
    values = np.stack([np.asarray(flow(t, jnp.asarray(points, jnp.float32))) for t in times])
    print(f"mesh: {len(points)} points, {len(tets)} tetrahedra, {args.times} time steps ({values.nbytes / 1e6:.0f} MB float32); made in {time.perf_counter() - start:.1f} s", flush=True)

    start = time.perf_counter()
    field = fk.MeshField(points, tets, values, times=times)
    jax.block_until_ready(jax.tree.leaves(field))
    build_s = time.perf_counter() - start
    print(f"locator build (neighbours, bins {field.bin_shape}, inverse maps, to device): {build_s:.2f} s; field {field.nbytes / 1e6:.0f} MB on the device", flush=True)

    rng = np.random.default_rng(1)
    seeds = rng.uniform(np.array(EXTENT) * 0.02, np.array(EXTENT) * 0.98, (args.particles, 3))
    dt = 2.0 / args.steps
    run = fk.tracker.TrackRun(field, seeds, 0.0, 2.0, dt, fk.RK4(), None, 50)
    traj = run.run()
    info = fk.tracker.last_run
    counts = traj.status_counts()
    rate = info.particle_steps_per_s
    print(f"tracking: {args.particles} particles x {info.n_steps} RK4 steps: compile {info.compile_s:.2f} s, run {info.run_s:.2f} s, "
          f"{rate / 1e6:.2f} M particle-steps/s on {info.n_devices} {info.device} device(s); status {counts}", flush=True)

    # Location baselines on a subset, in this process.
    x = jnp.asarray(seeds[: args.subset], jnp.float32)
    hints = jnp.full(x.shape[0], -1, jnp.int32)
    locate = eqx.filter_jit(lambda f, x, h: f.locate(x, h))
    timed(locate, field, x, hints)
    (cell, found, _), cold_s = timed(locate, field, x, hints)
    many = jnp.asarray(seeds, jnp.float32)
    timed(locate, field, many, jnp.full(many.shape[0], -1, jnp.int32))
    _, cold_many_s = timed(locate, field, many, jnp.full(many.shape[0], -1, jnp.int32))
    start = time.perf_counter()
    contains = brute_force_locate(field, np.asarray(x))
    brute_s = time.perf_counter() - start
    nodes = field.points

    @jax.jit
    def nearest(p):
        return jnp.argmin(jnp.sum((nodes - p) ** 2, axis=1))

    jax.block_until_ready(nearest(x[0]))
    start = time.perf_counter()
    for p in x:
        jax.block_until_ready(nearest(p))
    nearest_s = time.perf_counter() - start
    assert bool(found.all()) and all(contains[i, int(c)] for i, c in enumerate(np.asarray(cell)))
    brute_cells = jnp.asarray(np.argmax(contains, axis=1), jnp.int32)
    v_ours = field.velocity_batch(0.0, x, None, hints)[0]
    v_brute = field.velocity_batch(0.0, x, None, brute_cells)[0]
    agree = float(jnp.max(jnp.abs(v_ours - v_brute)))

    in_run = 5 * rate  # RK4: four stage evaluations and the end-of-step check per particle-step
    n = x.shape[0]
    print("\npoint location, located points per second (same process):")
    print(f"  flowkit in the run (hints + face walking, 5 per step)     {in_run:12.3g}")
    print(f"  flowkit cold (bin grid, no hints), {many.shape[0]} points          {many.shape[0] / cold_many_s:12.3g}")
    print(f"  flowkit cold, {n} points                                  {n / cold_s:12.3g}")
    print(f"  brute force (every point tests all {len(tets)} cells)    {n / brute_s:12.3g}   -> flowkit in-run is {in_run / (n / brute_s):,.0f}x faster")
    print(f"  nearest node (old tracker: every point scans all nodes)  {n / nearest_s:12.3g}   -> {in_run / (n / nearest_s):,.0f}x")
    print(f"  velocities at brute-force cells vs flowkit's: max |diff| {agree:.1e}")
    print(f"\nsummary: build {build_s:.2f} s (target <= 10 s), compile {info.compile_s:.2f} s, run {info.run_s:.2f} s "
          f"(target <= 30 s), {rate / 1e6:.2f} M particle-steps/s")


if __name__ == "__main__":
    main()
