"""Rendering an animation beside the run it shows: 10⁴ particles over the 1° global sample (five
days, 99 steps saved every step: 100 frames), the `fk.track` call timed, then
`fk.analysis.animate` to MP4 twice (the first pays the speed map's compile) and once to GIF.

    python benchmarks/animation.py [--particles 10000] [--profile]
"""

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import jax

import flowkit as fk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="print where a render's time goes")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    fk.datasets.write_ocean_sample(folder / "ocean", days=5)
    field = fk.io.read(str(folder / "ocean" / "glo_cur_*.nc"))
    seeds = fk.seeding.random_inside(args.particles, field, key=jax.random.key(0))
    start = time.perf_counter()
    traj = fk.track(field, seeds, 0.0, 99 * 3200.0, 3200.0, save_every=1)
    print(f"track: {time.perf_counter() - start:.2f} s, {len(traj.times)} frames of {args.particles} particles")
    for name in ("first.mp4", "again.mp4", "run.gif"):
        start = time.perf_counter()
        fk.analysis.animate(traj, folder / name, field=field, frames=100, progress=False)
        print(f"animate {name}: {time.perf_counter() - start:.2f} s")
    if args.profile:
        with cProfile.Profile() as profile:
            fk.analysis.animate(traj, folder / "profiled.mp4", field=field, frames=100, progress=False)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
