"""Search-and-rescue leeway beside OpenDrift's `Leeway` on the same forcing (issue 81).

OpenDrift's own ROMS test file (`Nordic_subset.nc`, 4 km) gives the currents to both, read by
`fk.io.read` and OpenDrift's `reader_ROMS_native`; a constant 10 m wind (`--wind EAST NORTH`,
m/s) is OpenDrift's `reader_constant` and flowkit's uniform forcing. `--elements` objects of a
class of the leeway table (OpenDrift's `OBJECTPROP.DAT`, the same file for both) start at one
point and drift for `--hours` with jibing at OpenDrift's 0.04 per hour, RK4 for the current at
a 10 min step in both (OpenDrift adds the leeway by an Euler step after it; for a constant wind
that is the same). Printed per class: the ensemble's centre (mean position) in each and the
distance between them, beside the grid's 4 km; the spread (the root-mean-square distance from
the centre, and along the principal axes) in each.

OpenDrift moves the table's right-side crosswind coefficients to the left of the wind (its
sign, OpenDrift issue 1693); flowkit follows the table's meaning. `flowkit, OpenDrift's sign`
is flowkit with the sides' coefficients mirrored, which is OpenDrift's convention: the one
difference left between the two is then the trackers'. `--opendrift-convention` makes flowkit
read the C-grid's `u` and `v` as OpenDrift's reader does (face `i` at rho point `i`, as in
`benchmarks/ocean_models.py`): the currents' half-cell placement is the rest of the gap.

Speed: `--throughput` elements of each class, and as tracers, in flowkit (the compiled run,
`RunStats.run_s`, and the whole call), and OpenDrift's whole `run` at `--opendrift-elements`.

    python benchmarks/drifters.py --opendrift-python /tmp/od/bin/python [--classes PIW-1 LIFE-RAFT-DB-11]
        [--elements 5000] [--hours 24] [--throughput 1000000] [--opendrift-elements 10000]

OpenDrift is not a dependency of flowkit: `--opendrift-python` names an interpreter of an
environment with it (`python -m venv od && od/bin/pip install opendrift`).
"""

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

import flowkit as fk
from flowkit.particles import Leeway

sys.path.insert(0, str(Path(__file__).parent))
from ocean_models import distance_m, opendrift_convention_option, opendrift_reading, run_script  # noqa: E402

fk.configure()  # one CPU device per core, before JAX starts

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ocean-real"

OPENDRIFT = """
import json, sys, time
from datetime import timedelta
import numpy as np
from opendrift.readers import reader_ROMS_native, reader_constant
from opendrift.models.leeway import Leeway
args = json.load(open(sys.argv[1]))
out = {}
for name, n in args["runs"]:
    o = Leeway(loglevel=50)
    reader = reader_ROMS_native.Reader(args["file"])
    o.add_reader([reader, reader_constant.Reader({"x_wind": args["wind"][0], "y_wind": args["wind"][1]})])
    o.set_config("drift:advection_scheme", "runge-kutta4")
    o.set_config("general:use_auto_landmask", False)
    o.set_config("seed:jibe_probability", args["jibe"])
    o.seed_elements(lon=args["lon"], lat=args["lat"], number=n, time=reader.start_time, object_type=args["number"])
    start = time.perf_counter()
    o.run(duration=timedelta(hours=args["hours"]), time_step=args["dt"], time_step_output=3600 * args["hours"])
    elapsed = time.perf_counter() - start
    lons, lats = o.result.lon.values, o.result.lat.values
    last = np.isfinite(lons).cumsum(axis=1).argmax(axis=1)
    rows = np.arange(len(lons))
    out[name] = dict(lon=lons[rows, last].tolist(), lat=lats[rows, last].tolist(), seconds=elapsed, n=n,
                     active=np.isfinite(lons[:, -1]).tolist())
import opendrift
out["version"] = opendrift.__version__
json.dump(out, open(sys.argv[2], "w"))
"""


def opendrift_sign(model: Leeway) -> Leeway:
    """`model` with OpenDrift's crosswind sign: each side's coefficients moved to the other side
    of the wind (the right side drifts with the left side's coefficients negated, and back)."""
    left_slope, left_offset, left_std = model.left_slope, model.left_offset, model.left_std
    return Leeway(
        model.downwind_slope,
        -left_slope,
        model.downwind_offset,
        -left_offset,
        model.downwind_std,
        left_std,
        left_slope=-model.crosswind_slope,
        left_offset=-model.crosswind_offset,
        left_std=model.crosswind_std,
        jibe_probability=model.jibe_probability,
        name=model.name,
    )


def spread(lon, lat) -> dict:
    """The ensemble's centre and its spread in metres: rms distance from the centre, and the
    standard deviations along its principal axes."""
    lon, lat = np.asarray(lon), np.asarray(lat)
    centre = lon.mean(), lat.mean()
    east = np.deg2rad(lon - centre[0]) * 6_371_000.0 * np.cos(np.deg2rad(centre[1]))
    north = np.deg2rad(lat - centre[1]) * 6_371_000.0
    axes = np.sqrt(np.linalg.eigvalsh(np.cov(np.stack([east, north]))))
    return {"centre": centre, "rms": float(np.sqrt(np.mean(east**2 + north**2))), "axes": axes.tolist()}


def flowkit_runs(field, models: dict, seed, n: int, hours: float, dt: float) -> dict:
    seeds = np.repeat(np.asarray(seed, float)[None], n, axis=0)
    out = {}
    for name, model in models.items():
        traj = fk.track(
            field, seeds, 0.0, hours * 3600, dt, particles=model, key=jax.random.key(0), save_every=f"{hours}h"
        )
        out[name] = {"lon": traj.positions[-1, :, 0], "lat": traj.positions[-1, :, 1], "status": traj.status[-1]}
    return out


def rates(field, models: dict, seed, n: int, hours: float, dt: float, integrator=None) -> dict:
    """M particle-steps/s of the compiled run and of the whole call, best of two after a warm-up
    (`integrator`: the run's, default RK4)."""
    seeds = np.repeat(np.asarray(seed, float)[None], n, axis=0)
    steps = round(hours * 3600 / dt)
    out = {}
    for name, model in models.items():
        run = dict(particles=model, key=jax.random.key(0), save_every=f"{hours}h")
        if integrator is not None:
            run["integrator"] = integrator
        fk.track(field, seeds, 0.0, hours * 3600, dt, **run)
        best = None
        for _ in range(2):
            start = time.perf_counter()
            stats = fk.track(field, seeds, 0.0, hours * 3600, dt, **run).stats
            wall = time.perf_counter() - start
            best = (wall, stats.run_s) if best is None or wall < best[0] else best
        out[name] = {"call": n * steps / best[0] / 1e6, "run": n * steps / best[1] / 1e6}
        print(f"  {name}: {out[name]['run']:.2f} M/s compiled run, {out[name]['call']:.2f} M/s whole call")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, default=SHARED / "Nordic_subset.nc")
    parser.add_argument("--opendrift-python", type=str, default=None)
    parser.add_argument("--classes", nargs="+", default=["PIW-1", "LIFE-RAFT-DB-11"])
    parser.add_argument("--elements", type=int, default=5000)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--dt", type=float, default=600.0)
    parser.add_argument("--wind", type=float, nargs=2, default=(-7.0, 7.0))
    parser.add_argument("--seed", type=float, nargs=2, default=(14.2, 67.75))
    parser.add_argument("--jibe", type=float, default=0.04)
    parser.add_argument("--throughput", type=int, default=0)
    parser.add_argument("--opendrift-elements", type=int, default=10_000)
    opendrift_convention_option(parser)
    args = parser.parse_args()
    if args.opendrift_convention:
        opendrift_reading()
    field = fk.io.read(args.file, samples={"wind": fk.fields.Uniform(list(args.wind))})
    seed = (*args.seed, 0.0)
    report = {}
    for name in args.classes:
        model = fk.io.leeway(name, jibe_probability=args.jibe)
        models = {"flowkit": model, "flowkit, OpenDrift's sign": opendrift_sign(model)}
        ours = flowkit_runs(field, models, seed, args.elements, args.hours, args.dt)
        rows = {k: spread(v["lon"], v["lat"]) for k, v in ours.items()}
        for k, v in ours.items():
            codes, counts = np.unique(v["status"][v["status"] != fk.Status.ACTIVE], return_counts=True)
            rows[k]["stopped"] = ", ".join(f"{n} {fk.Status(c).name}" for c, n in zip(codes, counts)) or "0"
        if args.opendrift_python:
            number = fk.io.leeway_class(name).number
            runs = [["agreement", args.elements]]
            if args.throughput:
                runs.append(["throughput", args.opendrift_elements])
            theirs = opendrift(args, number, runs)
            od = theirs["agreement"]
            rows[f"OpenDrift {theirs['version']}"] = {
                **spread(od["lon"], od["lat"]),
                "stopped": int(np.sum(~np.asarray(od["active"]))),
            }
            if args.throughput:
                t = theirs["throughput"]
                steps = round(args.hours * 3600 / args.dt)
                print(
                    f"  OpenDrift: {t['n']} elements x {steps} steps in {t['seconds']:.1f} s: "
                    f"{t['n'] * steps / t['seconds'] / 1e6:.3f} M/s"
                )
        reference = list(rows)[-1]  # OpenDrift's where it ran, else flowkit's
        first = rows[reference]
        print(f"{name}: {args.elements} elements, {args.hours:g} h, wind {tuple(args.wind)} m/s; beside {reference}")
        for k, r in rows.items():
            gap = distance_m(first["centre"][0], first["centre"][1], r["centre"][0], r["centre"][1])
            print(
                f"  {k:28s} centre ({r['centre'][0]:.4f}, {r['centre'][1]:.4f}), {gap:5.0f} m apart; "
                f"spread rms {r['rms']:6.0f} m ({100 * (r['rms'] / first['rms'] - 1):+5.1f} %), "
                f"axes {r['axes'][0]:5.0f} / {r['axes'][1]:5.0f} m; stopped {r['stopped']}"
            )
        report[name] = rows
        if args.throughput:
            tracer_and_model = {"tracer": None, name: model}
            report[name]["rates"] = rates(field, tracer_and_model, seed, args.throughput, args.hours, args.dt)
    return report


def opendrift(args, number: int, runs: list) -> dict:
    given = dict(file=str(args.file), runs=runs, wind=list(args.wind), lon=args.seed[0], lat=args.seed[1],
                 number=number, hours=args.hours, dt=args.dt, jibe=args.jibe)  # fmt: skip
    return run_script(args.opendrift_python, OPENDRIFT, given)


if __name__ == "__main__":
    main()
