"""Interrupted runs lose nothing (issue 32): a streamed store says what it holds, a partial one
is refused or read in part, and `resume=True` finishes it exactly as an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import flowkit as fk

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import sys
import flowkit as fk
field = fk.fields.DoubleGyre()
seeds = fk.seeding.uniform_grid((60, 30), field.bounds, include_boundaries=False)
fk.track(field, seeds, 0.0, 20.0, 0.00025, save_every=8000, batch_size=300, output=sys.argv[1])
"""


def _run(**kwargs):
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((60, 30), field.bounds, include_boundaries=False)
    return fk.track(field, seeds, 0.0, 20.0, kwargs.pop("dt", 0.00025), save_every=8000, batch_size=300, **kwargs)


def _batches_done(store: Path) -> int:
    try:
        return int(json.loads((store / "zarr.json").read_text())["attributes"]["flowkit_batches_done"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0  # not made yet, or being rewritten this instant


def test_a_killed_streamed_run_is_refused_read_in_part_and_resumed_exactly(tmp_path):
    store = tmp_path / "tracks.zarr"
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(store)], env=dict(os.environ, PYTHONWARNINGS="ignore"))
    deadline = time.monotonic() + 240
    while _batches_done(store) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = _batches_done(store)
    assert 2 <= done < 6, f"the run was not killed part-way ({done} of 6 batches)"
    with xr.open_zarr(store, consolidated=False) as ds:  # what xarray users see
        assert ds.attrs["flowkit_complete"] is False and ds.attrs["flowkit_batches_done"] == done
        assert np.isnan(ds["x"].values[done * 300 :]).all() and (ds["status"].values[done * 300 :] == -1).all()  # never 0: no particle poses at the origin
    with pytest.raises(ValueError, match=rf"tracks\.zarr is partial: its run stopped with {done} of 6 batches written \({done * 300} of 1800 particles\); Trajectory\.load\(path, partial=True\)"):
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
