"""Faults on streamed stores (issue 54): kill, interrupt, resume, damage and race them, each in
fresh processes, and print the count of outcomes per class.

Classes: `clean` (refused in one line naming the store and what differs or what to do, or
finished exactly as an uninterrupted run), `unclear` (refused, but with a traceback or without
naming the store), `silent` (a wrong store taken for a right one), `crash` (a signal, or an exit
that is neither success nor a refusal), `lost` (a finished store's data gone).

    python benchmarks/faults.py [--particles 1800] [--repeat 1]
"""

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RUN = """
import sys, numpy as np, flowkit as fk
store, n, bump, seed, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
gyre = fk.fields.DoubleGyre()
field = fk.GridField.from_function(gyre, [np.linspace(0, 2, 1025), np.linspace(0, 1, 1025)], dtype="float64")
if bump:  # one value of 2.1 M, which a hash of every second value misses
    values = np.asarray(field.values)[0].copy()
    values[123, 77, 1] += bump
    field = fk.GridField.from_arrays(values, field.axes, dtype="float64")
seeds = np.random.default_rng(seed).uniform((0.1, 0.1), (1.9, 0.9), (n, 2))
fk.track(field, seeds, 0.0, 10.0, 0.0005, save_every=2000, batch_size=n // 6, output=store,
         resume=mode == "resume", overwrite=mode == "overwrite")
"""


def _start(store: Path, n: int, bump: float = 0.0, seed: int = 0, mode: str = "new") -> subprocess.Popen:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    args = [sys.executable, "-c", RUN, str(store), str(n), str(bump), str(seed), mode]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> tuple[int, str]:
    _, err = process.communicate(timeout=600)
    return process.returncode, err


def _done(store: Path) -> int:
    try:
        return int(json.loads((store / "zarr.json").read_text())["attributes"]["flowkit_batches_done"])
    except (OSError, ValueError, KeyError):
        return 0


def _stop_after(process: subprocess.Popen, store: Path, batches: int, sig: int) -> None:
    deadline = time.monotonic() + 300
    while _done(store) < batches and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(sig)
    process.wait()


def _positions(store: Path):
    import flowkit as fk

    return fk.Trajectory.load(store).positions


def _refusal(code: int, err: str, store: Path, *words: str) -> str:
    """`clean` for a refusal of one last line naming the store (and `words`), `unclear` for a
    refusal that does not, `crash` for a signal or a success where a refusal was due."""
    if code < 0:
        return "crash"
    if code == 0:
        return "silent"
    last = err.strip().splitlines()[-1] if err.strip() else ""
    named = store.name in last and all(w in last for w in words)
    return "clean" if named else "unclear"


def _whole(store: Path, reference: np.ndarray) -> str:
    try:
        return "clean" if np.array_equal(_positions(store), reference) else "silent"
    except Exception:
        return "lost"


def scenarios(folder: Path, n: int, reference: np.ndarray, run_s: float):
    """Each fault once (`run_s`: a whole run's wall time): yields `(name, class)`."""
    # killed (SIGKILL) part-way, then resumed: exactly the uninterrupted run
    store = folder / "killed.zarr"
    _stop_after(_start(store, n), store, 2, signal.SIGKILL)
    code, _ = _finish(_start(store, n, mode="resume"))
    yield "kill, then resume", _whole(store, reference) if code == 0 else "crash"
    # Ctrl-C part-way: exit 130 in one line, then resume
    store = folder / "interrupted.zarr"
    process = _start(store, n)
    _stop_after(process, store, 2, signal.SIGINT)
    ended = process.returncode == 130 or process.returncode == 1
    code, _ = _finish(_start(store, n, mode="resume"))
    yield "Ctrl-C, then resume", (_whole(store, reference) if code == 0 else "crash") if ended else "crash"
    # a resume with one node of the field changed, or one seed: refused naming the part
    store = folder / "changed.zarr"
    _stop_after(_start(store, n), store, 2, signal.SIGKILL)
    yield (
        "resume, one field node changed",
        _refusal(*_finish(_start(store, n, bump=1e-6, mode="resume")), store, "field"),
    )
    yield "resume, other seeds", _refusal(*_finish(_start(store, n, seed=1, mode="resume")), store, "seeds")
    # two resumes at once: one finishes, the other is refused
    first, second = _start(store, n, mode="resume"), _start(store, n, mode="resume")
    results = sorted([_finish(first), _finish(second)])
    both = "clean" if results[0][0] == 0 and _refusal(*results[1], store, "being written") == "clean" else "unclear"
    yield "two resumes at once", both if _whole(store, reference) == "clean" else "lost"
    # a finished store: a chunk file deleted, its zarr.json damaged
    store = folder / "whole.zarr"
    _finish(_start(store, n))
    damaged = folder / "chunk.zarr"
    shutil.copytree(store, damaged)
    next(p for p in sorted((damaged / "x" / "c").rglob("*")) if p.is_file()).unlink()
    try:
        _positions(damaged)
        yield "a chunk file missing", "silent"
    except ValueError as err:
        yield "a chunk file missing", "clean" if "chunk file(s)" in str(err) else "unclear"
    broken = folder / "json.zarr"
    shutil.copytree(store, broken)
    (broken / "zarr.json").write_text("{")
    yield "zarr.json damaged, resume", _refusal(*_finish(_start(broken, n, mode="resume")), broken, "damaged")
    # an overwrite killed part-way (after 60 % of a whole run's time): the old store whole
    process = _start(store, n, seed=1, mode="overwrite")
    time.sleep(0.6 * run_s)
    process.kill()
    process.wait()
    yield "overwrite killed", _whole(store, reference)
    # two runs onto one new store: one finishes, the other is refused
    race = folder / "race.zarr"
    first, second = _start(race, n), _start(race, n, seed=1)
    codes = sorted([_finish(first)[0], _finish(second)[0]])
    yield "two writers, one new store", "clean" if codes[0] == 0 and codes[1] > 0 else "lost"
    # a plain file and a folder that is no store, resumed onto
    plain = folder / "plain.zarr"
    plain.write_text("x")
    yield "resume onto a plain file", _refusal(*_finish(_start(plain, n, mode="resume")), plain, "a file")
    other = folder / "other.zarr"
    other.mkdir()
    yield "resume onto a folder", _refusal(*_finish(_start(other, n, mode="resume")), other, "zarr.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=1800)
    parser.add_argument("--repeat", type=int, default=1)
    options = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    for _ in range(options.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            start = time.perf_counter()
            _finish(_start(folder / "reference.zarr", options.particles))
            run_s = time.perf_counter() - start
            reference = _positions(folder / "reference.zarr")
            for name, outcome in scenarios(folder, options.particles, reference, run_s):
                counts[outcome] += 1
                print(f"{outcome:8s} {name}", flush=True)
    print("outcomes: " + ", ".join(f"{k} {counts[k]}" for k in ("clean", "unclear", "silent", "crash", "lost")))


if __name__ == "__main__":
    main()
