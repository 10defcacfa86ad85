"""A store's statistics totals and its lock under the fourth fault sweep (issue 79): totals
deleted, zeroed or damaged are refused on resume, naming the store; a run stopped at any write of
its totals or of its finish resumes (or loads) to the statistics of an uninterrupted run; two
processes taking over one stale lock never both hold it."""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import zarr
import zarr.storage
from helpers import HANG, Stopped, stopped_after

import flowkit as fk

FIELD = fk.datasets.double_gyre_grid(nx=41, ny=21, nt=11)
SEEDS = np.random.default_rng(0).uniform((0.1, 0.1), (1.9, 0.9), (600, 2))
STATS = [fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=1.0)]


def _track(store, **kw):
    return fk.track(FIELD, SEEDS, 0.0, 2.0, 0.05, save_every=4, batch_size=100, statistics=STATS, output=store, **kw)


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted run's statistics (in memory)."""
    return fk.track(FIELD, SEEDS, 0.0, 2.0, 0.05, save_every=4, batch_size=100, statistics=STATS).statistics


def _stopped_at_three(tmp_path, monkeypatch) -> Path:
    store = tmp_path / "tracks.zarr"
    restore = stopped_after(monkeypatch, 3)
    with pytest.raises(Stopped):
        _track(store)
    restore()
    return store


def _zeroed(store: Path) -> None:
    count = zarr.open_array(str(store / "flowkit_totals" / "3" / "0" / "count"), mode="r+")
    count[...] = 0  # a valid zarr array, of other values


def _scrambled(store: Path) -> None:
    for chunk in (p for p in (store / "flowkit_totals" / "3" / "0" / "count").rglob("*") if p.is_file()):
        if chunk.name != "zarr.json":
            chunk.write_bytes(np.random.default_rng(1).bytes(chunk.stat().st_size))


@pytest.mark.parametrize(
    "damage",
    [
        lambda store: __import__("shutil").rmtree(store / "flowkit_totals"),
        _zeroed,
        _scrambled,
        lambda store: (store / "flowkit_totals" / "3" / "0" / "count" / "zarr.json").unlink(),
    ],
    ids=["deleted", "zeroed", "random bytes", "zarr.json deleted"],
)
def test_totals_lost_or_damaged_are_refused_on_resume_naming_the_store(tmp_path, monkeypatch, damage):
    store = _stopped_at_three(tmp_path, monkeypatch)
    damage(store)
    with pytest.raises(ValueError, match=r"tracks\.zarr: the statistics totals of its 3 written batches .*overwrite"):
        _track(store, resume=True)
    assert not (tmp_path / ".tracks.zarr.lock").exists()  # the refused run let go of the store
    assert json.loads((store / "zarr.json").read_text())["attributes"]["flowkit_batches_done"] == 3  # kept


class Killed(Exception):
    """The process stopped at a write (what a SIGKILL between two writes leaves on disk)."""


def _writes(monkeypatch, kill_at: int | None) -> list:
    """Count the zarr writes and removals of every store from now on; raise `Killed` at write
    number `kill_at` (before it is made)."""
    made: list = []
    put, delete = zarr.storage.LocalStore._set, zarr.storage.LocalStore.delete

    def counted(original):
        async def write(self, key, *args, **kwargs):
            if kill_at is not None and len(made) == kill_at:
                raise Killed(key)
            made.append(key)
            return await original(self, key, *args, **kwargs)

        return write

    monkeypatch.setattr(zarr.storage.LocalStore, "_set", counted(put))
    monkeypatch.setattr(zarr.storage.LocalStore, "delete", counted(delete))
    return made


def test_a_run_stopped_at_any_write_of_its_last_totals_or_its_finish_resumes_to_the_whole_statistics(
    tmp_path, monkeypatch, reference
):
    """The last batch's totals and the finish, killed before each of their writes in turn: a
    resume finishes the store (or it is complete already) with the uninterrupted statistics."""
    store = tmp_path / "five.zarr"
    restore = stopped_after(monkeypatch, 5)
    with pytest.raises(Stopped):
        _track(store)
    restore()
    probe = tmp_path / "probe.zarr"
    __import__("shutil").copytree(store, probe)
    made = _writes(monkeypatch, None)
    _track(probe, resume=True)
    first = next(i for i, key in enumerate(made) if key.startswith("flowkit_totals/6"))  # the last batch's totals
    kill_points = range(first, len(made))
    assert len(kill_points) > 8 and any(key.startswith("statistics/") for key in made[first:])
    for kill_at in kill_points:
        monkeypatch.undo()
        killed = tmp_path / f"killed-{kill_at}.zarr"
        __import__("shutil").copytree(store, killed)
        _writes(monkeypatch, kill_at)
        with pytest.raises(Killed):
            _track(killed, resume=True)
        monkeypatch.undo()
        _track(killed, resume=True)
        loaded = fk.Trajectory.load(killed)
        counts = loaded.statistics["grid_counts"]["count"].values
        np.testing.assert_array_equal(counts, reference["grid_counts"]["count"].values, err_msg=f"kill at {kill_at}")
        assert np.isfinite(loaded.positions).all()


def test_a_complete_store_resumed_is_returned_as_it_is(tmp_path, reference):
    store = tmp_path / "tracks.zarr"
    _track(store)
    before = sorted(str(p.relative_to(store)) for p in store.rglob("*"))
    opened = _track(store, resume=True)
    assert opened.attrs["flowkit_complete"] is True
    assert sorted(str(p.relative_to(store)) for p in store.rglob("*")) == before
    loaded = fk.Trajectory.load(store).statistics["grid_counts"]["count"].values
    np.testing.assert_array_equal(loaded, reference["grid_counts"]["count"].values)


TAKE_OVER = textwrap.dedent(
    """
    import importlib.util, sys, time
    spec = importlib.util.spec_from_file_location("store", sys.argv[1])
    store = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(store)
    lock = store.StoreLock(sys.argv[2])
    while time.time() < float(sys.argv[3]):  # all start together
        pass
    try:
        lock.acquire()
    except FileExistsError:
        print("refused")
    else:
        print("held", flush=True)
        time.sleep(0.5)
    """
)


def test_two_processes_taking_over_one_stale_lock_never_both_hold_it(tmp_path):
    """A dead writer's lock (a pid that is gone, and one whose writer held it by `flock`), taken
    over by three processes started at the same instant, 10 times: one holds it each time."""
    module = Path(fk.__file__).parent / "_store.py"
    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    for trial in range(10):
        store = tmp_path / f"s{trial}.zarr"
        record = {"pid": gone, "host": socket.gethostname(), "since": 0.0, "flock": trial % 2 == 0}
        (tmp_path / f".s{trial}.zarr.lock").write_text(json.dumps(record))
        start = __import__("time").time() + 0.6
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", TAKE_OVER, str(module), str(store), str(start)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        said = sorted(run.communicate(timeout=HANG)[0].strip() for run in runs)
        assert said == ["held", "refused", "refused"], f"trial {trial}: {said}"


def test_a_folder_where_the_lock_belongs_is_named(tmp_path):
    store = tmp_path / "tracks.zarr"
    (tmp_path / ".tracks.zarr.lock").mkdir()
    with pytest.raises(FileExistsError, match=r"\.tracks\.zarr\.lock: a folder where the lock file of .*remove"):
        _track(store)
    assert os.listdir(tmp_path) == [".tracks.zarr.lock"]


def test_a_write_a_kill_cut_short_leaves_no_member_a_resume_trips_on(tmp_path, monkeypatch, reference):
    """zarr writes a file beside its place (`zarr.<hex>.partial`) and renames it: a SIGKILL
    between leaves it, which zarr would take for a member of the group."""
    store = _stopped_at_three(tmp_path, monkeypatch)
    (store / "zarr.0123456789abcdef.partial").write_text('{"attributes": ')
    (store / "status" / "zarr.fedcba9876543210.partial").write_text("")
    _track(store, resume=True)
    assert not list(store.rglob("*.partial"))
    counts = fk.Trajectory.load(store).statistics["grid_counts"]["count"].values
    np.testing.assert_array_equal(counts, reference["grid_counts"]["count"].values)
