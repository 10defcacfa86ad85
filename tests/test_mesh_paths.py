"""The mesh hot path's shortcuts change nothing: per-row Newton stopping, the hinted-cell check,
stopped particles skipped and compacted, block layouts and device counts; and location does
not depend on the query's precision, nor does a point outside the mesh get a value."""

import equinox as eqx
import jax
import jax.numpy as jnp
import meshes
import numpy as np
import pytest
from helpers import advance_without_host_traffic

import flowkit as fk
from flowkit.fields import cells as _cells
from flowkit.fields.cells import barycentric


def _box_hexes(shape=(6, 4, 4), extent=(2.0, 1.0, 1.0)):
    points = fk.datasets.jittered_lattice(shape, extent, jitter=0.0)
    return points, fk.datasets.lattice_hexahedra(shape)


def test_float32_mesh_is_located_alike_by_float32_and_float64_queries():
    """A mesh from Float32 points, queried in float64 at its wall vertices as a user types them
    (0.4, not float32(0.4)): found, same values, and tracked from t0 (issue 14's first bug)."""
    points, hexes = _box_hexes()
    stored = points.astype(np.float32).astype(np.float64)  # what a Float32 file holds
    values = meshes.velocity(stored)
    field = fk.MeshField.from_arrays(stored, hexes, values, dtype="float32")
    assert field.geometry_eps == float(np.finfo(np.float32).eps)
    on_walls = np.all((points == 0) | (points == points.max(axis=0)), axis=1) | np.any(points == 0, axis=1)
    typed = points[on_walls]  # float64 decimals, off the stored float32 vertices by rounding
    assert np.any(typed != stored[on_walls])
    as_float64 = fk._dtypes.cast_floating(field, np.float64)  # what fk.track(dtype="float64") runs
    as64 = eqx.filter_jit(lambda f, x: jax.vmap(f, in_axes=(None, 0))(0.0, x))(as_float64, jnp.asarray(typed))
    inside = eqx.filter_jit(lambda f, x: jax.vmap(f.in_domain)(x))(as_float64, jnp.asarray(typed))
    assert np.asarray(inside).all()
    np.testing.assert_allclose(np.asarray(as64), values[on_walls], rtol=0, atol=1e-5 * np.abs(values).max())
    traj = fk.track(field, typed, 0.0, 0.01, 0.01, dtype="float64", record_velocity=True)
    assert (traj.status[0] == fk.Status.ACTIVE).all()
    np.testing.assert_allclose(traj.velocities[0], values[on_walls], rtol=0, atol=1e-5 * np.abs(values).max())


@pytest.mark.parametrize("kind", ["tetra", "hexahedron", "mixed"])
def test_direct_evaluation_outside_the_mesh_is_nan(kind):
    """`field(t, x)` (the diffrax path) says NaN outside the mesh instead of extrapolating."""
    points, cells, types = meshes.mesh(kind)
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    far = jnp.asarray([[-0.18, 1.12, 0.1], [2.5, 0.5, 0.5], [1.0, 0.5, -0.01]])
    inside = jnp.asarray([[1.0, 0.5, 0.5], [0.3, 0.2, 0.7]])
    values = np.asarray(
        eqx.filter_jit(lambda f, x: jax.vmap(f, in_axes=(None, 0))(0.0, x))(field, jnp.concatenate([far, inside]))
    )
    assert np.isnan(values[: len(far)]).all()
    np.testing.assert_allclose(values[len(far) :], field.probe(np.asarray(inside))[0], atol=1e-12)


@pytest.mark.parametrize("kind", ["hexahedron", "wedge", "pyramid", "quad"])
def test_newton_stopping_per_row_equals_a_fixed_count(kind):
    """Weights from the converging loop equal those of the 6 fixed Newton steps used before, inside and outside
    the cells: to 1e-8 in float64, to float32's rounding noise (1e-5) in float32."""
    points, cells, types = meshes.mesh(kind)
    name = {"quad": "quad"}.get(kind, kind)
    cell_kind = _cells.KINDS[name]
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    rng = np.random.default_rng(0)
    rows = rng.integers(0, field.n_cells, 500)
    nodes = np.asarray(field.nodes)[rows, : cell_kind.nodes]
    corners = np.asarray(field.points)[nodes]
    local = rng.uniform(-0.2, 1.2, (500, cell_kind.dim))
    target = corners.mean(axis=1) + (local - 0.5) * np.ptp(corners, axis=1)
    for dtype in (np.float32, np.float64):
        c, x = (
            jnp.asarray(_cells.box_frame(corners), dtype),
            jnp.asarray(target, dtype),
        )  # as the mesh's table holds them
        early, ok = eqx.filter_jit(lambda c, x: _cells.newton_coords(cell_kind, c, x, 6))(c, x)
        fixed = None
        for _ in range(6):  # what the locator did before it stopped rows early
            fixed = _cells.newton_coords(cell_kind, c, x, 1, xi=fixed)[0]
        # warm: started from the cell's linearisation at its centre, as the locator does
        start = jnp.clip(
            barycentric(jnp.asarray(field.affine_map, dtype)[rows], x) + jnp.asarray(cell_kind.centre, dtype), -2.0, 3.0
        )
        warm, ok_warm = eqx.filter_jit(lambda c, x, s: _cells.newton_coords(cell_kind, c, x, 6, xi=s))(c, x, start)
        ok = np.asarray(ok) & np.asarray(ok_warm)
        assert ok.mean() > 0.8  # the rest lie far outside (beyond a pyramid's apex, the map folds)
        w_early, w_warm, w_fixed = (np.asarray(cell_kind.shape(a)) for a in (early, warm, fixed))
        # float64: a row stops once its update is below sqrt(eps), a few far-outside rows still
        # converging linearly; float32: both sit within rounding noise of the root (~30 eps)
        tolerance = 1e-8 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(w_early[ok], w_fixed[ok], rtol=0, atol=tolerance)
        # from another start, rows outside that converge only linearly stop elsewhere within
        # the convergence test (the map reproduces the point to sqrt(eps) of the cell): 1e-6
        np.testing.assert_allclose(w_warm[ok], w_fixed[ok], rtol=0, atol=max(tolerance, 1e-6))


@pytest.mark.parametrize("kind", ["hexahedron", "wedge", "pyramid", "quad", "mixed"])
def test_newton_started_from_the_previous_point_equals_a_cold_start(kind):
    """An RK stage's point is located with Newton started from the previous stage's coordinates
    (moved by the cell's linearisation): same cell, coordinates and values as located from
    no hint, to float32's rounding noise (1e-5) in float32 and 1e-8 in float64; at the very
    same point, the coordinates are reused bit for bit."""
    points, cells, types = meshes.mesh(kind)
    velocity = meshes.velocity(points)
    rng = np.random.default_rng(5)
    x = meshes.probe_points(points, cells, types, n_random=400)
    step = rng.normal(size=x.shape) * 0.05 * np.ptp(points, axis=0).max() / 4  # a fraction of a cell
    evaluate = eqx.filter_jit(lambda f, x, hint: f.velocity_batch(0.0, x, None, hint))
    for dtype, tolerance in (("float32", 1e-5), ("float64", 1e-8)):
        field = fk.MeshField.from_arrays(points, cells, velocity, types, dtype=dtype)
        start = jnp.asarray(x, dtype)
        _, hint = evaluate(field, start, field.hints(len(x), start.dtype))
        _, again = evaluate(field, start, hint)
        located = np.isfinite(np.asarray(hint.point[:, 0]))
        assert located.mean() > 0.5
        np.testing.assert_array_equal(np.asarray(again.coords)[located], np.asarray(hint.coords)[located])
        moved = jnp.asarray(x + step, dtype)
        v_warm, warm = evaluate(field, moved, hint)
        v_cold, cold = evaluate(field, moved, field.hints(len(x), start.dtype))
        found = np.isfinite(np.asarray(cold.point[:, 0]))
        same = np.asarray(warm.cell == cold.cell) & found
        assert same.sum() > 0.9 * found.sum()  # the rest sit on faces shared by two cells
        scale = np.abs(np.asarray(v_cold)).max()
        np.testing.assert_allclose(np.asarray(warm.coords)[same], np.asarray(cold.coords)[same], rtol=0, atol=tolerance)
        np.testing.assert_allclose(
            np.asarray(v_warm)[found], np.asarray(v_cold)[found], rtol=0, atol=tolerance * scale
        )  # continuous across faces


def test_newton_starts_at_the_exact_coordinates_in_parallelepipeds():
    """In cells that are affine images of the unit cell, the linearisation at the centre that
    starts Newton is exact, so a well-shaped CFD mesh needs one iteration to confirm it."""
    shape = (5, 4, 3)
    hexes = fk.datasets.lattice_hexahedra(shape)
    lattice = np.stack(np.meshgrid(*(np.linspace(0, 1, n) for n in shape), indexing="ij"), axis=-1).reshape(-1, 3)
    shear = np.array([[1.0, 0.3, 0.1], [0.0, 0.8, -0.2], [0.1, 0.0, 1.3]])
    points = lattice @ shear.T + np.array([5.0, -2.0, 1.0])
    field = fk.MeshField.from_arrays(points, hexes, np.zeros_like(points), dtype="float64")
    rng = np.random.default_rng(2)
    local = rng.uniform(0, 1, (300, 3))
    rows = rng.integers(0, field.n_cells, 300)
    kind = _cells.KINDS["hexahedron"]
    corners = np.asarray(field.points)[np.asarray(field.nodes)[rows]]
    x = np.einsum("nk,nka->na", np.asarray(kind.shape(jnp.asarray(local))), corners)
    guess = barycentric(field.affine_map[rows], jnp.asarray(x)) + 0.5
    np.testing.assert_allclose(np.asarray(guess), local, atol=1e-12)


def test_isoparametric_weights_differentiate_like_finite_differences():
    points, cells, types = meshes.mesh("hexahedron")
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    x = jnp.asarray([0.71, 0.43, 0.37])
    jac = eqx.filter_jit(lambda f, p: jax.jacfwd(lambda q: f(0.0, q))(p))(field, x)
    grad = eqx.filter_jit(lambda f, p: jax.grad(lambda q: f(0.0, q)[0])(p))(field, x)
    eps = 1e-6
    shifted = jnp.concatenate([x + eps * jnp.eye(3), x - eps * jnp.eye(3)])
    values = np.asarray(eqx.filter_jit(lambda f, p: jax.vmap(f, in_axes=(None, 0))(0.0, p))(field, shifted))
    fd = ((values[:3] - values[3:]) / (2 * eps)).T
    np.testing.assert_allclose(np.asarray(jac), fd, atol=1e-6)
    np.testing.assert_allclose(np.asarray(grad), fd[0], atol=1e-6)


def _leaving_run(n=300, **kwargs):
    """Particles in a hexahedral box, a flow carrying most out through x = 2, releases spread
    over the first half of the run."""
    points, hexes = _box_hexes((9, 5, 5))
    points = fk.datasets.jittered_lattice((9, 5, 5), (2.0, 1.0, 1.0), jitter=0.2, seed=1)
    values = meshes.velocity(points) + np.array([1.5, 0.0, 0.0])
    field = fk.MeshField.from_arrays(points, hexes, values, dtype="float64")
    rng = np.random.default_rng(3)
    seeds = rng.uniform([0.05, 0.05, 0.05], [1.95, 0.95, 0.95], (n, 3))
    t_release = rng.choice([0.0, 0.2, 0.4], n)
    return fk.tracker.TrackRun(
        field, seeds, 0.0, 1.2, 0.01, fk.RK4(), None, 10, t_release=t_release, dtype="float64", **kwargs
    )


def test_stopped_particles_never_move_and_never_change_status():
    traj = _leaving_run().run()
    status = traj.status
    assert (status[-1] == fk.Status.OUT_OF_DOMAIN).mean() > 0.5
    for frame in range(1, len(traj.times)):
        stopped = (status[frame - 1] != fk.Status.ACTIVE) & (status[frame - 1] != fk.Status.NOT_RELEASED)
        np.testing.assert_array_equal(traj.positions[frame][stopped], traj.positions[frame - 1][stopped])
        np.testing.assert_array_equal(status[frame][stopped], status[frame - 1][stopped])
        waiting = status[frame] == fk.Status.NOT_RELEASED
        np.testing.assert_array_equal(traj.positions[frame][waiting], traj.positions[0][waiting])


def test_results_do_not_depend_on_blocks_compaction_or_devices(monkeypatch):
    """Small blocks (many skipped and compacted as particles leave), one block per device (the
    accelerator layout, forced on the CPU) and one device give the same tracks bit for bit."""
    reference = _leaving_run(block_policy="gpu")
    assert reference.blocks == 1
    one_block = reference.run()
    monkeypatch.setattr(fk.tracker.plan, "BLOCK", 16)
    small = _leaving_run(block_policy="cpu")
    assert small.blocks >= 8
    blocked = small.run()
    single = _leaving_run(block_policy="cpu", devices=jax.local_devices()[:1]).run()
    for other in (blocked, single):
        np.testing.assert_array_equal(other.status, one_block.status)
        np.testing.assert_array_equal(other.positions, one_block.positions)
        np.testing.assert_array_equal(other.exit_time, one_block.exit_time)


def test_release_at_a_save_boundary_starts_there_when_its_block_is_skipped(monkeypatch):
    """Particles released exactly at the end of a save leave their blocks idle through it (no
    step is run) and still start moving at their release time, as a run starting then does."""
    monkeypatch.setattr(fk.tracker.plan, "BLOCK", 16)
    field = fk.fields.SolidBodyRotation()
    seeds = np.random.default_rng(4).uniform(-0.5, 0.5, (64, 2))
    late = fk.track(field, seeds, 0.0, 0.6, 0.01, save_every=10, t_release=np.full(64, 0.2), dtype="float64")
    direct = fk.track(field, seeds, 0.2, 0.6, 0.01, save_every=10, dtype="float64")
    assert np.all(late.status[:2] == fk.Status.NOT_RELEASED) and np.all(late.status[2:] == fk.Status.ACTIVE)
    np.testing.assert_allclose(late.positions[2:], direct.positions, rtol=0, atol=1e-12)
    assert np.abs(late.positions[-1] - seeds).max() > 0.05


def test_compacted_stochastic_run_keeps_each_particles_noise(monkeypatch):
    points, tets = fk.datasets.jittered_tet_box((7, 4, 4), (2.0, 1.0, 1.0), jitter=0.2)
    field = fk.MeshField.from_arrays(points, tets, np.tile([2.0, 0.0, 0.0], (len(points), 1)), dtype="float64")
    seeds = np.random.default_rng(0).uniform([0.05, 0.2, 0.2], [1.9, 0.8, 0.8], (200, 3))

    def run():
        return fk.track(
            field, seeds, 0.0, 1.0, 0.01, fk.EulerMaruyama(1e-4), save_every=5, key=jax.random.key(7), dtype="float64"
        )

    whole = run()
    monkeypatch.setattr(fk.tracker.plan, "BLOCK", 16)
    blocked = run()
    np.testing.assert_array_equal(blocked.positions, whole.positions)
    np.testing.assert_array_equal(blocked.status, whole.status)


def test_skipped_blocks_need_no_host_traffic_and_compile_once(monkeypatch):
    monkeypatch.setattr(fk.tracker.plan, "BLOCK", 16)
    run = _leaving_run(chunk_saves=4)
    advance_without_host_traffic(run)  # on CPUs also the program that finishes the mesh kernel's steps, once
    compiled = fk.tracker.compile_count()
    run.run()
    _leaving_run(chunk_saves=4).run()
    assert fk.tracker.compile_count() == compiled


@pytest.mark.parametrize("name", [name for name, kind in _cells.KINDS.items() if kind.shape is not None])
def test_the_host_tables_slopes_are_the_shape_functions_derivatives(name):
    """`locator.centre_slopes` (NumPy, central differences) against JAX's derivative of the same
    shape functions at the kind's centre, in float64: what each cell's map is linearised by."""
    from flowkit.fields.locator import centre_slopes

    kind = _cells.KINDS[name]
    with jax.enable_x64(True):
        centre = jnp.asarray(kind.centre, jnp.float64)
        weights = np.asarray(kind.shape(centre[None]))[0]
        slopes = np.asarray(jax.jacfwd(lambda q: kind.shape(q[None])[0])(centre))
    host_weights, host_slopes = centre_slopes(kind)
    assert isinstance(host_slopes, np.ndarray) and host_slopes.shape == (kind.nodes, kind.dim)
    np.testing.assert_allclose(host_weights, weights, rtol=0, atol=1e-15)
    np.testing.assert_allclose(host_slopes, slopes, rtol=0, atol=1e-15)
