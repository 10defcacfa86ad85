"""Inlets on a mesh: the CPU kernel against the JAX step, beside VTK's tracer, in one process.

The jittered tet box of `benchmarks/mesh.py` (`tets`) with its cellular flow and a drift of 1
along x that carries particles out through x max, under each inlet:

- `grid`, `random`, `flux`: `fk.InletOutlet("xmin", "xmax", mode)`: a particle leaving through
  x max starts again on x min in the same step (grid: at its own seed's projection);
- `continuous`: `fk.ContinuousInlet("xmin", rate, slots, outlet="xmax")`, releasing about as
  many particles per unit time as leave, into spare slots and the slots of those that left.

Each runs with the kernel and with the JAX step (`FLOWKIT_NATIVE=0`), alternately, the best of
`--repeat` runs each (`warmup=True`: compile and first-call costs apart), and prints
particle-steps/s (moving steps only), compile time, the kernel's speed-up, and VTK's
`vtkStreamTracer` rate on the same mesh, flow and step (RK4, one thread; VTK has no inlets:
its rate is for the same stepping without restarts).

    python benchmarks/mesh_inlets.py [--particles 20000] [--steps 400] [--repeat 2] [--vtk-seeds 1000]
        [--inlets grid random flux continuous]
"""

import argparse
import os
import sys
from pathlib import Path

import jax
import numpy as np

import flowkit as fk

sys.path.insert(0, str(Path(__file__).parent))
from mesh import box_case, vtk_rate  # noqa: E402

fk.configure()  # one CPU device per core, before JAX starts

EXTENT = (4.0, 2.0, 1.6)


def boundary_of(inlet: str, n: int, t1: float):
    if inlet == "continuous":  # about the particles leaving per unit time, into n // 2 spare slots
        return fk.ContinuousInlet("xmin", rate=n / t1, slots=n // 2, outlet="xmax", mode="random")
    return fk.InletOutlet("xmin", "xmax", mode=inlet)


def timed(field, seeds, t1, steps, boundary, native: bool):
    """`(particle-steps/s, run s, compile s, restarts)` of one run."""
    os.environ["FLOWKIT_NATIVE"] = "1" if native else "0"
    run = fk.tracker.TrackRun(
        field, seeds, 0.0, t1, t1 / steps, fk.RK4(), boundary, 50, key=jax.random.key(0), warmup=True
    )
    assert run._kwargs()["kernel"] is native
    traj = run.run()
    stats = traj.stats
    return stats.particle_steps_per_s, stats.run_s, stats.compile_s, int(traj.generation[-1].sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--particles", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--vtk-seeds", type=int, default=1000)
    parser.add_argument("--inlets", nargs="+", default=["grid", "random", "flux", "continuous"])
    args = parser.parse_args()
    n, steps, t1 = args.particles, args.steps, 4.0
    rng = np.random.default_rng(0)
    points, tets = fk.datasets.jittered_tet_box((41, 21, 17), EXTENT, jitter=0.25)
    points, cells, types, values, seeds = box_case(points, tets, np.full(len(tets), 10), EXTENT, rng, n, 1.0)
    seeds[:, 0] = rng.uniform(0.05, 0.3 * EXTENT[0], n)  # all project onto x min (grid mode)
    field = fk.MeshField.from_arrays(points, cells, values, types)
    devices = f"{jax.device_count()} {jax.devices()[0].platform} device(s)"
    print(f"{devices}; {len(cells)} tets; {n} particles x {steps} RK4 steps")
    speed = float(np.mean(np.linalg.norm(values, axis=1)))
    vtk = vtk_rate(points, cells, types, values, seeds[: args.vtk_seeds], steps, speed * t1 / steps)
    print(f"VTK vtkStreamTracer: {vtk / 1e6:.3f} M particle-steps/s (1 thread)")
    for inlet in args.inlets:
        boundary = boundary_of(inlet, n, t1)
        best = {True: None, False: None}
        for _ in range(args.repeat):
            for native in (True, False):
                result = timed(field, seeds, t1, steps, boundary, native)
                if best[native] is None or result[1] < best[native][1]:
                    best[native] = result
        kernel, jax_step = best[True], best[False]
        print(
            f"{inlet:10s} kernel {kernel[0] / 1e6:6.2f} M/s, run {kernel[1]:.2f} s, compile {kernel[2]:.2f} s | "
            f"JAX step {jax_step[0] / 1e6:6.2f} M/s, run {jax_step[1]:.2f} s, compile {jax_step[2]:.2f} s | "
            f"kernel/JAX {jax_step[1] / kernel[1]:.1f}x, kernel/VTK {kernel[0] / vtk:.1f}x | "
            f"restarts {kernel[3]} (JAX {jax_step[3]})",
            flush=True,
        )


if __name__ == "__main__":
    main()
