"""Streaming time windows (issue 6): peak memory flat in the number of time steps, and how much
of the loading the background thread hides behind computation.

A cellular flow on a jittered tetrahedral mesh (`--shape`³ points) is written as 200 `.vtu` files
(VTK's writer, compressed, one `.pvd`); a second `.pvd` lists the first 20 of them, so both runs
use the same mesh. Each run is a fresh process that reads the series (streamed, or whole for
contrast) and tracks `--particles` particles with RK4 across every file interval (`--steps` per
interval); it reports its peak resident memory (`ru_maxrss`), the window size and the time spent
loading windows, waiting for them, and computing.

    python benchmarks/stream.py [--shape 32] [--particles 20000] [--steps 4] [--budget-mib 64]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SLICES = (20, 200)


def write_series(folder: Path, shape: int) -> dict[int, Path]:
    """200 files of the cellular flow and a .pvd each for the first 20 and all 200 (written once)."""
    import flowkit as fk
    from flowkit.io.vtk import write_pvd

    times = np.linspace(0.0, 2.0 * (SLICES[-1] - 1) / 20, SLICES[-1])  # 20 files per period
    full = folder / f"cell{shape}" / f"cell{shape}.pvd"
    if not full.exists():
        fk.datasets.cellular_flow_vtu_series(full.parent, shape=(shape,) * 3, times=times)
    files = sorted((full.parent / full.stem).glob("*.vtu"), key=lambda f: int(f.stem.rsplit("_", 1)[1]))
    series = {}
    for n in SLICES:
        series[n] = full if n == SLICES[-1] else write_pvd(full.parent / f"first{n}.pvd", files[:n], times[:n])
    return series


def child(pvd: str, stream: bool, particles: int, steps: int, budget_mib: float) -> dict:
    """One run in this process: read, track, report peak RSS and the window statistics."""
    import flowkit as fk

    began = time.perf_counter()
    field = fk.io.read_vtk(pvd, stream=stream, max_device_bytes=int(budget_mib * 2**20) if stream else None)
    read_s = time.perf_counter() - began
    times = field.times if stream else np.asarray(field.times, np.float64)
    dt = (times[1] - times[0]) / steps
    seeds = fk.seeding.random_box(particles, ((0.05,) * 3, (0.95,) * 3), key=__import__("jax").random.key(0))
    run = fk.tracker.TrackRun(field, seeds, float(times[0]), float(times[-1]), dt, fk.RK4(), save_every=steps)
    info = run.run().stats
    windows = 1 + int(np.sum(np.diff(run.window_starts) != 0)) if stream else 0
    return dict(
        slices=len(times),
        stream=stream,
        read_s=read_s,
        compile_s=info.compile_s,
        run_s=info.run_s,
        mps=info.particle_steps_per_s / 1e6,
        window_slices=info.window_slices,
        windows=windows,
        chunks=run.n_chunks,
        load_s=info.load_s,
        first_window_s=info.first_window_s,
        wait_s=info.load_wait_s,
        peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, default=32, help="mesh points per axis")
    parser.add_argument("--particles", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=4, help="RK4 steps per file interval")
    parser.add_argument("--budget-mib", type=float, default=64.0, help="max_device_bytes of the streamed runs")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "flowkit-bench-stream")
    parser.add_argument("--child", nargs=2, metavar=("PVD", "STREAM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1] == "1", args.particles, args.steps, args.budget_mib)))
        return
    began = time.perf_counter()
    series = write_series(args.data, args.shape)
    print(
        f"series of {SLICES[-1]} files on a {args.shape}³-point tet mesh in {args.data} "
        f"({time.perf_counter() - began:.0f} s)"
    )
    rows = {}
    for stream in (True, False):
        for n in SLICES:
            command = [
                sys.executable,
                __file__,
                "--child",
                str(series[n]),
                str(int(stream)),
                "--particles",
                str(args.particles),
                "--steps",
                str(args.steps),
                "--budget-mib",
                str(args.budget_mib),
            ]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            rows[stream, n] = row = json.loads(out.strip().splitlines()[-1])
            hidden = (
                1 - row["wait_s"] / (row["load_s"] - row["first_window_s"])
                if stream and row["load_s"] > row["first_window_s"]
                else float("nan")
            )
            compute = row["run_s"] / max(row["windows"], 1)
            load = row["load_s"] / max(row["windows"], 1)
            print(
                f"{'streamed' if stream else 'in memory':>10} {n:>4} slices: peak RSS "
                f"{row['peak_rss_mib']:7.0f} MiB | read {row['read_s']:5.1f} s | "
                f"{row['mps']:5.2f} M particle-steps/s, run {row['run_s']:5.1f} s, compile {row['compile_s']:4.1f} s"
                + (
                    f" | windows of {row['window_slices']} slices: {row['windows']} windows in "
                    f"{row['chunks']} chunks, load {load * 1e3:.0f} ms vs compute {compute * 1e3:.0f} ms per "
                    "window, "
                    f"first {row['first_window_s']:.2f} s, waited {row['wait_s']:.2f} s of "
                    f"{row['load_s'] - row['first_window_s']:.2f} "
                    f"s: {100 * hidden:.0f} % hidden"
                    if stream
                    else ""
                ),
                flush=True,
            )
    for stream in (True, False):
        ratio = rows[stream, SLICES[1]]["peak_rss_mib"] / rows[stream, SLICES[0]]["peak_rss_mib"]
        print(f"peak RSS {SLICES[1]} / {SLICES[0]} slices, {'streamed' if stream else 'in memory'}: {ratio:.2f}")


if __name__ == "__main__":
    main()
