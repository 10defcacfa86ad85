"""Streamed stores under faults (issue 54): a resume that would mix two runs is refused naming
what differs, a store missing a chunk is refused, one process writes a store at a time, an
overwrite keeps the old store until the new one is whole, and every refusal is one line."""

import errno
import json
import os
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest
from helpers import HANG, Stopped, stopped_after

import flowkit as fk
from flowkit._store import StoreLock

T1, DT = 1.0, 0.05


def _field(bump: float = 0.0):
    """A gridded double gyre of 2·1025² values; `bump` changes one node's value, one that a hash
    of every fourth value (one in 2²⁰ values at most, as the identity once sampled) misses."""
    gyre = fk.fields.DoubleGyre()
    grid = fk.GridField.from_function(gyre, [np.linspace(0, 2, 1025), np.linspace(0, 1, 1025)], dtype="float64")
    if bump:
        values = np.asarray(grid.values).copy()
        values[0, 17, 34, 0] += bump
        grid = fk.GridField.from_arrays(values[0], grid.axes, dtype="float64")
    return grid


SEEDS = np.random.default_rng(0).uniform((0.1, 0.1), (1.9, 0.9), (400, 2))


def _track(store, field=None, seeds=SEEDS, **kw):
    return fk.track(field or _field(), seeds, 0.0, T1, DT, save_every=4, batch_size=100, output=store, **kw)


def test_a_resume_with_any_value_changed_is_refused_naming_the_part(tmp_path, monkeypatch):
    store = tmp_path / "tracks.zarr"
    restore = stopped_after(monkeypatch, 2)
    with pytest.raises(Stopped):
        _track(store)
    restore()
    assert not StoreLock(store).path.exists()  # the failed run let go of its store
    moved = SEEDS.copy()
    moved[399, 1] += 1e-9  # one coordinate of one seed
    cases = [
        (dict(field=_field(bump=1e-6)), "field"),  # one node of 1025², unseen by a sampled hash
        (dict(seeds=moved), "seeds"),
        (dict(integrator=fk.Midpoint()), "integrator"),
        (dict(key=jax.random.key(3)), "key"),
    ]
    for kw, part in cases:
        with pytest.raises(ValueError, match=rf"made by another run \(its {part} differ from this run's\)"):
            _track(store, resume=True, **kw)
    finished = _track(store, resume=True)
    assert finished.attrs["flowkit_complete"] is True
    whole = fk.Trajectory.load(store)
    _track(tmp_path / "again.zarr")
    np.testing.assert_array_equal(whole.positions, fk.Trajectory.load(tmp_path / "again.zarr").positions)


def test_a_store_missing_a_chunk_file_is_refused_whole_and_in_part(tmp_path, monkeypatch):
    store = tmp_path / "tracks.zarr"
    _track(store)
    chunk = next(p for p in sorted((store / "x" / "c").rglob("*")) if p.is_file())
    chunk.unlink()
    with pytest.raises(
        ValueError, match=r"tracks\.zarr is damaged: 1 chunk file\(s\) of its written batches are missing \(x/c/"
    ):
        fk.Trajectory.load(store)
    partial = tmp_path / "partial.zarr"
    restore = stopped_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        _track(partial)
    restore()
    assert fk.Trajectory.load(partial, partial=True).positions.shape[1] == 100  # the whole batches
    next(p for p in sorted((partial / "status" / "c").rglob("*")) if p.is_file()).unlink()
    with pytest.raises(ValueError, match=r"partial\.zarr is damaged: 1 chunk file\(s\)"):
        fk.Trajectory.load(partial, partial=True)
    with pytest.raises(ValueError, match=r"partial\.zarr is damaged: 1 chunk file\(s\) of its 1 written batches"):
        _track(partial, resume=True)


def test_one_writer_per_store_and_a_dead_writers_lock_is_taken_over(tmp_path, caplog):
    store = tmp_path / "tracks.zarr"
    held = StoreLock(store)
    held.acquire()  # this process writing it
    with pytest.raises(FileExistsError, match=rf"tracks\.zarr is being written by process {os.getpid()} on "):
        _track(store)
    with pytest.raises(FileExistsError, match=r"one run writes a store at a time; give output= another path"):
        _track(store, resume=True)
    held.release()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = json.loads(held.path.read_text()) if held.path.exists() else {}
    record.update(pid=int(gone.stdout), host=__import__("socket").gethostname(), since=0.0)
    held.path.write_text(json.dumps(record))  # a killed run's lock: its process is gone
    with caplog.at_level("WARNING", logger="flowkit"):
        _track(store)
    assert f"taking over from process {int(gone.stdout)}" in caplog.text
    assert fk.Trajectory.load(store).positions.shape[1] == 400 and not held.path.exists()


def test_overwrite_keeps_the_old_store_until_the_new_one_is_whole(tmp_path, monkeypatch):
    store = tmp_path / "tracks.zarr"
    _track(store)
    before = fk.Trajectory.load(store).positions
    restore = stopped_after(monkeypatch, 2)
    with pytest.raises(Stopped):
        _track(store, seeds=SEEDS[::-1], overwrite=True)
    restore()
    np.testing.assert_array_equal(fk.Trajectory.load(store).positions, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tracks.zarr"]  # nothing beside it
    (tmp_path / ".tracks.zarr.new-1").mkdir()  # what a killed overwrite leaves
    _track(store, seeds=SEEDS[::-1], overwrite=True)
    np.testing.assert_array_equal(fk.Trajectory.load(store).positions, before[:, ::-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tracks.zarr"]
    plain = tmp_path / "plain.zarr"
    plain.write_text("an earlier file")
    _track(plain, overwrite=True)  # a file's place taken by a store
    assert fk.Trajectory.load(plain).positions.shape[1] == 400


def test_unclear_store_faults_are_one_line_naming_the_store(tmp_path, monkeypatch):
    plain = tmp_path / "plain.zarr"
    plain.write_text("not a store")
    with pytest.raises(ValueError, match=r"plain\.zarr: a file, not a trajectory store \(a folder\); give output="):
        _track(plain, resume=True)
    folder = tmp_path / "folder.zarr"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"folder\.zarr: a folder without zarr\.json, not a trajectory store"):
        _track(folder, resume=True)
    damaged = tmp_path / "damaged.zarr"
    _track(damaged)
    (damaged / "zarr.json").write_text('{"attributes": ')
    with pytest.raises(ValueError, match=r"damaged\.zarr: its zarr\.json is damaged \(JSONDecodeError"):
        _track(damaged, resume=True)
    with pytest.raises(ValueError, match=r"damaged\.zarr: not a readable zarr store"):
        fk.Trajectory.load(damaged)
    from flowkit.tracker import sinks

    def full(self, frames, particles, frame):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sinks.ZarrSink, "_write_frames", full)
    with pytest.raises(
        OSError, match=r"full\.zarr: writing batch 1 failed \(No space left on device\); 0 of 4 batches"
    ):
        _track(tmp_path / "full.zarr")


def test_two_processes_writing_one_new_store_one_is_refused(tmp_path):
    """Two runs started together onto one new store: one writes it whole, the other is refused
    (both once reported complete, the store holding one run's particles)."""
    script = (
        "import sys, numpy as np, flowkit as fk\n"
        "f = fk.fields.DoubleGyre()\n"
        "seeds = np.random.default_rng(int(sys.argv[2])).uniform((0.1, 0.1), (1.9, 0.9), (3000, 2))\n"
        "fk.track(f, seeds, 0.0, 2.0, 0.001, save_every=100, batch_size=500, output=sys.argv[1])\n"
    )
    store = tmp_path / "tracks.zarr"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(store), str(k)], env=env, stderr=subprocess.PIPE, text=True)
        for k in (1, 2)
    ]
    errors = [run.communicate(timeout=HANG)[1] for run in runs]
    codes = sorted(run.returncode for run in runs)
    assert codes[0] == 0 and codes[1] != 0, errors
    refused = errors[[run.returncode for run in runs].index(codes[1])]
    assert "is being written by process" in refused or "exists (a trajectory store" in refused, refused
    winner = [run.returncode for run in runs].index(0) + 1
    seeds = np.random.default_rng(winner).uniform((0.1, 0.1), (1.9, 0.9), (3000, 2))
    np.testing.assert_allclose(fk.Trajectory.load(store).positions[0], seeds, rtol=1e-6)
    shutil.rmtree(store)


def test_a_resume_onto_a_streamed_series_whose_file_changed_is_refused(tmp_path, monkeypatch):
    """A streamed series stays on disk: its files are identified by name, size, modification
    time and sampled blocks, so a slice rewritten after the run began is seen without reading
    the series, also when its size and time were kept."""
    gyre = fk.fields.DoubleGyre()
    times = np.linspace(0.0, T1, 6)
    series = fk.GridField.from_function(gyre, [np.linspace(0, 2, 41), np.linspace(0, 1, 21)], times=times)
    path = fk.io.save_grid_npz(tmp_path / "series.npz", series)
    store = tmp_path / "tracks.zarr"
    restore = stopped_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        _track(store, field=fk.io.load_grid_npz(path, stream=True))
    restore()
    shutil.copytree(store, tmp_path / "copy.zarr")
    _track(tmp_path / "copy.zarr", field=fk.io.load_grid_npz(path, stream=True), resume=True)  # the same files
    before = os.stat(path)
    later = np.asarray(series.values).copy()
    later[4] *= 1.01  # a later slice, not among the template's first two
    fk.io.save_grid_npz(path, fk.GridField.from_arrays(later, series.axes, times=times))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # replaced, its size and time kept
    assert os.stat(path).st_size == before.st_size
    with pytest.raises(ValueError, match=r"made by another run \(its field differ from this run's\)"):
        _track(store, field=fk.io.load_grid_npz(path, stream=True), resume=True)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    with pytest.raises(ValueError, match=r"made by another run \(its field differ from this run's\)"):
        _track(store, field=fk.io.load_grid_npz(path, stream=True), resume=True)
