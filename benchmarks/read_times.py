"""How long `fk.io.read(path)` takes on the real files flowkit reads (`../shared/data/real`,
`../shared/data/ocean-real`, `tests/data`), each with no options, best of `--repeat` reads in
one process (the file in the OS cache: the reader's own cost), the best of `--rounds` such
processes. With `--baseline PATH` (another checkout of flowkit, e.g. `git worktree add /tmp/base
<commit>`) the same reads run there too, its processes taking turns with this checkout's, and
the table shows both: a reader change's cost measured in one run.

    python benchmarks/read_times.py [--baseline /tmp/base] [--repeat 3] [--rounds 2]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

FILES = {
    "ROMS Nordic": SHARED / "ocean-real/Nordic_subset.nc",
    "ROMS Nordic, 3 days": SHARED / "ocean-real/Nordic_subset_day*.nc",
    "CROCO + grid": [SHARED / "ocean-real/croco_his.nc", SHARED / "ocean-real/croco_grd.nc"],
    "TELEMAC 3-D": SHARED / "ocean-real/r3d_tide_open_drift.slf",
    "NEMO (tests/data)": ROOT / "tests/data/nemo/*.nc",
    "ROMS DOPPIO": SHARED / "real/roms_doppio/ROMS3D_00.nc",
    "NEMO ORCA025": SHARED / "real/nemo_orca025_northsea/*.nc",
    "MITgcm gyre": SHARED / "real/mitgcm_barotropic_gyre/barotropic_gyre",
    "WRF Katrina": SHARED / "real/wrf_katrina/ci_test_file.nc",
    "SCHISM 2-D, 4 files": SHARED / "real/schism2d_random_order/*.nc",
    "SCHISM v10": SHARED / "real/schism_v10/demo_hindcast_schisim3D_00.nc",
    "FVCOM SFBOFS": SHARED / "real/fvcom_sfbofs/tri_grid_example-FVCOM.nc",
    "Delft3D-FM hexagons": SHARED / "real/dflowfm_simplebox_hex7/simplebox_hex7_map.nc",
    "ADCIRC": SHARED / "real/adcirc_quarterannular/fort.64.nc",
    "ERA5": SHARED / "real/era5_grib_to_netcdf/ERA5_regional_test_data.nc",
    "GLORYS12": SHARED / "real/glorys12_na/GLORYS_NA_2012.nc",
    "MOM6": SHARED / "real/mom6_prog/prog__0001_006.nc",
    "OpenFOAM pitzDaily (steady)": SHARED / "real/openfoam_pitzdaily/pitzDaily",
    "OpenFOAM pitzDaily (transient)": SHARED / "real/openfoam_pitzdaily_transient/pitzDaily",
    "Fluent CFF": SHARED / "real/fluent_cff_room/room.cas.h5",
    "CGNS (ADF)": SHARED / "real/cgns_adf/multi.cgns",
}


def _exists(path) -> bool:
    paths = path if isinstance(path, list) else [path]
    return all(Path(str(p).split("*")[0]).parent.exists() if "*" in str(p) else Path(p).exists() for p in paths)


def measure(repeat: int) -> dict:
    """Seconds of the best of `repeat` reads of each file, or the error's first line."""
    import logging

    import flowkit as fk

    logging.getLogger("flowkit").setLevel(logging.ERROR)
    results = {}
    for name, path in FILES.items():
        if not _exists(path):
            continue
        given = [str(p) for p in path] if isinstance(path, list) else str(path)
        best = None
        try:
            for _ in range(repeat):
                start = time.perf_counter()
                fk.io.read(given)
                took = time.perf_counter() - start
                best = took if best is None else min(best, took)
            results[name] = best
        except Exception as err:  # noqa: BLE001 -- a refusal is a result here
            results[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:60]}"
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another flowkit checkout to time beside this one")
    parser.add_argument("--repeat", type=int, default=3, help="reads of each file per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes per checkout, taken in turn")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline's own run
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.repeat)))
        return
    trees = {"this checkout": ROOT} | ({"baseline": args.baseline} if args.baseline is not None else {})
    best: dict[str, dict] = {name: {} for name in trees}
    for _ in range(args.rounds):  # each tree in its own process, in turn: neither gains from going first
        for name, tree in trees.items():
            out = subprocess.run(
                [sys.executable, __file__, "--json", "--repeat", str(args.repeat)],
                env=dict(os.environ, PYTHONPATH=str(tree)),
                capture_output=True,
                text=True,
                check=True,
                cwd=tree,
            )
            for key, value in json.loads(out.stdout.strip().splitlines()[-1]).items():
                old = best[name].get(key)
                best[name][key] = min(value, old) if isinstance(value, float) and isinstance(old, float) else value
    now, before = best["this checkout"], best.get("baseline", {})
    show = lambda v: f"{v:.2f} s" if isinstance(v, float) else (v or "-")  # noqa: E731
    print("| file | read (this checkout) |" + (" read (baseline) | ratio |" if before else ""))
    print("|---|---|" + ("---|---|" if before else ""))
    for name, value in now.items():
        row = f"| {name} | {show(value)} |"
        if before:
            old = before.get(name)
            ratio = f"{value / old:.2f}" if isinstance(value, float) and isinstance(old, float) else "-"
            row += f" {show(old)} | {ratio} |"
        print(row)


if __name__ == "__main__":
    main()
