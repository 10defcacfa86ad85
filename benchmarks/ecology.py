"""Fish eggs and sediments beside OpenDrift's `PelagicEggDrift` and `SedimentDrift` on the same
forcing (issue 81).

OpenDrift's own ROMS test file (`Nordic_subset.nc`) gives both trackers the currents, the
temperature and the salinity (`fk.io.read(..., sample=["temp", "salt"])`, OpenDrift's
`reader_ROMS_native`). Both mix with a constant vertical diffusivity (`--diffusivity`, m²/s:
OpenDrift's `vertical_mixing:diffusivitymodel="constant"` at a 60 s mixing step; flowkit's
`EulerMaruyama(Vertical(K))` at 60 s steps) for `--hours`.

- Eggs: `--elements` North-East Arctic cod eggs (1.4 mm, neutral at 31.25) released at
  `--egg-depth` metres at one point; printed: the median and 90th percentile depth in each.
`--opendrift-convention` reads the C-grid's faces as OpenDrift's reader does (as in
`benchmarks/drifters.py`).

- Sediments: grains settling at `--settling` m/s released through the bottom `--band` metres
  of the water at the same point (mixing `--sediment-diffusivity`); printed: the fraction on the
  bed at each hour in each.
- Plastics: elements rising at `--rise` m/s with 2 % windage, released through the top 10 m,
  mixed by a constant eastward `--wind` (m/s) through Sundby (1983)'s K (OpenDrift's
  `PlastDrift` with `vertical_mixing:mixingmodel="randomwalk"`, `windspeed_Sundby1983`, a 50 m
  mixed layer, background 1.2e-5 m²/s, mixing at the surface too (`drift:vertical_mixing_at_surface`:
  by default those that reach the surface stay there); flowkit's `WindDriven` alike); printed:
  the median and 90th percentile depth in each, and Kukulka et al. (2012)'s exponential's. Their
  mixing step is `--plastic-step` (10 s: at 60 s a step's random displacement, 1.6 m, is near the
  profile's 2.2 m scale, and each tracker's surface reflection bends the profile its own way).

`--throughput N`: N elements of each model and as tracers, 1 h of 60 s steps, particle-steps per
second (`drifters.rates`), beside OpenDrift's element-hours per second in the runs above.

    python benchmarks/ecology.py --opendrift-python /tmp/od/bin/python [--elements 5000] [--hours 24]
        [--throughput 1000000]

OpenDrift is not a dependency of flowkit: `--opendrift-python` names an interpreter of an
environment with it (`python -m venv od && od/bin/pip install opendrift`); without it only the
speed runs are made (`python benchmarks/ecology.py --throughput 100000`).
"""

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

import flowkit as fk
from flowkit.diffusion import Vertical, WindDriven
from flowkit.particles import PelagicEgg, Plastic, Sediment

sys.path.insert(0, str(Path(__file__).parent))
from drifters import SHARED, rates  # noqa: E402
from ocean_models import opendrift_convention_option, opendrift_reading, run_script  # noqa: E402

fk.configure()  # one CPU device per core, before JAX starts

OPENDRIFT = """
import json, sys, time
from datetime import timedelta
import numpy as np
from opendrift.readers import reader_ROMS_native, reader_constant
from opendrift.models.pelagicegg import PelagicEggDrift
from opendrift.models.plastdrift import PlastDrift
from opendrift.models.sedimentdrift import SedimentDrift
a = json.load(open(sys.argv[1]))
out = {}
runs = (("eggs", PelagicEggDrift, a["k"]), ("sediments", SedimentDrift, a["k_sediment"]),
        ("plastics", PlastDrift, None))
for name, model, k in runs:
    o = model(loglevel=50)
    reader = reader_ROMS_native.Reader(a["file"])
    o.add_reader([reader, reader_constant.Reader({"x_wind": a["wind"], "y_wind": 0.0})])
    o.set_config("general:use_auto_landmask", False)
    o.set_config("drift:advection_scheme", "runge-kutta4")
    o.set_config("vertical_mixing:timestep", 60)
    if k is None:  # the wind's mixing, Sundby (1983), by a random walk
        o.set_config("vertical_mixing:mixingmodel", "randomwalk")
        o.set_config("vertical_mixing:diffusivitymodel", "windspeed_Sundby1983")
        o.set_config("vertical_mixing:background_diffusivity", 1.2e-5)
        o.set_config("drift:vertical_mixing_at_surface", True)  # else those that surface stay there
        o.set_config("vertical_mixing:timestep", a["plastic_step"])
    else:
        o.set_config("vertical_mixing:diffusivitymodel", "constant")
        o.set_config("environment:fallback:ocean_vertical_diffusivity", k)
    if name == "plastics":
        o.seed_elements(lon=a["lon"], lat=a["lat"], z=-np.linspace(0, 10, a["n"]), number=a["n"],
                        time=reader.start_time, terminal_velocity=a["rise"], wind_drift_factor=0.02)
    elif name == "eggs":
        o.seed_elements(lon=a["lon"], lat=a["lat"], z=-a["egg_depth"], number=a["n"], time=reader.start_time,
                        diameter=0.0014, neutral_buoyancy_salinity=31.25)
    else:
        o.set_config("vertical_mixing:resuspension_threshold", 0.2)
        o.seed_elements(lon=a["lon"], lat=a["lat"], z=a["z_sediment"], number=a["n"], time=reader.start_time,
                        terminal_velocity=-a["settling"])
    start = time.perf_counter()
    o.run(duration=timedelta(hours=a["hours"]), time_step=600, time_step_output=3600)
    z = o.result.z.values
    record = dict(z=(-z[:, -1]).tolist(), seconds=time.perf_counter() - start)
    if name == "sediments":
        record["settled"] = np.nanmean(o.result.moving.values == 0, axis=0).tolist()
    out[name] = record
import opendrift
out["version"] = opendrift.__version__
json.dump(out, open(sys.argv[2], "w"))
"""


def opendrift(args, z_sediment: np.ndarray) -> dict:
    given = dict(
        file=str(args.file), lon=args.seed[0], lat=args.seed[1], n=args.elements, hours=args.hours,
        k=args.diffusivity, k_sediment=args.sediment_diffusivity, egg_depth=args.egg_depth, settling=args.settling,
        z_sediment=(-z_sediment).tolist(), wind=args.wind, rise=args.rise, plastic_step=args.plastic_step,
    )  # fmt: skip
    return run_script(args.opendrift_python, OPENDRIFT, given)


def flowkit_runs(args, field, seed, z_sediment: np.ndarray) -> dict:
    n, t0 = args.elements, float(field.time_range[0])
    t1 = t0 + args.hours * 3600

    def run(particles, depths, k, dt=60.0):
        seeds = np.column_stack([np.full(n, seed[0]), np.full(n, seed[1]), depths])
        start = time.perf_counter()
        traj = fk.track(field, seeds, t0, t1, dt, fk.EulerMaruyama(Vertical(k)), particles=particles,
                        key=jax.random.key(1), save_every=round(3600 / dt))  # fmt: skip
        return traj, time.perf_counter() - start

    eggs, egg_s = run(PelagicEgg(), np.full(n, args.egg_depth), args.diffusivity)
    grains, grain_s = run(Sediment(settling_velocity=args.settling), z_sediment, args.sediment_diffusivity)
    wind_mixing = WindDriven("wind", mixed_layer_depth=50.0, background=1.2e-5)
    plastics, plastic_s = run(Plastic(rise_velocity=args.rise), np.linspace(0, 10, n), wind_mixing, args.plastic_step)
    return dict(
        plastics=dict(z=np.asarray(plastics.positions[-1, :, 2]), seconds=plastic_s),
        eggs=dict(z=np.asarray(eggs.positions[-1, :, 2]), seconds=egg_s),
        sediments=dict(z=np.asarray(grains.positions[-1, :, 2]), settled=grains.variables["settled"].mean(axis=1),
                       seconds=grain_s),
    )  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opendrift-python", required=True)
    parser.add_argument("--file", type=Path, default=SHARED / "Nordic_subset.nc")
    parser.add_argument("--seed", type=float, nargs=2, default=(14.316, 67.719))
    parser.add_argument("--elements", type=int, default=5000)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--diffusivity", type=float, default=0.01)
    parser.add_argument("--egg-depth", type=float, default=50.0)
    parser.add_argument("--settling", type=float, default=1e-3)
    parser.add_argument("--band", type=float, default=60.0)
    parser.add_argument("--sediment-diffusivity", type=float, default=1e-5)
    parser.add_argument("--wind", type=float, default=8.0, help="eastward 10 m wind for the plastics, m/s")
    parser.add_argument("--rise", type=float, default=0.01, help="the plastics' rise velocity, m/s")
    parser.add_argument("--plastic-step", type=float, default=10.0, help="the plastics' mixing step, s")
    parser.add_argument("--throughput", type=int, default=0, help="elements of each model for the speed runs")
    opendrift_convention_option(parser)
    args = parser.parse_args()
    if args.opendrift_convention:
        opendrift_reading()
    field = fk.io.read(args.file, sample=["temp", "salt"], samples={"wind": fk.fields.Uniform([args.wind, 0.0])})
    floor = float(field.water_depth(0.0, np.array([args.seed]))[0])
    z_sediment = floor - np.random.default_rng(0).uniform(0, args.band, args.elements)
    print(f"{args.file.name}: seed {args.seed}, sea floor {floor:.1f} m; {args.elements} elements, {args.hours} h")
    if args.opendrift_python is not None:  # without it: the speed runs alone
        ours, theirs = flowkit_runs(args, field, args.seed, z_sediment), opendrift(args, z_sediment)
        report(args, ours, theirs)
    if args.throughput:
        models = {"tracer": fk.particles.Tracer(), "eggs": PelagicEgg(), "sediments": Sediment(), "plastics": Plastic()}
        print(f"speed at {args.throughput} elements, 1 h of 60 s Euler-Maruyama steps (K {args.diffusivity} m²/s):")
        mixing = fk.EulerMaruyama(Vertical(args.diffusivity))
        found = rates(field, models, (*args.seed, 20.0), args.throughput, 1.0, 60.0, mixing)
        for name, rate in found.items():
            hours = rate["call"] * 1e6 * 60 / 3600
            print(f"  {name}: {found['tracer']['run'] / rate['run']:.2f}x the tracer's time; {hours:.0f} element-h/s")


def report(args, ours: dict, theirs: dict) -> None:
    """The two trackers' eggs, plastics and sediments side by side."""
    print(f"OpenDrift {theirs['version']}")
    scale = (76.1e-4 + 2.26e-4 * args.wind**2) / args.rise
    print(f"  plastics, Kukulka's exponential: median {scale * np.log(2):.2f} m, 90th {scale * np.log(10):.2f} m")
    for name in ("eggs", "plastics"):
        a, b = ours[name]["z"], np.asarray(theirs[name]["z"], float)
        for q in (50, 90):
            qa, qb = np.percentile(a, q), np.nanpercentile(b, q)
            print(f"  {name}: {q}th percentile depth flowkit {qa:.2f} m, OpenDrift {qb:.2f} m ({(qa / qb - 1):+.1%})")
    settled_a, settled_b = np.asarray(ours["sediments"]["settled"]), np.asarray(theirs["sediments"]["settled"])
    for hour in range(0, int(args.hours) + 1, 3):
        print(f"  sediments at {hour:2d} h: settled flowkit {settled_a[hour]:.3f}, OpenDrift {settled_b[hour]:.3f}")
    depth_a, depth_b = ours["sediments"]["z"], np.asarray(theirs["sediments"]["z"], float)
    print(f"  sediments: mean depth at the end flowkit {depth_a.mean():.1f} m, OpenDrift {np.nanmean(depth_b):.1f} m")
    for name in ("eggs", "sediments", "plastics"):
        a, b = ours[name]["seconds"], theirs[name]["seconds"]
        print(
            f"  {name}: seconds flowkit {a:.1f}, OpenDrift {b:.1f} ({args.elements * args.hours / b:.0f} element-h/s)"
        )


if __name__ == "__main__":
    main()
