"""The fourth fault sweep's tracebacks and unclear messages (issue 79), each now one line naming
the setting, file or key: numerical edge cases of `fk.track`, the app's overrides, environment
and signals, and damaged inputs beside the field."""

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import APP_CACHE, HANG
from hydra import compose, initialize_config_dir

import flowkit as fk
from flowkit.app_errors import check_overrides
from flowkit.app_setup import enable_compilation_cache, run_key
from flowkit.config import run_track

ROOT = Path(__file__).resolve().parents[1]
FIELD = fk.GridField.from_function(fk.fields.DoubleGyre(), [np.linspace(0, 2, 21), np.linspace(0, 1, 11)])
SEEDS = np.array([[0.5, 0.5], [1.0, 0.4]])


@pytest.mark.parametrize(
    "t1, dt, save_every", [(3e9, 1.0, 10**9), (1.0, 1e-12, 1), (1.0, 1e-12, 10**12)], ids=["t1", "dt", "both"]
)
def test_more_steps_than_a_run_counts_are_named_before_any_memory_check(t1, dt, save_every):
    with pytest.raises(ValueError, match=r"would take [0-9.e+]+ steps, more than the 2147483647 \(2\*\*31 - 1\)"):
        fk.track(FIELD, SEEDS, 0.0, t1, dt, save_every=save_every)


def test_keys_and_seeds_that_are_no_keys_are_named():
    import jax

    with pytest.raises(TypeError, match=r"key: expected a key made by jax.random.key\(seed\), got Array"):
        fk.track(FIELD, SEEDS, 0.0, 1.0, 0.1, key=jax.random.PRNGKey(0))  # a raw key: its noise is not folded
    for seed in (99999999999999999999, -(2**63) - 1, 1.5, True):
        with pytest.raises(ValueError, match=r"seed=.*: give a whole number from -2\*\*63 to 2\*\*63 - 1"):
            run_key(seed)
    assert run_key(2**63 - 1).shape == ()


def test_a_host_device_count_that_is_no_count_is_warned_and_one_per_core_used():
    env = dict(os.environ, FLOWKIT_HOST_DEVICES="many")
    env.pop("XLA_FLAGS", None)
    said = subprocess.run(
        [sys.executable, "-c", "import flowkit, jax; flowkit.configure(); print(jax.device_count())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert said.returncode == 0 and "Traceback" not in said.stderr, said.stderr
    assert "FLOWKIT_HOST_DEVICES='many' is not a whole number of devices" in said.stderr
    assert int(said.stdout) == min(len(os.sched_getaffinity(0)), 8)


@pytest.mark.parametrize(
    "args, line",
    [
        (["hydra.run.dir=/tmp/héllo"], "'hydra.run.dir=/tmp/héllo': Hydra's override grammar cannot read it; quote"),
        (["hydra.run.dir=/tmp/a\nb"], "'hydra.run.dir=/tmp/a\\nb': Hydra's override grammar cannot read it"),
        (["~field.path"], "~field.path: a key is not removed from the run; give field.path=null"),
        (["dtype=quad"], "dtype=quad: dtype takes one of float32, float64"),
        (["field=double_gyre", "field.A=strong"], "field.A=strong: field.A takes a number"),
        (["field=vtk", "field.allow_nonfinite=maybe"], "field.allow_nonfinite=maybe: field.allow_nonfinite takes true"),
    ],
)
def test_overrides_hydra_cannot_read_or_the_run_cannot_take_are_one_line(capsys, args, line):
    with pytest.raises(SystemExit) as ended:
        check_overrides(args, "track")
    assert ended.value.code == 2 and capsys.readouterr().err.startswith(f"error: {line}")


def test_overrides_a_group_key_takes_pass():
    check_overrides(["field=double_gyre", "field.A=1", "field.A=0.1,0.2", "field.A=${seed}", "dtype=float64"], "track")


def test_a_non_ascii_run_dir_is_refused_before_its_folder_is_made(tmp_path):
    folder = tmp_path / "héllo"
    app = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), f"hydra.run.dir={folder}"],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert app.returncode == 2 and "Traceback" not in app.stderr and not folder.exists()
    assert app.stderr.strip().splitlines()[-1].startswith(f"error: 'hydra.run.dir={folder}'")


def test_a_compilation_cache_that_cannot_be_written_is_warned_and_the_run_goes_on(tmp_path, caplog):
    import jax

    (tmp_path / "file").write_text("")
    before = jax.config.values.get("jax_compilation_cache_dir")
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        enable_compilation_cache(tmp_path / "file" / "jax")
    assert "cannot be written (Not a directory): the run compiles without it" in caplog.text
    assert jax.config.values.get("jax_compilation_cache_dir") == before


def test_a_truncated_geojson_is_named(tmp_path):
    path = tmp_path / "areas.geojson"
    path.write_text('{"type": "FeatureCollection", "features": [{"type": "Feature", "geom')
    with pytest.raises(ValueError, match=r"read_polygons: .*areas\.geojson is damaged or not polygons \(JSONDecode"):
        fk.statistics.read_polygons(path)


def _compose(overrides):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="track", overrides=[APP_CACHE, *overrides])


def test_ctrl_c_while_the_outputs_are_written_says_the_tracks_are_kept_and_resume_writes_them(tmp_path, monkeypatch):
    from flowkit import app_outputs

    job = ["field=double_gyre", "seeds.resolution=[10,5]", "t1=1.0", "dt=0.01", "progress=false", "output.store=true"]
    write = app_outputs.write_outputs

    def interrupted(cfg, run, traj, out, summary):
        traj.save(out / "trajectories.npz")  # one output written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(app_outputs, "write_outputs", interrupted)
    with pytest.raises(KeyboardInterrupt, match=r"interrupted while writing the outputs: the tracks are complete in "):
        run_track(_compose(job), output_dir=tmp_path)
    monkeypatch.setattr(app_outputs, "write_outputs", write)
    run_track(_compose([*job, "resume=true"]), output_dir=tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"trajectories.zarr", "trajectories.npz", "summary.json"} <= set(summary["files"])
    with np.load(tmp_path / "trajectories.npz") as saved:
        np.testing.assert_array_equal(saved["positions"], fk.Trajectory.load(tmp_path / "trajectories.zarr").positions)


@pytest.mark.parametrize("store", [False, True])
def test_sigterm_is_said_in_the_log_and_on_stderr_with_what_was_kept(tmp_path, store):
    run = tmp_path / "run"
    job = ["field=double_gyre", "seeds.resolution=[60,30]", "t1=10", "dt=0.00025", "save_every=8000"]
    job += ["batch_size=300", "progress=false", APP_CACHE, f"hydra.run.dir={run}", f"output.store={str(store).lower()}"]
    app = subprocess.Popen(
        [sys.executable, str(ROOT / "apps" / "track.py"), *job],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in app.stdout:
        if "particles ×" in line:  # the header: the run is under way
            app.send_signal(signal.SIGTERM)
            break
    _, err = app.communicate(timeout=HANG)
    last = err.strip().splitlines()[-1]
    assert app.returncode == 143 and "Traceback" not in err, err
    assert last.startswith("error: terminated (SIGTERM): ")
    assert ("resume=true" in last) == (store and (run / "trajectories.zarr").exists())
    assert "terminated (SIGTERM)" in (run / "track.log").read_text()


def test_the_memory_check_is_bounded_by_the_address_space_limit():
    """`prlimit --as` (or `ulimit -v`) below the free memory: the check's bound, so a run that
    would not fit is refused in one line rather than by NumPy's bare allocation failure."""
    script = (
        "import resource, flowkit.tracker.memory as m\n"
        "size = m._status_bytes('VmSize')\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + 2**30, resource.RLIM_INFINITY))\n"
        "m._read[0] = -float('inf')\n"
        "print(m.available_memory(), size)\n"
    )
    said = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG)
    available, size = map(int, said.stdout.split())
    assert size > 0 and 0.9 * 2**30 < available <= 2**30, said.stderr
