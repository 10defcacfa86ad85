"""MeshField: interpolation against VTK itself on every linear cell kind, a complete locator,
tracking through meshes (closed-form references, compile once, no host traffic)."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import meshes
import numpy as np
import pytest

import flowkit as fk
from flowkit.fields.locator import bin_of
from flowkit.io.vtk import unstructured_grid

KINDS_3D = ["tetra", "hexahedron", "voxel", "wedge", "pyramid", "mixed"]
KINDS_2D = ["triangle", "quad", "mixed2d"]


@eqx.filter_jit
def _locate(field, x, unhinted: bool = False):
    """`(cell, found)` of each row of `x`, located from unknown hints (or, `unhinted`, from no
    hints at all: the bin search alone)."""
    hint, found = field.locate(x, None if unhinted else field.hints(x.shape[0], x.dtype))
    return hint.cell, found


def _distance_outside_box(x, lo, hi):
    return np.linalg.norm(np.maximum(np.maximum(lo - x, x - hi), 0), axis=1)


@pytest.mark.parametrize(
    "kind, dtype",
    [(k, "float64") for k in KINDS_3D + KINDS_2D] + [("mixed", "float32"), ("tetra", "float32"), ("quad", "float32")],
)
def test_probe_matches_vtk(kind, dtype):
    """Values and inside/outside flags as `vtkProbeFilter` gives them, at random points, vertices,
    edges, faces, centres, on the walls and just outside them.

    Where the two disagree, VTK extrapolated from a neighbouring cell (its probe accepts a cell
    within a tolerance, and for wedges one whose `EvaluatePosition` reports distance 0 for points
    beyond its slanted face) or its locator missed the cell (a few pyramids); ours must then equal
    VTK's own interpolation in the cell that VTK's `EvaluatePosition` says contains the point.
    """
    points, cells, types = meshes.mesh(kind)
    points = points.astype(dtype).astype(np.float64)  # VTK sees the geometry flowkit stores
    values = meshes.velocity(points)
    field = fk.MeshField.from_arrays(points, cells, values, types, dtype=dtype)
    x = meshes.probe_points(points, cells, types).astype(dtype).astype(np.float64)
    ours, valid = field.probe(x)
    assert ours.dtype == np.dtype(dtype)
    cell, found = (np.asarray(a) for a in _locate(field, jnp.asarray(x, dtype)))
    np.testing.assert_array_equal(found, valid)
    grid = unstructured_grid(points, cells, types, {"velocity": values})
    theirs, vtk_valid = meshes.vtk_probe(grid, x)
    theirs = theirs[:, : points.shape[1]]
    scale = np.abs(values).max()
    tolerance = 1e-5 if dtype == "float64" else 1e-4

    # Inside/outside: VTK also accepts points outside the walls within its tolerance, 1e-3 of the
    # largest cell's diagonal.
    lo, hi = points.min(axis=0), points.max(axis=0)
    corners = [points[c[c >= 0]] for c in cells]
    h = max(np.linalg.norm(c.max(axis=0) - c.min(axis=0)) for c in corners)
    extra = vtk_valid & ~valid
    assert np.all(_distance_outside_box(x[extra], lo, hi) <= 1e-3 * h)
    assert np.sum(valid & ~vtk_valid) <= 0.01 * valid.sum()  # VTK's locator misses a few (checked below)
    assert np.all(_distance_outside_box(x[valid], lo, hi) <= 1e-6 * h)

    # In the containing cell: VTK's own interpolation, to rounding.
    in_cell, vtk_says_inside = meshes.vtk_in_cell(grid, x[valid], cell[valid], values)
    assert vtk_says_inside.all(), f"{np.sum(~vtk_says_inside)} points placed in a cell VTK says does not contain them"
    np.testing.assert_allclose(ours[valid], in_cell, rtol=0, atol=(1e-8 if dtype == "float64" else 2e-6) * scale)

    # Against the probe filter itself: equal except where VTK extrapolated (a few per cent).
    both = valid & vtk_valid
    error = np.max(np.abs(ours[both] - theirs[both]), axis=1) / scale
    assert np.mean(error <= tolerance) >= 0.95, (
        f"{np.sum(error > tolerance)} of {both.sum()} points differ from vtkProbeFilter"
    )
    assert np.all(ours[~valid] == 0)


@pytest.mark.parametrize("kind", ["tetra", "mixed", "mixed2d"])
def test_bin_locator_is_complete(kind):
    """Every cell that contains a point (brute force over all cells) is registered in that
    point's bin, and the compiled search finds a containing cell exactly when one exists."""
    points, cells, types = meshes.mesh(kind, shape=(4, 3, 3))
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    x = meshes.probe_points(points, cells, types, n_random=300)
    contains = meshes.brute_force_locate(field, x)
    grid = fk.fields.locator.BinGrid(
        np.asarray(field.bin_origin),
        1 / np.asarray(field.bin_inv_size),
        field.bin_shape,
        np.asarray(field.bin_start),
        np.asarray(field.bin_cells),
    )
    bins = bin_of(grid, x)
    for row, b in enumerate(bins):
        registered = set(grid.cells[grid.start[b] : grid.start[b + 1]].tolist())
        assert set(np.flatnonzero(contains[row]).tolist()) <= registered
    for unhinted in (False, True):
        cell, found = (np.asarray(a) for a in _locate(field, jnp.asarray(x), unhinted))
        np.testing.assert_array_equal(found, contains.any(axis=1))
        assert np.all(contains[np.flatnonzero(found), cell[found]])


def test_walk_from_a_far_hint_and_from_none_agree():
    points, cells, types = meshes.mesh("mixed")
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    x = jnp.asarray(np.random.default_rng(1).uniform([0, 0, 0], [2, 1, 1], (200, 3)))
    velocity = eqx.filter_jit(lambda f, x, hint: f.velocity_batch(0.0, x, None, hint))
    v_cold, cold = velocity(field, x, field.hints(200, x.dtype))
    v_warm, warm = velocity(field, x, jnp.zeros(200, jnp.int32))  # every walk starts in cell 0
    v_again, again = velocity(field, x, warm)  # the found cells as hints: found at once
    v_near, near = velocity(
        field, x, fk.fields.base.Hints.of_cells(warm.cell, 3, x.dtype)
    )  # cells only: Newton from the centre
    np.testing.assert_array_equal(again.cell, warm.cell)
    np.testing.assert_array_equal(again.coords, warm.coords)  # located there already: reused as they are
    np.testing.assert_array_equal(near.cell, warm.cell)
    np.testing.assert_allclose(near.coords, warm.coords, atol=1e-12)
    np.testing.assert_allclose(v_cold, v_warm, atol=1e-12)  # cells may differ only on shared faces
    np.testing.assert_allclose(v_again, v_warm, atol=1e-12)
    np.testing.assert_allclose(v_near, v_warm, atol=1e-12)


@pytest.mark.parametrize("kind", ["tetra", "mixed"])
def test_points_at_their_hinted_points_are_not_located_again(kind):
    """A batch whose rows all lie at their hinted points (a step's first stage; stopped rows
    `SKIP`) gets its hints back as they are, the same as the full location gives them."""
    points, cells, types = meshes.mesh(kind)
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    x = jnp.asarray(np.random.default_rng(3).uniform([0.05] * 3, [1.95, 0.95, 0.95], (200, 3)))
    located, _ = _locate_with(field, x, None)
    hint = located.skip(jnp.arange(200) % 7 == 0)
    again, found = _locate_with(field, x, hint)
    assert bool(found.all())
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(hint)):
        np.testing.assert_array_equal(a, b)
    moved = x.at[1].add(1e-3)  # one row elsewhere: every row through the full location
    full, found = _locate_with(field, moved, hint)
    assert bool(found.all())
    np.testing.assert_array_equal(np.delete(np.asarray(full.cell), 1), np.delete(np.asarray(hint.cell), 1))
    kept = np.flatnonzero((np.arange(200) % 7 != 0) & (np.arange(200) != 1))  # a SKIP row's coordinates are unused
    np.testing.assert_allclose(np.asarray(full.coords)[kept], np.asarray(hint.coords)[kept], rtol=0, atol=1e-12)


@eqx.filter_jit
def _locate_with(field, x, hint):
    return field.locate(x, hint)


@pytest.mark.parametrize("integrator", [fk.Euler(), fk.Heun(), fk.RK4()], ids=lambda i: type(i).__name__)
def test_rk_stages_locate_the_step_end_with_one_walk(integrator, monkeypatch):
    """On a mesh, an RK step locates its end point as one more row of its stage scan: the end
    point is the plain stages' to the bit, its hints and `inside` are the field's own location
    of it, and the traced step holds one walk (the mesh's location code), not two."""
    points, cells, types = meshes.mesh("mixed")
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points), types, dtype="float64")
    x = jnp.asarray(np.random.default_rng(2).uniform([0, 0, 0], [2, 1, 1], (300, 3)))
    start, _ = field.locate_batch(x, None)
    flow = fk.integrators.FlowTerm
    step = eqx.filter_jit(lambda f, x, h: integrator.step(flow(f), {"x": x}, 0.0, 0.08, None, None, h))
    result = step(field, x, start)
    plain, last = eqx.filter_jit(fk.integrators.explicit_rk_step)(
        lambda s, y, h: field.velocity_batch(s, y, None, h), x, 0.0, 0.08, integrator.tableau, start
    )[:2]
    np.testing.assert_allclose(result.x, plain, rtol=0, atol=1e-15)  # the same sums, up to their fusion
    located, inside = eqx.filter_jit(lambda f, x, h: f.locate_batch(x, h))(field, result.x, last)
    assert 0 < int(inside.sum()) < len(x)  # some steps leave the mesh
    np.testing.assert_array_equal(result.inside, inside)
    np.testing.assert_array_equal(result.hint.cell, located.cell)
    np.testing.assert_allclose(result.hint.coords, located.coords, atol=1e-12)
    assert not result.hint.exact  # the exact mark stays inside the stages
    walks = []
    walk = fk.MeshField._walk_and_search
    monkeypatch.setattr(fk.MeshField, "_walk_and_search", lambda *a: walks.append(1) or walk(*a))
    jax.make_jaxpr(lambda x: integrator.step(flow(field), {"x": x}, 0.0, 0.08, None, None, start))(x)
    assert len(walks) == 1


def test_a_walk_out_of_steps_extrapolates_from_the_cell_its_coordinates_are_in():
    """A stage point outside the mesh, whose walk from a far hint runs out of steps, gets the
    value extrapolated from the last cell the walk checked: linear data is then exact."""
    points, cells, types = meshes.mesh("tetra", shape=(8, 6, 6))
    a = np.array([[1.0, 0.5, -0.25], [0.3, -1.0, 0.2], [0.1, 0.4, 2.0]])
    field = fk.MeshField.from_arrays(points, cells, points @ a.T + 0.5, types, dtype="float64", walk_steps=2)
    lo, hi = points.min(axis=0), points.max(axis=0)
    x = np.random.default_rng(4).uniform(lo, hi, (60, 3))
    x[:, 0] = hi[0] + 0.02  # just beyond the far side: no bin holds them
    velocity = eqx.filter_jit(lambda f, x, hint: f.velocity_batch(0.0, x, None, hint))
    v, hint = velocity(field, jnp.asarray(x), jnp.zeros(60, jnp.int32))  # walks start in cell 0
    assert np.all(np.asarray(hint.cell) >= 0) and not np.isfinite(np.asarray(hint.point)).any()
    np.testing.assert_allclose(v, x @ a.T + 0.5, atol=1e-10)


def test_the_compaction_partition_is_a_stable_argsort():
    from flowkit.tracker.kernel import _partition

    for p in (0.0, 0.3, 1.0):
        work = np.random.default_rng(5).random(1000) < p
        np.testing.assert_array_equal(_partition(jnp.asarray(work)), np.argsort(~work, kind="stable"))


@pytest.mark.parametrize("kind", KINDS_3D + KINDS_2D)
def test_linear_data_is_reproduced_exactly_everywhere_in_every_kind(kind):
    """Every linear cell kind's shape functions reproduce linear data: the inverse maps are right."""
    points, cells, types = meshes.mesh(kind)
    a = np.arange(1, points.shape[1] ** 2 + 1).reshape(points.shape[1], -1) / 7
    field = fk.MeshField.from_arrays(points, cells, points @ a.T + 0.5, types, dtype="float64")
    x = np.random.default_rng(2).uniform(points.min(axis=0), points.max(axis=0), (300, points.shape[1]))
    values, valid = field.probe(x)
    assert valid.all(), kind
    np.testing.assert_allclose(values, x @ a.T + 0.5, atol=1e-10, err_msg=kind)


def test_time_series_is_linear_in_time_and_samples_come_along():
    points, tets = fk.datasets.jittered_tet_box((6, 5, 4), jitter=0.2)
    times = np.array([0.0, 0.5, 2.0])
    values = np.stack([meshes.velocity(points) * (1 + t) for t in times])
    pressure = np.stack([points[:, 0] * t for t in times])
    field = fk.MeshField.from_arrays(points, tets, values, times=times, samples={"p": pressure}, dtype="float64")
    x = np.array([[0.31, 0.42, 0.53], [0.77, 0.12, 0.9]])
    at_1, _ = field.probe(x, t=1.0)
    at_05, _ = field.probe(x, t=0.5)
    at_2, _ = field.probe(x, t=2.0)
    np.testing.assert_allclose(at_1, at_05 + (at_2 - at_05) / 3, atol=1e-12)
    samples = field.sample_batch(jnp.asarray(1.0), jnp.asarray(x), jnp.full(2, -1, jnp.int32))
    np.testing.assert_allclose(samples["p"], x[:, 0] * 1.0, atol=1e-12)  # linear data: exact


def test_tracking_through_a_mesh_matches_the_closed_form_flow():
    """Pathlines through the sampled cellular flow converge to the flow's own pathlines as the
    mesh is refined (second order: interpolation error ~ h²)."""
    flow = fk.fields.CellularFlow()
    seeds = np.random.default_rng(0).uniform(0.2, 0.8, (40, 3))
    exact = fk.track(flow, seeds, 0.0, 1.0, 0.01, dtype="float64").positions[-1]
    errors = []
    for n in (9, 17):
        points, tets = fk.datasets.jittered_tet_box((n, n, n), jitter=0.2)
        times = np.linspace(0.0, 1.0, 41)
        values = np.stack([np.asarray(jax.vmap(flow, in_axes=(None, 0))(t, jnp.asarray(points))) for t in times])
        field = fk.MeshField.from_arrays(points, tets, values, times=times, dtype="float64")
        traj = fk.track(field, seeds, 0.0, 1.0, 0.01, dtype="float64")
        assert (traj.status == fk.Status.ACTIVE).all()
        errors.append(np.max(np.abs(traj.positions[-1] - exact)))
    assert errors[1] < 0.02
    assert errors[0] / errors[1] > 3.0  # h halves: error falls ~4x


def test_particles_leaving_the_mesh_are_marked_and_kept():
    points, tets = fk.datasets.jittered_tet_box((6, 6, 6), jitter=0.2)
    field = fk.MeshField.from_arrays(points, tets, np.tile([1.0, 0.0, 0.0], (len(points), 1)), dtype="float64")
    seeds = np.array([[0.105, 0.5, 0.5], [0.553, 0.3, 0.7], [0.951, 0.2, 0.2]])
    traj = fk.track(field, seeds, 0.0, 1.0, 0.01, dtype="float64")
    assert traj.positions.shape == (101, 3, 3)
    assert (traj.status[-1] == fk.Status.OUT_OF_DOMAIN).all()
    exits = 1 - seeds[:, 0]  # time to reach x = 1
    np.testing.assert_allclose(traj.exit_time, np.ceil(exits / 0.01 - 1e-9) * 0.01, atol=1e-9)
    assert np.all(traj.positions[-1, :, 0] <= 1.0) and np.all(traj.positions[-1, :, 0] > 0.98)


def test_mesh_run_compiles_once_and_needs_no_host_traffic(monkeypatch):
    """One compile, no host traffic in a chunk, and one walk in each program of the JAX step:
    in the chunk the stages' walk serves the step's end too; the seeds' program searches their
    bins. (The CPU mesh kernel's program holds no walk: `test_mesh_kernel.py`.)"""
    monkeypatch.setenv("FLOWKIT_NATIVE", "0")
    walks = []
    walk = fk.MeshField._walk_and_search
    monkeypatch.setattr(fk.MeshField, "_walk_and_search", lambda *a: walks.append(1) or walk(*a))
    points, tets = fk.datasets.jittered_tet_box((6, 6, 6), jitter=0.2)
    flow = fk.fields.CellularFlow()
    times = np.linspace(0, 1, 5)
    values = np.stack([np.asarray(jax.vmap(flow, in_axes=(None, 0))(t, jnp.asarray(points))) for t in times])
    field = fk.MeshField.from_arrays(points, tets, values, times=times)
    seeds = np.random.default_rng(0).uniform(0.1, 0.9, (100, 3))
    run = fk.tracker.TrackRun(field, seeds, 0.0, 1.0, 0.01, fk.RK4(), None, 5, batch_size=40)
    run.compile()
    before = fk.tracker.compile_count()
    state, slots, _ = run.initial_state()
    with jax.transfer_guard("disallow"):
        state, frames = run.advance(state, slots)
        state, frames = run.advance(state, slots)
    traj = run.run()  # three batches of 40 (the last padded), several chunks
    assert fk.tracker.compile_count() == before
    assert traj.positions.shape == (21, 100, 3) and (traj.status[-1] == fk.Status.ACTIVE).all()
    assert len(walks) == 2  # the seeds' program and the chunk's


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("path", ["kernel library", "numpy"])
def test_bin_grid_registers_every_overlapped_bin_even_for_huge_cells(dim, path, monkeypatch):
    """`bin_grid` against a direct enumeration, on a mesh mixing small cells with a few that
    span most of the box (long spans along each axis), cells left out (not `usable`) in no
    bin; built by the kernel's library and in NumPy."""
    assert path == "numpy" or fk.native.built(), "the CPU mesh kernel was not built: see the install's output"
    monkeypatch.setenv("FLOWKIT_NATIVE", "1" if path == "kernel library" else "0")
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 1, (400, dim))
    nodes = rng.integers(0, 400, (300, dim + 1))  # random simplices: many span much of the box
    nodes[:5] = np.argsort(points[:, 0])[: dim + 1]  # degenerate-small ones too
    usable = rng.uniform(size=300) > 0.1
    grid = fk.fields.locator.bin_grid(points, nodes, bin_scale=0.2, usable=usable)
    lo, hi = fk.fields.locator.cell_boxes(points, nodes)
    shape = np.asarray(grid.shape)
    first = np.clip(np.floor((lo - grid.origin) / grid.size).astype(int), 0, shape - 1)
    last = np.clip(np.floor((hi - grid.origin) / grid.size).astype(int), 0, shape - 1)
    expected = [[] for _ in range(int(np.prod(shape)))]
    for c in np.flatnonzero(usable):
        for bin_index in itertools.product(*(range(first[c, a], last[c, a] + 1) for a in range(dim))):
            expected[int(np.ravel_multi_index(bin_index, shape))].append(c)
    assert max(last[:, 0] - first[:, 0]) >= 5  # the case has long spans
    np.testing.assert_array_equal(grid.start, np.concatenate([[0], np.cumsum([len(e) for e in expected])]))
    np.testing.assert_array_equal(grid.cells, np.concatenate([e for e in expected if e]))
    assert grid.start.dtype == np.int64 and grid.cells.dtype == np.int32


@pytest.mark.parametrize("kind", ["tetra", "triangle", "mixed", "mixed2d"])
def test_the_kernel_library_builds_the_tables_numpy_builds(kind, monkeypatch):
    """Bounding boxes, measures, simplex maps and bins by the kernel's library equal NumPy's,
    array for array (the same arithmetic in the same order)."""
    assert fk.native.built(), "the CPU mesh kernel was not built: see the install's output"
    points, cells, types = meshes.mesh(kind, shape=(7, 5, 4))
    tables = []
    for native in ("1", "0"):
        monkeypatch.setenv("FLOWKIT_NATIVE", native)
        topology = fk.fields.locator.mesh_topology(points, cells, types)
        args = (topology.points, topology.nodes, topology.kind_index, topology.kinds)
        tables.append(
            [topology.affine_map, topology.grid.start, topology.grid.cells, fk.fields.locator.cell_measures(*args)]
            + list(fk.fields.locator.cell_boxes(topology.points, topology.nodes))
        )
    for made, numpy_made in zip(*tables):
        np.testing.assert_array_equal(made, numpy_made)


def test_face_neighbours_and_simplex_maps_match_direct_definitions():
    """Neighbours: each shared face (as a node set) links its two cells; maps: NumPy's inverse."""
    points, cells, types = meshes.mesh("mixed", shape=(4, 3, 3))
    topology = fk.fields.locator.mesh_topology(points, cells, types)
    faces = {}
    for c, (kind, nodes) in enumerate(zip(topology.kind_index, topology.nodes)):
        for f, face in enumerate(topology.kinds[kind].faces):
            faces.setdefault(frozenset(nodes[list(face)].tolist()), []).append((c, f))
    expected = np.full_like(topology.neighbours, -1)
    for owners in faces.values():
        if len(owners) == 2:
            (a, fa), (b, fb) = owners
            expected[a, fa], expected[b, fb] = b, a
    np.testing.assert_array_equal(topology.neighbours, expected)
    tets, tet_types = meshes.mesh("tetra", shape=(4, 3, 3))[1:]
    tets_points = meshes.mesh("tetra", shape=(4, 3, 3))[0]
    maps = fk.fields.locator.simplex_maps(tets_points, tets)
    edges = np.stack([tets_points[tets[:, k]] - tets_points[tets[:, 0]] for k in (1, 2, 3)], axis=-1)
    np.testing.assert_allclose(maps[:, 3:].reshape(-1, 3, 3), np.linalg.inv(edges), rtol=1e-10, atol=1e-10)
    # a mesh with curved kinds: each hexahedron's row also holds its corners, relative to node 0
    hexes = np.flatnonzero(np.asarray(topology.kinds)[topology.kind_index] == fk.fields.cells.HEXAHEDRON)
    corners = topology.points[topology.nodes[hexes, :8]]
    frame = topology.affine_map[hexes, 12:]
    np.testing.assert_array_equal(frame[:, :3], corners[:, 0])
    np.testing.assert_allclose(frame[:, 3:-1].reshape(-1, 7, 3), corners[:, 1:] - corners[:, :1], rtol=0, atol=1e-15)
    assert len(hexes) and topology.affine_map.shape[1] == 12 + fk.fields.cells.box_columns(3)
