"""Every config option composes and instantiates; the library entry point runs a small job."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from helpers import APP_CACHE
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

import flowkit as fk
from flowkit.config import build, run_track

CONF = Path(__file__).resolve().parents[1] / "conf"
GROUPS = {
    group: sorted(p.stem for p in (CONF / group).glob("*.yaml"))
    for group in ("field", "boundary", "integrator", "seeds", "output")
}
FIELD_DIM = {"grid": 2, "double_gyre": 2, "rotation": 2, "taylor_green": 2, "abc": 3, "vtk": 2, "netcdf": 2}


@pytest.fixture(scope="module")
def vtk_series(tmp_path_factory):
    return fk.datasets.double_gyre_vti_series(tmp_path_factory.mktemp("vtk"), nx=21, ny=11, times=[0.0, 1.0, 2.0])


def _compose(overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="track", overrides=[APP_CACHE, *overrides])


def test_groups_are_complete():
    assert set(GROUPS["field"]) >= {"double_gyre", "abc", "rotation", "taylor_green", "grid", "vtk", "netcdf"}
    assert set(GROUPS["boundary"]) >= {"none", "periodic", "reflective", "clamp", "absorbing"}
    assert set(GROUPS["integrator"]) == {
        "euler",
        "midpoint",
        "heun",
        "rk4",
        "tsit5",
        "dopri5",
        "dopri8",
        "euler_maruyama",
        "horizontal_diffusion",
        "wind_mixing",
    }
    assert set(GROUPS["seeds"]) >= {"grid", "random", "line", "file"}


@pytest.mark.parametrize("field", GROUPS["field"])
@pytest.mark.parametrize("boundary", GROUPS["boundary"])
def test_field_and_boundary_compose(field, boundary, vtk_series):
    dim = FIELD_DIM[field]
    overrides = [f"field={field}", f"boundary={boundary}", "seeds=random", "seeds.n=10"]
    if field == "vtk":
        overrides.append(f"field.path={vtk_series}")
    if boundary == "mixed" and dim == 3:
        overrides.append("boundary.modes=[periodic,reflective,absorbing]")
    f, seeds, integrator, b, _ = build(_compose(overrides))
    assert isinstance(f, fk.fields.AbstractField) and f.dim == dim
    assert isinstance(b, fk.boundaries.AbstractBoundary) and seeds.shape == (10, dim)


def test_default_field_is_the_embedded_vtk_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWKIT_DATA", str(tmp_path))
    field, seeds, _, _, _ = build(_compose([]))
    assert isinstance(field, fk.MeshField) and field.dim == 3 and field.kinds == ("tetra",)
    assert (tmp_path / "cellular_box_v1" / "cellular_box_v1.pvd").exists()
    assert seeds.shape == (17**3, 3)  # seeds.n = 5000 spread over the unit cube


@pytest.mark.parametrize("integrator", GROUPS["integrator"])
def test_integrators_compose(integrator):
    _, _, built, _, _ = build(_compose([f"integrator={integrator}", "field=double_gyre"]))
    assert isinstance(built, fk.integrators.AbstractIntegrator)


@pytest.mark.parametrize("seeds", GROUPS["seeds"])
def test_seeds_compose(seeds, tmp_path):
    overrides = ["field=double_gyre", f"seeds={seeds}"]
    if seeds == "file":
        np.savez(tmp_path / "s.npz", positions=np.array([[0.5, 0.5], [1.5, 0.5]]))
        overrides.append(f"seeds.path={tmp_path / 's.npz'}")
    _, positions, _, _, _ = build(_compose(overrides))
    assert positions.ndim == 2 and positions.shape[1] == 2 and len(positions) > 0


def test_unknown_options_are_config_errors():
    with pytest.raises(ConfigCompositionException, match="bogus"):
        _compose(["bogus=1"])
    with pytest.raises(ConfigCompositionException, match="rk5"):
        _compose(["integrator=rk5"])


def test_run_track_writes_outputs(tmp_path, caplog):
    cfg = _compose(["field=double_gyre", "seeds.resolution=[10,5]", "t1=1.0", "dt=0.01", "progress=false"])
    with caplog.at_level(logging.INFO, logger="flowkit"):
        traj = run_track(cfg, output_dir=tmp_path)
    assert (
        "cpu" in caplog.text
        and "float32" in caplog.text
        and "50 particles" in caplog.text
        and "seeds: 50 from a 10×5 lattice" in caplog.text
    )
    assert "done: " in caplog.text and "wrote trajectories.npz, trajectories.vtp, particles.pvd" in caplog.text
    written = (
        "trajectories.npz",
        "trajectories.vtp",
        "particles.pvd",
        "trajectories.png",
        "snapshot.png",
        "density.png",
        "animation.mp4",
        "summary.json",
    )
    for name in written:
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_particles"] == 50 and summary["n_steps"] == 100 and summary["status_counts"]["active"] == 50
    assert summary["particle_steps_per_s"] > 0 and summary["versions"]["flowkit"] == fk.__version__
    assert {"jax", "jaxlib", "equinox", "vtk", "numpy"} <= {k for k, v in summary["versions"].items() if v}
    assert (
        sorted(summary["files"]) == sorted(written)
        and summary["config"]["seeds"]["resolution"] == [10, 5]
        and summary["config"]["dt"] == 0.01
    )
    with np.load(tmp_path / "trajectories.npz") as saved:
        np.testing.assert_array_equal(saved["positions"], traj.positions)
        assert {"times", "positions", "status"} <= set(saved.files)


@pytest.mark.parametrize("integrator", ["tsit5", "euler_maruyama"])
def test_adaptive_and_stochastic_runs_from_config(integrator, tmp_path):
    overrides = [
        "field=double_gyre",
        f"integrator={integrator}",
        "seeds.resolution=[6,3]",
        "t1=1.0",
        "dt=0.1",
        "save_every=1",
        "progress=false",
        "output=minimal",
    ]
    if integrator == "tsit5":
        overrides += ["integrator.rtol=1e-8", "integrator.exit_event=true"]
    traj = run_track(_compose(overrides), output_dir=tmp_path)
    assert traj.positions.shape == (11, 18, 2)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["integrator"] in ("Diffrax", "EulerMaruyama")


def test_ocean_diffusion_composes_kh_in_m2_per_s():
    _, _, integrator, _, _ = build(
        _compose(
            [
                "field=netcdf",
                "integrator=horizontal_diffusion",
                "integrator.diffusivity.Kh=25",
                "seeds=random",
                "seeds.n=4",
                "seeds.bounds=[[-75,30],[-40,45]]",
            ]
        )
    )
    assert isinstance(integrator, fk.EulerMaruyama) and isinstance(integrator.diffusivity, fk.diffusion.Horizontal)
    assert float(integrator.diffusivity.Kh) == 25.0


def test_profile_trace_is_written(tmp_path):
    cfg = _compose(
        ["field=double_gyre", "seeds.resolution=[4,2]", "t1=0.5", "progress=false", "output=minimal", "profile=true"]
    )
    run_track(cfg, output_dir=tmp_path)
    assert any(p.is_file() for p in (tmp_path / "profile").rglob("*"))


@pytest.mark.parametrize("boundary", ["inlet_outlet", "continuous_inlet", "mesh_reflect", "mesh_absorb"])
def test_flow_through_boundaries_run_on_the_pipe_sample(boundary, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWKIT_DATA", str(tmp_path / "data"))
    overrides = [
        "field=vtk",
        "field.dataset=pipe",
        f"boundary={boundary}",
        "seeds=random",
        "seeds.n=100",
        "t1=1.0",
        "dt=0.02",
        "progress=false",
        "output=minimal",
    ]
    if boundary == "continuous_inlet":
        overrides += ["boundary.rate=100", "boundary.slots=200"]
    traj = run_track(_compose(overrides), output_dir=tmp_path)
    assert np.all(traj.status[0] != fk.Status.OUT_OF_DOMAIN)  # random seeds are drawn inside the pipe, not in its box
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts = summary["status_counts"]
    if boundary == "continuous_inlet":
        assert traj.n_particles == 300 and summary["restarts"] == 100 and summary["lost_releases"] == 0
    elif boundary == "inlet_outlet":
        assert summary["restarts"] > 0 and counts["absorbed"] == 0
    elif boundary == "mesh_absorb":
        assert counts["absorbed"] + counts["out_of_domain"] + counts["active"] == 100 and summary["restarts"] == 0
    else:
        assert counts["absorbed"] == 0 and traj.generation is None


@pytest.mark.parametrize("name", ["tracer", "inertial", "buoyant", "plastic", "pelagic_egg", "sediment"])
def test_particle_models_compose(name):
    overrides = [f"particles={name}"] + (
        ["particles.diameter=2e-5", "particles.drag=schiller_naumann"] if name == "inertial" else []
    )
    *_, particles = build(_compose(overrides))
    assert type(particles).__name__ == name.title().replace("_", "")
    if name == "inertial":
        assert float(particles.diameter) == 2e-5 and particles.drag == "schiller_naumann"


def test_a_leeway_class_composes_by_name_or_number():
    try:
        fk.io.leeway_classes()
    except FileNotFoundError as error:  # no OpenDrift installed and PyPI out of reach
        pytest.skip(str(error))
    *_, particles = build(_compose(["particles=leeway", "particles.name=LIFE-RAFT-DB-11"]))
    assert isinstance(particles, fk.particles.Leeway) and particles.name == "LIFE-RAFT-DB-11" and particles.random
    *_, particles = build(_compose(["particles=leeway", "particles.name=1", "particles.jibe_probability=0.1"]))
    assert particles.name == "PIW-1" and float(particles.jibe_probability) == 0.1


def test_typed_keys_are_checked_before_hydra_but_sweeps_pass(capsys):
    from flowkit.app_errors import check_overrides

    check_overrides(["seed=range(0,3)", "batch_size=100,200", "courant=0.25", "batch_size=null"], "track")
    for arg, line in (
        ("seed=1.5", "error: seed=1.5: seed takes an integer"),
        ("batch_size=100,nan", "error: batch_size=nan: batch_size takes an integer (or null)"),
        ("++field._convert_=none", "error: ++field._convert_=none: _convert_ is not a setting"),
    ):
        with pytest.raises(SystemExit) as ended:
            check_overrides([arg], "track")
        assert ended.value.code == 2 and capsys.readouterr().err.startswith(line)


def test_run_times_come_from_the_data_and_are_checked_before_seeding(vtk_series, caplog):
    """Without t0 and t1 a run spans the data's times; a t0 outside them or a dt longer than the
    run is refused before seeding (a field without times runs t0 + 2 s, said)."""
    from flowkit.app_defaults import run_times

    series = ["field=vtk", f"field.path={vtk_series}", "seeds.resolution=[4,3]"]
    cfg = _compose(series)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        run_times(cfg, fk.io.read(vtk_series))
    assert (cfg.t0, cfg.t1) == (0.0, 2.0) and "t1: 2 s (the data's last time)" in caplog.text
    with pytest.raises(ValueError, match=r"t0=3 and t1=4 lie outside the field's times \[0, 2\] s"):
        build(_compose([*series, "t0=3", "t1=4"]))
    with pytest.raises(ValueError, match=r"dt=5 is longer than the run \(t0=0 to t1=2\)"):
        build(_compose([*series, "dt=5"]))
    with pytest.raises(ValueError, match=r"dt=5 is longer than the run"):  # all given: before reading
        build(_compose(["field=vtk", "field.path=/nonexistent/flow.vtu", "t0=0", "t1=2", "dt=5"]))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flowkit"):
        run_times(_compose([*series, "t0=0", "t1=0.01"]), fk.io.read(vtk_series))
    assert "covers 0.5 % of the data's record of 2 s" in caplog.text
    cfg = _compose(["field=double_gyre"])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flowkit"):
        run_times(cfg, fk.fields.DoubleGyre())
    assert (cfg.t0, cfg.t1) == (0.0, 2.0) and "the field has no times: t0 + 2 s; give t1" in caplog.text
    assert cfg.dt == 0.005 and "a closed-form flow has none: the run in 400 steps" in caplog.text  # dt=auto


def test_drawn_seeds_start_at_the_surface_for_windage_but_a_files_do_not(caplog):
    from flowkit.app_defaults import surface_seeds_for

    seeds = np.array([[5.0, 55.0, 12.0], [6.0, 56.0, 40.0]])
    with caplog.at_level(logging.INFO, logger="flowkit"):
        drawn = surface_seeds_for(fk.particles.Windage(0.03), seeds, _compose(["seeds=random"]))
    np.testing.assert_array_equal(drawn, [[5.0, 55.0, 0.0], [6.0, 56.0, 0.0]])
    assert "started at the surface, where Windage acts (above 0.1 m)" in caplog.text
    np.testing.assert_array_equal(surface_seeds_for(fk.particles.Windage(0.03), seeds, _compose(["seeds=file"])), seeds)
    np.testing.assert_array_equal(surface_seeds_for(None, seeds, _compose(["seeds=random"])), seeds)


def test_an_ocean_lattice_is_spread_by_distance_not_hundreds_of_levels_deep():
    from flowkit.app_defaults import grid_resolution

    box = [[4.0, 59.0, 0.0], [8.0, 62.0, 3000.0]]  # 4° x 3° of the Nordic Seas, 3 km deep
    ocean = grid_resolution(1000, box, spherical=True)
    assert ocean[2] == 2 and 900 <= np.prod(ocean) <= 1100 and ocean[1] > ocean[0]  # a degree of lon is shorter
    assert grid_resolution(1000, box) == [2, 2, 250]  # the box's own units: metres of depth dominate
    assert np.prod(grid_resolution(300, [[0, 0, 0], [10, 1, 0.01]])) == pytest.approx(300, rel=0.1)


def test_a_picture_that_fails_is_said_and_not_listed(tmp_path, caplog, monkeypatch):
    import flowkit.app_outputs

    def broken(*args, **kwargs):
        raise MemoryError("207589536000 bytes")

    monkeypatch.setattr(flowkit.app_outputs, "plot_snapshot", broken)
    cfg = _compose(["field=double_gyre", "seeds.resolution=[4,3]", "t1=0.5", "dt=0.05", "progress=false"])
    with caplog.at_level(logging.WARNING, logger="flowkit"):
        run_track(cfg, output_dir=tmp_path)
    assert "snapshot.png not drawn (MemoryError: 207589536000 bytes)" in caplog.text
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "snapshot.png" not in summary["files"] and {"trajectories.png", "density.png"} <= set(summary["files"])
    assert not (tmp_path / "snapshot.png").exists()


def test_defaults_fit_an_openfoam_case_from_0_5_and_a_three_day_ocean_file(tmp_path, caplog):
    """With nothing given, a run spans the data: an OpenFOAM case whose first time is 0.5 runs
    from 0.5 (no "t0=0 lies outside"), a 3-day ocean file for its 3 days; each with `dt=auto`
    (a Courant number of at most 0.5 in the fastest cell, no step over the data's time step) and
    50 to 100 frames (every step of a shorter run)."""
    import pandas as pd
    import xarray as xr
    from foam import write_case

    from flowkit.tracker.plan import AUTO_FRAMES

    case = write_case(
        tmp_path / "case", lambda t, x: np.stack([1.0 + 0 * x[:, 0], 0 * x[:, 0], 0 * x[:, 0]], 1), times=(0.5, 1.0)
    )
    times = pd.date_range("2020-03-01", periods=73, freq="h")
    u = np.full((len(times), 11, 21), 0.2, np.float32)
    ocean = xr.Dataset(
        {
            "uo": (("time", "lat", "lon"), u, {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"}),
            "vo": (("time", "lat", "lon"), 0 * u, {"standard_name": "northward_sea_water_velocity", "units": "m s-1"}),
        },
        coords={
            "time": times,
            "lon": ("lon", np.linspace(0, 2, 21), {"units": "degrees_east"}),
            "lat": ("lat", np.linspace(50, 51, 11), {"units": "degrees_north"}),
        },
    )
    ocean.to_netcdf(tmp_path / "ocean.nc")
    for field, span in (
        (["field=vtk", f"field.path={case}"], (0.5, 1.0)),
        (["field=netcdf", f"field.path={tmp_path / 'ocean.nc'}"], (0.0, 3 * 86400.0)),
    ):
        cfg = _compose([*field, "seeds=random", "seeds.n=20", "progress=false", "output=minimal"])
        traj = run_track(cfg, output_dir=tmp_path / field[0])
        assert (float(traj.times[0]), float(traj.times[-1])) == pytest.approx(span)
        frames = len(traj.times) - 1
        assert frames == traj.stats.n_steps or AUTO_FRAMES <= frames <= 2 * AUTO_FRAMES
        assert 0 < traj.stats.courant <= 0.5 and (traj.status == fk.Status.ACTIVE).any()
    assert traj.stats.n_steps == 72  # the ocean's: no step spans more than the data's hour


def test_statistics_from_config_are_written_as_cf_netcdf(tmp_path):
    """`statistics=[grid,polygons]` with polygons from a GeoJSON and `output.tracks=false`: the
    app writes each dataset, equal to the run's own; so does a run streamed to its store."""
    import shapely
    import xarray as xr

    sites = {"type": "FeatureCollection", "features": []}
    for name, box in {"west": (0.2, 0.2, 0.8, 0.8), "east": (1.2, 0.2, 1.8, 0.8)}.items():
        geometry = shapely.geometry.mapping(shapely.box(*box))
        sites["features"].append({"type": "Feature", "properties": {"name": name}, "geometry": geometry})
    (tmp_path / "sites.geojson").write_text(json.dumps(sites))
    overrides = ["field=double_gyre", "seeds.resolution=[20,10]", "t1=2.0", "dt=0.01", "save_every=10"]
    overrides += ["progress=false", "output=minimal", "output.tracks=false", "statistics=[grid,polygons]"]
    overrides += [f"statistics.polygons.polygons={tmp_path / 'sites.geojson'}", "statistics.grid_counts.window=0.5"]
    traj = run_track(_compose(overrides), output_dir=tmp_path)
    assert traj.positions.shape[0] == 2 and set(traj.statistics) == {"grid_counts", "polygons"}
    for name, dataset in traj.statistics.items():
        with xr.open_dataset(tmp_path / f"statistics_{name}.nc") as written_back:
            xr.testing.assert_identical(written_back.load(), dataset)
    grid = traj.statistics["grid_counts"]
    assert grid["count"].shape == (4, 50, 100) and int(grid["count"].sum()) == 200 * 21
    assert list(traj.statistics["polygons"]["polygon"].values) == ["west", "east"]
    stored = run_track(_compose([*overrides, "output.store=true"]), output_dir=tmp_path / "store")
    assert (tmp_path / "store" / "trajectories.zarr" / "statistics" / "polygons").is_dir()
    for name, dataset in traj.statistics.items():
        xr.testing.assert_identical(stored.statistics[name], dataset)
        with xr.open_dataset(tmp_path / "store" / f"statistics_{name}.nc") as written_back:
            xr.testing.assert_identical(written_back.load(), dataset)


def test_the_apps_drawn_seeds_start_at_a_3d_oceans_surface_unless_bounds_say_otherwise(tmp_path, caplog):
    """A lattice or random draw through a 3-D ocean's depths puts few seeds near the surface,
    where drift is studied (a GLORYS file's lattice fell at 972 m and 2 902 m only): without
    `seeds.bounds` they start at its shallowest depth (logged); with bounds, where asked."""
    import xarray as xr

    from flowkit.config import build_field, build_seeds

    lon, lat, depth = np.arange(0.0, 5.01, 0.5), np.arange(50.0, 53.01, 0.5), np.array([6.0, 50.0, 500.0])
    shape = (2, len(depth), len(lat), len(lon))
    xr.Dataset(
        {
            "uo": (("time", "depth", "latitude", "longitude"), np.full(shape, 0.2), {"units": "m s-1"}),
            "vo": (("time", "depth", "latitude", "longitude"), np.full(shape, 0.1), {"units": "m s-1"}),
        },
        coords={
            "time": ("time", np.array(["2024-01-01", "2024-01-02"], "datetime64[ns]")),
            "depth": ("depth", depth, {"units": "m", "positive": "down", "standard_name": "depth"}),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
        },
    ).to_netcdf(tmp_path / "ocean.nc")
    for seeds in ("grid", "random"):
        cfg = _compose(["field=netcdf", f"field.path={tmp_path / 'ocean.nc'}", f"seeds={seeds}", "seeds.n=200"])
        field = build_field(cfg)
        with caplog.at_level(logging.INFO, logger="flowkit"):
            made = build_seeds(cfg, field)
        assert "seeds: at the surface of the 3-D ocean field (depth 6 m, its shallowest)" in caplog.text
        assert np.all((made[:, 2] >= 6.0) & (made[:, 2] <= 6.001)) and len(np.unique(made[:, :2], axis=0)) == len(made)
        cfg.seeds.bounds = [[0.5, 50.5, 10.0], [4.5, 52.5, 400.0]]
        deep = build_seeds(cfg, field)
        assert deep[:, 2].min() >= 10.0 and deep[:, 2].max() > 100.0
