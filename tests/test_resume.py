"""Interrupted runs lose nothing (issue 32): a streamed store says what it holds, a partial one
is refused or read in part, and `resume=True` finishes it exactly as an uninterrupted run."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from helpers import APP_CACHE, HANG

import flowkit as fk

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import sys
import flowkit as fk
field = fk.fields.DoubleGyre()
seeds = fk.seeding.uniform_grid((60, 30), field.bounds, include_boundaries=False)
fk.track(field, seeds, 0.0, 10.0, 0.00025, save_every=8000, batch_size=300, output=sys.argv[1])
"""


def _run(**kwargs):
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((60, 30), field.bounds, include_boundaries=False)
    return fk.track(field, seeds, 0.0, 10.0, kwargs.pop("dt", 0.00025), save_every=8000, batch_size=300, **kwargs)


def _batches_done(store: Path) -> int:
    try:
        return int(json.loads((store / "zarr.json").read_text())["attributes"]["flowkit_batches_done"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0  # not made yet, or being rewritten this instant


def test_a_killed_streamed_run_is_refused_read_in_part_and_resumed_exactly(tmp_path):
    store = tmp_path / "tracks.zarr"
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(store)], env=dict(os.environ, PYTHONWARNINGS="ignore")
    )
    deadline = time.monotonic() + 240
    while _batches_done(store) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = _batches_done(store)
    assert 2 <= done < 6, f"the run was not killed part-way ({done} of 6 batches)"
    with xr.open_zarr(store, consolidated=False) as ds:  # what xarray users see
        assert ds.attrs["flowkit_complete"] is False and ds.attrs["flowkit_batches_done"] == done
        unwritten = (
            ds["x"].values[(done + 1) * 300 :],
            ds["status"].values[(done + 1) * 300 :],
        )  # batches not begun (the one under way may hold its first frames)
        assert np.isnan(unwritten[0]).all() and (unwritten[1] == -1).all()  # never 0: no particle poses at the origin
        assert np.isnan(ds["x"].values[done * 300 :, -1]).all()
    with pytest.raises(
        ValueError,
        match=rf"tracks\.zarr is partial: its run stopped with {done} of 6 batches written \({done * 300} "
        r"of 1800 particles\); Trajectory\.load\(path, partial=True\)",
    ):
        fk.Trajectory.load(store)
    reference = _run()
    part = fk.Trajectory.load(store, partial=True)
    assert part.positions.shape[1] == done * 300
    np.testing.assert_array_equal(part.positions, reference.positions[:, : done * 300])
    with pytest.raises(ValueError, match=r"tracks\.zarr: made by another run .* so resume=True cannot continue it"):
        _run(dt=0.0005, output=store, resume=True)
    with pytest.raises(FileExistsError, match=r"resume=True continues the run that made it"):
        _run(output=store)
    finished = _run(output=store, resume=True)
    assert finished.attrs["flowkit_complete"] is True
    whole = fk.Trajectory.load(store)
    for name in ("times", "positions", "status", "exit_time"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(reference, name))


def _app(args, cwd):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.Popen(
        [sys.executable, str(ROOT / "apps" / "track.py"), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


JOB = [
    "field=double_gyre",
    "seeds.resolution=[60,30]",
    "t1=10",
    "dt=0.00025",
    "save_every=8000",
    "batch_size=300",
    "progress=false",
    APP_CACHE,
    "output=minimal",
    "output.store=true",
]


@pytest.mark.slow
def test_ctrl_c_in_the_app_stops_in_one_line_and_resume_finishes_the_run(tmp_path):
    # during compilation: at the header, before any step
    early = _app([*JOB, f"hydra.run.dir={tmp_path / 'early'}"], tmp_path)
    for line in early.stdout:
        if "particles ×" in line:  # the header: compilation starts now
            early.send_signal(signal.SIGINT)
            break
    _, err = early.communicate(timeout=HANG)
    assert (
        early.returncode == 130
        and err.strip().splitlines()[-1].startswith("error: interrupted")
        and "Traceback" not in err
    )
    assert "interrupted" in (tmp_path / "early" / "track.log").read_text()
    # during tracking: once the store holds two batches
    run = tmp_path / "run"
    late = _app([*JOB, f"hydra.run.dir={run}"], tmp_path)
    deadline = time.monotonic() + 240
    while _batches_done(run / "trajectories.zarr") < 2 and late.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    late.send_signal(signal.SIGINT)
    _, err = late.communicate(timeout=HANG)
    (line,) = err.strip().splitlines()[-1:]
    assert late.returncode == 130 and "Traceback" not in err, err
    assert (
        line.startswith("error: interrupted at t = ")
        and "batches are in" in line
        and f"hydra.run.dir={run} resume=true" in line
    )
    assert line[len("error: ") :] in (run / "track.log").read_text() and not (run / "summary.json").exists()
    done = _batches_done(run / "trajectories.zarr")
    assert done < 6
    # resumed with the command the line gave
    resumed = _app([*JOB, f"hydra.run.dir={run}", "resume=true"], tmp_path)
    out, err = resumed.communicate(timeout=HANG)
    assert resumed.returncode == 0, out + err
    summary = json.loads((run / "summary.json").read_text())
    assert (
        summary["status_counts"]["active"] + summary["status_counts"]["out_of_domain"] == 1800
        and "trajectories.zarr" in summary["files"]
    )
    assert f"resume: {run / 'trajectories.zarr'} holds {done} of 6 batches" in (run / "track.log").read_text()
    np.testing.assert_array_equal(fk.Trajectory.load(run / "trajectories.zarr").positions, _run().positions)


@pytest.mark.slow
@pytest.mark.parametrize("at", ["read: velocity", "particles ×"], ids=["reading", "compiling"])
def test_ctrl_c_while_the_default_job_reads_or_compiles_exits_130_in_one_line(tmp_path, at):
    """The default job (a mesh series read by VTK, the CPU mesh kernel compiled): Ctrl-C once
    the series is read (seeding, building the field) or at the header (compiling) ends the run
    with its line and status 130; the interpreter's teardown under XLA's threads crashed (-11)."""
    app = _app([f"hydra.run.dir={tmp_path}", APP_CACHE, "output=minimal"], tmp_path)
    for line in app.stdout:
        if at in line:
            app.send_signal(signal.SIGINT)
            break
    _, err = app.communicate(timeout=HANG)
    assert app.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted") and "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_while_the_bar_runs_ends_with_the_runs_own_line(tmp_path):
    """Ctrl-C while the progress bar is drawn: the bar's line is ended before the run's last
    line, which is then a line of its own (it was written after the bar, on the bar's line)."""
    app = _app([f"hydra.run.dir={tmp_path / 'run'}", APP_CACHE, "output=minimal", "dt=0.0002"], tmp_path)
    err = ""
    while "%|" not in err:  # the bar is drawn, on a line it has not ended
        char = app.stderr.read(1)
        assert char, err
        err += char
    app.send_signal(signal.SIGINT)
    _, rest = app.communicate(timeout=HANG)
    err += rest
    assert app.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted at t = ") and "Traceback" not in err


def test_the_memory_estimate_matches_the_measured_peak_and_a_run_that_does_not_fit_is_refused(tmp_path, monkeypatch):
    import tracemalloc

    from flowkit.tracker import memory

    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.random_box(100_000, field.bounds, key=__import__("jax").random.key(0))
    run = fk.tracker.TrackRun(field, seeds, 0.0, 1.0, 0.01, save_every=2, record_velocity=True)
    tracemalloc.start()
    run.run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert run.host_bytes > 0 and abs(peak - run.host_bytes) < 0.3 * run.host_bytes, (peak, run.host_bytes)
    # too big for the host: refused before anything is allocated, naming the store that fits
    monkeypatch.setattr(memory, "available_memory", lambda: run.host_bytes)
    with pytest.raises(
        MemoryError,
        match=r"need \d+\.\d MiB of host memory and \d+\.\d MiB are available: stream them to a store "
        r"\(output='tracks\.zarr'",
    ):
        fk.track(field, seeds, 0.0, 1.0, 0.01, save_every=2, record_velocity=True)
    streamed = fk.track(
        field, seeds, 0.0, 1.0, 0.01, save_every=2, record_velocity=True, output=tmp_path / "tracks.zarr"
    )
    assert streamed.sizes["trajectory"] == 100_000
    # a batch too big for the device: refused naming a batch_size, which then runs
    monkeypatch.setattr(fk.tracker.run, "device_budget", lambda: 4 * 2**20)
    with pytest.raises(
        MemoryError,
        match=r"a batch of \d+ particles needs .* MiB of device memory and 4\.0 MiB may be used: give "
        r"batch_size=(\d+) \(or less\)",
    ) as refused:
        fk.track(field, seeds, 0.0, 1.0, 0.01, save_every=2, output=tmp_path / "b.zarr")
    fits = int(__import__("re").search(r"batch_size=(\d+)", str(refused.value)).group(1))
    assert 1000 < fits < 100_000
    assert (
        fk.track(field, seeds, 0.0, 1.0, 0.01, save_every=2, output=tmp_path / "b.zarr", batch_size=fits).sizes[
            "trajectory"
        ]
        == 100_000
    )


def test_seeds_that_cannot_fit_are_refused_before_anything_scales_with_them(tmp_path, monkeypatch):
    """10⁹ seeds: refused in one line naming what bounds a run, before seeding (the app) or
    before the seeds are copied (`fk.track`), not by NumPy after minutes."""
    from flowkit.tracker import api, memory

    app = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), "seeds=random", "seeds.n=1000000000"]
        + [f"hydra.run.dir={tmp_path / 'app'}", APP_CACHE],
        capture_output=True,
        text=True,
        timeout=HANG,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert app.returncode == 2 and "Traceback" not in app.stderr
    assert re.fullmatch(
        r"error: 1000000000 particles need about 96\.86 GiB of host memory before tracking begins \(their seeds, "
        r"release times, origins and cells\) and [\d.]+ GiB are available: track them in several runs of fewer "
        r"seeds, each with its own output= \(batch_size= bounds the particles tracked at once, not the seeds a "
        r"run holds\)",
        app.stderr.strip().splitlines()[-1],
    )
    field = fk.fields.DoubleGyre()
    seeds = np.zeros((200_000, 2))
    monkeypatch.setattr(memory, "available_memory", lambda: 2**24)  # 16 MiB
    monkeypatch.setattr(api, "prepare", lambda *a, **k: pytest.fail("prepared before the memory check"))
    with pytest.raises(MemoryError, match=r"200000 particles need about .* track them in several runs"):
        fk.track(field, seeds, 0.0, 1.0, 0.1)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    with pytest.raises(
        MemoryError, match=r"the run's frames need .*output='tracks\.zarr'.*batch by batch \(batch_size=\)"
    ):
        fk.track(field, seeds, 0.0, 100.0, 0.01)


def test_a_ctrl_c_swallowed_in_a_callback_is_noted_and_not_reported(monkeypatch):
    """An interrupt that lands where Python cannot raise it (a finaliser or GC callback, as
    JAX's during compilation) is noted for the run to raise at its next chunk, and Python's
    'Exception ignored' report of it is left out; other such reports still go out."""
    import gc

    from flowkit.tracker.interrupt import ctrl_c_noted

    class Interrupting:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(1000))  # the handler runs here, inside the finaliser

    class Failing:
        def __del__(self):
            raise RuntimeError("a finaliser's own error")

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: reported.append(report.exc_type))
    with ctrl_c_noted() as noted:
        cycle = Interrupting()
        cycle.me = cycle
        del cycle
        gc.collect()
        Failing()
    assert noted == [True] and reported == [RuntimeError]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_swallowed_before_the_run_stops_it_at_its_first_chunk():
    """An app notes Ctrl-C around its whole job: one swallowed while it read (in JAX's garbage
    collection callback, which Python cannot raise from) is in the notes the run shares, and the
    run raises it before its first chunk instead of tracking to the end."""
    from flowkit.tracker.interrupt import ctrl_c_noted

    field = fk.fields.DoubleGyre()
    seeds = np.array([[0.5, 0.5]])
    with ctrl_c_noted() as noted:
        noted.append(True)  # what the handler notes when its raise is swallowed
        with pytest.raises(KeyboardInterrupt):
            fk.track(field, seeds, 0.0, 1.0, 0.1)
    assert fk.track(field, seeds, 0.0, 1.0, 0.1).positions.shape == (11, 1, 2)  # none noted now
