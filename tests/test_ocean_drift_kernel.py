"""Drifting particles in the CPU ocean kernel (`native/grid_probe.h`, `native/drift_rules.h`,
`tracker/drift_inputs.py`) against the JAX step: windage, Stokes drift, leeway and rise
velocities, alone and combined, on layered fields stepped in a curvilinear grid's indices, on
triangles in degrees and in metres, depth-averaged, with a random walk, from forcings on grids of
their own and constant ones, with releases, beaching and leaving, in float64 and float32; and the
shared ROMS file with a wind."""

import equinox as eqx
import jax
import numpy as np
import pytest
from test_grid_drift_kernel import wind
from test_ocean_kernel import NORDIC, assert_same, layered, run, seeds

import flowkit as fk
from flowkit.tracker import kernels

HOUR = 3600.0


def forcings(names, dtype="float64", spherical=True):
    """The forcings `names` as `layered(samples=)` takes them: a turning wind series on a 3° grid
    (or over the metres' box), a steady Stokes drift, a constant wind."""
    made = {
        "wind": lambda: wind(dtype, spherical=spherical),
        "stokes": lambda: fk.fields.Uniform((0.05, 0.03)),
        "constant": lambda: fk.fields.Uniform((6.0, -4.0)),
    }
    chosen = {("wind" if name == "constant" else name): made[name]() for name in names}
    return lambda n_points: chosen


CASES = {
    "quads: windage of a wind series": (dict(), lambda: fk.particles.Windage(0.03), ("wind",)),
    "triangles: leeway, stokes": (
        dict(triangles=True),
        lambda: fk.particles.Combined(fk.particles.Leeway(1.2, 0.4, 5.0, -3.0), fk.particles.StokesDrift(period=6.0)),
        ("wind", "stokes"),
    ),
    "metres: windage of a constant wind": (dict(spherical=False), lambda: fk.particles.Windage(0.03), ("constant",)),
    "quad mesh: buoyant, windage below the surface": (
        dict(chart=False),
        lambda: fk.particles.Combined(fk.particles.Buoyant(-2e-3), fk.particles.Windage(0.02, depth=5.0)),
        ("wind",),
    ),
    "depth-averaged: leeway": (
        dict(levels=1, triangles=True),
        lambda: fk.particles.Leeway(2.0, 0.6),
        ("wind",),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_drifts_in_the_ocean_kernel_track_as_the_jax_step(case, monkeypatch):
    """Positions to 1e-9 of a cell (float64), statuses and exit times alike, the drift moving
    the particles well away from the current's tracks; leeway's side alternates; half of the
    seeds wait for their release."""
    options, model, names = CASES[case]
    spherical = options.get("spherical", True)
    field = layered(samples=forcings(names, spherical=spherical), **options)
    x = seeds(field)
    if field.dim == 3:
        x[::2, 2] = 0.0  # half at the surface, where windage acts
    release = np.where(np.arange(len(x)) % 2 == 0, 0.0, 5 * HOUR)
    state = {"orientation": np.where(np.arange(len(x)) % 4 < 2, 1.0, -1.0)} if "leeway" in case else None
    boundary = None if spherical else fk.Reflective(field.bounds)
    common = dict(t_release=release, boundary=boundary)
    native, reference = (
        run(field, x, "float64", on, monkeypatch, particles=model(), particle_state=state, **common)
        for on in (True, False)
    )
    cell = 0.1 if spherical else 5000.0
    assert_same(native, reference, 1e-9 * cell)
    tracer = run(field, x, "float64", True, monkeypatch, **common)
    gone = np.linalg.norm(native.positions[-1, :, :2] - tracer.positions[-1, :, :2], axis=1)
    assert np.quantile(gone[::2], 0.75) > 0.05 * cell, np.quantile(gone[::2], [0.25, 0.5, 0.75])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_leeway_jibes_in_the_kernel_as_in_the_jax_step(dtype, monkeypatch):
    """The leeway table's PIW-1 (each element's own coefficients drawn, unequal sides, jibes at
    a high chance an hour) beside windage: the kernel draws each element's jibes from its key as
    the JAX step does: sides alike at every frame, positions to 1e-9 of a cell (float64) or 1e-4
    (float32), and many elements jibed."""
    field = layered(dtype=dtype, samples=forcings(("wind",), dtype=dtype))
    x = seeds(field)
    x[:, 2] = 0.0
    piw = fk.io.leeway("PIW-1")
    model = fk.particles.Combined(fk.particles.Windage(0.01), eqx.tree_at(lambda m: m.jibe_probability, piw, 0.3))
    native, reference = (
        run(field, x, dtype, on, monkeypatch, particles=model, key=jax.random.key(11)) for on in (True, False)
    )
    np.testing.assert_array_equal(native.status, reference.status)
    sides, expected = native.variables["orientation"], reference.variables["orientation"]
    np.testing.assert_array_equal(sides, expected)
    assert np.mean(sides[-1] != sides[0]) > 0.2
    atol = (1e-9 if dtype == "float64" else 1e-4) * 0.1
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=atol)


def test_drifts_with_a_random_walk_in_the_kernel_are_the_jax_steps(monkeypatch):
    """Windage beside `fk.EulerMaruyama`'s walk: the kernel draws the JAX step's noise and adds
    the drift at the step's one stage: positions to 1e-9 of a cell."""
    field = layered(samples=forcings(("wind",)))
    x = seeds(field)
    x[:, 2] = 0.0
    integrator = fk.EulerMaruyama(fk.diffusion.Horizontal(50.0, 1e-4))
    native, reference = (
        run(field, x, "float64", on, monkeypatch, integrator=integrator, key=jax.random.key(3),
            particles=fk.particles.Windage(0.03))
        for on in (True, False)
    )  # fmt: skip
    assert_same(native, reference, 1e-9 * 0.1, depth_atol=1e-6)


def test_float32_drifts_in_the_ocean_kernel_track_as_the_jax_step(monkeypatch):
    """In float32 the kernel's roundings differ from XLA's in the last bits: statuses alike,
    positions to a ten-thousandth of a cell."""
    field = layered(dtype="float32", samples=forcings(("wind", "stokes"), dtype="float32"))
    model = fk.particles.Combined(fk.particles.Windage(0.03), fk.particles.StokesDrift())
    x = seeds(field)
    x[:, 2] = 0.0
    native, reference = (run(field, x, "float32", on, monkeypatch, particles=model) for on in (True, False))
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=1e-4 * 0.1)


def test_the_ocean_kernel_takes_the_drifts_it_computes_alike(monkeypatch):
    """Ruled drifts reading GridField or Uniform forcings take the ocean kernel, random leeway
    too; a drift reading the field's own sampled array and any other model take the JAX step."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")

    def use(particles, field):
        run_ = fk.tracker.TrackRun(field, seeds(field, 8), 0.0, HOUR, 600.0, particles=particles, key=jax.random.key(0))
        pieces = run_.pieces
        return kernels.kernel_use(pieces, "float32", "cpu")

    field = layered(dtype="float32", samples=forcings(("wind",), dtype="float32"))
    assert use(fk.particles.Windage(0.03), field) == "ocean"
    assert use(fk.particles.Combined(fk.particles.Buoyant(1e-3), fk.particles.Leeway(1.0, 0.3)), field) == "ocean"
    assert use(fk.particles.Buoyant(1e-6, axis=0), field) == "ocean"
    assert use(fk.io.leeway("PIW-1"), field) == "ocean"  # each element's own coefficients, and jibes
    own = layered(dtype="float32", samples=lambda n: {"wind": np.zeros((3, n, 4)), "v": np.zeros((3, n, 4))})
    assert use(fk.particles.Windage(0.03), own) is None


def test_the_roms_file_with_a_wind_drifts_in_the_kernel_as_in_the_jax_step(monkeypatch):
    """The shared ROMS file (a curvilinear C-grid) with a uniform wind: windage and leeway of
    the table's slopes, and PIW-1's own coefficients with jibes, at the surface, 12 h: the
    kernel's tracks the JAX step's to 1e-9 of a 4 km cell in float64, the sides alike."""
    if not NORDIC.exists():
        pytest.skip(f"{NORDIC.parent} is not here")
    field = fk.io.read(NORDIC, dtype="float64", samples={"wind": fk.fields.Uniform([-7.0, 7.0])})
    rng = np.random.default_rng(5)
    x = np.column_stack([rng.uniform(13.5, 15.0, 300), rng.uniform(67.2, 67.9, 300), np.zeros(300)])
    cell = 4000.0 / 111e3
    for model in (
        fk.particles.Combined(fk.particles.Leeway(0.96, 0.54), fk.particles.Windage(0.01)),
        fk.io.leeway("PIW-1"),
    ):
        native, reference = (
            run(field, x, "float64", on, monkeypatch, t1=12 * HOUR, dt=900.0, particles=model, key=jax.random.key(1))
            for on in (True, False)
        )
        np.testing.assert_array_equal(native.status, reference.status)
        np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=1e-9 * cell)
        assert native.variables.keys() == reference.variables.keys()
        for name in native.variables:
            np.testing.assert_array_equal(native.variables[name], reference.variables[name])
        assert np.sum(native.status[-1] == fk.Status.ACTIVE) > 100
