"""The CPU ocean kernel (`flowkit.native`, `flowkit.tracker.ocean_kernel`) against the JAX step:
layered fields on curvilinear quadrilaterals and on triangles, in degrees and in metres, with
levels or depth-averaged, time series, land, particles that leave the grid or beach, seeds that
wait for their release, in float64 and float32."""

import equinox as eqx
import jax
import numpy as np
import pytest
from helpers import advance_without_host_traffic, arrays_in_every_build
from test_ocean_grids import _rotated_grid
from test_vtk import SHARED

import flowkit as fk
from flowkit.fields.curvilinear import quad_cells
from flowkit.tracker import kernels, seam
from flowkit.tracker.drift_inputs import DriftInputs
from flowkit.tracker.ocean_kernel import OCEAN, OceanInputs, OceanResults

NORDIC = SHARED / "ocean-real" / "Nordic_subset.nc"


def layered(triangles=False, spherical=True, levels=4, times=3, land=True, dtype="float64", chart=True, samples=None):
    """A 14 x 11 grid (degrees near 60 N, or metres), its inner nodes `warp`ed, its edges those of
    its box, with a floor deepening eastward, level depths that breathe in time, a current
    turning with depth that carries some particles off the grid and some onto an island of land.
    Without `chart` its quadrilaterals are a mesh's (no grid shape: located by Newton's method);
    `samples(n_points)` gives its sampled arrays and forcings."""
    i, j = np.meshgrid(np.arange(14.0), np.arange(11.0), indexing="ij")
    scale = 0.1 if spherical else 5000.0
    lon = (i + 0.15 * np.sin(0.7 * j) * (i > 0) * (i < 13)) * scale + (4.0 if spherical else 0.0)
    lat = (j + 0.1 * np.cos(0.5 * i) * (j > 0) * (j < 10)) * scale * 0.5 + (60.0 if spherical else 0.0)
    points = np.stack([lon, lat], axis=-1).reshape(-1, 2)
    cells = quad_cells(i.shape)
    if triangles:
        cells = np.concatenate([cells[:, [0, 1, 2]], cells[:, [0, 2, 3]]])
    n_points = len(points)
    floor = np.broadcast_to(50.0 + 10.0 * i.reshape(-1), (times, n_points)) * (1 + 0.02 * np.arange(times))[:, None]
    fraction = np.linspace(0.0, 1.0, levels) ** 1.5 if levels > 1 else np.zeros(1)
    depths = floor[..., None] * fraction
    speed = np.linspace(0.3, -0.1, levels) if levels > 1 else np.array([0.45])
    phase = np.arange(times)[:, None, None] * 0.4 + 0.3 * j.reshape(1, -1, 1)
    velocity = np.stack(
        [speed * (1 + 0.3 * np.cos(phase)), 0.15 * np.sin(phase + fraction), -1e-4 * np.cos(phase) * fraction],
        axis=-1,
    )
    if levels == 1:
        velocity = velocity[..., :2]
    island = (np.abs(i - 9) <= 1) & (np.abs(j - 5) <= 1)
    return fk.fields.LayeredField.from_arrays(
        points,
        cells,
        depths,
        velocity,
        floor,
        None if times == 1 else np.arange(times) * 12 * 3600.0,
        spherical=spherical,
        grid_shape=None if triangles or not chart else i.shape,
        land=island.reshape(-1) if land else None,
        samples=None if samples is None else samples(n_points),
        dtype=dtype,
    )


def seeds(field, n=300, seed=0):
    """Seeds over the grid's water, at depths from the surface to below the floor."""
    rng = np.random.default_rng(seed)
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    x = lo[:2] + rng.uniform(0.05, 0.6, (n, 2)) * (hi[:2] - lo[:2])
    if field.dim == 2:
        return x
    return np.column_stack([x, rng.uniform(0.0, 120.0, n)])


def run(field, x, dtype, native, monkeypatch, t1=24 * 3600.0, dt=1800.0, boundary=None, integrator=None, **kwargs):
    monkeypatch.setenv("FLOWKIT_NATIVE", "1" if native else "0")
    integrator = fk.RK4() if integrator is None else integrator
    track = fk.tracker.TrackRun(field, x, 0.0, t1, dt, integrator, boundary, 4, dtype=dtype, **kwargs)
    assert track._kwargs()["kernel"] == ("ocean" if native else None)
    return track.run()


def assert_same(native, reference, atol, depth_atol=1e-9):
    """Statuses and exit times alike, horizontal positions to `atol`, depths (metres) to `depth_atol`."""
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-6)
    np.testing.assert_allclose(native.positions[..., :2], reference.positions[..., :2], rtol=0, atol=atol)
    np.testing.assert_allclose(native.positions[..., 2:], reference.positions[..., 2:], rtol=0, atol=depth_atol)


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(triangles=True),
        dict(chart=False),
        dict(spherical=False),
        dict(levels=1, triangles=True),
        dict(times=1, land=False),
        dict(spherical=False, triangles=True, reflective=True),
        dict(spherical=False, reflective=True),
    ],
    ids=["quads", "triangles", "quad-mesh", "metres", "depth-averaged", "steady", "reflective", "reflective-grid"],
)
def test_the_kernel_tracks_as_the_jax_step(options, monkeypatch):
    """Positions to 1e-9 of a cell (float64), statuses and exit times alike; the flow carries
    particles off the grid (`OUT_OF_DOMAIN`; with `fk.Reflective` walls on the grid's box, the
    ends beyond the box mirrored back in, some onto the grid again) and onto the island
    (`BEACHED`), seeds below the floor start on it, and half of the seeds wait for their release."""
    reflective = options.pop("reflective", False)
    field = layered(**options)
    x = seeds(field)
    release = np.where(np.arange(len(x)) % 2 == 0, 0.0, 5 * 3600.0)
    boundary = fk.Reflective(field.bounds) if reflective else None
    native, reference = (
        run(field, x, "float64", on, monkeypatch, t_release=release, boundary=boundary) for on in (True, False)
    )
    cell = 0.1 if options.get("spherical", True) else 5000.0
    assert_same(native, reference, 1e-9 * cell)
    status = native.status
    if reflective:  # the grid's edges are its box's: the walls turn back every end that left it
        assert not np.any(status == fk.Status.OUT_OF_DOMAIN)
        status = run(field, x, "float64", True, monkeypatch, t_release=release).status
    assert np.sum(status == fk.Status.OUT_OF_DOMAIN) > 5
    if options.get("land", True):
        assert np.sum(status == fk.Status.BEACHED) > 0
    moved = np.linalg.norm(native.positions[-1, :, :2] - x[:, :2], axis=1)
    assert np.median(moved) > 0.5 * cell


def test_the_kernels_chunks_move_nothing_between_host_and_device(monkeypatch):
    """The chunks the kernel steps run with host<->device transfers disallowed, and another
    batch of the same shape compiles nothing."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = layered(dtype="float32")
    run = fk.tracker.TrackRun(field, seeds(field, 64), 0.0, 24 * 3600.0, 1800.0, fk.RK4(), None, 4)
    assert run._kwargs()["kernel"] == "ocean"
    before, frames = advance_without_host_traffic(run, chunks=3)
    assert np.all(np.isfinite(np.asarray(frames.positions)))
    again = fk.tracker.TrackRun(field, seeds(field, 64, seed=1), 0.0, 24 * 3600.0, 1800.0, fk.RK4(), None, 4)
    again.compile()
    assert fk.tracker.compile_count() == before


def test_float32_fields_track_as_the_jax_step(monkeypatch):
    """In float32 the kernel's roundings differ from XLA's in the last bits: positions agree to
    a thousandth of a cell, statuses alike."""
    field = layered(dtype="float32")
    x = seeds(field)
    native, reference = (run(field, x, "float32", on, monkeypatch) for on in (True, False))
    assert_same(native, reference, 1e-4, depth_atol=1e-3)


def test_the_kernels_declared_layout_is_the_seams():
    """The built kernel declares the buffers, attributes, 2-D cell kinds and cell table width
    that `tracker/ocean_kernel.py` declares; a kernel built from another layout is refused,
    listing the differences."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    kernel = fk.native.layout("ocean")
    assert seam.mismatches(OCEAN, kernel) == []
    assert [name for name, _ in kernel.inputs] == [*OceanInputs._fields[:-1], *DriftInputs._fields]
    assert [name for name, _ in kernel.results] == list(OceanResults._fields)
    assert {name: nodes for name, (_, nodes) in kernel.kinds.items()} == {"triangle": 3, "quad": 4}
    older = fk.native.Layout(
        kernel.inputs[1:], kernel.results, kernel.attrs[:-1], kernel.kinds, {}, {}, {"map_columns": 9}
    )
    found = seam.mismatches(OCEAN, older)
    assert [line.split(":")[0] for line in found] == ["inputs", "attrs", "map_columns"]


def test_the_kernel_refuses_tables_that_do_not_match(monkeypatch):
    """Tables of other shapes than the columns' (a land mask of another mesh, velocities of
    other levels) are refused by the kernel, naming them, instead of read past their ends."""
    import jax.numpy as jnp

    from flowkit.tracker import ocean_kernel

    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = layered(dtype="float32")
    x = jnp.asarray(seeds(field, 8), jnp.float32)
    pieces = fk.tracker.TrackRun(field, np.asarray(x), 0.0, 3600.0, 600.0).pieces
    assert kernels.kernel_use(pieces, "float32", "cpu") == "ocean"

    @jax.jit
    def located(land):
        return ocean_kernel.kernel_located(eqx.tree_at(lambda p: p.field.land, pieces, land), 0.0, x)

    assert np.asarray(located(field.land)[2]).any()
    with pytest.raises(Exception, match="land holds one value per node"):
        jax.block_until_ready(located(field.land[:-1]))


def test_the_kernel_takes_only_what_it_computes_alike():
    """Tracers on a layered field under `fk.Open` or `fk.Reflective` with an explicit Runge–Kutta
    method or Euler–Maruyama of a constant diffusivity, in the field's precision, on CPUs;
    diffusivities of `(t, x)` or of samples, particle models, other walls and GPUs take the JAX
    step."""
    field = layered(dtype="float32")
    x = seeds(field, 8)

    def use(dtype="float32", platform="cpu", **kwargs):
        pieces = fk.tracker.TrackRun(field, x, 0.0, 3600.0, 600.0, **kwargs).pieces
        return kernels.kernel_use(pieces, dtype, platform)

    assert use() == "ocean"
    assert use(platform="gpu") is None
    assert use(dtype="float64") is None
    assert use(integrator=fk.Heun()) == "ocean"
    assert use(integrator=fk.EulerMaruyama(1e-4), key=jax.random.key(0)) == "ocean"
    assert use(integrator=fk.EulerMaruyama([1e-4, 2e-4, 1e-3]), key=jax.random.key(0)) == "ocean"
    assert use(integrator=fk.EulerMaruyama(fk.diffusion.Horizontal(10.0, 1e-3)), key=jax.random.key(0)) == "ocean"
    assert use(integrator=fk.EulerMaruyama(lambda t, x: 1e-4), key=jax.random.key(0)) is None
    profile = fk.diffusion.Horizontal(10.0, lambda t, x: 1e-3)
    assert use(integrator=fk.EulerMaruyama(profile), key=jax.random.key(0)) is None
    assert use(particles=fk.particles.Aging()) is None
    assert use(boundary=fk.Reflective(field.bounds)) == "ocean"
    assert use(boundary=fk.Clamp(field.bounds)) is None


def test_a_run_the_kernel_declines_says_so_and_why(monkeypatch, caplog):
    """A layered run on a CPU that the kernel does not take (a random walk of a diffusivity of
    `(t, x)`, a particle model)
    says in its log that it runs the JAX step and what the kernel does not step; a run the
    kernel takes says nothing of the kind."""
    import logging

    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = layered(dtype="float32")
    x = seeds(field, 8)
    with caplog.at_level(logging.INFO, logger="flowkit"):
        fk.track(field, x, 0.0, 3600.0, 600.0, fk.EulerMaruyama(lambda t, x: 1e-4), key=jax.random.key(0))
        fk.track(field, x, 0.0, 3600.0, 600.0, particles=fk.particles.Aging())
        fk.track(field, x, 0.0, 3600.0, 600.0)
        fk.track(field, x, 0.0, 3600.0, 600.0, fk.EulerMaruyama(1e-4), key=jax.random.key(0))
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("steps: the JAX step")]
    assert said == [
        "steps: the JAX step: the CPU ocean kernel does not step the diffusivity Analytic (it walks constant "
        "diffusivities, and Horizontal's of numbers on the sphere)",
        "steps: the JAX step: the CPU ocean kernel does not step the particle model Aging (it steps tracers and "
        "Windage, StokesDrift, Buoyant and Leeway, and Combined ones of them)",
    ]


@pytest.mark.parametrize("cells", ["grid", "mesh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_kernel_keeps_particles_on_every_interior_edge_in_the_water(dtype, cells, monkeypatch):
    """The kernel's own location (seeds, then each stage's check and walk, or on a grid of
    `quad_cells` its fractional indices) on a turned grid in degrees with float64 corners:
    seeds on every edge between two cells, along i and along j, at a tenth, the middle and
    nine tenths of it and a hair to either side, all start in the water and none is ever
    `OUT_OF_DOMAIN` under a slow current that crosses edges of both kinds (issue 55: particles
    in open water were marked outside). `mesh`: the cells' nodes in another order, which
    gives the field no grid chart."""
    points, quads, ids = _rotated_grid()
    quads = quad_cells(ids.shape) if cells == "grid" else quads
    times, n = 2, len(points)
    floor = np.full((times, n), 100.0)
    velocity = np.broadcast_to(np.array([0.05, 0.03]), (times, n, 1, 2))  # about a tenth of a cell an hour
    field = fk.fields.LayeredField.from_arrays(
        points,
        quads,
        np.zeros((times, n, 1)),
        velocity,
        floor,
        np.array([0.0, 86400.0]),
        spherical=True,
        grid_shape=ids.shape,
        dtype=dtype,
    )
    assert (field.grid_cells is not None) == (cells == "grid")
    seeds = []
    for a, b in ((ids[1:-1, :-1].ravel(), ids[1:-1, 1:].ravel()), (ids[:-1, 1:-1].ravel(), ids[1:, 1:-1].ravel())):
        along = points[b] - points[a]
        normal = np.column_stack([-along[:, 1], along[:, 0]])
        seeds += [points[a] + f * along + side * normal for f in (0.1, 0.5, 0.9) for side in (0.0, 1e-7, -1e-7)]
    x = np.concatenate(seeds)
    native = run(field, x, dtype, True, monkeypatch, t1=6 * 3600.0, dt=1800.0)
    assert np.all(native.status[0] == fk.Status.ACTIVE)
    lo, hi = (np.asarray(b) for b in field.bounds)
    margin = 0.25 * (hi - lo)  # a particle this far inside the grid's box cannot have left the grid
    inner = np.all((x > lo + margin) & (x < hi - margin), axis=1)
    assert inner.sum() > 100
    assert not np.any(native.status[:, inner] == fk.Status.OUT_OF_DOMAIN)
    assert np.median(np.linalg.norm(native.positions[-1] - x, axis=1)) > 0.01


@pytest.mark.parametrize("triangles", [False, True], ids=["quads", "triangles"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seeds_hinted_nowhere_are_found_in_the_cells_the_jax_search_finds(dtype, triangles, monkeypatch):
    """Seeds on a mesh with no grid chart are searched in their bins alone; the kernel passes
    a quadrilateral whose nodes' box a seed lies beyond without its Newton iterations. Inside
    cells it finds the cell the JAX search finds (the first of the bin that holds the seed)
    with the same coordinates there, and off the mesh none; on nodes, on edges and a hair to
    either side, where two cells hold a seed to rounding, its coordinates there map back to it."""
    import jax.numpy as jnp

    from flowkit.tracker import ocean_kernel

    monkeypatch.setenv("FLOWKIT_NATIVE", "1")
    field = layered(triangles=triangles, chart=False, levels=1, times=1, land=False, dtype=dtype)
    surface = field.surface
    nodes = np.asarray(surface.points, np.float64)
    cells = np.asarray(surface.nodes)[:, : 3 if triangles else 4]
    edges = np.concatenate([nodes[cells] * (1 - f) + nodes[np.roll(cells, -1, axis=1)] * f for f in (0.3, 0.5)])
    edges = edges.reshape(-1, 2)
    lo, hi = nodes.min(axis=0), nodes.max(axis=0)
    hair = 1e-7 * (hi - lo)
    spread = lo - 0.1 * (hi - lo) + np.random.default_rng(3).uniform(0.0, 1.2, (2000, 2)) * (hi - lo)
    on_edges = np.concatenate([nodes, edges, edges + hair, edges - hair])
    x = jnp.asarray(np.concatenate([spread, on_edges]), dtype)
    pieces = fk.tracker.TrackRun(field, nodes, 0.0, 3600.0, 600.0, dtype=dtype).pieces
    assert kernels.kernel_use(pieces, dtype, "cpu") == "ocean"
    _, hint, inside, _ = jax.jit(lambda p, x: ocean_kernel.kernel_located(p, 0.0, x))(pieces, x)
    cell, coords, inside = np.asarray(hint.cell), np.asarray(hint.coords), np.asarray(inside)
    reference, found = (np.asarray(a) if isinstance(a, jax.Array) else a for a in field.locate_batch(x, None))
    np.testing.assert_array_equal(inside, found)
    assert 0 < np.sum(~inside[: len(spread)]) < len(spread) // 2 and inside[len(spread) :].mean() > 0.9
    apart = np.arange(len(x)) < len(spread)  # off every edge by more than rounding
    same = inside & apart
    np.testing.assert_array_equal(cell[same], np.asarray(reference.cell)[same])
    atol = 1e-4 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(coords[same], np.asarray(reference.coords)[same], rtol=0, atol=atol)
    # elsewhere its cell's map takes its coordinates there back to the seed
    r, t = coords[inside, 0].astype(np.float64), coords[inside, 1].astype(np.float64)
    corner = nodes[cells[cell[inside]]]
    if triangles:
        weights = [1 - r - t, r, t]
        assert np.all(np.minimum(r, t) >= -atol) and np.all(r + t <= 1 + atol)
    else:
        weights = [(1 - r) * (1 - t), r * (1 - t), r * t, (1 - r) * t]
        assert np.all(np.minimum(r, t) >= -atol) and np.all(np.maximum(r, t) <= 1 + atol)
    mapped = sum(w[:, None] * corner[:, k] for k, w in enumerate(weights))
    np.testing.assert_allclose(mapped, np.asarray(x, np.float64)[inside], rtol=0, atol=atol * 0.1)


def test_quadrilaterals_of_every_shape_track_as_the_jax_step(monkeypatch):
    """The kernel solves a point in a convex quadrilateral in closed form and leaves the others
    to Newton's iterations: on a mesh (no grid chart) of trapezoids, kites, a near
    parallelogram and a dart (one interior node pushed past its cell's diagonal: not convex), a
    current that sweeps the particles across all of them tracks as the JAX step (float64:
    positions to 1e-9 of a cell, statuses and exit times alike)."""
    i, j = np.meshgrid(np.arange(7.0), np.arange(6.0), indexing="ij")
    rng = np.random.default_rng(5)
    inner = (i > 0) & (i < 6) & (j > 0) & (j < 5)
    x, y = i + inner * rng.uniform(-0.25, 0.25, i.shape), j + inner * rng.uniform(-0.25, 0.25, j.shape)
    x[3, 2], y[3, 2] = 3.6, 2.6  # past the diagonal x + y = 7 of the cell [3, 4] x [2, 3]: a dart
    points = np.stack([x, y], axis=-1).reshape(-1, 2) * 1000.0
    cells = quad_cells(i.shape)
    corners = points[cells]
    edge = np.roll(corners, -1, axis=1) - corners
    turn = edge[..., 0] * np.roll(edge, -1, axis=1)[..., 1] - edge[..., 1] * np.roll(edge, -1, axis=1)[..., 0]
    convex = np.all(turn > 0, axis=1) | np.all(turn < 0, axis=1)
    assert 0 < np.sum(~convex) < 3  # the dart, and maybe a neighbour
    times, n = 2, len(points)
    phase = points[:, 1] / 1500.0
    velocity = np.stack([0.3 + 0.1 * np.cos(phase), 0.1 * np.sin(points[:, 0] / 2000.0)], axis=-1)
    velocity = np.broadcast_to(velocity[None, :, None], (times, n, 1, 2))
    field = fk.fields.LayeredField.from_arrays(
        points,
        cells,
        np.zeros((times, n, 1)),
        velocity,
        np.full((times, n), 50.0),
        np.array([0.0, 86400.0]),
        spherical=False,
    )
    assert field.grid_cells is None
    np.testing.assert_array_equal(np.asarray(field.convex_cells), convex)  # tabulated once, as the kernel reads them
    seeds = np.column_stack([rng.uniform(200.0, 3000.0, 400), rng.uniform(200.0, 4800.0, 400)])
    native, reference = (run(field, seeds, "float64", on, monkeypatch, t1=4 * 3600.0, dt=600.0) for on in (True, False))
    assert_same(native, reference, 1e-9 * 1000.0)
    crossed = np.any((native.positions[:, :, 0] > 3000.0) & (native.positions[:, :, 0] < 4000.0), axis=0)
    assert crossed.sum() > 50 and np.sum(native.status[-1] == fk.Status.OUT_OF_DOMAIN) > 0


def test_convex_cells_are_the_strictly_convex_quadrilaterals():
    """`LayeredField.convex_cells`, where the kernel takes the closed form: a square in either
    orientation and a diamond are; a dart (a reflex corner), a quadrilateral with three nodes in
    a line and a triangle are not."""
    points = np.array(
        [[0, 0], [1, 0], [1, 1], [0, 1], [2, 0], [3, 0], [2.3, 0.3], [2, 1], [4, 0], [5, 0], [6, 0], [5, 1], [7, 0],
         [8, 0], [7, 1], [9, 0], [10, 1], [9, 2], [8, 1]],
        float,
    )  # fmt: skip
    cells = np.array(
        [[0, 1, 2, 3], [0, 3, 2, 1], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, -1], [15, 16, 17, 18]], np.int32
    )
    n = len(points)
    field = fk.fields.LayeredField.from_arrays(
        points, cells, np.zeros((1, n, 1)), np.zeros((1, n, 1, 2)), np.full((1, n), 10.0), spherical=False
    )
    assert np.asarray(field.convex_cells).tolist() == [1, 1, 0, 0, 0, 1]


def fast_north(dtype: str, calm_west: bool = False) -> fk.fields.LayeredField:
    """A grid of 2-by-3-degree cells (50 to 80 N) with a northward current of 10-14 m/s (west of
    14 E only 0.3 m/s where `calm_west`): 12-hour steps move a particle 4.3-6 degrees."""
    i, j = np.meshgrid(np.arange(14.0), np.arange(11.0), indexing="ij")
    points = np.stack([2.0 * i + 0.3 * np.sin(j), 50.0 + 3.0 * j], axis=-1).reshape(-1, 2)
    n = len(points)
    north = 12.0 + 2.0 * np.sin(0.5 * i.reshape(-1) + np.arange(2)[:, None])
    if calm_west:
        north = np.where(i.reshape(-1) >= 7, north, 0.3)
    velocity = np.stack([np.full_like(north, 1.5), north], axis=-1)[:, :, None, :]
    return fk.fields.LayeredField.from_arrays(
        points,
        quad_cells(i.shape),
        np.zeros((2, n, 1)),
        velocity,
        np.full((2, n), 100.0),
        np.array([0.0, 86400.0]),
        spherical=True,
        grid_shape=i.shape,
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stage_points_far_from_their_step_start_take_the_whole_cosine(dtype, monkeypatch):
    """The kernel turns the cosine of a step start's latitude by a stage's small angle from there;
    a stage point farther than `kTurn` (0.05 rad, about 2.9 degrees) takes the whole cosine. With
    12-hour steps in a current of 10-14 m/s (`fast_north`), particles track as the JAX step."""
    field = fast_north(dtype)
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.uniform(2.0, 20.0, 200), rng.uniform(51.0, 60.0, 200)])
    native, reference = (run(field, x, dtype, on, monkeypatch, t1=86400.0, dt=43200.0) for on in (True, False))
    assert_same(native, reference, 1e-9 if dtype == "float64" else 1e-3)
    assert np.all(native.status[-1] == fk.Status.ACTIVE)
    assert np.all(native.positions[-1, :, 1] - x[:, 1] > 8.0)


@pytest.mark.skipif(not NORDIC.exists(), reason="../shared/data/ocean-real is not here")
def test_a_real_roms_file_tracks_as_the_jax_step(monkeypatch):
    """OpenDrift's Nordic ROMS file (35 s-levels, land, open edges), surface and deep seeds over
    40 hours: statuses alike, positions to 1e-9 degrees in float64."""
    field = fk.io.read(NORDIC, dtype="float64")
    rng = np.random.default_rng(1)
    lo, hi = (np.asarray(b) for b in field.bounds)
    x = np.column_stack([lo[:2] + rng.uniform(0, 1, (400, 2)) * (hi[:2] - lo[:2]), rng.uniform(0, 300, 400)])
    native, reference = (run(field, x, "float64", on, monkeypatch, t1=40 * 3600.0, dt=3600.0) for on in (True, False))
    assert_same(native, reference, 1e-9)
    assert np.sum(native.status == fk.Status.ACTIVE) > 100


@pytest.mark.parametrize(
    "diffusivity, options",
    [
        (fk.diffusion.Horizontal(Kh=50.0, Kv=1e-3), dict()),
        (fk.diffusion.Horizontal(Kh=50.0), dict(levels=1, triangles=True)),
        ([2e-7, 1e-7, 5e-4], dict(spherical=False, triangles=True)),
    ],
    ids=["horizontal", "horizontal-depth-averaged", "constant-per-axis"],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_walks_in_the_kernel_are_the_jax_steps(diffusivity, options, dtype, monkeypatch):
    """`fk.EulerMaruyama` in the kernel draws each particle's noise as the JAX step does (JAX's
    threefry keys folded with the step, its normal deviates), adds the sphere's metric drift,
    and mirrors depths at the surface and the floor: statuses alike, positions to 1e-9 of a
    cell in float64 (to the float32 rounding of the noise in float32), and the particles
    spread."""
    if not options.get("spherical", True):
        diffusivity = [k * 5000.0**2 / 0.1**2 for k in diffusivity[:2]] + diffusivity[2:]  # metres
    field = layered(dtype=dtype, **options)
    x = seeds(field)
    integrator = fk.EulerMaruyama(diffusivity)
    native, reference = (
        run(field, x, dtype, on, monkeypatch, integrator=integrator, key=jax.random.key(7)) for on in (True, False)
    )
    cell = 0.1 if options.get("spherical", True) else 5000.0
    if dtype == "float64":
        assert_same(native, reference, 1e-9 * cell, depth_atol=1e-6)
    else:
        np.testing.assert_array_equal(native.status[1], reference.status[1])  # the first step's statuses
        near = np.mean(np.all(np.abs(native.positions - reference.positions)[..., :2] <= 1e-4 * cell, axis=-1))
        assert near > 0.95
    still = run(field, x, dtype, True, monkeypatch, integrator=fk.Euler())
    spread = np.linalg.norm((native.positions - still.positions)[-1, :, :2], axis=1)
    assert np.median(spread[native.status[-1] == fk.Status.ACTIVE]) > 1e-3 * cell
    if field.dim == 3:
        active = native.status == fk.Status.ACTIVE
        assert np.all(native.positions[..., 2][active] >= 0)


@pytest.mark.parametrize("triangles", [False, True], ids=["quads", "triangles"])
def test_seeds_on_land_start_beached_as_in_the_jax_step(triangles, monkeypatch):
    """The kernel's location of the seeds marks those on the island BEACHED at t0, the same
    seeds as the JAX step's `beached_batch`, and leaves the others in the water."""
    field = layered(triangles=triangles)
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    rng = np.random.default_rng(3)
    x = np.column_stack([lo[:2] + rng.uniform(0.5, 0.8, (400, 2)) * (hi[:2] - lo[:2]), rng.uniform(0, 50, 400)])
    native, reference = (run(field, x, "float64", on, monkeypatch, t1=6 * 3600.0) for on in (True, False))
    np.testing.assert_array_equal(native.status[0], reference.status[0])
    assert 50 < np.sum(native.status[0] == fk.Status.BEACHED) < 350


BUILD_RUN = """
import jax
import numpy as np
import flowkit as fk
from test_ocean_kernel import fast_north, layered, seeds

out = {{}}
for name, options, dtype, integrator in (
    ("quads", dict(), "float64", fk.RK4()),
    ("triangles", dict(triangles=True), "float32", fk.RK4()),
    ("walk", dict(), "float32", fk.EulerMaruyama(fk.diffusion.Horizontal(Kh=50.0, Kv=1e-3))),
    ("metres", dict(spherical=False, levels=1), "float64", fk.Heun()),
):
    field = layered(dtype=dtype, **options)
    run = fk.tracker.TrackRun(field, seeds(field), 0.0, 24 * 3600.0, 1800.0, integrator, None, 4, dtype=dtype,
                              key=jax.random.key(7))
    assert run._kwargs()["kernel"] == "ocean"
    traj = run.run()
    for array in ("positions", "status", "exit_time"):
        out[name + "_" + array] = getattr(traj, array)
# lanes far from their step's start beside lanes near it: 8 seeds in the calm west, 8 in the
# fast east, and so on (a group of 16 holds both; each lane takes its own cosine)
field = fast_north("float32", calm_west=True)
rng = np.random.default_rng(4)
west = np.arange(320) // 8 % 2 == 0
lon = np.where(west, rng.uniform(2.0, 10.0, 320), rng.uniform(16.0, 24.0, 320))
x = np.column_stack([lon, rng.uniform(51.0, 60.0, 320)])
out["far_positions"] = fk.tracker.TrackRun(field, x, 0.0, 86400.0, 43200.0, fk.RK4(), None, 1).run().positions
np.savez("{path}", **out)
"""


def test_every_build_of_the_ocean_kernel_tracks_as_the_baseline_build(tmp_path):
    """The ocean kernel's wide builds (AVX2, AVX-512: each loaded where the CPU runs it) compute
    the baseline build's tracks bit for bit, on quadrilaterals and triangles, in both
    precisions, with a random walk, on the sphere and in metres, and where lanes far from their
    step's start share a group with lanes near it (the AVX-512 build's groups are twice as wide)."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    if len(fk.native.cpu_runs()) < 2:
        pytest.skip("this CPU runs only the baseline build")
    found = arrays_in_every_build(BUILD_RUN, tmp_path)
    baseline = found.pop("baseline")
    assert np.mean(baseline["quads_status"][-1] == fk.Status.OUT_OF_DOMAIN) > 0.05  # some leave the grid
    for build, wide in found.items():
        for name, array in wide.items():
            np.testing.assert_array_equal(array, baseline[name], err_msg=f"{build}: {name}")


def test_a_models_fluid_from_one_lookup_is_the_separate_lookups():
    """`LayeredField.values_together` (what a model reading samples and the floor is given)
    equals the velocity, the samples with a forcing, and the floor each looked up alone, at
    seeds in water, off the grid and below the floor, between time slices."""

    def samples(n_points):
        temperature = np.random.default_rng(3).uniform(2, 12, (3, n_points, 4))
        return {"temp": temperature, "salt": 30 + temperature / 4, "wind": fk.fields.Uniform([5.0, -2.0])}

    field = layered(samples=samples)
    x = jax.numpy.asarray(np.concatenate([seeds(field, 200), [[0.0, 0.0, 5.0]]]))
    t = 17.5 * 3600.0
    hint, _ = field.locate_batch(x, None)
    u, samples, floor, _ = field.values_together(t, x, None, hint, True, True)
    alone_u, alone_hint = field.velocity_batch(t, x, None, hint)
    alone = field.samples_at(t, x, alone_hint)
    np.testing.assert_array_equal(np.asarray(u), np.asarray(alone_u))
    assert set(samples) == {"temp", "salt", "wind"} and np.isnan(np.asarray(samples["temp"])[-1])
    for name in samples:
        np.testing.assert_array_equal(np.asarray(samples[name]), np.asarray(alone[name]))
    np.testing.assert_array_equal(np.asarray(floor), np.asarray(field.sea_floor_batch(t, x, hint)))
    assert field.values_together(t, x, None, hint, False, False)[1:3] == ({}, None)
