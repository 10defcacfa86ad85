"""The CPU mesh kernel (`flowkit.native`, `flowkit.tracker.mesh_kernel`) against the JAX step."""

import jax
import numpy as np
import pytest
from helpers import arrays_in_every_build
from meshes import mesh

import flowkit as fk
from flowkit.tracker import kernels, seam
from flowkit.tracker.mesh_kernel import MESH, KernelInputs, KernelResults


def _run(field, seeds, dtype, native: bool, monkeypatch, boundary=None, t1=1.0, dt=0.01, save_every=10, **kwargs):
    monkeypatch.setenv("FLOWKIT_NATIVE", "1" if native else "0")
    run = fk.tracker.TrackRun(field, seeds, 0.0, t1, dt, fk.RK4(), boundary, save_every, dtype=dtype, **kwargs)
    assert run._kwargs()["kernel"] == ("mesh" if native else None)
    return run


def _kernel_and_reference(field, seeds, monkeypatch, **kwargs):
    """The float64 run by the kernel, checked to compile one program, and the JAX step's."""
    fk.tracker.clear_caches()
    before = fk.tracker.compile_count()
    native = _run(field, seeds, "float64", True, monkeypatch, **kwargs).run()
    assert fk.tracker.compile_count() == before + 1
    return native, _run(field, seeds, "float64", False, monkeypatch, **kwargs).run()


def _assert_same_tracks(native, reference):
    """Generations and statuses equal, exit times to 1e-12 and positions to 1e-9 (float64)."""
    np.testing.assert_array_equal(native.generation, reference.generation)
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)


def _flow(points, t_scale=0.0):
    """A cellular flow with a drift along x that carries about half of the particles out."""
    s = np.pi * points / np.array([2.0, 1.0, 1.0])
    u = np.sin(s[:, 0]) * np.cos(s[:, 1]) * np.cos(s[:, 2]) + 0.8
    v = -0.5 * np.cos(s[:, 0]) * np.sin(s[:, 1]) * np.cos(s[:, 2])
    w = -0.5 * np.cos(s[:, 0]) * np.cos(s[:, 1]) * np.sin(s[:, 2])
    return np.stack([u, v, w], axis=1) * (1 + t_scale)


@pytest.mark.parametrize(
    "kind, dtype, tolerance",
    [
        ("hexahedron", "float64", 1e-9),
        ("mixed", "float64", 1e-9),
        ("tetra", "float32", 2e-4),
        ("wedge", "float64", 1e-9),
        ("pyramid", "float64", 1e-9),
    ],
)
def test_kernel_tracks_equal_the_jax_steps(kind, dtype, tolerance, monkeypatch):
    """Particles that stay, leave through the outlet (the kernel stops them: statuses and exit
    times) and start late come out as the JAX step alone gives them, on every cell kind."""
    assert fk.native.built(), "the CPU mesh kernel was not built: see the install's output"
    points, cells, types = mesh(kind, shape=(9, 5, 5))
    rng = np.random.default_rng(1)
    seeds = rng.uniform([0.05, 0.05, 0.05], [1.95, 0.95, 0.95], (300, 3))
    t_release = np.where(rng.random(300) < 0.3, 0.37, 0.0)
    field = fk.MeshField.from_arrays(points, cells, _flow(points), types, dtype=dtype)
    runs = [_run(field, seeds, dtype, native, monkeypatch, t_release=t_release) for native in (True, False)]
    native, reference = (run.run() for run in runs)
    left = reference.status[-1] == fk.Status.OUT_OF_DOMAIN
    assert 0.2 < left.mean() < 0.9
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=tolerance)


def test_kernel_interpolates_a_time_series_as_the_jax_step(monkeypatch):
    points, cells, types = mesh("hexahedron", shape=(7, 4, 4))
    times = np.array([0.0, 0.3, 0.7, 1.2])
    values = np.stack([_flow(points, t_scale=np.sin(3 * t)) for t in times])
    field = fk.MeshField.from_arrays(points, cells, values, types, times=times, dtype="float64")
    seeds = np.random.default_rng(2).uniform([0.05, 0.1, 0.1], [1.0, 0.9, 0.9], (200, 3))
    native, reference = (_run(field, seeds, "float64", on, monkeypatch).run() for on in (True, False))
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)
    assert np.abs(native.positions[-1] - seeds).max() > 0.3


def test_the_kernels_declared_layout_is_the_seams():
    """The built kernel declares its buffers, attributes, cell kinds (with node counts) and cell
    table width as `tracker/mesh_kernel.py` declares them; a kernel built from another layout is
    refused in one line listing the differences."""
    assert fk.native.built(), "the CPU mesh kernel was not built: see the install's output"
    kernel = fk.native.layout("mesh")
    assert seam.mismatches(MESH, kernel) == []
    assert [name for name, _ in kernel.inputs] == list(KernelInputs._fields)
    assert [name for name, _ in kernel.results] == list(KernelResults._fields)
    assert {name: nodes for name, (_, nodes) in kernel.kinds.items()} == {
        "tetra": 4,
        "hexahedron": 8,
        "wedge": 6,
        "pyramid": 5,
    }
    assert len(set(code for code, _ in kernel.kinds.values())) == 4
    older = fk.native.Layout(
        kernel.inputs[:-1],
        kernel.results,
        kernel.attrs,
        {**kernel.kinds, "wedge": (2, 7)},
        kernel.walls,
        {name: code for name, code in kernel.inlets.items() if name != "flux"},
        kernel.capacity,
    )
    found = seam.mismatches(MESH, older)
    assert len(found) == 3 and found[0].startswith("inputs:") and "wedge" in found[1] and "flux" in found[2]


def test_kernel_takes_only_what_it_computes_alike():
    """Particle models, stochastic integrators, 2-D meshes and boundaries that act on steps
    ending inside the domain (box walls, also as an inlet's walls) take the JAX step."""
    points, cells, types = mesh("hexahedron")
    field = fk.MeshField.from_arrays(points, cells, _flow(points), types)
    seeds = np.full((4, 3), 0.5)

    def pieces(**kwargs):
        return fk.tracker.TrackRun(field, seeds, 0.0, 0.1, 0.01, **kwargs).pieces

    applies = lambda pieces, dtype: kernels.kernel_use(pieces, dtype, "cpu") == "mesh"  # noqa: E731
    assert applies(pieces(), "float32")
    assert kernels.kernel_use(pieces(), "float32", "gpu") is None
    assert applies(pieces(boundary=fk.MeshWalls("reflect")), "float32")
    assert applies(pieces(boundary=fk.InletOutlet(mode="random", walls="slip"), key=jax.random.key(0)), "float32")
    continuous = fk.ContinuousInlet(rate=10.0, slots=8, walls="reflect")
    assert applies(pieces(boundary=continuous, key=jax.random.key(0)), "float32")
    box_walls = fk.ContinuousInlet(rate=10.0, slots=8, walls=fk.Reflective(field.bounds))
    assert not applies(pieces(boundary=box_walls, key=jax.random.key(0)), "float32")
    assert not applies(pieces(), "float64")  # positions in another precision than the field's
    assert not applies(pieces(integrator=fk.EulerMaruyama(1e-4), key=jax.random.key(0)), "float32")
    assert not applies(pieces(boundary=fk.Reflective(field.bounds)), "float32")
    assert not applies(pieces(particles=fk.particles.Inertial(diameter=1e-4, density=1000.0)), "float32")
    points2, cells2, types2 = mesh("quad")
    flat = fk.MeshField.from_arrays(points2, cells2, np.ones((len(points2), 2)), types2)
    assert not applies(fk.tracker.TrackRun(flat, np.full((4, 2), 0.5), 0.0, 0.1, 0.01).pieces, "float32")


def test_kernel_searches_bins_as_the_jax_step_and_compiles_no_jax_step_while_inside(monkeypatch):
    """With no walking (`walk_steps=0`) every point that leaves its hinted cell is found by its
    bin's search, in the kernel as in the JAX step. Particles that stay inside the mesh never
    need the JAX step: the run compiles the kernel's program alone; nor do particles that leave
    a mesh, without walls or through walls' openings (the kernel finishes their steps)."""
    points, cells, types = mesh("tetra", shape=(9, 5, 5))
    stay = 0.3 * _flow(points) - np.array([0.24, 0.0, 0.0])  # the cellular part, tangent to the walls
    seeds = np.random.default_rng(3).uniform([0.3, 0.25, 0.25], [1.7, 0.75, 0.75], (200, 3))
    field = fk.MeshField.from_arrays(points, cells, stay, types, dtype="float64", walk_steps=0)
    fk.tracker.clear_caches()
    before = fk.tracker.compile_count()
    native = _run(field, seeds, "float64", True, monkeypatch).run()
    assert fk.tracker.compile_count() == before + 1
    reference = _run(field, seeds, "float64", False, monkeypatch).run()
    assert (reference.status[-1] == fk.Status.ACTIVE).all()
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)
    assert np.abs(native.positions[-1] - seeds).max() > 0.1

    leave = fk.MeshField.from_arrays(points, cells, _flow(points), types, dtype="float64", walk_steps=0)
    before = fk.tracker.compile_count()
    native = _run(leave, seeds, "float64", True, monkeypatch).run()
    assert fk.tracker.compile_count() == before  # the kernel's program is the first run's (same shapes)
    reference = _run(leave, seeds, "float64", False, monkeypatch).run()
    assert (reference.status[-1] == fk.Status.OUT_OF_DOMAIN).mean() > 0.2
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)

    walls = fk.MeshWalls("reflect", open=["xmax"])
    before = fk.tracker.compile_count()
    native = _run(leave, seeds, "float64", True, monkeypatch, boundary=walls).run()
    assert fk.tracker.compile_count() == before + 1  # the kernel's program with the walls, no JAX step
    reference = _run(leave, seeds, "float64", False, monkeypatch, boundary=walls).run()
    assert (reference.status[-1] == fk.Status.OUT_OF_DOMAIN).mean() > 0.2
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)


@pytest.mark.parametrize("native", [True, False])
def test_zero_volume_cells_are_named_and_change_no_track(native, monkeypatch, caplog):
    """200 flat tetrahedra (a lattice hexahedron's planar face, as a mesher can leave them)
    among a tet box's cells: the same tracks as without them, on the kernel and the JAX step."""
    points, tets = fk.datasets.jittered_tet_box((9, 6, 6), (2.0, 1.0, 1.0), 0.0, 3)
    ids = np.arange(9 * 6 * 6).reshape(9, 6, 6)
    rng = np.random.default_rng(0)
    i, j, k = (rng.integers(0, n - 1, 200) for n in (9, 6, 6))
    flat = np.stack([ids[i, j, k], ids[i + 1, j, k], ids[i + 1, j + 1, k], ids[i, j + 1, k]], axis=1)  # a z face
    cells = np.concatenate([tets, flat])
    order = rng.permutation(len(cells))
    clean = fk.MeshField.from_arrays(points, tets, _flow(points), dtype="float64")
    with caplog.at_level("WARNING", logger="flowkit"):
        dirty = fk.MeshField.from_arrays(points, cells[order], _flow(points), dtype="float64")
    assert "200 of 1200 cells have no volume" in caplog.text
    seeds = fk.seeding.random_inside(500, clean, key=jax.random.key(1))
    runs = [_run(field, seeds, "float64", native, monkeypatch).run() for field in (clean, dirty)]
    np.testing.assert_array_equal(runs[0].status, runs[1].status)
    np.testing.assert_allclose(runs[0].positions, runs[1].positions, atol=1e-12)


def test_a_step_into_missing_data_stops_nonfinite_in_the_kernel_as_in_the_jax_step(monkeypatch):
    """NaN velocities in part of the mesh: the rows whose step ends not finite are `NONFINITE` at
    the end of that step, where the step began, in the kernel as in the JAX step."""
    points, cells, types = mesh("hexahedron", shape=(9, 5, 5))
    values = _flow(points)
    values[points[:, 0] > 1.5] = np.nan
    field = fk.MeshField.from_arrays(points, cells, values, types, dtype="float64")
    seeds = np.random.default_rng(4).uniform([0.05, 0.1, 0.1], [1.2, 0.9, 0.9], (200, 3))
    native, reference = (_run(field, seeds, "float64", on, monkeypatch).run() for on in (True, False))
    assert (reference.status[-1] == fk.Status.NONFINITE).mean() > 0.2
    np.testing.assert_array_equal(native.status, reference.status)
    np.testing.assert_allclose(native.exit_time, reference.exit_time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(native.positions, reference.positions, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "mode, kind", [("reflect", "tetra"), ("slip", "hexahedron"), ("absorb", "hexahedron"), ("stick", "tetra")]
)
def test_walls_and_openings_finish_in_the_kernel_as_in_the_jax_step(mode, kind, monkeypatch):
    """A flow that drives particles into the side walls and out through the open end: bounces,
    slides, absorptions (at the crossing, their exit times inside the step) and exits come out
    of the kernel as out of the JAX step, and no program with the JAX step is compiled."""
    points, cells, types = mesh(kind, shape=(9, 5, 5))
    values = _flow(points) + np.array([0.0, 0.6, 0.4])  # toward y = 1 and z = 1
    field = fk.MeshField.from_arrays(points, cells, values, types, dtype="float64")
    seeds = np.random.default_rng(5).uniform([0.05, 0.1, 0.1], [1.9, 0.9, 0.9], (300, 3))
    native, reference = _kernel_and_reference(field, seeds, monkeypatch, boundary=fk.MeshWalls(mode, open=["xmax"]))
    final = reference.status[-1]
    assert (final == fk.Status.OUT_OF_DOMAIN).any()
    if mode in ("absorb", "stick"):
        assert (final == fk.Status.ABSORBED).mean() > 0.2
    else:
        assert (final == fk.Status.ACTIVE).mean() > 0.2
    _assert_same_tracks(native, reference)


@pytest.mark.parametrize(
    "mode, walls, kind",
    [
        ("grid", "open", "hexahedron"),
        ("random", "reflect", "tetra"),
        ("flux", "slip", "mixed"),
        ("random", "open", "wedge"),
    ],
)
def test_inlet_restarts_happen_in_the_kernel_as_in_the_jax_step(mode, walls, kind, monkeypatch):
    """Particles carried out through the outlet start again on the inlet in the same step, at
    their own origins (`grid`) or drawn over the inlet (`random`, `flux`): generations, statuses,
    exit times and positions come out of the kernel as out of the JAX step, in one program."""
    points, cells, types = mesh(kind, shape=(9, 5, 5))
    field = fk.MeshField.from_arrays(points, cells, _flow(points) + np.array([0.6, 0.0, 0.0]), types, dtype="float64")
    rng = np.random.default_rng(7)
    seeds = rng.uniform([0.05, 0.1, 0.1], [1.9, 0.9, 0.9], (300, 3))
    if mode == "grid":
        seeds[:, 0] = rng.uniform(0.0, 0.3, 300)  # each seed projects onto the inlet x = 0
    boundary = fk.InletOutlet("xmin", "xmax", mode=mode, walls=walls)
    key = None if mode == "grid" else jax.random.key(3)
    run = dict(boundary=boundary, key=key, t1=4.0, dt=0.02, save_every=20)
    native, reference = _kernel_and_reference(field, seeds, monkeypatch, **run)
    assert reference.generation[-1].sum() > 100  # many restarts, some of them twice
    _assert_same_tracks(native, reference)


@pytest.mark.parametrize(
    "mode, walls, kind, outlet", [("random", "reflect", "tetra", "xmax"), ("flux", "open", "hexahedron", None)]
)
def test_continuous_releases_happen_in_the_kernel_as_in_the_jax_step(mode, walls, kind, outlet, monkeypatch):
    """A `ContinuousInlet` releasing faster than its spare slots free up: each step's releases
    take the first free slots of the block (spare ones, then those of particles that left), the
    ones without a slot are counted, and the tracks, generations and counts come out of the
    kernel as out of the JAX step, in one program, over two blocks."""
    points, cells, types = mesh(kind, shape=(9, 5, 5))
    field = fk.MeshField.from_arrays(points, cells, _flow(points) + np.array([0.6, 0.0, 0.0]), types, dtype="float64")
    seeds = np.random.default_rng(8).uniform([0.05, 0.1, 0.1], [1.9, 0.9, 0.9], (100, 3))
    boundary = fk.ContinuousInlet("xmin", rate=120.0, slots=60, mode=mode, walls=walls, outlet=outlet)
    run = dict(boundary=boundary, key=jax.random.key(4), t1=3.0, dt=0.02, save_every=15)
    layout = _run(field, seeds, "float64", True, monkeypatch, **run)
    assert len(layout.devices) * layout.blocks == 2
    native, reference = _kernel_and_reference(field, seeds, monkeypatch, **run)
    assert reference.generation[-1].sum() > 150 and reference.stats.lost_releases > 0
    assert native.stats.lost_releases == reference.stats.lost_releases
    _assert_same_tracks(native, reference)


BUILD_RUN = """
import numpy as np
import flowkit as fk
from meshes import mesh  # tests/, on PYTHONPATH

out = {{"simd_bytes": fk.native.simd_bytes()}}
for kind, dtype, walls in (("mixed", "float64", "reflect"), ("pyramid", "float32", None), ("wedge", "float32", "slip")):
    points, cells, types = mesh(kind, shape=(9, 5, 5))
    s = np.pi * points / np.array([2.0, 1.0, 1.0])
    flow = np.stack([np.sin(s[:, 0]) * np.cos(s[:, 1]) + 0.8, -np.cos(s[:, 0]) * np.sin(s[:, 1]), np.sin(s[:, 2])], 1)
    field = fk.MeshField.from_arrays(points, cells, flow, types, dtype=dtype)
    seeds = np.random.default_rng(1).uniform([0.05, 0.05, 0.05], [1.95, 0.95, 0.95], (301, 3))
    boundary = None if walls is None else fk.MeshWalls(walls, open=["xmax"])
    run = fk.tracker.TrackRun(field, seeds, 0.0, 1.0, 0.01, fk.RK4(), boundary, 10, dtype=dtype)
    assert run._kwargs()["kernel"]
    traj = run.run()
    for name in ("positions", "status", "exit_time"):
        out[kind + "_" + name] = getattr(traj, name)
np.savez("{path}", **out)
"""


def test_every_build_tracks_as_the_baseline_build(tmp_path):
    """The kernel's wide builds (`_mesh_chunk_avx2`, `_mesh_chunk_avx512`: each loaded where the
    CPU runs it) compute the baseline build's tracks bit for bit: the same operations in wider
    vectors, without FMA."""
    assert fk.native.built(), "the CPU mesh kernel was not built: see the install's output"
    if len(fk.native.cpu_runs()) < 2:
        pytest.skip("this CPU runs only the baseline build")
    found = arrays_in_every_build(BUILD_RUN, tmp_path)
    baseline = found.pop("baseline")
    assert baseline.pop("simd_bytes") == 16
    assert np.mean(baseline["mixed_status"][-1] == fk.Status.OUT_OF_DOMAIN) > 0.2  # the runs leave and meet walls
    for build, wide in found.items():
        assert wide.pop("simd_bytes") == 32, build
        for name, array in wide.items():
            np.testing.assert_array_equal(array, baseline[name], err_msg=f"{build}: {name}")


def test_a_switch_of_the_kernels_that_names_nothing_is_refused(monkeypatch):
    """`FLOWKIT_NATIVE` takes 0, 1 or a build's name; anything else is an error that lists them,
    not a silent choice."""
    monkeypatch.setenv("FLOWKIT_NATIVE", "avx")
    with pytest.raises(ValueError, match=r"FLOWKIT_NATIVE='avx': expected one of 0, 1, baseline, avx2, avx512"):
        fk.native.built()


def test_a_build_the_cpu_does_not_run_or_that_was_not_made_is_refused(monkeypatch):
    """`FLOWKIT_NATIVE` naming a build the CPU does not run, or one the install did not make, is
    an error that says which, not a fall back to another build."""
    assert fk.native.built(), "the CPU kernels were not built: see the install's output"
    load, before = fk.native._load, fk.native.build()
    try:
        monkeypatch.setattr(fk.native, "cpu_runs", lambda: ("baseline", "avx2"))
        monkeypatch.setenv("FLOWKIT_NATIVE", "avx512")
        fk.native._loaded.cache_clear()
        with pytest.raises(
            RuntimeError, match=r"FLOWKIT_NATIVE=avx512: this CPU does not run that build \(it runs baseline, avx2\)"
        ):
            fk.native.built()
        monkeypatch.setattr(fk.native, "_load", lambda build: None if build == "avx2" else load(build))
        monkeypatch.setenv("FLOWKIT_NATIVE", "avx2")
        fk.native._loaded.cache_clear()
        with pytest.raises(RuntimeError, match=r"FLOWKIT_NATIVE=avx2: that build was not made"):
            fk.native.built()
        monkeypatch.setenv("FLOWKIT_NATIVE", "1")  # on: the widest build that is made and runs
        fk.native._loaded.cache_clear()
        assert fk.native.build() == "baseline"
    finally:
        monkeypatch.undo()
        fk.native._loaded.cache_clear()
    assert fk.native.build() == before
