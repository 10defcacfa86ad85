"""The brief's workload end to end from its files: a `.pvd` of zlib `.vtu` files (a jittered tet
box, 96 x 48 x 40 lattice: 184 320 points, ~870 000 tets, `CellularFlow` in float32), read with
`fk.io.read_vtk`, then 7 500 particles x 1 500 RK4 steps, in a fresh process (cold: nothing
read or compiled before). Prints the read time (VTK parsing in worker processes, the topology
processed once, the locator built), compile and run times, the end-to-end time and peak RSS.

Then, after the timings above, VTK's `vtkStreamTracer` (RK4, one thread, its best interpolator)
on the first file's mesh and velocity from `--vtk-seeds` of the same seeds, with a step length
equal to the mean displacement of flowkit's step: its rate counts the particle-steps beyond
those of a run from a tenth of the seeds, so the locator VTK builds in each run is not counted.
VTK's tracer is steady, so it interpolates one slice where flowkit interpolates two.

    python benchmarks/mesh_series.py [--files 40] [--folder /tmp/flowkit-brief] [--particles 7500] [--steps 1500]
        [--vtk-seeds 300] [--drift 4]

`--drift U` writes (and reads) a series whose flow also drifts along x at U, so that particles
leave through the box's end at x max (U = 4: about a third of the seeds over the box leave
within the run): the run where particles leave, from its files.

With a drift, after the timings above (the program compiled), two more runs of the same shape
alternate, best of five each: `stay`, seeds in the first fifth of the box along x, which no
particle leaves, and `leave`, seeds in the last sixth, most of which leave early (about 30 %
of their particle-steps move). It prints the leave run's time over the stay run's, and the cost
of a stopped particle-step relative to a moving one counted conservatively (any extra cost of
leaving charged to the stopped steps): `(leave / stay - moving) / (1 - moving)`.

The series is written once into `--folder` (about 0.5 GB for 40 files) and reused.
"""

import argparse
import resource
import time
from pathlib import Path

import numpy as np

EXTENT = (25.6, 10.3, 2.1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--folder", default="/tmp/flowkit-brief")
    parser.add_argument("--shape", type=int, nargs=3, default=(96, 48, 40))
    parser.add_argument("--particles", type=int, default=7500)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--vtk-seeds", type=int, default=300, help="0: no VTK run")
    parser.add_argument("--drift", type=float, default=0.0, help="a uniform flow along x: particles leave")
    args = parser.parse_args()
    start = time.perf_counter()
    import flowkit as fk

    folder = Path(args.folder) / (f"brief_{args.files}" + (f"_drift{args.drift:g}" if args.drift else ""))
    pvd = folder / f"{folder.name}.pvd"
    if not pvd.exists():
        made = time.perf_counter()
        fk.datasets.cellular_flow_vtu_series(
            folder,
            args.shape,
            EXTENT,
            np.linspace(0.0, 2.0, args.files),
            jitter=0.25,
            extra_arrays=False,
            drift=args.drift,
        )
        print(
            f"wrote the series ({args.files} files) in {time.perf_counter() - made:.1f} s; run again for a cold timing"
        )
        return
    imported = time.perf_counter()
    field = fk.io.read_vtk(pvd, stream=False)
    read_s = time.perf_counter() - imported
    print(
        f"read {args.files} files: {len(field.points)} points, {field.n_cells} cells, bins "
        f"{field.bin_shape}: {read_s:.2f} s (import {imported - start:.2f} s)",
        flush=True,
    )
    rng = np.random.default_rng(1)
    seeds = rng.uniform(np.array(EXTENT) * 0.02, np.array(EXTENT) * 0.98, (args.particles, 3))
    traj = fk.track(field, seeds, 0.0, 2.0, 2.0 / args.steps, fk.RK4(), None, 50)
    info = traj.stats
    total = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"track {args.particles} x {info.n_steps} RK4: compile {info.compile_s:.2f} s, run "
        f"{info.run_s:.2f} s ({info.particle_steps_per_s / 1e6:.2f} M particle-steps/s); status "
        f"{traj.status_counts()}"
    )
    print(f"end to end (import, read, build, compile, track): {total:.1f} s; peak RSS {rss:.2f} GiB")
    if args.drift:
        stay_and_leave(fk, field, args.particles, args.steps)
    if args.vtk_seeds:
        from mesh import vtk_rate  # benchmarks/mesh.py

        points, cells = np.asarray(field.points, np.float64), np.asarray(field.nodes)
        values = np.asarray(field.values[0], np.float64)
        moved = np.linalg.norm(np.diff(traj.positions, axis=0), axis=-1) / 50  # frames every 50 steps
        step_length = float(np.nanmean(np.where(traj.status[1:] == fk.Status.ACTIVE, moved, np.nan)))
        kw = dict(points=points, cells=cells, types=np.full(len(cells), 10), values=values, steps=args.steps)
        few = max(1, args.vtk_seeds // 10)
        vtk = vtk_rate(seeds=seeds[: args.vtk_seeds], step_length=step_length, baseline=seeds[:few], **kw)
        print(
            f"VTK vtkStreamTracer, {args.vtk_seeds} seeds (less a run from {few}): {vtk / 1e6:.3f} M "
            f"particle-steps/s; flowkit/VTK {info.particle_steps_per_s / vtk:.1f}x"
        )


def stay_and_leave(fk, field, n, steps):
    """The stay and leave runs (see the module's docstring), alternating, best of five each."""
    rng = np.random.default_rng(2)
    extent = np.array(EXTENT)
    low, high = extent * 0.02, extent * 0.98
    seeds = {
        "stay": rng.uniform(low, [0.2 * extent[0], *high[1:]], (n, 3)),
        "leave": rng.uniform([extent[0] * 5 / 6, *low[1:]], high, (n, 3)),
    }
    best, moving = {"stay": np.inf, "leave": np.inf}, {}
    for _ in range(5):
        for flow in ("stay", "leave"):
            traj = fk.track(field, seeds[flow], 0.0, 2.0, 2.0 / steps, fk.RK4(), None, 50)
            best[flow] = min(best[flow], traj.stats.run_s)
            ended = np.where(np.isfinite(traj.exit_time), traj.exit_time, 2.0)
            moving[flow] = float(np.mean(np.ceil(ended / (2.0 / steps) - 1e-6)) / steps)
    ratio = best["leave"] / best["stay"]
    cost = (ratio - moving["leave"]) / (1 - moving["leave"])
    print(
        f"stay: run {best['stay']:.3f} s ({100 * moving['stay']:.0f} % of particle-steps move); leave: run "
        f"{best['leave']:.3f} s ({100 * moving['leave']:.0f} % move); leave / stay {ratio:.2f}; a stopped "
        f"particle-step costs {cost:.2f} of a moving one (counted conservatively)"
    )


if __name__ == "__main__":
    main()
