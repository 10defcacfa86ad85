"""Faults on streamed stores (issue 54) and the fourth sweep's (issue 79): kill, interrupt,
resume, damage and race them, each in fresh processes, and print the count of outcomes per class.

Classes: `clean` (refused in one line naming the store and what differs or what to do, or
finished exactly as an uninterrupted run), `unclear` (refused, but with a traceback or without
naming the store), `silent` (a wrong store taken for a right one), `crash` (a signal, or an exit
that is neither success nor a refusal), `lost` (a finished store's data gone).

The fourth sweep's faults: a store with statistics SIGKILLed at sampled writes and renames of its
finish, then resumed; its totals deleted, zeroed, damaged or their `zarr.json` gone; three
processes taking over one stale lock at once; a streamed series file replaced with its size and
time kept; step counts past 32 bits, a seed past 64 bits, `FLOWKIT_HOST_DEVICES=many`.

    python benchmarks/faults.py [--particles 1800] [--repeat 1] [--sweep all|3|4]
"""

import argparse
import collections
import itertools
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


def next_store(store: Path, process: subprocess.Popen) -> Path:
    """The new store an overwrite by `process` writes beside `store` until it is whole."""
    return store.with_name(f".{store.name}.new-{process.pid}")


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


def scenarios(folder: Path, n: int, reference: np.ndarray):
    """Each fault once: yields `(name, class)`."""
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
    # an overwrite killed part-way (once its new store holds two batches): the old store whole
    process = _start(store, n, seed=1, mode="overwrite")
    _stop_after(process, next_store(store, process), 2, signal.SIGKILL)
    yield "overwrite killed", _whole(store, reference) if process.returncode == -signal.SIGKILL else "unclear"
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


RUN_STATS = """
import os, shutil, signal, sys, numpy as np, flowkit as fk, zarr.storage
from flowkit.tracker import sinks
store, mode, kill_at, stop_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if stop_after >= 0:  # SIGKILL once this many batches are written
    done = sinks.ZarrSink.batch_done
    def batch_done(self, totals=None):
        done(self, totals)
        if self.batches_done >= stop_after:
            os.kill(os.getpid(), signal.SIGKILL)
    sinks.ZarrSink.batch_done = batch_done
if kill_at >= 0:  # SIGKILL before write, rename or removal number kill_at of the store's finish
    finishing, made = [], []
    def counted(original):
        def step(*args, **kwargs):
            if finishing:
                if len(made) == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                made.append(1)
            return original(*args, **kwargs)
        return step
    def counted_async(original):
        async def step(*args, **kwargs):
            counted(lambda: None)()
            return await original(*args, **kwargs)
        return step
    finish = sinks.ZarrSink.finish
    def finish_counted(self, *args, **kwargs):
        finishing.append(1)
        return finish(self, *args, **kwargs)
    sinks.ZarrSink.finish = finish_counted
    zarr.storage.LocalStore._set = counted_async(zarr.storage.LocalStore._set)
    zarr.storage.LocalStore.delete = counted_async(zarr.storage.LocalStore.delete)
    os.replace, shutil.rmtree = counted(os.replace), counted(shutil.rmtree)
field = fk.datasets.double_gyre_grid(nx=41, ny=21, nt=11)
seeds = np.random.default_rng(0).uniform((0.1, 0.1), (1.9, 0.9), (600, 2))
stats = [fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=1.0)]
fk.track(field, seeds, 0.0, 2.0, 0.05, save_every=4, batch_size=100, statistics=stats, output=store,
         resume=mode == "resume")
"""

TAKE_OVER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("store", sys.argv[1])
store = importlib.util.module_from_spec(spec)
spec.loader.exec_module(store)
lock = store.StoreLock(sys.argv[2])
while time.time() < float(sys.argv[3]):
    pass
try:
    lock.acquire()
except FileExistsError:
    print("refused")
else:
    print("held", flush=True)
    time.sleep(0.3)
"""


def _python(*args: str, env: dict | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stderr


def _stats_run(store: Path, mode: str = "new", kill_at: int = -1, stop_after: int = -1) -> tuple[int, str]:
    return _python("-c", RUN_STATS, str(store), mode, str(kill_at), str(stop_after))


def _counts(store: Path):
    import flowkit as fk

    return fk.Trajectory.load(store).statistics["grid_counts"]["count"].values


def _one_line(code: int, err: str, *words: str) -> str:
    """`clean` for a refusal whose last line holds `words` (no traceback in the app)."""
    if code < 0:
        return "crash"
    if code == 0:
        return "silent"
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return "clean" if all(w in last for w in words) else "unclear"


def fourth_sweep(folder: Path):
    """The fourth sweep's faults (issue 79), each once: yields `(name, class)`."""
    import zarr

    reference = folder / "stats-reference.zarr"
    _stats_run(reference)
    expected = _counts(reference)
    five = folder / "five.zarr"
    _stats_run(five, stop_after=5)
    for kill_at in range(0, 120, 3):  # the finish's writes, renames and removals, sampled
        killed = folder / f"finish-{kill_at}.zarr"
        shutil.copytree(five, killed)
        code, _ = _stats_run(killed, "resume", kill_at=kill_at)
        if code == 0:  # the finish made fewer steps than kill_at
            break
        code, err = _stats_run(killed, "resume")
        try:
            outcome = "clean" if code == 0 and np.array_equal(_counts(killed), expected) else "crash"
        except Exception:  # noqa: BLE001 - a store that does not load
            outcome = "lost"
        yield f"SIGKILL at step {kill_at} of the finish, then resume", outcome if code == 0 else "crash"

    def zeroed(store):
        zarr.open_array(str(store / "flowkit_totals/3/0/count"), mode="r+")[...] = 0

    def scrambled(store):
        for chunk in (p for p in (store / "flowkit_totals/3/0/count").rglob("*") if p.is_file()):
            if chunk.name != "zarr.json":
                chunk.write_bytes(np.random.default_rng(1).bytes(chunk.stat().st_size))

    damages = {
        "deleted": lambda store: shutil.rmtree(store / "flowkit_totals"),
        "zeroed": zeroed,
        "random bytes": scrambled,
        "zarr.json deleted": lambda store: (store / "flowkit_totals/3/0/count/zarr.json").unlink(),
    }
    for name, damage in damages.items():
        store = folder / f"totals-{name.replace(' ', '-')}.zarr"
        _stats_run(store, stop_after=3)
        damage(store)
        yield f"statistics totals {name}, resume", _refusal(*_stats_run(store, "resume"), store, "statistics totals")
    module = Path(__import__("flowkit").__file__).parent / "_store.py"
    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    both = 0
    for trial in range(30):
        store = folder / f"lock{trial}.zarr"
        record = {"pid": gone, "host": __import__("socket").gethostname(), "since": 0.0, "flock": trial % 2 == 0}
        store.with_name(f".{store.name}.lock").write_text(json.dumps(record))
        start = str(time.time() + 0.6)
        takers = [
            subprocess.Popen(
                [sys.executable, "-c", TAKE_OVER, str(module), str(store), start],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for _ in range(3)
        ]
        both += sorted(t.communicate(timeout=60)[0].strip() for t in takers) != ["held", "refused", "refused"]
    yield f"three take over one stale lock at once (30 trials, {both} not one holder)", "silent" if both else "clean"
    yield from _series_replaced(folder)
    track_script = folder / "edges.py"
    track_script.write_text(
        "import sys, numpy as np, flowkit as fk\n"
        "field = fk.GridField.from_function(fk.fields.DoubleGyre(), [np.linspace(0, 2, 21), np.linspace(0, 1, 11)])\n"
        "fk.track(field, np.array([[0.5, 0.5]]), 0.0, float(sys.argv[1]), float(sys.argv[2]), save_every=10**9)\n"
    )
    yield "fk.track t1=3e9, dt=1", _one_line(*_python(str(track_script), "3e9", "1"), "2**31 - 1")
    yield "fk.track dt=1e-12", _one_line(*_python(str(track_script), "1", "1e-12"), "1e+12 steps")
    app = str(Path(__file__).resolve().parents[1] / "apps" / "track.py")
    run_dir = f"hydra.run.dir={folder / 'app'}"
    yield "app dt=1e-12", _one_line(*_python(app, "dt=1e-12", run_dir), "error: dt=1e-12", "steps")
    yield "app seed=99999999999999999999", _one_line(*_python(app, "seed=99999999999999999999", run_dir), "seed=")
    code, err = _python("-c", "import flowkit", env={"FLOWKIT_HOST_DEVICES": "many", "PYTHONWARNINGS": "default"})
    yield "FLOWKIT_HOST_DEVICES=many", "clean" if code == 0 and "FLOWKIT_HOST_DEVICES='many'" in err else "crash"


SERIES = """
import sys, flowkit as fk, numpy as np
seeds = np.random.default_rng(0).uniform((0.1, 0.1), (1.9, 0.9), (400, 2))
fk.track(fk.io.load_grid_npz(sys.argv[1], stream=True), seeds, 0.0, 1.0, 0.05, save_every=4, batch_size=100,
         output=sys.argv[2], resume=sys.argv[3] == "resume")
"""


def _series_replaced(folder: Path):
    """A streamed series file replaced by another of its size, its time kept, then resumed."""
    import flowkit as fk

    times = np.linspace(0.0, 1.0, 6)
    axes = [np.linspace(0, 2, 41), np.linspace(0, 1, 21)]
    series = fk.GridField.from_function(fk.fields.DoubleGyre(), axes, times=times)
    path = fk.io.save_grid_npz(folder / "series.npz", series)
    store = folder / "series.zarr"
    first = subprocess.Popen([sys.executable, "-c", SERIES, str(path), str(store), "new"])
    _stop_after(first, store, 1, signal.SIGKILL)
    before = os.stat(path)
    later = np.asarray(series.values).copy()
    later[4] *= 1.01
    fk.io.save_grid_npz(path, fk.GridField.from_arrays(later, series.axes, times=times))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    same = os.stat(path).st_size == before.st_size
    outcome = _refusal(*_python("-c", SERIES, str(path), str(store), "resume"), store, "field differ")
    yield "series file replaced, size and time kept, resume", outcome if same else "unclear"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=1800)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sweep", choices=("all", "3", "4"), default="all")
    options = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    for _ in range(options.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            found = iter(())
            if options.sweep in ("all", "3"):
                _finish(_start(folder / "reference.zarr", options.particles))
                reference = _positions(folder / "reference.zarr")
                found = scenarios(folder, options.particles, reference)
            if options.sweep in ("all", "4"):
                found = itertools.chain(found, fourth_sweep(folder))
            for name, outcome in found:
                counts[outcome] += 1
                print(f"{outcome:8s} {name}", flush=True)
    print("outcomes: " + ", ".join(f"{k} {counts[k]}" for k in ("clean", "unclear", "silent", "crash", "lost")))


if __name__ == "__main__":
    main()
