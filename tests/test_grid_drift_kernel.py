"""Drifting particles in the CPU grid kernel (`native/drift_rules.h`, `tracker/drift_inputs.py`)
against the JAX step: windage, Stokes drift, leeway and rise velocities, alone and combined, from forcings on
grids of their own (winds on [0, 360) under currents on [-180, 180), time series, a 2-D wind
under 3-D currents, a sampled wave period, constant forcings), with releases, beaching and
leaving, in float64 and float32."""

import logging

import numpy as np
import pytest
from helpers import advance_without_host_traffic, arrays_in_every_build
from test_grid_kernel import PRODUCTS, assert_same, gridded, run, seeds

import flowkit as fk
from flowkit.tracker import drift_inputs, kernels

HOUR = 3600.0


def wind(dtype="float64", spherical=True, times=4):
    """A wind on a 3° grid of its own, longitudes on [0, 360), turning over 18 h (m/s); in
    metres over a box larger than `gridded("metres")`'s."""
    if spherical:
        lon, lat = np.arange(0.0, 360.0, 3.0), np.linspace(-86.0, 86.0, 44)
        a, b = np.meshgrid(np.radians(lon), np.radians(lat), indexing="ij")
    else:
        lon, lat = np.linspace(-2e4, 1.2e5, 30), np.linspace(-2e4, 8e4, 20)
        a, b = np.meshgrid(lon / 3e4, lat / 2e4, indexing="ij")
    slices = [
        np.stack([8.0 * np.cos(b) + 3.0 * np.sin(2 * a + k), 5.0 * np.sin(a - k) * np.cos(b)], -1) for k in range(times)
    ]
    return fk.GridField.from_arrays(
        np.stack(slices),
        [lon, lat],
        np.arange(times) * 6 * HOUR,
        periodic=(spherical, False),
        dtype=dtype,
        spherical=spherical,
    )


def stokes(dtype="float64"):
    """A surface Stokes drift on the wind's grid, steady (m/s)."""
    field = wind(dtype, times=2)
    values = 0.02 * np.asarray(field.values[0]) / 8.0
    return fk.GridField.from_arrays(
        values, [np.asarray(a) for a in field.axes], periodic=(True, False), dtype=dtype, spherical=True
    )


def surface_seeds(field, n=400):
    """Seeds over the field's box, half of them at the surface on z-levels."""
    x = seeds(field, n)
    if field.dim == 3:
        x[::2, 2] = 0.0
    return x


CASES = {
    "windage": (dict(), lambda: fk.particles.Windage(0.03), ("wind",)),
    "leeway, stokes": (
        dict(),
        lambda: fk.particles.Combined(fk.particles.Leeway(1.2, 0.4, 5.0, -3.0), fk.particles.StokesDrift()),
        ("wind", "stokes"),
    ),
    "levels: windage, stokes of a sampled period": (
        dict(kind="levels"),
        lambda: fk.particles.Combined(fk.particles.Windage(0.02), fk.particles.StokesDrift(period="wave_period")),
        ("wind", "stokes", "wave_period"),
    ),
    "metres: windage of a constant wind": (dict(kind="metres"), lambda: fk.particles.Windage(0.03), ("constant",)),
    "levels: buoyant, windage": (
        dict(kind="levels"),
        lambda: fk.particles.Combined(fk.particles.Buoyant(-2e-3), fk.particles.Windage(0.02, depth=5.0)),
        ("wind",),
    ),
    "buoyant": (dict(), lambda: fk.particles.Buoyant(2e-6, axis=1), ()),
}


def drifting(options, forcings, dtype="float64"):
    """`gridded(**options)` with the forcings named (each read as the drifts ask)."""
    made = {
        "wind": lambda: wind(dtype, spherical=options.get("kind") != "metres"),
        "stokes": lambda: stokes(dtype),
        "wave_period": lambda: fk.fields.Uniform((6.0,)),
        "constant": lambda: fk.fields.Uniform((4.0, -2.0)),
    }
    samples = {("wind" if name == "constant" else name): made[name]() for name in forcings}
    return gridded(dtype=dtype, samples=samples, **options)


@pytest.mark.parametrize("case", list(CASES))
def test_drifts_in_the_kernel_track_as_the_jax_step(case, monkeypatch):
    """Positions to 1e-9 of a cell (float64), statuses and exit times alike, the drift moving
    the particles well away from the current's tracks. Leeway's orientation alternates per
    particle; half of the seeds wait for their release."""
    options, model, forcings = CASES[case]
    field = drifting(options, forcings)
    x = surface_seeds(field)
    release = np.where(np.arange(len(x)) % 2 == 0, 0.0, 5 * HOUR)
    state = {"orientation": np.where(np.arange(len(x)) % 4 < 2, 1.0, -1.0)} if "leeway" in case else None
    boundary = fk.Reflective(field.bounds) if options.get("kind") == "metres" else None
    common = dict(t_release=release, boundary=boundary)
    native, reference = (
        run(field, x, "float64", on, monkeypatch, particles=model(), particle_state=state, **common)
        for on in (True, False)
    )
    cell = {"metres": 2500.0, "levels": 0.25}.get(options.get("kind", ""), 2.0)
    assert_same(native, reference, 1e-9 * cell)
    tracer = run(field, x, "float64", True, monkeypatch, **common)
    gone = np.linalg.norm(native.positions[-1, :, :2] - tracer.positions[-1, :, :2], axis=1)
    assert np.quantile(gone[::2], 0.75) > 0.02 * cell, np.quantile(gone[::2], [0.25, 0.5, 0.75])  # the drift moved them


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_real_currents_and_winds_drift_as_in_the_jax_step(dtype, monkeypatch):
    """GLORYS12 currents with ERA5's 10 m wind (regional, longitudes from -50°, another year: its
    first slice held, on its own time axis) as `fk.io.read` gives them, leeway and windage in
    the top levels: the kernel's tracks are the JAX step's (float64: 1e-9 of a cell; float32: 1e-4)."""
    (currents, hours, _), (winds, _, _) = PRODUCTS["glorys"], PRODUCTS["era5"]
    if not (currents.exists() and winds.exists()):
        pytest.skip(f"{currents.parent.parent} is not here")
    field = fk.io.read(currents, dtype=dtype, samples={"wind": fk.io.read(winds, dtype=dtype)})
    t0 = float(np.asarray(field.times)[0])
    x = seeds(field, 300, seed=2)
    x[:, 2] = np.random.default_rng(3).uniform(6.5, 20.0, len(x))
    model = fk.particles.Combined(fk.particles.Leeway(1.7, 0.5, 2.0, -1.0), fk.particles.Windage(0.02, depth=12.0))
    native, reference = (
        run(field, x, dtype, on, monkeypatch, t0=t0, t1=t0 + hours / 4, dt=HOUR, particles=model)
        for on in (True, False)
    )
    cell = 1 / 12
    np.testing.assert_array_equal(native.status, reference.status)
    atol = (1e-9 if dtype == "float64" else 1e-4) * cell
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=atol)
    tracer = run(field, x, dtype, True, monkeypatch, t0=t0, t1=t0 + hours / 4, dt=HOUR)
    gone = np.linalg.norm(native.positions[-1, :, :2] - tracer.positions[-1, :, :2], axis=1)
    assert np.median(gone) > 0.1 * cell


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_leeway_jibes_in_the_grid_kernel_as_in_the_jax_step(dtype, monkeypatch):
    """The leeway table's PIW-1 (each element's own coefficients, unequal sides, jibes at a high
    chance an hour) on a global grid with a wind series: the kernel draws each element's jibes
    from its key as the JAX step does: sides alike at every frame, positions to 1e-9 of a cell
    (float64) or 1e-4 (float32), and many elements jibed."""
    import equinox as eqx
    import jax

    field = drifting(dict(), ("wind",), dtype=dtype)
    model = eqx.tree_at(lambda m: m.jibe_probability, fk.io.leeway("PIW-1"), 0.3)
    native, reference = (
        run(field, surface_seeds(field), dtype, on, monkeypatch, particles=model, key=jax.random.key(4))
        for on in (True, False)
    )
    np.testing.assert_array_equal(native.status, reference.status)
    sides = native.variables["orientation"]
    np.testing.assert_array_equal(sides, reference.variables["orientation"])
    assert np.mean(sides[-1] != sides[0]) > 0.2
    atol = (1e-9 if dtype == "float64" else 1e-4) * 2.0
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=atol)


def test_float32_drifts_track_as_the_jax_step(monkeypatch):
    """In float32 the kernel's roundings differ from XLA's in the last bits: positions agree to
    a ten-thousandth of a cell, statuses alike."""
    field = drifting(dict(), ("wind", "stokes"), dtype="float32")
    model = fk.particles.Combined(fk.particles.Windage(0.03), fk.particles.StokesDrift())
    native, reference = (run(field, seeds(field), "float32", on, monkeypatch, particles=model) for on in (True, False))
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=2e-4 * 2.0)


def test_the_kernel_takes_the_drifts_it_computes_alike(caplog, monkeypatch):
    """Windage, StokesDrift, Leeway and Buoyant of a constant velocity, alone or in a
    `Combined` (a tracer or one of them moving, drifts riding), reading GridField or Uniform
    forcings, take the kernel; a drift reading the field's own sampled array, a forcing of
    another kind, a rise given as a function, or any other particle model takes the JAX step,
    and the log says what the kernel does not step."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")

    def use(particles, field):
        pieces = fk.tracker.TrackRun(field, seeds(field, 8), 0.0, HOUR, 600.0, particles=particles).pieces
        return kernels.kernel_use(pieces, "float32", "cpu")

    field = drifting(dict(), ("wind", "stokes"), dtype="float32")
    windage, stokes_drift = fk.particles.Windage(0.03), fk.particles.StokesDrift()
    assert use(windage, field) == "grid"
    assert use(fk.particles.Leeway(1.0, 0.3), field) == "grid"
    assert use(fk.particles.Leeway(1.0, 0.3, left_slope=-0.1), field) == "grid"  # each element's own
    assert use(fk.particles.Combined(fk.particles.Tracer(), windage, stokes_drift), field) == "grid"
    assert use(fk.particles.Combined(windage, fk.particles.Aging()), field) is None
    assert use(fk.particles.Buoyant(0.001), field) == "grid"
    assert use(fk.particles.Buoyant(lambda fluid: 0.001), field) is None
    assert drift_inputs.rules(fk.particles.Combined(windage, stokes_drift)) == (windage.rule, stokes_drift.rule)
    lon, lat = (np.asarray(a) for a in field.axes)
    own = gridded(dtype="float32", samples={"wind": np.zeros((3, len(lon), len(lat), 2), np.float32)})
    assert use(windage, own) is None
    gyre = gridded("metres", dtype="float32", samples={"wind": fk.fields.DoubleGyre()})
    assert use(windage, gyre) is None
    with caplog.at_level(logging.INFO, logger="flowkit"):
        fk.track(gyre, seeds(gyre, 8), 0.0, HOUR, 600.0, particles=windage)
    assert "the forcing 'wind', a DoubleGyre" in caplog.text


def test_the_drifts_rows_follow_the_kernels_declared_columns():
    """The rules' codes and counts of numbers, and the forcings' and drifts' columns, come from
    the built kernel's layout; a row written with other columns is refused, naming both."""
    layout = fk.native.layout("grid")
    assert set(layout.drifts) == {"windage", "stokes", "leeway", "rise", "leeway_each"}
    models = (
        fk.particles.Windage(0.03),
        fk.particles.StokesDrift(),
        fk.particles.Leeway(1.0, 0.3),
        fk.particles.Buoyant(1),
        fk.particles.Leeway(1.0, 0.3, downwind_std=5.0),
    )
    for model in models:
        assert len(model.rule.numbers) == layout.drifts[model.rule.rule][1]
    assert layout.columns["drift_kinds"] == ("rule", "sample", "second")
    with pytest.raises(RuntimeError, match="reads the columns .* of drift_kinds, Python writes"):
        layout.row("drift_kinds", {"rule": 0, "sample": 0})


def test_drifting_chunks_move_nothing_between_host_and_device(monkeypatch):
    """A chunk of drifting particles in the kernel runs with host<->device transfers disallowed."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = drifting(dict(kind="regional"), ("wind",), dtype="float32")
    particles = fk.particles.Leeway(1.0, 0.3)
    run_ = fk.tracker.TrackRun(field, seeds(field, 64), 0.0, 24 * HOUR, 1800.0, fk.RK4(), None, 4, particles=particles)
    assert run_._kwargs()["kernel"] == "grid"
    _, frames = advance_without_host_traffic(run_, chunks=2)
    assert np.all(np.isfinite(np.asarray(frames.positions)))


BUILD_RUN = """
import numpy as np, flowkit as fk
from test_grid_drift_kernel import drifting, surface_seeds
out = {{}}
for name, options, dtype in (("global32", dict(), "float32"), ("levels64", dict(kind="levels"), "float64")):
    field = drifting(options, ("wind", "stokes"), dtype=dtype)
    model = fk.particles.Combined(fk.particles.Leeway(1.2, 0.4, 5.0, -3.0), fk.particles.StokesDrift(period=5.0))
    run = fk.tracker.TrackRun(field, surface_seeds(field, 100), 0.0, 86400.0, 1800.0, fk.RK4(), None, 4, dtype=dtype,
                              particles=model)
    assert run._kwargs()["kernel"] == "grid"
    traj = run.run()
    for array in ("positions", "status", "exit_time"):
        out[name + "_" + array] = getattr(traj, array)
np.savez("{path}", **out)
"""


def test_every_build_drifts_as_the_baseline_build(tmp_path):
    """The wide builds of the kernel drift particles as the baseline build does, bit for bit."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    if len(fk.native.cpu_runs()) < 2:
        pytest.skip("this CPU runs only the baseline build")
    found = arrays_in_every_build(BUILD_RUN, tmp_path)
    baseline = found.pop("baseline")
    for build, wide in found.items():
        for name, array in wide.items():
            np.testing.assert_array_equal(array, baseline[name], err_msg=f"{build}: {name}")
