"""No result is replaced unasked, a failed write leaves no partial file and the earlier one
whole, runs started together get their own folders, and every file of a series is read on the
first file's grid (issue 35)."""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from helpers import APP_CACHE, HANG

import flowkit as fk

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = [".npz", ".nc", ".zarr", ".vtp", ".pvd"]


@pytest.fixture(scope="module")
def traj():
    field = fk.fields.DoubleGyre()
    return fk.track(
        field, fk.seeding.uniform_grid((4, 2), field.bounds, include_boundaries=False), 0.0, 1.0, 0.1, save_every=5
    )


def _contents(path: Path) -> dict:
    """Every file under `path` (or `path` itself; a `.pvd` with its folder of clouds) and its bytes."""
    tops = [path, path.with_suffix("")] if path.suffix == ".pvd" else [path]
    files = [f for top in tops for f in ([top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()))]
    return {str(p.relative_to(path.parent)): p.read_bytes() for p in files}


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_save_refuses_an_existing_path_unless_asked(tmp_path, traj, suffix):
    path = traj.save(tmp_path / f"t{suffix}")
    before = _contents(path)
    with pytest.raises(FileExistsError, match=rf"t\{suffix} exists: pass overwrite=True"):
        traj.save(path)
    assert _contents(path) == before
    moved = fk.Trajectory(traj.times, traj.positions + 1.0, traj.status, traj.t_release, traj.exit_time)
    moved.save(path, overwrite=True)
    if suffix in (".npz", ".nc", ".zarr"):
        np.testing.assert_array_equal(fk.Trajectory.load(path).positions, traj.positions + 1.0)
    else:
        assert _contents(path) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {path.name, path.with_suffix("").name} if suffix == ".pvd" else {path.name}
    )  # no temporary left


def _full_disk(monkeypatch, suffix):
    """Make the writer of `suffix` write part of its file, then fail as a full disk does."""

    def fail(target):
        Path(target).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if suffix == ".npz":
        monkeypatch.setattr(np, "savez", lambda target, **_: fail(target))
    elif suffix == ".nc":
        monkeypatch.setattr(
            Path,
            "write_bytes",
            lambda self, data, _real=Path.write_bytes: (
                _real(self, b"partial"),
                (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")),
            ),
        )
    elif suffix == ".zarr":

        def to_zarr(self, target, **_):
            Path(target).mkdir()
            (Path(target) / "zarr.json").write_text("{")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(xr.Dataset, "to_zarr", to_zarr)
    else:
        import vtk
        import vtkmodules.vtkIOXML

        class FullWriter(vtk.vtkXMLPolyDataWriter):
            def Write(self):  # noqa: N802  (VTK's name)
                Path(self.GetFileName()).write_bytes(b"partial")
                return 0

            def GetErrorCode(self):  # noqa: N802
                return vtk.vtkErrorCode.OutOfDiskSpaceError

        monkeypatch.setattr(vtkmodules.vtkIOXML, "vtkXMLPolyDataWriter", FullWriter)  # where flowkit imports it


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_full_disk_is_one_line_and_leaves_the_earlier_file_whole(tmp_path, traj, suffix, monkeypatch):
    path = traj.save(tmp_path / f"t{suffix}")
    before = _contents(path)
    with monkeypatch.context() as patch:
        _full_disk(patch, suffix)
        with pytest.raises(
            OSError, match=rf"t\{suffix} was not written: No space left on device; any earlier t\{suffix} is unchanged"
        ) as error:
            traj.save(path, overwrite=True)
    assert "\n" not in str(error.value)
    assert _contents(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {path.name, path.with_suffix("").name} if suffix == ".pvd" else {path.name}
    )
    fresh = tmp_path / f"new{suffix}"
    with monkeypatch.context() as patch:
        _full_disk(patch, suffix)
        with pytest.raises(OSError, match="No space left on device"):
            traj.save(fresh)
    assert not fresh.exists() and not fresh.with_suffix("").exists()  # nothing under the final name


def test_a_streamed_store_is_not_replaced_unasked(tmp_path):
    field = fk.fields.DoubleGyre()
    seeds = fk.seeding.uniform_grid((4, 2), field.bounds, include_boundaries=False)
    store = tmp_path / "tracks.zarr"
    fk.track(field, seeds, 0.0, 1.0, 0.1, output=store)
    before = _contents(store)
    with pytest.raises(
        FileExistsError,
        match=r"tracks\.zarr exists \(a trajectory store; resume=True continues the run that made it\): "
        r"pass overwrite=True",
    ):
        fk.track(field, seeds[:3], 0.0, 1.0, 0.1, output=store)
    assert _contents(store) == before
    again = fk.track(field, seeds[:3], 0.0, 1.0, 0.1, output=store, overwrite=True)
    assert again.sizes["trajectory"] == 3


def _write_day(path, day, lon, lat):
    meta = {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"}
    u = (
        0.1 + 0.01 * np.cos(np.deg2rad(lon))[None, None, :] + 0 * lat[None, :, None]
    )  # depends on longitude: a misplaced axis shows
    xr.Dataset(
        {
            "uo": (("time", "latitude", "longitude"), u, meta),
            "vo": (
                ("time", "latitude", "longitude"),
                0.5 * u,
                {**meta, "standard_name": "northward_sea_water_velocity"},
            ),
        },
        coords={
            "time": ("time", np.array([f"2024-01-0{day}"], "datetime64[ns]")),
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
        },
    ).to_netcdf(path)


def test_a_series_file_on_0_360_longitudes_is_reordered_and_one_on_another_grid_refused(tmp_path):
    lon, lat = np.arange(-180.0, 180.0, 2.0), np.arange(-60.0, 61.0, 2.0)
    for day in (1, 2, 3):
        _write_day(tmp_path / f"day{day}.nc", day, lon, lat)
    reference = fk.io.read(str(tmp_path / "day*.nc"), dtype="float64")
    _write_day(tmp_path / "day2.nc", 2, np.mod(lon, 360.0), lat)  # the same day on 0-360 longitudes
    mixed = fk.io.read(str(tmp_path / "day*.nc"), dtype="float64")
    np.testing.assert_allclose(
        np.asarray(mixed.values), np.asarray(reference.values), rtol=1e-15
    )  # (cos of 180 + x and of x - 180 differ in the last bit)
    seeds = np.array([[-170.0, 10.0], [20.0, -30.0], [179.0, 0.0]])
    np.testing.assert_allclose(
        fk.track(mixed, seeds, 0.0, 2 * 86400.0, 3600.0, dtype="float64").positions,
        fk.track(reference, seeds, 0.0, 2 * 86400.0, 3600.0, dtype="float64").positions,
        rtol=0,
        atol=1e-10,
    )
    _write_day(tmp_path / "day3.nc", 3, np.arange(-180.0, 180.0, 4.0), lat)  # a coarser grid
    with pytest.raises(
        ValueError,
        match=r"day3\.nc: uo has shape \(90, 61\) on \('longitude', 'latitude'\), but .*day1\.nc has "
        r"\(180, 61\): every file of a series must be on the first file's grid",
    ):
        fk.io.read(str(tmp_path / "day*.nc"))


def _app(args, cwd):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.Popen(
        [sys.executable, str(ROOT / "apps" / "track.py"), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
def test_runs_and_sweeps_started_together_get_their_own_folders(tmp_path):
    job = [
        "field=double_gyre",
        "seeds=random",
        "seeds.n=50",
        "t1=0.2",
        "progress=false",
        APP_CACHE,
        "output=minimal",
    ]
    started = [
        _app([*job, "dt=0.01"], tmp_path),
        _app([*job, "dt=0.02"], tmp_path),
        _app(["-m", *job, "dt=0.01,0.05"], tmp_path),
        _app(["-m", *job, "dt=0.02,0.04"], tmp_path),
    ]
    for process in started:
        output = process.communicate(timeout=HANG)[0]
        assert process.returncode == 0, output
    runs = sorted(tmp_path.glob("outputs/*/*/summary.json"))
    assert len(runs) == 2 and sorted(json.loads(p.read_text())["dt"] for p in runs) == [0.01, 0.02]
    sweeps = sorted(tmp_path.glob("multirun/*/*/sweep_summary.csv"))
    assert len(sweeps) == 2
    for sweep in sweeps:
        for job_summary in sweep.parent.glob("*/summary.json"):
            overrides = (job_summary.parent / ".hydra" / "overrides.yaml").read_text()
            assert (
                f"dt={json.loads(job_summary.read_text())['dt']:g}" in overrides
            )  # each job's results beside its own overrides
        rows = sweep.read_text().splitlines()[1:]
        assert len(rows) == 2


def test_a_run_folder_holding_results_is_refused_unless_overwrite(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    args = [
        f"hydra.run.dir={tmp_path}",
        "field=double_gyre",
        "seeds.n=20",
        "t1=0.1",
        "progress=false",
        APP_CACHE,
        "output=minimal",
    ]
    refused = _app(args, tmp_path)
    output = refused.communicate(timeout=HANG)[0]
    assert (
        refused.returncode == 2
        and output.strip().splitlines()[-1]
        == f"error: output folder {tmp_path} holds another run's results (summary.json); give a new "
        "hydra.run.dir (or hydra.sweep.dir), or overwrite=true to replace them"
    )
    assert (tmp_path / "summary.json").read_text() == "{}"
    allowed = _app([*args, "overwrite=true"], tmp_path)
    output = allowed.communicate(timeout=HANG)[0]
    assert allowed.returncode == 0, output
    assert json.loads((tmp_path / "summary.json").read_text())["n_particles"] > 0
