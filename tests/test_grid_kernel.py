"""The CPU grid kernel (`flowkit.native`, `flowkit.tracker.grid_kernel`) against the JAX step:
A-grids of gridded products (global and periodic in longitude, regional, z-levels, in metres),
on uniform and rectilinear axes, time series and steady fields, land, particles that leave the
grid or beach, seeds that wait for their release, in float64 and float32."""

import logging
from pathlib import Path

import jax
import numpy as np
import pytest
from helpers import advance_without_host_traffic, arrays_in_every_build

import flowkit as fk
from flowkit.tracker import kernels, seam
from flowkit.tracker.drift_inputs import DriftInputs
from flowkit.tracker.grid_kernel import GRID, GridInputs, GridResults


def gridded(kind="global", dtype="float64", times=3, land=True, **options):
    """A gridded current of `kind`: `global` (2° in longitude, periodic, latitudes to 80°),
    `regional` (1/4° of the North Sea, latitudes spaced as on a Mercator grid: rectilinear),
    `levels` (the regional grid with six z-levels spaced unevenly and a small upward flow) or
    `metres` (a 100 x 60 km box). The flow turns in space and strengthens in time, carries some
    particles off a regional grid and some onto an island of land."""
    if kind == "global":
        lon, lat = np.arange(-180.0, 180.0, 2.0), np.linspace(-80.0, 80.0, 81)
        centre, half, speed = (0.0, 0.0), 20.0, 0.5
    elif kind == "metres":
        lon, lat = np.linspace(0.0, 1e5, 41), np.linspace(0.0, 6e4, 25)
        centre, half, speed = (7e4, 3e4), 8e3, 0.6
    else:
        lon = np.arange(0.0, 6.01, 0.25)
        lat = np.degrees(np.arctan(np.sinh(np.linspace(np.arcsinh(np.tan(np.radians(52))), 1.28, 30))))
        centre, half, speed = (3.5, 55.0), 0.4, 0.6
    axes = [lon, lat] + ([np.array([0.0, 5.0, 15.0, 40.0, 100.0, 300.0])] if kind == "levels" else [])
    shape = tuple(len(a) for a in axes)
    x, y = np.meshgrid(lon, lat, indexing="ij")
    a = np.radians(x) if kind == "global" else (x - lon[0]) / (lon[-1] - lon[0]) * 2 * np.pi
    b = (y - lat[0]) / (lat[-1] - lat[0]) * np.pi
    u = np.stack([speed * (0.6 + 0.4 * np.cos(b)) + 0.2 * np.sin(3 * a), 0.3 * np.sin(2 * a) * np.cos(b)], -1)
    if kind == "levels":
        u = np.stack([u * np.exp(-z / 200) for z in axes[2]], 2)
        u = np.concatenate([u, np.broadcast_to(-2e-4 * np.cos(a)[..., None, None], shape + (1,))], -1)
    data = np.stack([u * (1 + 0.3 * k) for k in range(times)])
    island = (np.abs(x - centre[0]) < half) & (np.abs(y - centre[1]) < half)
    if kind == "levels":
        island = np.broadcast_to(island[..., None], shape)
    return fk.GridField.from_arrays(
        data if times > 1 else data[0],
        axes,
        np.arange(times) * 43200.0 if times > 1 else None,
        periodic=kind == "global",
        dtype=dtype,
        spherical=kind != "metres",
        land=island if land else None,
        **options,
    )


def seeds(field, n=400, seed=0):
    """Seeds over the field's box (some on the island), at depths over its levels."""
    rng = np.random.default_rng(seed)
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    x = lo[:2] + rng.uniform(0.02, 0.98, (n, 2)) * (hi[:2] - lo[:2])
    if field.dim == 2:
        return x
    return np.column_stack([x, rng.uniform(0.0, 280.0, n)])


def run(
    field, x, dtype, native, monkeypatch, t0=0.0, t1=24 * 3600.0, dt=1800.0, boundary=None, integrator=None, **kwargs
):
    monkeypatch.setenv("FLOWKIT_NATIVE", "1" if native else "0")
    integrator = fk.RK4() if integrator is None else integrator
    track = fk.tracker.TrackRun(field, x, t0, t1, dt, integrator, boundary, 4, dtype=dtype, **kwargs)
    assert track._kwargs()["kernel"] == ("grid" if native else None)
    return track.run()


def assert_same(native, reference, atol):
    """Statuses and exit times alike, positions to `atol` (degrees or metres; depths to metres' `atol`)."""
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-6)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "options",
    [dict(), dict(kind="regional"), dict(kind="levels"), dict(kind="metres"), dict(kind="regional", times=1)],
    ids=["global", "regional", "levels", "metres", "steady"],
)
def test_the_kernel_tracks_as_the_jax_step(options, monkeypatch):
    """Positions to 1e-9 of a cell (float64), statuses and exit times alike. Around the globe
    particles cross the dateline; off a regional grid they leave (`OUT_OF_DOMAIN`); in metres
    `fk.Reflective` walls on the box mirror back every end that left it. Particles beach on the
    island (`BEACHED`), seeds on it start there, and half of the seeds wait for their release."""
    kind = options.get("kind", "global")
    field = gridded(**options)
    x = seeds(field)
    if kind == "global":
        x[:40, 0] = 179.8  # half of them released at the start: they cross the dateline
    release = np.where(np.arange(len(x)) % 2 == 0, 0.0, 5 * 3600.0)
    boundary = fk.Reflective(field.bounds) if kind == "metres" else None
    native, reference = (
        run(field, x, "float64", on, monkeypatch, t_release=release, boundary=boundary) for on in (True, False)
    )
    cell = {"global": 2.0, "metres": 2500.0}.get(kind, 0.25)
    assert_same(native, reference, 1e-9 * cell)
    status = native.status[-1]
    assert np.sum(status == fk.Status.BEACHED) > 5
    if kind == "global":
        lon = np.asarray(native.positions[..., 0])
        assert np.all((lon >= -180.0) & (lon < 180.0))
        assert np.any(np.abs(np.diff(lon, axis=0)) > 180.0)  # a step that crossed the dateline
    elif kind == "metres":
        assert not np.any(status == fk.Status.OUT_OF_DOMAIN)
    else:
        assert np.sum(status == fk.Status.OUT_OF_DOMAIN) > 5
    moved = np.linalg.norm(native.positions[-1, :, :2] - x[:, :2], axis=1)
    assert np.median(moved) > 0.15 * cell


@pytest.mark.parametrize("kind", ["global", "levels"])
def test_float32_fields_track_as_the_jax_step(kind, monkeypatch):
    """In float32 the kernel's roundings differ from XLA's in the last bits: positions agree to
    a ten-thousandth of a cell, statuses alike."""
    field = gridded(kind, dtype="float32")
    x = seeds(field)
    native, reference = (run(field, x, "float32", on, monkeypatch) for on in (True, False))
    cell = 2.0 if kind == "global" else 0.25
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=1e-4 * cell)
    np.testing.assert_allclose(native.positions[..., 2:], reference.positions[..., 2:], rtol=0, atol=1e-3)


def test_the_kernels_chunks_move_nothing_between_host_and_device(monkeypatch):
    """The chunks the kernel steps run with host<->device transfers disallowed, and another
    batch of the same shape compiles nothing."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = gridded("regional", dtype="float32")
    run = fk.tracker.TrackRun(field, seeds(field, 64), 0.0, 24 * 3600.0, 1800.0, fk.RK4(), None, 4)
    assert run._kwargs()["kernel"] == "grid"
    before, frames = advance_without_host_traffic(run, chunks=3)
    assert np.all(np.isfinite(np.asarray(frames.positions)))
    again = fk.tracker.TrackRun(field, seeds(field, 64, seed=1), 0.0, 24 * 3600.0, 1800.0, fk.RK4(), None, 4)
    again.compile()
    assert fk.tracker.compile_count() == before


def test_the_kernels_declared_layout_is_the_seams():
    """The built kernel declares the buffers and attributes `tracker/grid_kernel.py` declares;
    one built from another layout is refused, listing the differences."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    kernel = fk.native.layout("grid")
    assert seam.mismatches(GRID, kernel) == []
    assert [name for name, _ in kernel.inputs] == [*GridInputs._fields[:-1], *DriftInputs._fields]
    assert [name for name, _ in kernel.results] == list(GridResults._fields)
    older = fk.native.Layout(kernel.inputs[:-1], kernel.results, kernel.attrs, {}, {}, {}, {"tableau_rows": 8})
    assert [line.split(":")[0] for line in seam.mismatches(GRID, older)] == ["inputs", "tableau_rows"]


def test_the_kernel_takes_only_what_it_computes_alike():
    """Tracers on a multilinear A-grid with no-slip coasts under `fk.Open` or `fk.Reflective`,
    stepped by an explicit Runge–Kutta method in the field's precision on CPUs; C-grids,
    `nearest`, free-slip coasts, random walks, particle models, other walls and GPUs take the
    JAX step."""

    def use(dtype="float32", platform="cpu", field_options=None, **kwargs):
        field = gridded(dtype="float32", **(field_options or {}))
        pieces = fk.tracker.TrackRun(field, seeds(field, 8), 0.0, 3600.0, 600.0, **kwargs).pieces
        return kernels.kernel_use(pieces, dtype, platform)

    assert use() == "grid"
    assert use(integrator=fk.Heun()) == "grid"
    assert use(boundary=fk.Reflective(((-180.0, -80.0), (180.0, 80.0)))) == "grid"
    assert use(field_options=dict(kind="levels")) == "grid"
    assert use(platform="gpu") is None
    assert use(dtype="float64") is None
    assert use(field_options=dict(staggering="C")) is None
    assert use(field_options=dict(interpolation="nearest")) is None
    assert use(field_options=dict(coast="freeslip")) is None
    assert use(field_options=dict(land=False, coast="freeslip")) == "grid"  # no land: no coast
    assert use(integrator=fk.EulerMaruyama(1e-4), key=jax.random.key(0)) is None
    assert use(particles=fk.particles.Aging()) is None
    assert use(boundary=fk.Clamp(((-180.0, -80.0), (180.0, 80.0)))) is None


def test_a_run_the_kernel_declines_says_so_and_why(monkeypatch, caplog):
    """A gridded run on a CPU that the kernel does not take says in its log that it runs the
    JAX step and what the kernel does not step; a run the kernel takes says nothing of the kind."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    x = seeds(gridded(dtype="float32"), 8)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        fk.track(gridded(dtype="float32", coast="freeslip"), x, 0.0, 3600.0, 600.0)
        fk.track(gridded(dtype="float32", staggering="C"), x, 0.0, 3600.0, 600.0)
        fk.track(gridded(dtype="float32"), x, 0.0, 3600.0, 600.0)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("steps: the JAX step")]
    assert said == [
        "steps: the JAX step: the CPU grid kernel does not step freeslip coasts",
        "steps: the JAX step: the CPU grid kernel does not step C-grids (it steps A-grids)",
    ]


BUILD_RUN = """
import numpy as np, flowkit as fk
from test_grid_kernel import gridded, seeds
out = {{}}
for name, kind, dtype in (("global32", "global", "float32"), ("levels64", "levels", "float64"),
                          ("regional32", "regional", "float32")):
    field = gridded(kind, dtype=dtype)
    run = fk.tracker.TrackRun(field, seeds(field, 100), 0.0, 86400.0, 1800.0, fk.RK4(), None, 4, dtype=dtype)
    assert run._kwargs()["kernel"] == "grid"
    traj = run.run()
    for array in ("positions", "status", "exit_time"):
        out[name + "_" + array] = getattr(traj, array)
np.savez("{path}", **out)
"""


def test_every_build_of_the_grid_kernel_tracks_as_the_baseline_build(tmp_path):
    """The grid kernel's wide builds (AVX2, AVX-512: each loaded where the CPU runs it) compute
    the baseline build's tracks bit for bit, around the globe, on z-levels and on a regional
    rectilinear grid, in both precisions."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    if len(fk.native.cpu_runs()) < 2:
        pytest.skip("this CPU runs only the baseline build")
    found = arrays_in_every_build(BUILD_RUN, tmp_path)
    baseline = found.pop("baseline")
    assert np.mean(baseline["regional32_status"][-1] == fk.Status.OUT_OF_DOMAIN) > 0.02  # some leave the grid
    for build, wide in found.items():
        for name, array in wide.items():
            np.testing.assert_array_equal(array, baseline[name], err_msg=f"{build}: {name}")


REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
PRODUCTS = {
    "glorys": (REAL / "glorys12_na" / "GLORYS_NA_2012.nc", 10 * 86400.0, 3600.0),
    "era5": (REAL / "era5_grib_to_netcdf" / "ERA5_regional_test_data.nc", 3600.0, 300.0),
}


@pytest.mark.parametrize("product", list(PRODUCTS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_real_gridded_products_track_as_the_jax_step(product, dtype, monkeypatch):
    """Copernicus' GLORYS12 at 1/12° (five depths to 3 868 m, NaN land, two times a year apart)
    and ECMWF's ERA5 10 m winds at 1/4° (packed int16, latitudes descending), as `fk.io.read`
    gives them: seeds over the whole box, at depths over the levels, track as in the JAX step
    (float64: to 1e-9 of a cell; the files' float32: to 1e-4), some beaching or leaving."""
    path, hours, dt = PRODUCTS[product]
    if not path.exists():
        pytest.skip(f"{path.parent.parent} is not here")
    field = fk.io.read(path, dtype=dtype)
    t0 = float(np.asarray(field.times)[0])
    x = seeds(field, 300, seed=2)
    lo, hi = (np.asarray(b, np.float64)[:2] for b in field.bounds)
    edge, low = np.arange(40), np.arange(40) % 20 < 10  # ten a hair inside each edge of the box
    axis = edge // 20
    x[edge, axis] = np.where(low, lo[axis] + 1e-2, hi[axis] - 1e-2)
    if field.dim == 3:
        x[:, 2] = np.random.default_rng(3).uniform(7.0, 1500.0, len(x))
    native, reference = (run(field, x, dtype, on, monkeypatch, t0=t0, t1=t0 + hours, dt=dt) for on in (True, False))
    cell = 1 / 12 if product == "glorys" else 0.25
    np.testing.assert_array_equal(native.status, reference.status)
    atol = (1e-9 if dtype == "float64" else 1e-4) * cell
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=atol)
    np.testing.assert_allclose(native.positions[..., 2:], reference.positions[..., 2:], rtol=0, atol=atol * 1e4)
    final = native.status[-1]
    assert np.sum(final == fk.Status.ACTIVE) > 100
    assert np.sum((final == fk.Status.BEACHED) | (final == fk.Status.OUT_OF_DOMAIN)) > 0
    moved = np.linalg.norm(native.positions[-1, :, :2] - x[:, :2], axis=1)
    assert np.median(moved[final == fk.Status.ACTIVE]) > 0.1 * cell


def test_samples_are_recorded_along_the_kernels_tracks(monkeypatch):
    """A tracer run on a field with `samples` (a temperature series at the nodes, a wind on a grid
    of its own) takes the kernel, and records the samples along its tracks as the JAX step does."""
    base = gridded("regional")
    lon, lat = (np.asarray(a, np.float64) for a in base.axes)
    x, y = np.meshgrid(lon, lat, indexing="ij")
    temperature = np.stack([10.0 + 0.5 * x - 0.2 * y + k for k in range(3)])
    wind = fk.GridField.from_arrays(
        np.broadcast_to([8.0, -3.0], (13, 9, 2)).copy(),
        [np.linspace(-1, 7, 13), np.linspace(51, 60, 9)],
        spherical=True,
    )
    field = gridded("regional", samples={"temperature": temperature, "wind": wind})
    x0 = seeds(field, 200)
    native, reference = (run(field, x0, "float64", on, monkeypatch) for on in (True, False))
    assert_same(native, reference, 1e-9 * 0.25)
    assert set(native.samples) == {"temperature", "wind"}
    for name in native.samples:
        np.testing.assert_allclose(native.samples[name], reference.samples[name], rtol=1e-9, atol=1e-9)
    assert np.all(np.isfinite(np.asarray(native.samples["temperature"])[0]))
    wet = np.asarray(native.status[-1]) == fk.Status.ACTIVE
    np.testing.assert_allclose(
        np.asarray(native.samples["wind"])[-1, wet], np.broadcast_to([8.0, -3.0], (wet.sum(), 2))
    )
