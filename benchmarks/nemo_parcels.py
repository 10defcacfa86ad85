"""NEMO's own output, flowkit beside Parcels' `FieldSet.from_nemo` on the same seeds.

The files are the real ORCA025 North Sea cut in `tests/data/nemo` (two 5-day means of `uos`,
`vos`, and the run's `coordinates.nc`). flowkit reads them with `fk.io.read(files,
velocity="uos,vos")` (the U and V faces averaged to the T points, turned east by the grid's
angle); Parcels with `FieldSet.from_nemo` on the F points (`glamf`, `gphif`), its C-grid
interpolation of the same faces. Both advect the same surface seeds (`random_inside`) with RK4,
dt 1 h, for `--hours`; printed: the distance between the final positions of the particles
active in both (km, and in cells of the grid, about 15 km here), and each tracker's time.

Parcels is not a dependency of flowkit: `--parcels-python` names an interpreter of an
environment with it (`python -m venv pv && pv/bin/pip install "parcels<4"`).

    python benchmarks/nemo_parcels.py --parcels-python pv/bin/python [--particles 500] [--hours 48]
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import flowkit as fk

NEMO = Path(__file__).resolve().parent.parent / "tests" / "data" / "nemo"

PARCELS = """
import glob, json, sys, time
from datetime import timedelta
import numpy as np
import parcels
from parcels import AdvectionRK4, FieldSet, JITParticle, ParticleSet
args = json.load(open(sys.argv[1]))
folder = args["dir"]
coords = folder + "/coordinates.nc"
data = {c: sorted(glob.glob(folder + f"/ORCA*{c}.nc")) for c in "UV"}
filenames = {c: {"lon": coords, "lat": coords, "data": data[c]} for c in "UV"}
fieldset = FieldSet.from_nemo(
    filenames, {"U": "uos", "V": "vos"}, {"lon": "glamf", "lat": "gphif", "time": "time_counter"}
)
pset = ParticleSet(fieldset, pclass=JITParticle, lon=np.array(args["lon"]), lat=np.array(args["lat"]))
def leave(particle, fieldset, time):
    if particle.state >= 50:  # out of bounds: removed, as Parcels' users do
        particle.delete()
start = time.perf_counter()
hours = timedelta(hours=args["hours"])
pset.execute([AdvectionRK4, leave], runtime=hours, dt=timedelta(hours=1), verbose_progress=False)
out = {"version": parcels.__version__, "seconds": time.perf_counter() - start}
out.update(id=[int(p.id) for p in pset], lon=[float(p.lon) for p in pset], lat=[float(p.lat) for p in pset])
json.dump(out, open(sys.argv[2], "w"))
"""


def distance_km(lon1, lat1, lon2, lat2) -> np.ndarray:
    """Great-circle distance on a sphere of 6371 km."""
    p1, p2, dl = np.deg2rad(lat1), np.deg2rad(lat2), np.deg2rad(lon2 - lon1)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * 6371.0 * np.arcsin(np.sqrt(a))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels-python", type=str, required=True)
    parser.add_argument("--particles", type=int, default=500)
    parser.add_argument("--hours", type=float, default=48.0)
    args = parser.parse_args()
    files = sorted(str(p) for p in NEMO.glob("ORCA*.nc"))
    field = fk.io.read(files, velocity="uos,vos", dtype="float64")
    seeds = fk.seeding.random_inside(args.particles, field, key=jax.random.key(0))
    t1 = args.hours * 3600.0
    fk.track(field, seeds, 0.0, t1, 3600.0, save_every=int(args.hours), dtype="float64")  # compiled once
    start = time.perf_counter()
    traj = fk.track(field, seeds, 0.0, t1, 3600.0, save_every=int(args.hours), dtype="float64")
    flowkit_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        script, given, result = Path(tmp) / "p.py", Path(tmp) / "in.json", Path(tmp) / "out.json"
        script.write_text(PARCELS)
        given.write_text(
            json.dumps(
                {"dir": str(NEMO), "lon": seeds[:, 0].tolist(), "lat": seeds[:, 1].tolist(), "hours": args.hours}
            )
        )
        subprocess.run([args.parcels_python, str(script), str(given), str(result)], check=True)
        theirs = json.loads(result.read_text())
    ids = np.asarray(theirs["id"], int)
    active = np.asarray(traj.status[-1]) == fk.Status.ACTIVE
    both = active[ids]
    final = np.asarray(traj.positions[-1])[ids[both]]
    gap = distance_km(final[:, 0], final[:, 1], np.asarray(theirs["lon"])[both], np.asarray(theirs["lat"])[both])
    moved = distance_km(seeds[ids[both], 0], seeds[ids[both], 1], final[:, 0], final[:, 1])
    cell_km = 0.25 * 111.2 * np.cos(np.deg2rad(seeds[ids[both], 1]))  # ORCA025's zonal spacing
    report = {
        "command": f"python benchmarks/nemo_parcels.py --particles {args.particles} --hours {args.hours:g}",
        "parcels": theirs["version"],
        "active_in_both": int(both.sum()),
        "moved_km_median": float(np.median(moved)),
        "gap_km": {"median": float(np.median(gap)), "p90": float(np.percentile(gap, 90))},
        "gap_cells": {"median": float(np.median(gap / cell_km)), "p90": float(np.percentile(gap / cell_km, 90))},
        "seconds": {"flowkit_compiled": flowkit_s, "parcels_execute": theirs["seconds"]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
