"""The Hydra app end to end, in a subprocess, as a user runs it."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vtk
from foam import write_case
from helpers import APP_CACHE, HANG

import flowkit as fk

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, env=None):
    env = dict(os.environ, PYTHONWARNINGS="ignore", **(env or {}))
    result = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.mark.slow
def test_default_job(tmp_path):
    result = _run([f"hydra.run.dir={tmp_path}", f"compilation_cache={tmp_path / 'cache'}"], cwd=tmp_path)
    assert "field MeshField 9261 points, 40000 cells (tetra), 21 times" in result.stdout
    for name in (
        "trajectories.npz",
        "trajectories.vtp",
        "summary.json",
        "trajectories.png",
        "snapshot.png",
        "density.png",
    ):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_particles"] == 17**3 and summary["status_counts"]["active"] == 17**3
    # dt=auto: a step of Courant number 0.5 in the data's fastest cell, whole steps over the 2 s
    assert summary["n_steps"] * summary["dt"] == pytest.approx(2.0) and 0 < summary["courant"] <= 0.5
    assert "dt=auto: " in result.stdout
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(tmp_path / "trajectories.vtp"))
    reader.Update()
    assert reader.GetOutput().GetNumberOfLines() == 17**3
    assert reader.GetOutput().GetPointData().GetArray("velocity") is not None  # velocity by default
    import xml.etree.ElementTree as ET  # the particle clouds, as ParaView animates them: a collection of .vtp

    entries = ET.parse(tmp_path / "particles.pvd").getroot().findall("./Collection/DataSet")
    np.testing.assert_allclose(
        [float(e.get("timestep")) for e in entries], np.load(tmp_path / "trajectories.npz")["times"]
    )
    last = vtk.vtkXMLPolyDataReader()
    last.SetFileName(str(tmp_path / entries[-1].get("file")))
    last.Update()
    cloud = last.GetOutput()
    assert cloud.GetNumberOfPoints() == 17**3 and all(
        cloud.GetPointData().GetArray(name) is not None for name in ("particle_id", "status", "age", "velocity")
    )
    log = (tmp_path / "track.log").read_text()
    assert "field MeshField 9261 points" in log and "done: " in log and "seeds: 4913 from a 17×17×17 lattice" in log


@pytest.mark.slow
def test_inlet_outlet_on_the_pipe_sample(tmp_path):
    result = _run(
        [
            f"hydra.run.dir={tmp_path}",
            APP_CACHE,
            "field=vtk",
            "field.dataset=pipe",
            "boundary=inlet_outlet",
            "boundary.inlet=xmin",
            "boundary.outlet=xmax",
            "boundary.mode=flux",
            "seeds=random",
            "seeds.n=2000",
            "t1=3.0",
            "progress=false",
        ],
        cwd=tmp_path,
    )
    assert "boundary InletOutlet" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    # random seeds in the pipe's box: those outside the round pipe never move; none of the others is lost
    assert summary["restarts"] > 100 and summary["status_counts"]["absorbed"] == 0
    assert summary["status_counts"]["active"] + summary["status_counts"]["out_of_domain"] == 2000
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(tmp_path / "trajectories.vtp"))
    reader.Update()
    assert reader.GetOutput().GetNumberOfLines() == 2000 + summary["restarts"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["field=abc", "boundary=inlet_outlet", "boundary.inlet=xmin", "boundary.outlet=xmax", "t1=1", "seeds.n=500"],
        ["field.stream=true", "seeds=random", "seeds.n=500", "t1=0.5"],
        ["seeds=random", "seeds.n=500", "t1=0.5", "output.store=true", "batch_size=200"],
    ],
    ids=["analytic_inlet_outlet", "streamed_random_seeds", "store_in_batches"],
)
def test_app_paths_on_two_devices(tmp_path, args):
    """The app's paths as it runs on this 2-core machine by default: particles sharded over two
    CPU devices (an analytic field's empty hints once came back unsharded from the second chunk
    on; a streamed series had no `settle_batch` for random seeds)."""
    env = dict(FLOWKIT_HOST_DEVICES="2")
    result = _run([f"hydra.run.dir={tmp_path}", APP_CACHE, "output=minimal", *args], tmp_path, env)
    assert "| cpu × 2 (cpu)" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert sum(summary["status_counts"].values()) == summary["n_particles"] >= 400


@pytest.mark.slow
def test_inertial_droplets_deposit_in_the_pipe(tmp_path):
    """The issue's command: droplets settle onto the pipe wall; the app writes where they landed."""
    args = [
        "field=vtk",
        "field.dataset=pipe",
        "particles=inertial",
        "particles.diameter=10e-6",
        "particles.density=1000",
        "boundary=mesh_absorb",
    ]
    result = _run(
        [*args, f"hydra.run.dir={tmp_path}", APP_CACHE, "progress=false", "seeds=random", "seeds.n=500"],
        cwd=tmp_path,
    )
    assert "exponential drag update" in result.stdout + result.stderr and "particles Inertial" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    deposits = summary["status_counts"]["absorbed"]
    assert deposits > 0 and summary["deposition"]["deposits"] == deposits
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(tmp_path / "deposition.vtp"))
    reader.Update()
    assert reader.GetOutput().GetNumberOfPoints() == deposits
    reader.SetFileName(str(tmp_path / "trajectories.vtp"))
    reader.Update()
    arrays = {
        reader.GetOutput().GetPointData().GetArrayName(i)
        for i in range(reader.GetOutput().GetPointData().GetNumberOfArrays())
    }
    assert {"velocity", "particle_velocity"} <= arrays  # the droplet's velocity beside the fluid's


def test_openfoam_case_with_patch_named_inlet_and_outlet(tmp_path):
    """A user's OpenFOAM case directory runs through the app, its inlet and outlet named by patch."""
    case = write_case(
        tmp_path / "case",
        lambda t, x: np.stack([1.0 + 0 * x[:, 0], 0.1 * np.sin(3 * x[:, 0]), 0 * x[:, 0]], axis=1),
        times=(0.0, 1.0),
    )
    result = _run(
        [
            f"hydra.run.dir={tmp_path / 'run'}",
            APP_CACHE,
            "field=vtk",
            f"field.path={case}",
            "boundary=inlet_outlet",
            "boundary.inlet=patch:inlet",
            "boundary.outlet=patch:outlet",
            "seeds=random",
            "seeds.n=200",
            "t1=1.0",
            "progress=false",
        ],
        cwd=tmp_path,
    )
    assert "boundary InletOutlet" in result.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # u = 1 along x through a unit box over t = 1: every particle reaches the outlet once and restarts
    assert summary["restarts"] >= 150 and summary["status_counts"]["active"] == 200


@pytest.mark.slow
def test_two_job_sweep(tmp_path):
    _run(
        [
            "-m",
            "integrator=euler,rk4",
            f"compilation_cache={tmp_path / 'cache'}",
            "field=abc",
            "boundary=periodic",
            "seeds=random",
            "seeds.n=200",
            "t1=0.5",
            "progress=false",
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=tmp_path,
    )
    summaries = [json.loads((tmp_path / str(i) / "summary.json").read_text()) for i in range(2)]
    assert any((tmp_path / "cache").iterdir()), "the compiled programs were not written to the persistent cache"
    assert [s["integrator"] for s in summaries] == ["Euler", "RK4"]
    with open(tmp_path / "sweep_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["override:integrator"] for r in rows] == ["euler", "rk4"]
    assert [r["integrator"] for r in rows] == ["Euler", "RK4"] and all(
        float(r["particle_steps_per_s"]) > 0 for r in rows
    )
    assert all(s["n_particles"] == 200 for s in summaries)


@pytest.mark.slow
def test_joblib_parallel_sweep(tmp_path):
    _run(
        [
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "integrator=heun,rk4",
            "field=double_gyre",
            "seeds=random",
            "seeds.n=100",
            "t1=0.3",
            "progress=false",
            APP_CACHE,
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=tmp_path,
    )
    with open(tmp_path / "sweep_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["integrator"] for r in rows) == ["Heun", "RK4"]


@pytest.mark.slow
def test_second_run_of_a_job_compiles_from_the_persistent_cache(tmp_path):
    job = [
        "field=double_gyre",
        "seeds=random",
        "seeds.n=100",
        "t1=0.3",
        "progress=false",
        f"compilation_cache={tmp_path / 'cache'}",
        "output=minimal",
    ]
    summaries = []
    for run in ("first", "second"):
        _run([*job, f"hydra.run.dir={tmp_path / run}"], cwd=tmp_path)
        summaries.append(json.loads((tmp_path / run / "summary.json").read_text()))
    first, second = (s["compilation_cache"] for s in summaries)
    assert first["misses"] >= 1 and second["misses"] == 0 and second["hits"] >= first["misses"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_multi_host_processes_split_the_particles(tmp_path):
    """Two processes joined by jax.distributed (on this machine) track one share each; together
    they equal a one-process run, noise included (keys are global)."""
    import numpy as np

    job = [
        "field=double_gyre",
        "integrator=euler_maruyama",
        "seeds=random",
        "seeds.n=301",
        "t1=0.5",
        "progress=false",
        APP_CACHE,
        "output=minimal",
    ]
    env = dict(os.environ, PYTHONWARNINGS="ignore", FLOWKIT_HOST_DEVICES="1")
    address = f"localhost:{_free_port()}"
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "apps" / "track.py"),
                *job,
                f"hydra.run.dir={tmp_path / 'multi'}",
                "distributed.enabled=true",
                f"distributed.coordinator_address={address}",
                "distributed.num_processes=2",
                f"distributed.process_id={i}",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    for p in processes:
        output, _ = p.communicate(timeout=HANG)
        assert p.returncode == 0, output
    _run([*job, f"hydra.run.dir={tmp_path / 'single'}"], cwd=tmp_path)
    single = np.load(tmp_path / "single" / "trajectories.npz")
    parts = [np.load(tmp_path / "multi" / f"process{i}" / "trajectories.npz") for i in range(2)]
    summaries = [json.loads((tmp_path / "multi" / f"process{i}" / "summary.json").read_text()) for i in range(2)]
    assert [s["process"]["first_particle"] for s in summaries] == [0, 150] and [
        s["n_particles"] for s in summaries
    ] == [150, 151]
    assert all(s["process"]["count"] == 2 and s["process"]["n_particles_total"] == 301 for s in summaries)
    np.testing.assert_array_equal(np.concatenate([p["positions"] for p in parts], axis=1), single["positions"])
    np.testing.assert_array_equal(np.concatenate([p["status"] for p in parts], axis=1), single["status"])


@pytest.mark.slow
def test_ocean_sample_with_dates_writes_cf_trajectories(tmp_path):
    """The issue's command on the embedded daily NetCDF4 sample: dates in, a CF trajectory file
    with dates out, random seeds drawn in the water only."""
    import xarray as xr

    args = [
        "field=netcdf",
        "boundary=none",
        "seeds=random",
        "seeds.n=500",
        "seeds.bounds=[[-75,-60],[45,60]]",
        "t0=2024-01-02",
        "t1=2024-01-06",
        "dt=auto",
        "save_every=12h",
    ]
    result = _run([*args, f"hydra.run.dir={tmp_path}", APP_CACHE, "progress=false"], cwd=tmp_path)
    assert "field GridField (360, 180), 10 times" in result.stdout
    with xr.open_dataset(tmp_path / "trajectories.nc") as ds:
        assert ds["time"].values[0] == np.datetime64("2024-01-02") and ds["time"].values[-1] == np.datetime64(
            "2024-01-06"
        )
        assert ds["lon"].attrs["units"] == "degrees_east" and ds.sizes["trajectory"] == 500
        ashore = int((ds["status"].isel(obs=0) == fk.Status.BEACHED).sum())
    assert ashore == 0  # random seeds are drawn in the water
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["inputs"]["field"] == "flowkit.datasets.ocean_field" and summary["config"]["seeds"]["n"] == 500
    assert (
        0 < summary["courant"] <= 0.5 and (12 * 3600 / summary["dt"]) % 1 == 0
    )  # dt=auto: Courant 0.5 at the fastest node, whole steps per save
    assert "dt=auto: " in result.stdout and f"largest Courant number {summary['courant']:.3g}" in result.stdout


@pytest.mark.parametrize(
    "args, code, names",
    [
        (
            ["t1=abc"],
            2,
            "error: t1: 'abc' is neither a number of seconds nor an ISO date like '2024-01-05'",
        ),  # seconds or a date: checked before compiling
        (
            ["save_every=1.5"],
            2,
            "error: save_every must be a positive integer (steps), a duration like '6h' or 'auto', got 1.5",
        ),
        (
            ["seedz.n=5"],
            2,
            "error: seedz.n: no such key in the track config; did you mean seeds.n? (the keys are those of conf/, "
            "with or without + or ++)",
        ),  # a misspelt key
        (
            ["seed.n=500"],
            2,
            "error: seed.n: no such key in the track config; did you mean seeds.n? (the keys are those of conf/, "
            "with or without + or ++)",
        ),
        (
            ["integrator=rk5"],
            2,
            (
                "error: integrator=rk5: no such option; choose one of dopri5, dopri8, euler, "
                "euler_maruyama, heun, horizontal_diffusion, midpoint, rk4, tsit5, wind_mixing"
            ),
        ),
        (["seeds.n=-5"], 2, "error: seeds.n must be a positive integer, got -5"),  # at build time: one line
        (["dt=0"], 2, "error: dt must be non-zero"),
        (["batch_size=nan"], 2, "error: batch_size=nan: batch_size takes an integer (or null)"),
        (["batch_size=0"], 2, "error: batch_size must be a positive integer, got 0"),
        (
            ["++field._target_=numpy.load", "++field.allow_pickle=true"],
            2,
            "error: ++field._target_=numpy.load: _target_ is not a setting; what a run builds comes from the config "
            "groups (choose an option, e.g. field=vtk) and their keys",
        ),  # nothing the config lacks is built, imported or called, however the key is prefixed
        (
            ["+field.allow_pickle=true"],
            2,
            "error: field.allow_pickle: no such key in the track config; did you mean field.allow_nonfinite? (the "
            "keys are those of conf/, with or without + or ++)",
        ),
        (["field=vtk", "field.path=missing.vtu"], 2, "error: VTK file missing.vtu does not exist"),
    ],
)
def test_bad_configs_end_with_one_clear_message(tmp_path, args, code, names):
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"} | {"PYTHONWARNINGS": "ignore"}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "apps" / "track.py"),
            *args,
            f"hydra.run.dir={tmp_path}",
            APP_CACHE,
            "progress=false",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == code, result.stderr
    assert names in result.stderr and "Traceback" not in result.stderr
    if code == 2:
        assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [names]
        assert (result.stdout + result.stderr).count(names[len("error: ") :]) == 1  # said once, on the console
    if (tmp_path / "track.log").exists():  # a run that started keeps its error in its log
        assert names[len("error: ") :] in (tmp_path / "track.log").read_text()


def test_a_fifo_as_the_field_path_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "flow.vtu"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), f"field.path={fifo}", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {fifo}: a FIFO (named pipe), not a file or folder; give the data file itself"
    )


def test_full_error_shows_the_traceback(tmp_path):
    env = dict(os.environ, HYDRA_FULL_ERROR="1", PYTHONWARNINGS="ignore")
    result = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "ftle.py"), "dt=0", f"hydra.run.dir={tmp_path}", APP_CACHE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode != 0 and "Traceback" in result.stderr


@pytest.mark.slow
def test_the_app_guides_ocean_commands_run_as_printed(tmp_path):
    """Every `field=netcdf` command of the app's guide (`docs/guides/app.md`) that needs no file
    of the user's, word for word (the embedded sample's nine days cover its t1)."""
    import shlex

    lines = [
        line
        for line in (ROOT / "docs" / "guides" / "app.md").read_text().splitlines()
        if line.startswith("python apps/track.py field=netcdf") and "field.path" not in line
    ]
    assert lines, "the app's guide lost its ocean command"
    for k, line in enumerate(lines):
        run_dir = tmp_path / str(k)
        _run([*shlex.split(line)[2:], f"hydra.run.dir={run_dir}", "progress=false"], cwd=tmp_path)
        assert (run_dir / "trajectories.nc").stat().st_size > 0
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status_counts"]["active"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exodus", "ensight"])
def test_solver_files_run_through_the_app_with_every_output(tmp_path, kind):
    """An Exodus file and an EnSight case of a flow through a box of hexahedra (in at x = 0,
    out at x = 2): the default run finds the outlet from the flow, particles leave there, and
    every output is written."""
    import meshes
    from ensight import write_ensight

    from flowkit.io.vtk import unstructured_grid

    points, cells, types = meshes.mesh("hexahedron", shape=(6, 4, 4))
    flow = np.column_stack(
        [1.0 + 0 * points[:, 0], 0.1 * np.sin(3 * points[:, 0]) * points[:, 1] * (1 - points[:, 1]), 0 * points[:, 0]]
    )
    grid = unstructured_grid(points, cells, types, {"velocity": flow})
    if kind == "exodus":
        path = tmp_path / "flow.exo"
        writer = vtk.vtkIOSSWriter()
        writer.SetFileName(str(path))
        writer.SetInputData(grid)
        assert writer.Write() == 1
    else:
        path = write_ensight(tmp_path, "flow", [grid])
    run = tmp_path / "run"
    result = _run(
        [
            f"hydra.run.dir={run}",
            APP_CACHE,
            "field=vtk",
            f"field.path={path}",
            "seeds=random",
            "seeds.n=300",
            "t1=3.0",
            "dt=0.02",
            "progress=false",
        ],
        cwd=tmp_path,
    )
    assert "faces the flow leaves through are open" in result.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status_counts"]["out_of_domain"] > 250 and summary["inputs"]["field.path"] == str(path)
    assert "field.dataset" not in summary["inputs"]  # the sample's name, not what was read
    for name in summary["files"] + ["track.log"]:
        assert (run / name).stat().st_size > 0
    assert {
        "trajectories.npz",
        "trajectories.vtp",
        "particles.pvd",
        "trajectories.png",
        "snapshot.png",
        "density.png",
        "summary.json",
    } <= set(summary["files"])


def test_an_output_folder_that_cannot_be_written_is_named_in_one_line(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    result = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "track.py"), f"hydra.run.dir={blocked / 'run'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: output folder {blocked / 'run'} cannot be written (Not a directory); "
        "give hydra.run.dir= a folder you can write"
    ]
