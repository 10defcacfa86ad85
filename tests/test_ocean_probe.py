"""The ocean probe (`flowkit.fields.layered_probe`): a layered field's evaluations in the JAX
step by the ocean kernel's location and interpolation, against the field's own JAX evaluations,
and runs of particle models with it against runs without."""

import dataclasses
import logging

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import advance_without_host_traffic
from test_ocean_kernel import NORDIC, layered, seeds

import flowkit as fk
from flowkit.fields.layered_probe import PROBE
from flowkit.native import interface
from flowkit.tracker import engine

pytestmark = pytest.mark.skipif(not fk.native.built(), reason="flowkit's CPU kernels are not built")


def evaluations(field, x, hint, t):
    """Every batched evaluation the step makes of `field` at the rows `x` (hinted `hint`)."""
    u, located = field.velocity_batch(t, x, None, hint)
    settled, settled_hint = field.settle_batch(t, x, hint)
    where, inside = field.locate_batch(x, hint)
    beached = field.beached_batch(x, hint)
    return dict(
        velocity=u,
        cell=located.cell,
        point=located.point,
        coords=located.coords,
        settled=settled,
        settled_cell=settled_hint.cell,
        inside=inside,
        where=where.cell,
        beached=jnp.zeros(0) if beached is None else beached,
    )


def both(field, x, hint, t):
    """`evaluations` by the JAX path and by the probe."""
    run = eqx.filter_jit(evaluations)
    return run(field, x, hint, t), run(dataclasses.replace(field, engine=True), x, hint, t)


def test_the_probes_declared_layout_is_the_built_ones():
    assert interface.mismatches(PROBE, fk.native.layout("ocean_probe")) == []


@pytest.mark.parametrize(
    "options",
    [dict(), dict(triangles=True), dict(chart=False), dict(spherical=False), dict(levels=1, triangles=True)],
    ids=["quads", "triangles", "quad-mesh", "metres", "depth-averaged"],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_probe_evaluates_as_the_jax_path(options, dtype):
    """Rows hinted nowhere, hinted at their cells (a stage: points moved from where they were
    located) and exact, some off the grid, some on the island, at depths from the surface to
    below the floor, between time slices: velocities to rounding, the same cells, statuses of
    the domain and the land, the same settled depths."""
    field = layered(dtype=dtype, **options)
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    x = seeds(field, n=500)
    x[:40, :2] = lo[:2] - 0.01 * (hi[:2] - lo[:2])  # off the grid
    x = jnp.asarray(x, dtype)
    t = 7.3 * 3600.0
    cold = field.hints(len(x), dtype)
    reference, probed = both(field, x, cold, t)
    warm = fk.fields.base.Hints(reference["cell"], reference["point"], reference["coords"])
    moved = x.at[:, :2].add(jnp.asarray(0.002 * (hi[:2] - lo[:2]), dtype))
    for hint, at in ((cold, x), (warm, moved), (warm.marked(True), x)):
        reference, probed = both(field, at, hint, t)
        tolerance = 1e-12 if dtype == "float64" else 2e-5
        for name in ("velocity", "settled", "point", "coords"):
            np.testing.assert_allclose(probed[name], reference[name], rtol=tolerance, atol=tolerance, err_msg=name)
        for name in ("cell", "settled_cell", "inside", "where", "beached"):
            np.testing.assert_array_equal(probed[name], reference[name], err_msg=name)
    assert not np.all(reference["inside"]) and np.any(reference["inside"])
    if field.land is not None:
        assert np.any(reference["beached"])


def windage_run(field, x, monkeypatch, native, **kwargs):
    monkeypatch.setenv("FLOWKIT_NATIVE", "1" if native else "0")
    track = fk.tracker.TrackRun(
        field, x, 0.0, 24 * 3600.0, 1800.0, fk.RK4(), None, 4, particles=fk.particles.Windage(0.03), **kwargs
    )
    assert track.pieces.field.engine is native
    return track.run()


@pytest.mark.parametrize("options", [dict(), dict(triangles=True)], ids=["quads", "triangles"])
def test_a_particle_model_tracks_alike_with_and_without_the_probe(options, monkeypatch):
    """Windage under a wind of the field's samples, in float64: the same statuses (some leave the
    grid, some beach), positions to 1e-9 of a cell."""
    field = layered(**options)
    wind = {"wind": fk.fields.Uniform([6.0, -3.0])}
    field = fk.fields.LayeredField.from_arrays(
        np.asarray(field.surface.points, np.float64),
        np.asarray(field.surface.nodes),
        np.asarray(field.depths),
        np.asarray(field.velocities).reshape(*field.depths.shape, 3),
        np.asarray(field.floor)[..., 0],
        np.asarray(field.times),
        land=np.asarray(field.land) > 0.5,
        samples=wind,
        dtype="float64",
    )
    x = seeds(field)
    probed, reference = (windage_run(field, x, monkeypatch, on, dtype="float64") for on in (True, False))
    np.testing.assert_array_equal(probed.status, reference.status)
    np.testing.assert_allclose(probed.positions[..., :2], reference.positions[..., :2], rtol=0, atol=1e-10)
    np.testing.assert_allclose(probed.positions[..., 2], reference.positions[..., 2], rtol=0, atol=1e-8)
    assert np.any(probed.status == fk.Status.OUT_OF_DOMAIN) and np.any(probed.status == fk.Status.BEACHED)


@pytest.mark.skipif(not NORDIC.exists(), reason="../shared/data/ocean-real is not here")
def test_a_real_roms_file_tracks_particle_models_alike_with_and_without_the_probe(monkeypatch):
    """OpenDrift's ROMS file (float32, as stored) with windage: the same statuses; positions
    within float32's rounding of the positions over a day's steps."""
    field = fk.io.read(NORDIC, samples={"wind": fk.fields.Uniform([8.0, 2.0])})
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    rng = np.random.default_rng(1)
    x = np.column_stack([lo[:2] + rng.uniform(0.3, 0.7, (400, 2)) * (hi[:2] - lo[:2]), rng.uniform(0, 30, 400)])
    probed, reference = (windage_run(field, x, monkeypatch, on) for on in (True, False))
    np.testing.assert_array_equal(probed.status, reference.status)
    np.testing.assert_allclose(probed.positions, reference.positions, rtol=0, atol=1e-3)


def test_the_engine_takes_cpu_runs_alone_and_the_log_says_which_part_evaluated(monkeypatch, caplog):
    """Forced to another platform, or with the kernels switched off, the field evaluates itself
    in JAX; on CPUs the engine takes it and the run's log names it."""
    field = layered()
    pieces = fk.tracker.TrackRun(field, seeds(field, 16), 0.0, 3600.0, 1800.0, fk.RK4(), None, 1).pieces
    assert engine.engaged(dataclasses.replace(pieces, field=field), "gpu").field.engine is False
    assert engine.engaged(dataclasses.replace(pieces, field=field), "cpu").field.engine is True
    monkeypatch.setenv("FLOWKIT_NATIVE", "0")
    assert engine.engaged(dataclasses.replace(pieces, field=field), "cpu").field.engine is False
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    with caplog.at_level(logging.INFO, logger="flowkit"):
        fk.track(field, seeds(field, 16), 0.0, 3600.0, 1800.0, particles=fk.particles.Buoyant(0.001))
    assert "the field's evaluations by the CPU engine" in caplog.text


def test_probed_chunks_move_nothing_between_host_and_device(monkeypatch):
    """A particle model's chunk with the probe runs with host<->device transfers disallowed."""
    field = layered()
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    run = fk.tracker.TrackRun(
        field, seeds(field, 64), 0.0, 6 * 3600.0, 1800.0, fk.RK4(), None, 4, particles=fk.particles.Buoyant(0.001)
    )
    assert run.pieces.field.engine
    advance_without_host_traffic(run)
