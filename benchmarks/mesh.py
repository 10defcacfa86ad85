"""Unstructured-mesh tracking beside VTK's own tracer, on every kind of mesh CFD codes write.

Cases (all generated here, none tuned to flowkit):

- `tets`: a jittered tetrahedral box (every lattice hexahedron split into five tets);
- `hexes`: a twisted annulus, a hexahedral O-grid whose cells are curved (non-planar faces,
  non-affine maps: Newton inversion), as rotating-machinery meshes are;
- `vts`: a curvilinear channel with a bump, written as a `.vts` by VTK's writer and read back
  with `fk.io.read_vtk` (hexahedra);
- `mixed`: jittered hexahedra with every other column split into wedges;
- `wedges`: the same box with every column split into wedges (wedges only);
- `pyramids`: the same box with every hexahedron split into six pyramids around its centre.

Each mesh runs twice: a flow that keeps the particles inside (`stay`), and one that carries most
of them out through an open side (`leave`, >= 50 % leave); the tet box also runs a flow that
carries every particle out within the first tenth of the run (`early`). For every run it prints
flowkit's particle-steps/s; for the `stay` and `leave` runs also those of VTK's
`vtkStreamTracer` (RK4, 1 thread, the same mesh, point data and seeds, a step length equal to the
mean displacement of flowkit's step), timed in the same process, and the ratio.

The cost of a stopped particle-step relative to a moving one comes from a third run, `half`: the
`stay` run again (same flow, mesh, seeds and step), with every other particle released only at
`t1`, so stopped for the whole run: `(run_half - run_stay / 2) / (run_stay / 2)`, each run the
best of three. (The `leave` runs move their particles further per step, so they cannot measure
it.) For the tet box it also
prints the speed-up of `early` over `stay` (same steps, particles, saves).

    python benchmarks/mesh.py [--particles 20000] [--steps 400] [--vtk-seeds 1000]
        [--cases tets hexes vts mixed wedges pyramids]
        [--walls reflect|slip|absorb|stick]

`--walls MODE` runs every flowkit run under `fk.MeshWalls(MODE, open=["xmax"])` instead of no
boundary: the side at the largest x is open, every other boundary face is a wall.
"""

import argparse
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts


def _cellular(points, extent, drift=0.0):
    """A steady cellular flow tangent to the box's walls, plus a drift along x."""
    s = np.pi * points / np.asarray(extent)
    u = np.sin(s[:, 0]) * np.cos(s[:, 1]) * np.cos(s[:, 2])
    v = -0.5 * np.cos(s[:, 0]) * np.sin(s[:, 1]) * np.cos(s[:, 2])
    w = -0.5 * np.cos(s[:, 0]) * np.cos(s[:, 1]) * np.sin(s[:, 2])
    return np.stack([u + drift, v, w], axis=1)


def box_case(points, cells, types, extent, rng, n, drift):
    margin = 0.03 * np.asarray(extent)
    seeds = rng.uniform(margin, np.asarray(extent) - margin, (n, 3))
    return points, cells, types, _cellular(points, extent, drift), seeds


def annulus_case(rng, n, axial):
    points, hexes = fk.datasets.twisted_annulus(96, 12, 16, twist=0.5)
    x, y, z = points.T
    w = axial if axial else 0.3 * np.cos(np.pi * z)
    values = np.stack([-y, x, np.broadcast_to(w, x.shape)], axis=1)
    r, t, h = rng.uniform(1.1, 1.9, n), rng.uniform(0, 2 * np.pi, n), rng.uniform(0.05, 0.6 if axial else 0.95, n)
    seeds = np.stack([r * np.cos(t), r * np.sin(t), h], axis=1)
    return points, hexes, np.full(len(hexes), 12), values, seeds


def channel_case(folder, rng, n, leave):
    """The curvilinear channel, its flow along the i grid lines, through a `.vts` file."""
    shape, extent = (48, 20, 12), (4.0, 1.0, 1.0)
    grid = fk.datasets.curved_channel(shape, extent)
    tangent = np.gradient(grid, axis=0)
    velocity = tangent / tangent[..., :1]  # unit speed along x, following the grid lines
    path = fk.datasets.write_vts(Path(folder) / "channel.vts", grid, {"velocity": velocity})
    field = fk.io.read_vtk(path, dtype="float32")
    u, v, w = (rng.uniform(a, b, n) for a, b in ((0.01, 0.4 if leave else 0.15), (0.05, 0.95), (0.05, 0.95)))
    ii, jj, kk = (np.clip(np.floor(c * (s - 1)).astype(int), 0, s - 2) for c, s in zip((u, v, w), shape))
    seeds = grid[ii, jj, kk] + 0.5 * (grid[ii + 1, jj + 1, kk + 1] - grid[ii, jj, kk])
    return field, seeds


def vtk_rate(points, cells, types, values, seeds, steps, step_length, baseline=None):
    """Particle-steps/s of `vtkStreamTracer` (RK4, one thread) from `seeds`, the better of its two
    interpolators; with `baseline` seeds, the steps and seconds beyond a run from those (so
    that the locator each run builds is not counted: a large mesh's takes seconds)."""
    import vtk
    from vtk.util.numpy_support import numpy_to_vtk

    from flowkit.io.vtk import unstructured_grid

    grid = unstructured_grid(points, cells, types, {"velocity": values.astype(np.float32)})
    grid.GetPointData().SetActiveVectors("velocity")

    def run(interpolator, seeds):
        """`(particle-steps, seconds)` of one tracer run from `seeds`."""
        seed_points = vtk.vtkPoints()
        seed_points.SetData(numpy_to_vtk(np.ascontiguousarray(seeds), deep=True))
        source = vtk.vtkPolyData()
        source.SetPoints(seed_points)
        tracer = vtk.vtkStreamTracer()
        tracer.SetInputData(grid)
        tracer.SetSourceData(source)
        tracer.SetIntegratorTypeToRungeKutta4()
        tracer.SetIntegrationStepUnit(vtk.vtkStreamTracer.LENGTH_UNIT)
        tracer.SetInitialIntegrationStep(step_length)
        tracer.SetMaximumNumberOfSteps(steps)
        tracer.SetMaximumPropagation(1e9)
        tracer.SetIntegrationDirectionToForward()
        tracer.SetComputeVorticity(False)
        if interpolator == "cell locator":
            tracer.SetInterpolatorTypeToCellLocator()
        else:
            tracer.SetInterpolatorTypeToDataSetPointLocator()
        start = time.perf_counter()
        tracer.Update()
        return tracer.GetOutput().GetNumberOfPoints() - len(seeds), time.perf_counter() - start

    best = 0.0
    for interpolator in ("cell locator", "point locator"):
        taken, seconds = run(interpolator, seeds)
        if baseline is not None:
            fixed_steps, fixed_seconds = run(interpolator, baseline)
            taken, seconds = taken - fixed_steps, seconds - fixed_seconds
        best = max(best, taken / seconds)
    return best


BOUNDARY = None
"""The flowkit runs' boundary (`--walls`)."""


def flowkit_run(field, seeds, t1, steps, t_release=None):
    run = fk.tracker.TrackRun(
        field, seeds, 0.0, t1, t1 / steps, fk.RK4(), BOUNDARY, 50, t_release=t_release, warmup=True
    )
    traj = run.run()
    info = traj.stats
    exit_time = np.where(np.isfinite(traj.exit_time), traj.exit_time, t1)
    moving_steps = float(np.sum(np.ceil(exit_time / (t1 / steps) - 1e-6)))
    return info, traj, moving_steps


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--particles", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--vtk-seeds", type=int, default=1000)
    parser.add_argument("--cases", nargs="+", default=["tets", "hexes", "vts", "mixed", "wedges", "pyramids"])
    parser.add_argument("--walls", choices=["reflect", "slip", "absorb", "stick"], default=None)
    args = parser.parse_args()
    global BOUNDARY
    BOUNDARY = None if args.walls is None else fk.MeshWalls(args.walls, open=["xmax"])
    rng = np.random.default_rng(0)
    n, steps = args.particles, args.steps
    print(
        f"{jax.device_count()} {jax.devices()[0].platform} device(s); {n} particles x {steps} RK4 "
        f"steps, frames every 50; VTK: {args.vtk_seeds} seeds, 1 thread; walls: {args.walls or 'none'}"
    )
    rows = []
    field_of, seeds_of = {}, {}
    folder = tempfile.mkdtemp()
    for case in args.cases:
        results = {}
        for flow in ("stay", "leave") + (("early",) if case == "tets" else ()):
            if case == "tets":
                extent = (4.0, 2.0, 1.6)
                points, tets = fk.datasets.jittered_tet_box((41, 21, 17), extent, jitter=0.25)
                mesh = box_case(
                    points,
                    tets,
                    np.full(len(tets), 10),
                    extent,
                    rng,
                    n,
                    {"stay": 0.0, "leave": 1.0, "early": 10.0}[flow],
                )
            elif case in ("mixed", "wedges", "pyramids"):
                extent = (4.0, 2.0, 1.6)
                box = (
                    fk.datasets.pyramid_box((41, 21, 17), extent)
                    if case == "pyramids"
                    else fk.datasets.hex_wedge_box(
                        (41, 21, 17), extent, columns="all" if case == "wedges" else "alternate"
                    )
                )
                mesh = box_case(*box, extent, rng, n, {"stay": 0.0, "leave": 1.0}[flow])
            elif case == "hexes":
                mesh = annulus_case(rng, n, {"stay": 0.0, "leave": 1.0}[flow])
            if case == "vts":
                field, seeds = channel_case(folder, rng, n, flow == "leave")
                points, cells = np.asarray(field.points, np.float64), np.asarray(field.nodes)
                types = np.full(len(cells), 12)
                values = np.asarray(field.values[0], np.float64)
            else:
                points, cells, types, values, seeds = mesh
                field = fk.MeshField.from_arrays(points, cells, values, types)
            t1 = {"stay": 0.8, "leave": 4.0, "early": 8.0}[flow]
            info, traj, moving_steps = flowkit_run(field, seeds, t1, steps)
            if flow == "stay":
                field_of[case], seeds_of[case] = field, seeds
            left = float(np.mean(traj.status[-1] == fk.Status.OUT_OF_DOMAIN))
            line = dict(
                case=case,
                flow=flow,
                cells=len(cells),
                kinds=",".join(field.kinds),
                rate=info.particle_steps_per_s,
                run_s=info.run_s,
                compile_s=info.compile_s,
                left=left,
                moving=moving_steps / (n * steps),
            )
            if flow != "early":
                speed = float(np.mean(np.linalg.norm(values, axis=1)))
                line["vtk"] = vtk_rate(points, cells, types, values, seeds[: args.vtk_seeds], steps, speed * t1 / steps)
            results[flow] = line
            rows.append(line)
            ratio = (
                f"  VTK {line['vtk'] / 1e6:.3f} M/s  flowkit/VTK {line['rate'] / line['vtk']:.1f}x"
                if "vtk" in line
                else ""
            )
            print(
                f"{case:6s} {flow:5s} {line['cells']:7d} cells ({line['kinds']}): {line['rate'] / 1e6:6.2f} "
                f"M particle-steps/s, run {info.run_s:.2f} s, compile {info.compile_s:.2f} s, "
                f"{100 * left:3.0f} % left (moving {100 * line['moving']:.0f} % of particle-steps){ratio}",
                flush=True,
            )
        stay = results["stay"]
        late = np.where(np.arange(n) % 2 == 1, 0.8, 0.0)
        half_s, stay_s = np.inf, stay["run_s"]
        for _ in range(3):  # runs of a few tenths of a second: the best of three each, alternating
            half_s = min(half_s, flowkit_run(field_of[case], seeds_of[case], 0.8, steps, late)[0].run_s)
            stay_s = min(stay_s, flowkit_run(field_of[case], seeds_of[case], 0.8, steps)[0].run_s)
        cost = (half_s - stay_s / 2) / (stay_s / 2)
        print(
            f"{case:6s} half   every other particle stopped throughout: run {half_s:.3f} s "
            f"against {stay_s:.3f} s all moving (best of three); cost of a stopped particle-step / a "
            f"moving one: {cost:.2f}"
        )
        if "early" in results:
            print(
                f"{case:6s} all leave early ({100 * (1 - results['early']['moving']):.0f} % of "
                f"particle-steps stopped): {stay['run_s'] / results['early']['run_s']:.1f}x faster than "
                "all staying"
            )


if __name__ == "__main__":
    main()
