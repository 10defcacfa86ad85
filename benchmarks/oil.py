"""Oil beside OpenDrift's OpenOil on the same forcing, the same oil, release and processes (issue 80).

Both release `--elements` elements of 1 m³ of each `--oil` at once at the surface at 4° E
60° N, in still water 200 m deep with a steady wind (`--wind`, m/s, east), water at 10 °C and
34, a vertical diffusivity of 0.02 m²/s (OpenOil's `constant` diffusivity model, flowkit's
`EulerMaruyama(Vertical(0.02))`), a film 1 mm thick, waves from the wind, steps of `--dt` seconds for
`--hours`. OpenOil's wind and current uncertainties are set to 0, so that both move the slick
by 3 % of the wind (OpenOil's default) alone. OpenOil mixes the water column, and entrains,
in substeps of 60 s within each step; flowkit steps everything at `--flowkit-dt` (60 s).
flowkit uses OpenOil's conventions where the two differ
(`Oil(convention="openoil")`, and the SINTEF maximum water fraction that OpenOil takes
for Norwegian oils, at 10 °C).

Printed per oil and per process switched off in both (none, evaporation, emulsification,
dispersion, entrainment): each term of the mass budget at the end as a percentage of the
released mass in each, and their difference; the surface oil's centre of mass (its distance
from the release) and the slick's extent (rms distance from that centre) in each.

`--roms Nordic_subset.nc` (OpenDrift's own ROMS test file, in `../shared/data/ocean-real`) adds a
spill of `--roms-oil` at `--roms-site` for `--roms-hours` on the file's currents, temperature,
salinity and coast (OpenDrift's `reader_ROMS_native`; flowkit's `fk.io.read` with `temp` and
`salt` sampled), the same steady wind; `--opendrift-convention` makes flowkit read the C-grid's
`u` and `v` as OpenDrift's reader does (as in `benchmarks/drifters.py`); `--skip-still` leaves
the still-water cases out.

Speed: `--throughput` oil elements with every process on, the same run as tracers, and
OpenOil's whole `run` at `--opendrift-elements`, for `--speed-hours` at OpenOil's step `--dt`,
in particle-steps per second.

    python benchmarks/oil.py --opendrift-python /tmp/od/bin/python [--oil "AASGARD A 2003" "GENERIC BUNKER C"]
        [--wind 8] [--hours 48] [--dt 900] [--elements 2000] [--throughput 1000000] [--opendrift-elements 20000]
        [--roms ../shared/data/ocean-real/Nordic_subset.nc [--opendrift-convention] [--skip-still]]

OpenDrift is not a dependency of flowkit: `--opendrift-python` names an interpreter of an
environment with it (`python -m venv od && od/bin/pip install opendrift bottleneck`).
"""

import argparse
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

import flowkit as fk
from flowkit.diffusion import Vertical

sys.path.insert(0, str(Path(__file__).parent))
from ocean_models import distance_m, opendrift_convention_option, opendrift_reading, run_script  # noqa: E402

SITE = (4.0, 60.0)
TEMPERATURE, SALINITY, DEPTH, DIFFUSIVITY = 10.0, 34.0, 200.0, 0.02
PROCESSES = {
    "none": {},
    "evaporation": {"evaporation": False},
    "emulsification": {"emulsification": False},
    "dispersion": {"dispersion": False},
    "entrainment": {"entrainment": False},
}
OPENOIL_SWITCH = {
    "evaporation": "processes:evaporation",
    "emulsification": "processes:emulsification",
    "dispersion": "processes:dispersion",
    "entrainment": "drift:vertical_mixing",
}
TERMS = ("surface", "submerged", "evaporated", "dispersed")

OPENDRIFT = """
import json, sys, time
from datetime import datetime, timedelta
import numpy as np
from opendrift.models.openoil import OpenOil
from opendrift.readers import reader_constant, reader_ROMS_native
args = json.load(open(sys.argv[1]))
out = {}
for run in args["runs"]:
    o = OpenOil(loglevel=50, weathering_model="noaa")
    start_time, lon, lat = datetime(2024, 1, 1), args["lon"], args["lat"]
    if run.get("roms"):  # the ocean model's currents, water and coast; the wind steady
        roms = reader_ROMS_native.Reader(run["roms"])
        o.add_reader([roms, reader_constant.Reader({"x_wind": args["wind"], "y_wind": 0.0})])
        start_time, (lon, lat) = roms.start_time, run["site"]
        fallback = {"ocean_vertical_diffusivity": args["diffusivity"]}
    else:
        o.add_reader(reader_constant.Reader({"x_sea_water_velocity": 0.0, "y_sea_water_velocity": 0.0,
                                             "x_wind": args["wind"], "y_wind": 0.0, "land_binary_mask": 0}))
        fallback = {"sea_water_temperature": args["temperature"], "sea_water_salinity": args["salinity"],
                    "sea_floor_depth_below_sea_level": args["depth"], "ocean_vertical_diffusivity": args["diffusivity"]}
    for k, v in fallback.items():
        o.set_config(f"environment:fallback:{k}", v)
    o.set_config("drift:current_uncertainty", 0.0)
    o.set_config("drift:wind_uncertainty", 0.0)
    o.set_config("general:use_auto_landmask", False)
    o.set_config("vertical_mixing:diffusivitymodel", "constant")
    for k in run["off"]:
        o.set_config(k, False)
    o.seed_elements(lon=lon, lat=lat, z=0, time=start_time, number=run["n"], m3_per_hour=1.0, oil_type=run["oil"])
    start = time.perf_counter()
    hours = run.get("hours", args["hours"])
    o.run(duration=timedelta(hours=hours), time_step=args["dt"], time_step_output=3600 * hours)
    seconds = time.perf_counter() - start
    b = o.get_oil_budget()
    last = {k[5:]: float(np.asarray(v)[-1]) for k, v in b.items() if k.startswith("mass")}
    z, lon, lat = (np.asarray(getattr(o.result, k))[:, -1] for k in ("z", "lon", "lat"))
    mass = np.asarray(o.result.mass_oil)[:, -1]
    at = (z == 0) & np.isfinite(lon)
    wf = o.max_water_fraction
    if wf is not None:  # OpenOil's SINTEF table for the oil, linear in temperature as OpenOil takes it
        t, w = wf["temperatures"], wf["max_water_fraction"]
        w = w if len(w) > 1 else [w[0], w[0]]
        t = t if len(t) > 1 else [t[0], t[0]]
        temp = args["temperature"]
        weight = 1.0 if temp <= t[0] else 0.0 if temp > t[1] else (t[1] - temp) / (t[1] - t[0])
        water = min(float(o.oiltype.emulsion_water_fraction_max), weight * w[0] + (1 - weight) * w[1])
    else:
        water = float(o.oiltype.emulsion_water_fraction_max)
    out[run["name"]] = dict(budget=last, lon=lon[at].tolist(), lat=lat[at].tolist(), mass=mass[at].tolist(),
                            seconds=seconds, n=run["n"], max_water=water)
import opendrift
out["version"] = opendrift.__version__
json.dump(out, open(sys.argv[2], "w"))
"""


def flowkit_run(field, oil: fk.oil.OilType, options: dict, n: int, hours: float, dt: float, tracks=True):
    spill = fk.oil.spill(oil, [*SITE, 0.0], n, volume=1.0)
    model = fk.particles.Oil(oil, temperature=TEMPERATURE, salinity=SALINITY, convention="openoil", **options)
    return fk.track(
        field, spill.seeds, 0.0, hours * 3600, dt, fk.EulerMaruyama(Vertical(DIFFUSIVITY)), particles=model,
        particle_state=spill.particle_state, key=jax.random.key(0), save_every=f"{hours}h",
        statistics=[fk.statistics.OilBudget()], tracks=tracks, dtype="float64",
    )  # fmt: skip


def slick(lon, lat, mass) -> tuple[float, float, float]:
    """The surface oil's centre of mass (lon, lat) and extent (rms distance from it, m)."""
    lon, lat, mass = (np.asarray(v, np.float64) for v in (lon, lat, mass))
    c_lon, c_lat = np.average(lon, weights=mass), np.average(lat, weights=mass)
    extent = np.sqrt(np.average(distance_m(lon, lat, c_lon, c_lat) ** 2, weights=mass))
    return float(c_lon), float(c_lat), float(extent)


def compare(name: str, ours, theirs: dict, site=SITE) -> None:
    budget = ours.statistics["oil_budget"].isel(time=-1)
    released = float(budget["released"])
    od_total = sum(theirs["budget"][k] for k in ("surface", "submerged", "stranded", "evaporated", "dispersed"))
    row = []
    for term in TERMS:
        a, b = 100 * float(budget[term]) / released, 100 * theirs["budget"][term] / od_total
        row.append(f"{term} {a:5.1f} / {b:5.1f} ({a - b:+.1f})")
    surface = (ours.status[-1] == fk.Status.ACTIVE) & (ours.variables["submerged"][-1] < 0.5)
    mass = ours.variables["components"][-1].sum(-1)
    ours_slick = slick(ours.positions[-1, surface, 0], ours.positions[-1, surface, 1], mass[surface])
    their_slick = slick(theirs["lon"], theirs["lat"], theirs["mass"])
    print(f"  off: {name:14s} % released, flowkit / OpenOil: " + ", ".join(row))
    away = [distance_m(site[0], site[1], s[0], s[1]) / 1e3 for s in (ours_slick, their_slick)]
    apart = distance_m(ours_slick[0], ours_slick[1], their_slick[0], their_slick[1]) / 1e3
    print(
        f"  {'':19s} surface centre {away[0]:.2f} / {away[1]:.2f} km from the release, {apart:.2f} km apart; "
        f"extent {ours_slick[2]:.0f} / {their_slick[2]:.0f} m"
    )


def roms_case(args, theirs: dict) -> None:
    """The spill on the ocean model's file: its currents, temperature, salinity and coast."""
    if args.opendrift_convention:
        opendrift_reading()
    field = fk.io.read(args.roms, sample=["temp", "salt"], samples={"wind": fk.fields.Uniform([args.wind, 0.0])})
    oil = fk.oil.OilType.named(args.roms_oil)
    spill = fk.oil.spill(oil, [*args.roms_site, 0.0], args.elements, volume=1.0)
    model = fk.particles.Oil(oil, temperature="temp", salinity="salt", convention="openoil")
    t0 = float(field.times[0])
    ours = fk.track(
        field, spill.seeds, t0, t0 + args.roms_hours * 3600, args.flowkit_dt, fk.EulerMaruyama(Vertical(DIFFUSIVITY)),
        particles=model, particle_state=spill.particle_state, key=jax.random.key(0), save_every=f"{args.roms_hours}h",
        statistics=[fk.statistics.OilBudget()], dtype="float64",
    )  # fmt: skip
    print(f"{oil.name} on {Path(args.roms).name}, {args.roms_hours} h from {args.roms_site}")
    compare("none", ours, theirs["roms"], site=args.roms_site)


def speed(field, oil, n: int, hours: float, dt: float) -> None:
    steps = round(hours * 3600 / dt)
    spill = fk.oil.spill(oil, [*SITE, 0.0], n, volume=1.0)
    walk = fk.EulerMaruyama(Vertical(DIFFUSIVITY))
    runs = {
        "oil": dict(particles=fk.particles.Oil(oil), particle_state=spill.particle_state),
        "tracer": {},
    }
    for name, run in runs.items():
        call = lambda run=run: fk.track(  # noqa: E731
            field, spill.seeds, 0.0, hours * 3600, dt, walk, key=jax.random.key(1), save_every=f"{hours}h", **run
        )
        call()
        start = time.perf_counter()
        stats = call().stats
        wall = time.perf_counter() - start
        run_rate, call_rate = n * steps / stats.run_s / 1e6, n * steps / wall / 1e6
        print(f"  flowkit {name}: {run_rate:.2f} M/s compiled run, {call_rate:.2f} M/s call")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--opendrift-python", type=str, default=None)
    parser.add_argument("--oil", nargs="+", default=["AASGARD A 2003", "GENERIC BUNKER C"])
    parser.add_argument("--wind", type=float, default=8.0)
    parser.add_argument("--hours", type=float, default=48.0)
    parser.add_argument("--dt", type=float, default=900.0)
    parser.add_argument("--flowkit-dt", type=float, default=60.0)
    parser.add_argument("--elements", type=int, default=2000)
    parser.add_argument("--throughput", type=int, default=0)
    parser.add_argument("--speed-hours", type=float, default=12.0)
    parser.add_argument("--opendrift-elements", type=int, default=0)
    parser.add_argument("--roms", type=str, default=None, help="also a spill on this ROMS file (Nordic_subset.nc)")
    parser.add_argument("--roms-oil", default="GENERIC MEDIUM CRUDE")
    parser.add_argument("--roms-site", type=float, nargs=2, default=[13.5, 67.5])
    parser.add_argument("--roms-hours", type=float, default=36.0)
    parser.add_argument("--skip-still", action="store_true", help="only the ROMS spill and the speed runs")
    opendrift_convention_option(parser)
    args = parser.parse_args()
    field = fk.datasets.still_sea(args.wind, DEPTH, SITE)
    runs = [
        {"name": f"{oil}|{off}", "oil": oil, "n": args.elements, "off": [OPENOIL_SWITCH[off]] if off != "none" else []}
        for oil in args.oil for off in PROCESSES if not args.skip_still
    ]  # fmt: skip
    if args.roms:
        roms = {"name": "roms", "oil": args.roms_oil, "n": args.elements, "off": [], "hours": args.roms_hours}
        runs.append({**roms, "roms": str(Path(args.roms).resolve()), "site": args.roms_site})
    if args.opendrift_elements:
        speed_run = {"name": "speed", "oil": args.oil[0], "n": args.opendrift_elements, "off": []}
        runs.append({**speed_run, "hours": args.speed_hours})
    theirs = {}
    if args.opendrift_python:
        given = dict(runs=runs, wind=args.wind, hours=args.hours, dt=args.dt, lon=SITE[0], lat=SITE[1],
                     temperature=TEMPERATURE, salinity=SALINITY, depth=DEPTH, diffusivity=DIFFUSIVITY)  # fmt: skip
        theirs = run_script(args.opendrift_python, OPENDRIFT, given)
        print(f"OpenDrift {theirs['version']}, wind {args.wind} m/s, {args.hours} h in steps of {args.dt} s")
    for oil_name in [] if args.skip_still else args.oil:
        oil = fk.oil.OilType.named(oil_name)
        print(f"{oil.name} ({oil.oil_id}), {oil.components} pseudo-components")
        for off, options in PROCESSES.items():
            mine = theirs.get(f"{oil_name}|{off}")
            if mine is None:
                continue
            same = eqx.tree_at(lambda o: o.max_water_fraction, oil, np.asarray(mine["max_water"]))
            compare(off, flowkit_run(field, same, options, args.elements, args.hours, args.flowkit_dt), mine)
    if args.roms and "roms" in theirs:
        roms_case(args, theirs)
    if args.throughput:
        speed(field, fk.oil.OilType.named(args.oil[0]), args.throughput, args.speed_hours, args.dt)
    if "speed" in theirs:
        s = theirs["speed"]
        steps = round(args.speed_hours * 3600 / args.dt)
        print(f"  OpenOil: {s['n'] * steps / s['seconds'] / 1e6:.4f} M/s ({s['n']} elements, {s['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
