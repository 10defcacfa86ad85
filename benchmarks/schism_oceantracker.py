"""SCHISM and FVCOM output, flowkit beside OceanTracker on the same seeds and the same velocities.

The mesh and levels are SCHISM's own (`tests/data/schism`: v5.10 split output of a California
Delta model, 823 nodes, triangles and quadrilaterals, 23 LSC levels, 4 half-hourly steps). The
subset holds no velocity, so the same velocity files are written beside it the way SCHISM writes
them (`horizontalVelX_1.nc`, `horizontalVelY_1.nc`, `verticalVelocity_1.nc`): cells of 800 m
(`u = 0.05 sin(2 pi y / 800 m)`, `v = 0.05 cos(2 pi x / 800 m)`, growing by half over the run),
the same at every level, NaN below the bed, w = 0 (a flow linear in x and y would be followed
exactly by any linear interpolation, and so would test nothing); and the
free surface `elevation` = 0 that OceanTracker's reader asks for. Both trackers read these files
with their own SCHISM v5 readers and step the same surface seeds with RK4 for the 1.5 h the files
span. Printed: the median and 90th percentile distance between the final positions of the
particles active in both, in metres and in the mesh's median edge (90 m), and each run's wall
time (OceanTracker's whole run in its process, reading included; flowkit's read and track).

`--model fvcom` does the same on an FVCOM history file written here as FVCOM writes it (a
Cartesian run: `x`, `y`, `nv` from 1, `siglay`/`siglev`, `h`, `zeta`, `u`, `v`, `ww` on the
elements, `time` in days with `Itime`/`Itime2`): 31 x 21 nodes 100 m apart, the same cellular
flow at the element centres, read by OceanTracker's `FVCOMreader`.

`--throughput-particles N` also times both trackers on N seeds (float32, as the files are):
flowkit's whole compiled `fk.track` calls (the best of three), beside OceanTracker's stepping
loop after its first step (`oceantracker_loop.py`, as `ocean_models.py` measures it on ROMS),
and the CPU kernel that took flowkit's steps.

OceanTracker is not a dependency of flowkit: `--oceantracker-python` names an interpreter of an
environment with it (`python -m venv ot && ot/bin/pip install oceantracker exceptiongroup`).

    python benchmarks/schism_oceantracker.py --oceantracker-python ot/bin/python [--model fvcom]
        [--particles 500] [--throughput-particles 100000]
"""

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from oceantracker_loop import TIMED_LOOP, best_loop, best_seconds

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts

SCHISM = Path(__file__).resolve().parents[1] / "tests" / "data" / "schism"

OCEANTRACKER = (
    TIMED_LOOP
    + """
import json, sys, time
import numpy as np
from oceantracker.main import OceanTracker
from oceantracker.read_output.python import load_output_files
args = json.load(open(sys.argv[1]))
ot = OceanTracker()
ot.settings(root_output_dir=args["out"], output_file_base="bench", time_step=args["dt"], use_dispersion=False,
            write_tracks=True, max_run_duration=args["duration"], use_A_Z_profile=False, display_grid_at_start=False)
ot.add_class("reader", class_name=args["reader"], input_dir=args["input"], file_mask=args["mask"])
ot.add_class("release_groups", name="seeds", class_name="PointRelease", points=args["points"], pulse_size=1,
             release_interval=0)
ot.add_class("tracks_writer", update_interval=args["duration"], turn_on_write_particle_properties_list=["status"])
start = time.perf_counter()
case = ot.run()
wall = time.perf_counter() - start
tracks = load_output_files.load_track_data(case)
json.dump({"x": tracks["x"][-1].tolist(), "status": tracks["status"][-1].tolist(), "time": tracks["time"].tolist(),
           "wall": wall, "steps": steps, "released": len(tracks["x"][-1])}, open(sys.argv[2], "w"))
"""
)


def _cells(x: np.ndarray, y: np.ndarray, growth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cellular flow (m/s) at points `x`, `y` (m) and times of `growth` (its factor per time)."""
    u = 0.05 * np.sin(2 * np.pi * (y - y.mean()) / 800.0) * growth
    v = 0.05 * np.cos(2 * np.pi * (x - x.mean()) / 800.0) * growth
    return u, v


def _fvcom_file(folder: Path) -> None:
    """An FVCOM history file of the cellular flow on a Cartesian grid of triangles."""
    import xarray as xr

    nx, ny, n_layers, n_t = 31, 21, 5, 4
    index = np.arange(nx * ny).reshape(ny, nx)
    a, b, c, d = index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]
    cells = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)])
    i, j = np.meshgrid(np.arange(nx), np.arange(ny))
    x, y = 100.0 * i.reshape(-1), 100.0 * j.reshape(-1)
    xc, yc = x[cells].mean(axis=1), y[cells].mean(axis=1)
    growth = 1.0 + 0.5 * np.arange(n_t)[:, None] / (n_t - 1)
    u, v = _cells(xc - xc.mean() + x.mean(), yc - yc.mean() + y.mean(), growth)
    layers = lambda a: np.repeat(a[:, None, :], n_layers, axis=1).astype(np.float32)  # noqa: E731
    siglev = -np.arange(n_layers + 1) / n_layers
    days = 58000.0 + np.arange(n_t) * 1800.0 / 86400.0
    whole = np.floor(days)
    xr.Dataset(
        {
            "nv": (("three", "nele"), (cells.T + 1).astype(np.int32)),
            "x": ("node", x.astype(np.float32), {"units": "meters"}),
            "y": ("node", y.astype(np.float32), {"units": "meters"}),
            "lon": ("node", np.zeros(len(x), np.float32), {"units": "degrees_east"}),
            "lat": ("node", np.zeros(len(x), np.float32), {"units": "degrees_north"}),
            "xc": ("nele", xc.astype(np.float32), {"units": "meters"}),
            "yc": ("nele", yc.astype(np.float32), {"units": "meters"}),
            "h": ("node", np.full(len(x), 20.0, np.float32), {"units": "m"}),
            "siglay": (
                ("siglay", "node"),
                np.repeat((0.5 * (siglev[1:] + siglev[:-1]))[:, None], len(x), 1).astype(np.float32),
                {"standard_name": "ocean_sigma/general_coordinate", "positive": "up"},
            ),
            "siglev": (
                ("siglev", "node"),
                np.repeat(siglev[:, None], len(x), 1).astype(np.float32),
                {"standard_name": "ocean_sigma/general_coordinate", "positive": "up"},
            ),
            "zeta": (("time", "node"), np.zeros((n_t, len(x)), np.float32), {"units": "meters"}),
            "u": (
                ("time", "siglay", "nele"),
                layers(u),
                {"standard_name": "eastward_sea_water_velocity", "units": "meters s-1"},
            ),
            "v": (
                ("time", "siglay", "nele"),
                layers(v),
                {"standard_name": "northward_sea_water_velocity", "units": "meters s-1"},
            ),
            "ww": (
                ("time", "siglay", "nele"),
                layers(0 * u),
                {"long_name": "Upward Water Velocity", "units": "meters s-1"},
            ),
            "time": (
                "time",
                days.astype(np.float32),
                {"units": "days since 1858-11-17 00:00:00", "format": "modified julian day (MJD)"},
            ),
            "Itime": ("time", whole.astype(np.int32), {"units": "days since 1858-11-17 00:00:00"}),
            "Itime2": (
                "time",
                np.round((days - whole) * 86_400_000).astype(np.int32),
                {"units": "msec since 00:00:00"},
            ),
        },
        attrs={"source": "FVCOM_4.3", "CoordinateSystem": "Cartesian"},
    ).to_netcdf(folder / "fvcom_0001.nc")


def _velocity_files(folder: Path) -> None:
    """The cellular flow's velocity files (and `elevation` in `out2d_1.nc`) beside SCHISM's mesh."""
    import xarray as xr

    out2d = xr.open_dataset(SCHISM / "out2d_1.nc")
    z = xr.open_dataset(SCHISM / "zCoordinates_1.nc")
    shutil.copy(SCHISM / "zCoordinates_1.nc", folder)
    x, y = out2d.SCHISM_hgrid_node_x.values, out2d.SCHISM_hgrid_node_y.values
    wet = np.isfinite(z.zCoordinates.values)
    u, v = _cells(x, y, 1.0 + 0.5 * np.arange(z.sizes["time"])[:, None] / (z.sizes["time"] - 1))
    attrs = {"i23d": np.int32(2), "ivs": np.int32(1), "location": "node", "mesh": "SCHISM_hgrid"}
    dims = ("time", "nSCHISM_hgrid_node", "nSCHISM_vgrid_layers")
    for name, values in (("horizontalVelX", u), ("horizontalVelY", v), ("verticalVelocity", 0.0 * u)):
        data = np.where(wet, np.broadcast_to(values[:, :, None], wet.shape), np.nan).astype(np.float32)
        xr.Dataset({name: (dims, data, attrs)}, coords={"time": z.time}).to_netcdf(folder / f"{name}_1.nc")
    elevation = np.zeros((out2d.sizes["time"], len(x)), np.float32)
    out2d.assign(elevation=(("time", "nSCHISM_hgrid_node"), elevation, {"i23d": np.int32(1)})).to_netcdf(
        folder / "out2d_1.nc"
    )


def _oceantracker(args, work: Path, folder: Path, reader: str, mask: str, points: np.ndarray, duration: float):
    """OceanTracker's run of `points` on the files of `folder`: its final positions, statuses and wall time."""
    request, answer, script = work / "request.json", work / "answer.json", work / "run_ot.py"
    given = dict(dt=args.dt, duration=duration, input=str(folder), reader=reader, mask=mask)
    request.write_text(json.dumps({**given, "out": str(work / "ot"), "points": points.tolist()}))
    script.write_text(OCEANTRACKER)
    subprocess.run([args.oceantracker_python, str(script), str(request), str(answer)], check=True, cwd=work)
    return json.loads(answer.read_text())


def _throughput(args, work: Path, folder: Path, reader: str, mask: str, seeds: np.ndarray, duration: float) -> None:
    """flowkit's whole calls and OceanTracker's stepping loop on `--throughput-particles` seeds."""
    n, steps = args.throughput_particles, round(duration / args.dt)
    field = fk.io.read(str(folder / mask))
    many = np.resize(seeds, (n, 2))
    run = dict(save_every=steps)
    pieces = fk.tracker.TrackRun(field, many, 0.0, duration, args.dt).pieces
    kernel = fk.tracker.kernels.kernel_use(pieces, "float32", "cpu")
    fk.track(field, many, 0.0, duration, args.dt, **run)  # compiled for this shape
    best = best_seconds(lambda: fk.track(field, many, 0.0, duration, args.dt, **run))
    ours = n * steps / best
    surface = np.column_stack([many, np.full(n, -0.01)])
    runs = [_oceantracker(args, work, folder, reader, mask, surface, duration) for _ in range(2)]
    theirs, rate, loop_s = best_loop(runs)
    print(
        f"throughput, {n} particles x {steps} steps: flowkit {ours / 1e6:.2f} M particle-steps/s (whole calls, "
        f"{kernel or 'JAX'} step); OceanTracker {rate / 1e6:.2f} M/s (its stepping loop: {theirs['released']} "
        f"particles, {len(theirs['steps']) - 1} steps after the first in {loop_s:.2f} s; whole run "
        f"{theirs['wall']:.1f} s) -> flowkit {ours / rate:.1f}x"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--oceantracker-python", required=True)
    parser.add_argument("--model", choices=["schism", "fvcom"], default="schism")
    parser.add_argument("--particles", type=int, default=500)
    parser.add_argument("--dt", type=float, default=60.0)
    parser.add_argument("--throughput-particles", type=int, default=0)
    args = parser.parse_args()
    duration = 5400.0
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / args.model
        folder.mkdir()
        (_fvcom_file if args.model == "fvcom" else _velocity_files)(folder)
        mask, reader = ("fvcom_*.nc", "FVCOMreader") if args.model == "fvcom" else ("*_1.nc", "SCHISMreaderV5")
        start = time.perf_counter()
        field = fk.io.read(str(folder / mask), dtype="float64")
        read_s = time.perf_counter() - start
        import jax

        seeds = np.asarray(fk.seeding.random_inside(args.particles, field, key=jax.random.key(0)))[:, :2]
        start = time.perf_counter()
        traj = fk.track(field, seeds, 0.0, duration, args.dt, save_every=int(duration / args.dt), dtype="float64")
        track_s = time.perf_counter() - start
        points = np.column_stack([seeds, np.full(len(seeds), -0.01)])  # OceanTracker: z up from mean sea level
        ot = _oceantracker(args, Path(work), folder, reader, mask, points, duration)
        if args.throughput_particles:
            _throughput(args, Path(work), folder, reader, mask, seeds, duration)
    ours = traj.positions[-1, :, :2]
    theirs = np.asarray(ot["x"])[:, :2]
    active = (traj.status[-1] == fk.Status.ACTIVE) & np.all(np.isfinite(theirs), axis=1)
    gap = np.hypot(*(ours[active] - theirs[active]).T)
    moved = np.hypot(*(ours[active] - seeds[active]).T)
    edge = 100.0 if args.model == "fvcom" else 90.0
    print(
        f"{args.model}: particles {args.particles}, RK4 dt {args.dt:g} s over {duration:g} s; "
        f"active in both: {active.sum()}"
    )
    print(f"median travel {np.median(moved):.1f} m")
    print(
        f"gap: median {np.median(gap):.3g} m, 90th percentile {np.percentile(gap, 90):.3g} m "
        f"({np.median(gap) / edge:.2g} and {np.percentile(gap, 90) / edge:.2g} of the median edge)"
    )
    print(f"OceanTracker status at the end: {dict(zip(*np.unique(ot['status'], return_counts=True)))}")
    print(f"wall: flowkit read {read_s:.2f} s + track {track_s:.2f} s; OceanTracker run {ot['wall']:.2f} s")


if __name__ == "__main__":
    main()
