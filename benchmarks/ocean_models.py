"""A real ROMS file, flowkit beside OpenDrift on the same seeds.

OpenDrift's own ROMS test file (`Nordic_subset.nc`: 4 km, 35 s-levels, curvilinear C-grid) is
read by `fk.io.read` and by OpenDrift's `reader_ROMS_native`; both advect the same surface seeds
with RK4, dt 1 h, for 40 h (OpenDrift: `OceanDrift`, `drift:advection_scheme = runge-kutta4`, no
diffusion, no wind, the file's own land mask). Printed: the median and 90th percentile of the
distance between the final positions of the particles active in both, and each tracker's
particle-steps/s at `--throughput-particles` (each a whole `fk.track` call, compiled before, and a
whole OpenDrift `run`; reading the file apart), flowkit's first call (compile included) and
the share of a call outside `RunStats.run_s` (seed location, frames, copies).

OpenDrift is not a dependency of flowkit: `--opendrift-python` names an interpreter of an
environment with it (`python -m venv od && od/bin/pip install opendrift`).

`--oceantracker-python` (an environment with `pip install oceantracker exceptiongroup`) also
times OceanTracker's `ROMSreader` run (RK4, no dispersion, the same dt and hours). Its reader
needs a C-grid of staggered sizes with the psi, u and v points' coordinates, which OpenDrift's
subset lacks (every grid 21 x 31, `lon_psi`, `lon_u` zero, `mask_psi` up to 2): it reads a copy
made here (`staggered_copy`: u, v and psi trimmed to their sizes, their coordinates and masks
from the rho points'), and flowkit is timed on the same copy. OceanTracker's rate is that of
its stepping loop, as the issue measured it: its solver's steps timed one by one, the first
(which compiles its numba functions) left out, with `--throughput-particles` seeds (its
particles released); flowkit's is of whole compiled `fk.track` calls. (Until session 41 it was
the marginal rate of whole runs of a tenth of and all the seeds: their set-up and compiles,
25-30 s, vary by more than the stepping, so it read 1.3-1.8 M/s at 10⁵ where the loop runs
2.7 M/s.) The positions are compared too: `--particles` seeds in cells whose neighbours are all
water (every one released by OceanTracker, so that its particles match the seeds in order), the
median and 90th percentile distance between the two trackers' positions of those moving in
both, at the end and after 2, 10 and 20 hours.

    python benchmarks/ocean_models.py --opendrift-python od/bin/python [--oceantracker-python ot/bin/python]
        [--file Nordic_subset.nc]
        [--particles 1000] [--throughput-particles 10000] [--opendrift-convention]
        [--hours 24 --wind 10 --wind-drift-factor 0.03]

`--wind` adds a constant eastward wind (m/s): OpenDrift's `reader_constant` with the seeds'
`wind_drift_factor`, and flowkit's `fk.particles.Windage` with the wind as a uniform forcing
field (`fk.io.read(file, samples={"wind": fk.fields.Uniform([wind, 0])})`).

`--opendrift-splitting` (with `--wind`) is the diagnostic for the wind: flowkit then adds the wind
after each current step as OpenDrift's `advect_wind` does (an Euler step along a WGS84 geodesic)
instead of inside the RK4 stages.

`--opendrift-convention` is the diagnostic for the gap between the two: flowkit then reads `u`
and `v` as OpenDrift's reader does, the face east (north) of a rho point taken at that point
instead of the mean of the faces either side (a half-cell, 2 km, shift of the C-grid).
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from oceantracker_loop import TIMED_LOOP, best_loop, best_seconds

import flowkit as fk

fk.configure()  # one CPU device per core, before JAX starts

OPENDRIFT = """
import json, sys, time, logging
from datetime import timedelta
import numpy as np
from opendrift.readers import reader_ROMS_native
from opendrift.models.oceandrift import OceanDrift
args = json.load(open(sys.argv[1]))
out = {}
for name, n in (("agreement", None), ("throughput", args["throughput"])):
    lon, lat = np.array(args["lon"]), np.array(args["lat"])
    if n is not None:
        lon, lat = np.resize(lon, n), np.resize(lat, n)
    o = OceanDrift(loglevel=50)
    reader = reader_ROMS_native.Reader(args["file"])
    o.add_reader(reader)
    if args["wind"]:
        from opendrift.readers import reader_constant
        o.add_reader(reader_constant.Reader({"x_wind": args["wind"], "y_wind": 0.0}))
    o.set_config("drift:advection_scheme", "runge-kutta4")
    o.set_config("general:use_auto_landmask", False)
    o.seed_elements(lon=lon, lat=lat, z=0, time=reader.start_time, wind_drift_factor=args["factor"])
    start = time.perf_counter()
    o.run(duration=timedelta(hours=args["hours"]), time_step=args["dt"], time_step_output=3600)
    elapsed = time.perf_counter() - start
    result = o.result
    lons, lats = result.lon.values, result.lat.values  # (trajectory, time); NaN once deactivated
    last = np.isfinite(lons).cumsum(axis=1).argmax(axis=1)
    rows = np.arange(len(lons))
    final_lon, final_lat = lons[rows, last], lats[rows, last]
    active = np.isfinite(lons[:, -1])
    final = dict(lon=final_lon.tolist(), lat=final_lat.tolist(), active=active.tolist())
    out[name] = dict(final, seconds=elapsed, n=len(lon))
import opendrift
out["version"] = opendrift.__version__
json.dump(out, open(sys.argv[2], "w"))
"""


OCEANTRACKER = (
    TIMED_LOOP
    + """
import json, sys, time
from oceantracker.main import OceanTracker
from oceantracker.read_output.python import load_output_files
args = json.load(open(sys.argv[1]))
ot = OceanTracker()
ot.settings(root_output_dir=args["out"], output_file_base="roms", time_step=args["dt"], use_dispersion=False,
            write_tracks=args["tracks"], max_run_duration=args["duration"], use_A_Z_profile=False,
            display_grid_at_start=False, screen_output_time_interval=1e9)
ot.add_class("reader", class_name="ROMSreader", input_dir=args["input"], file_mask=args["mask"])
ot.add_class("release_groups", name="seeds", class_name="PointRelease", points=args["points"], pulse_size=1,
             release_interval=0)
if args["tracks"]:
    ot.add_class("tracks_writer", update_interval=args["dt"], turn_on_write_particle_properties_list=["status"])
start = time.perf_counter()
case = ot.run()
wall = time.perf_counter() - start
info = load_output_files.read_case_info_file(case)
import oceantracker
out = {"wall": wall, "released": info["run_info"]["number_particles_released"], "version": oceantracker.__version__,
       "steps": steps}
if args["tracks"]:
    tracks = load_output_files.load_track_data(case)
    out.update(x=tracks["x"].tolist(), status=tracks["status"].tolist(), time=tracks["time"].tolist())
json.dump(out, open(sys.argv[2], "w"))
"""
)


def staggered_copy(path: Path, folder: Path) -> Path:
    """A copy of a ROMS file whose grids all have the rho points' size (OpenDrift's subset) with
    u, v and psi trimmed to a C-grid's sizes, their coordinates the means of the rho points
    around them and their masks the products of the rho masks (OceanTracker's reader needs them).
    OceanTracker's `ROMSreader` takes u and v as east and north and does not turn them by the
    grid's `angle` (44° on the Nordic grid), so the copy holds them turned already (`_turned`:
    each face's velocity with the other component averaged to it, turned by the angle there) and
    its `angle` is 0: both trackers step the file's east and north velocities."""
    import xarray as xr

    with xr.open_dataset(path, decode_times=False) as ds:
        copy = ds.isel(xi_u=slice(0, -1), eta_v=slice(0, -1), eta_psi=slice(0, -1), xi_psi=slice(0, -1)).load()
        rho = {name: ds[f"{name}_rho"].values for name in ("lon", "lat", "mask")}
        ds_angle = ds["angle"].values if "angle" in ds else None
    for v in copy.variables.values():
        v.encoding = {}  # the source's packing, wrong for the new values
    if "angle" in copy:
        copy["u"].values, copy["v"].values = _turned(copy["u"].values, copy["v"].values, ds_angle)
        copy["angle"] = copy["angle"] * 0.0
    for name, r in rho.items():
        copy[f"{name}_psi"] = (("eta_psi", "xi_psi"), _around(r, (0, 1), name == "mask"))
        copy[f"{name}_u"] = (("eta_u", "xi_u"), _around(r, (1,), name == "mask"))
        copy[f"{name}_v"] = (("eta_v", "xi_v"), _around(r, (0,), name == "mask"))
    out = folder / f"{Path(path).stem}_staggered.nc"
    copy.to_netcdf(out)
    return out


def _turned(u: np.ndarray, v: np.ndarray, angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """East and north velocities on a C-grid's faces from grid-relative `u` `(..., eta, xi - 1)` and
    `v` `(..., eta - 1, xi)` and the rho points' `angle` `(eta, xi)`: at each u face, `v` is the mean
    of the four v faces around it (edges repeated), at each v face `u` alike, and the pair is turned
    by the mean angle of the face's two rho points (ROMS' convention: east = u cos a - v sin a)."""
    pad = [(0, 0)] * (u.ndim - 2)
    v_rows = np.pad(v, pad + [(1, 1), (0, 0)], mode="edge")  # row j + 1: the v faces j + 1/2
    v_at_u = 0.25 * (v_rows[..., :-1, :-1] + v_rows[..., :-1, 1:] + v_rows[..., 1:, :-1] + v_rows[..., 1:, 1:])
    u_cols = np.pad(u, pad + [(0, 0), (1, 1)], mode="edge")
    u_at_v = 0.25 * (u_cols[..., :-1, :-1] + u_cols[..., :-1, 1:] + u_cols[..., 1:, :-1] + u_cols[..., 1:, 1:])
    a_u = 0.5 * (angle[:, :-1] + angle[:, 1:])
    a_v = 0.5 * (angle[:-1, :] + angle[1:, :])
    east = u * np.cos(a_u) - v_at_u * np.sin(a_u)
    north = u_at_v * np.sin(a_v) + v * np.cos(a_v)
    return east, north


def _around(rho: np.ndarray, axes: tuple, product: bool) -> np.ndarray:
    """The rho values around each face (`axes` (1,): u; (0,): v; (0, 1): psi), their mean or
    (masks) product."""
    corners = [rho]
    for axis in axes:
        corners = [c.take(range(k, c.shape[axis] - 1 + k), axis=axis) for c in corners for k in (0, 1)]
    return np.prod(corners, axis=0) if product else np.mean(corners, axis=0)


def oceantracker_runs(
    python: str, file: Path, seeds: np.ndarray, hours: int, dt: float, folder: Path, tracks: bool = False
) -> dict:
    """OceanTracker's whole run (wall seconds, particles released, version; with `tracks` each
    particle's final position and status, in release order) from `seeds`."""
    script, given, result = folder / "ot.py", folder / "ot_in.json", folder / "ot_out.json"
    script.write_text(OCEANTRACKER)
    points = seeds[:, :2].tolist()
    spec = dict(
        out=str(folder / "ot"), dt=dt, duration=hours * 3600.0, input=str(file.parent), mask=file.name, tracks=tracks
    )
    given.write_text(json.dumps({**spec, "points": points}))
    subprocess.run([python, str(script), str(given), str(result)], check=True, capture_output=True)
    return json.loads(result.read_text())


def seeds_in_water(path: Path, n: int, seed: int = 0, margin: int = 0) -> np.ndarray:
    """`n` surface seeds at random places inside the grid's water cells (with `margin`, cells
    whose neighbours that far are water too)."""
    import xarray as xr
    from scipy import ndimage

    ds = xr.open_dataset(path)
    rng = np.random.default_rng(seed)
    mask = ds.mask_rho.values
    if margin:
        mask = ndimage.binary_erosion(mask > 0, np.ones((3, 3)), iterations=margin).astype(mask.dtype)
    wet = np.argwhere((mask[:-1, :-1] + mask[1:, 1:] + mask[1:, :-1] + mask[:-1, 1:]) == 4)
    pick = wet[rng.integers(0, len(wet), n)]
    a, b = rng.uniform(0.1, 0.9, (2, n))
    lon, lat = ds.lon_rho.values, ds.lat_rho.values
    j, i = pick[:, 0], pick[:, 1]

    def corner(f):
        return (
            (1 - a) * (1 - b) * f[j, i]
            + a * (1 - b) * f[j, i + 1]
            + a * b * f[j + 1, i + 1]
            + (1 - a) * b * f[j + 1, i]
        )

    return np.column_stack([corner(lon), corner(lat), np.zeros(n)])


def index_aligned(values, axis, n_rho, name, source):
    """OpenDrift's reading of a C-grid: face `i` (between rho points `i` and `i + 1`) at rho point `i`."""
    faces = np.moveaxis(values, axis, -1)
    out = np.zeros(faces.shape[:-1] + (n_rho,))
    m = min(faces.shape[-1], n_rho)
    out[..., :m] = np.nan_to_num(faces[..., :m])
    return np.moveaxis(out, -1, axis)


def opendrift_reading() -> None:
    """Make flowkit read a C-grid's faces as OpenDrift's ROMS reader does (`index_aligned`)."""
    import flowkit.io.cgrid

    flowkit.io.cgrid.to_centres = lambda values, axis, n_rho, name, source, side: index_aligned(
        values, axis, n_rho, name, source
    )


def opendrift_convention_option(parser: argparse.ArgumentParser) -> None:
    """The `--opendrift-convention` flag of the scripts that run OpenDrift beside flowkit."""
    parser.add_argument(
        "--opendrift-convention",
        action="store_true",
        help="read u and v index-aligned with the rho points, as OpenDrift's ROMS reader does",
    )


def run_script(python: str, text: str, given: dict) -> dict:
    """`text` run as a script by another environment's `python` (OpenDrift's), `given` as its
    JSON input (its first argument); what it writes as JSON to its second."""
    with tempfile.TemporaryDirectory() as folder:
        script, inputs, result = (Path(folder, name) for name in ("script.py", "in.json", "out.json"))
        script.write_text(text)
        inputs.write_text(json.dumps(given))
        subprocess.run([python, str(script), str(inputs), str(result)], check=True)
        return json.loads(result.read_text())


def distance_m(lon1, lat1, lon2, lat2) -> np.ndarray:
    p1, p2 = np.deg2rad(lat1), np.deg2rad(lat2)
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.deg2rad(lon2 - lon1) / 2) ** 2
    return 2 * 6_371_000.0 * np.arcsin(np.sqrt(h))


def split_wind_run(field, seeds, hours: int, dt: float, wind: float, factor: float):
    """flowkit's currents with the wind added as OpenDrift's `OceanDrift.update` adds it: each
    step the currents' RK4 step, then `advect_wind`'s Euler step of `factor * wind` (east) along
    a WGS84 geodesic (`update_positions`). Returns the final positions and which stayed active."""
    import pyproj

    geod = pyproj.Geod(ellps="WGS84")
    x, active = seeds.copy(), np.ones(len(seeds), bool)
    for step in range(round(hours * 3600 / dt)):
        traj = fk.track(field, x, step * dt, (step + 1) * dt, dt)
        active &= traj.status[-1] == fk.Status.ACTIVE
        moved = np.where(active[:, None], traj.positions[-1], x)
        lon, lat, _ = geod.fwd(moved[:, 0], moved[:, 1], np.full(len(x), 90.0), np.full(len(x), factor * wind * dt))
        x = np.where(active[:, None], np.column_stack([lon, lat, moved[:, 2]]), x)
    return x, active


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--file",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared" / "data" / "ocean-real" / "Nordic_subset.nc",
    )
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--throughput-particles", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=40)
    parser.add_argument("--opendrift-python", type=str, default=None)
    parser.add_argument("--oceantracker-python", type=str, default=None)
    parser.add_argument("--wind", type=float, default=0.0, help="a constant eastward wind, m/s")
    parser.add_argument("--wind-drift-factor", type=float, default=0.03)
    parser.add_argument("--dt", type=float, default=3600.0, help="the step of both trackers, s")
    opendrift_convention_option(parser)
    parser.add_argument(
        "--opendrift-splitting",
        action="store_true",
        help="with --wind: add the wind to flowkit's current steps as OpenDrift does (Euler, after them, geodesic)",
    )
    args = parser.parse_args()
    if args.opendrift_convention:
        opendrift_reading()
    seeds = seeds_in_water(args.file, args.particles)
    start = time.perf_counter()
    field = fk.io.read(args.file)
    read_s = time.perf_counter() - start
    model = None
    if args.wind:
        field = fk.io.read(args.file, samples={"wind": fk.fields.Uniform([args.wind, 0.0])})
        model = fk.particles.Windage(args.wind_drift_factor)
    t1 = args.hours * 3600.0
    steps = round(t1 / args.dt)
    run = dict(save_every=steps, particles=model)
    first = time.perf_counter()
    traj = fk.track(field, seeds, 0.0, t1, args.dt, **run)  # the first run: its programs compiled
    first_s, compile_s = time.perf_counter() - first, traj.stats.compile_s
    many = np.resize(seeds, (args.throughput_particles, 3))
    fk.track(field, many, 0.0, t1, args.dt, **run)  # compiled for this shape
    calls = []
    for _ in range(3):
        start = time.perf_counter()
        stats = fk.track(field, many, 0.0, t1, args.dt, **run).stats
        calls.append((time.perf_counter() - start, stats.run_s))
    best, best_run_s = min(calls)
    rate = args.throughput_particles * steps / best
    report = {
        "file": str(args.file),
        "flowkit": {
            "read_s": round(read_s, 3),
            "first_call_s": round(first_s, 3),
            "compile_s": round(compile_s, 3),
            "outside_run_s_share": round(1 - best_run_s / best, 4),
            "particle_steps_per_s": rate,
            "active": int(np.sum(traj.status[-1] == fk.Status.ACTIVE)),
        },
    }
    print(
        f"flowkit: read {read_s:.2f} s; first call ({args.particles} particles) {first_s:.2f} s, of which the "
        f"chunk's compile {compile_s:.2f} s; {args.throughput_particles} particles x {steps} steps: "
        f"{rate / 1e6:.2f} M particle-steps/s, {100 * (1 - best_run_s / best):.1f} % of the call outside run_s"
    )
    if args.opendrift_python:
        with tempfile.TemporaryDirectory() as tmp:
            script, given, result = Path(tmp) / "od.py", Path(tmp) / "in.json", Path(tmp) / "out.json"
            script.write_text(OPENDRIFT)
            given.write_text(
                json.dumps(
                    {
                        "file": str(args.file),
                        "lon": seeds[:, 0].tolist(),
                        "lat": seeds[:, 1].tolist(),
                        "hours": args.hours,
                        "throughput": args.throughput_particles,
                        "wind": args.wind,
                        "factor": args.wind_drift_factor,
                        "dt": args.dt,
                    }
                )
            )
            subprocess.run([args.opendrift_python, str(script), str(given), str(result)], check=True)
            od = json.loads(result.read_text())
        agree = od["agreement"]
        final, active = traj.positions[-1], traj.status[-1] == fk.Status.ACTIVE
        if args.opendrift_splitting:
            final, active = split_wind_run(
                fk.io.read(args.file), seeds, args.hours, args.dt, args.wind, args.wind_drift_factor
            )
        both = np.asarray(agree["active"]) & active
        gap = distance_m(final[both, 0], final[both, 1], np.asarray(agree["lon"])[both], np.asarray(agree["lat"])[both])
        od_rate = od["throughput"]["n"] * steps / od["throughput"]["seconds"]
        report["opendrift"] = {
            "version": od["version"],
            "particle_steps_per_s": od_rate,
            "active": int(np.sum(agree["active"])),
        }
        report["agreement_m"] = {
            "both_active": int(both.sum()),
            "median": float(np.median(gap)),
            "p90": float(np.percentile(gap, 90)),
        }
        print(
            f"OpenDrift {od['version']}: {od['throughput']['n']} particles x {steps} steps: "
            f"{od_rate / 1e6:.4f} M particle-steps/s -> flowkit {rate / od_rate:.0f}x"
        )
        print(
            f"final positions of the {both.sum()} particles active in both: median "
            f"{np.median(gap):.0f} m, 90th percentile {np.percentile(gap, 90):.0f} m (grid 4 km)"
        )
    if args.oceantracker_python:
        report["oceantracker"] = beside_oceantracker(args, steps, run)
    print(json.dumps(report))


def _agreement(ours, seeds: np.ndarray, theirs: dict, dt: float, hours: tuple = (2, 10, 20)) -> dict:
    """The distance between flowkit's and OceanTracker's positions of the particles moving in
    both (OceanTracker's status 10), matched in release order (it released every seed): at the
    end, and after each of `hours` (both saved every step `dt`)."""
    if theirs["released"] != len(seeds):
        raise RuntimeError(f"OceanTracker released {theirs['released']} of {len(seeds)} seeds: cannot match them")
    x, status = np.asarray(theirs["x"])[..., :2], np.asarray(theirs["status"])
    elapsed = (np.asarray(theirs["time"]) - theirs["time"][0]) / 3600.0

    def gap_at(hour: float) -> dict:
        k, mine = int(np.argmin(np.abs(elapsed - hour))), int(round(hour * 3600.0 / dt))
        both = (status[k] == 10) & (ours.status[mine] == fk.Status.ACTIVE)
        at = ours.positions[mine]
        gap = distance_m(at[both, 0], at[both, 1], x[k, both, 0], x[k, both, 1])
        return {"both_active": int(both.sum()), "median": float(np.median(gap)), "p90": float(np.percentile(gap, 90))}

    return {**gap_at(elapsed[-1]), "by_hour": {h: gap_at(h) for h in hours if h < elapsed[-1]}}


def beside_oceantracker(args, steps: int, run: dict) -> dict:
    """OceanTracker's stepping loop (`oceantracker_loop.py`) and flowkit's whole calls on the
    staggered copy of the file, and their positions."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        copy = staggered_copy(args.file, folder)
        n = args.throughput_particles
        seeds = seeds_in_water(copy, n)
        python = args.oceantracker_python
        theirs_timed, ot_rate, loop_s = best_loop(
            [oceantracker_runs(python, copy, seeds, args.hours, args.dt, folder) for _ in range(2)]
        )
        field = fk.io.read(copy)
        fk.track(field, seeds, 0.0, steps * args.dt, args.dt, **run)  # compiled for this shape
        best = best_seconds(lambda: fk.track(field, seeds, 0.0, steps * args.dt, args.dt, **run))
        # the agreement: seeds in cells whose neighbours are all water, which OceanTracker releases every one of
        inner = seeds_in_water(copy, args.particles, seed=1, margin=1)
        theirs = oceantracker_runs(python, copy, inner, args.hours, args.dt, folder, tracks=True)
        every_step = {**run, "save_every": 1}  # as OceanTracker writes them
        ours = fk.track(field, inner, 0.0, steps * args.dt, args.dt, **every_step)
    gap = _agreement(ours, inner, theirs, args.dt)
    rate = n * steps / best
    print(
        f"OceanTracker {theirs_timed['version']} on the staggered copy, {theirs_timed['released']} particles "
        f"released: its stepping loop {ot_rate / 1e6:.2f} M particle-steps/s ({steps - 1} steps in {loop_s:.2f} s, "
        f"the first's {theirs_timed['steps'][0]:.2f} s left out; whole run {theirs_timed['wall']:.1f} s); "
        f"flowkit {rate / 1e6:.2f} M/s (whole calls) -> {rate / ot_rate:.2f}x"
    )
    print(
        f"final positions beside OceanTracker's, {gap['both_active']} of {args.particles} particles moving in both: "
        f"median {gap['median']:.0f} m, 90th percentile {gap['p90']:.0f} m (grid 4 km); after "
        + ", ".join(f"{h} h: {g['median']:.0f} m, {g['p90']:.0f} m" for h, g in gap["by_hour"].items())
    )
    return {
        "agreement_m": gap,
        "version": theirs_timed["version"],
        "particle_steps_per_s": ot_rate,
        "loop_s": loop_s,
        "first_step_s": theirs_timed["steps"][0],
        "wall": theirs_timed["wall"],
        "released": theirs_timed["released"],
        "flowkit_particle_steps_per_s": rate,
    }


if __name__ == "__main__":
    main()
