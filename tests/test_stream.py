"""Time series tracked in streamed windows: identical to in-memory runs, flat in memory, one compile."""

import threading

import jax
import numpy as np
import pytest
import xarray as xr
from test_vtk import SHARED

import flowkit as fk
from flowkit import tracker
from flowkit.fields.streamed import StreamedField
from flowkit.tracker.windows import plan_windows

DT, SAVE_EVERY = 0.01, 5


@pytest.fixture(scope="module")
def cell_series(tmp_path_factory):
    """A 21-file cellular-flow .pvd (VTK's writer) with a sampled scalar `p`."""
    return fk.datasets.cellular_flow_vtu_series(
        tmp_path_factory.mktemp("stream") / "cell", shape=(7, 7, 7), times=np.linspace(0.0, 2.0, 21)
    )


def _budget(streamed, slices: int, itemsize: int = 8) -> int:
    """A `max_device_bytes` that leaves room for windows of `slices` slices (two resident)."""
    copies = len(jax.local_devices())
    return copies * (streamed.static_nbytes(itemsize) + 2 * slices * (streamed.slice_nbytes(itemsize) + itemsize))


def _streamed(read, slices=4, itemsize=8):
    probe = read(None)
    return read(_budget(probe, slices, itemsize))


def _assert_identical(a, b):
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.exit_time, b.exit_time)
    if a.velocities is not None:
        np.testing.assert_array_equal(a.velocities, b.velocities)
    for name in a.samples or {}:
        np.testing.assert_array_equal(a.samples[name], b.samples[name])


@pytest.mark.parametrize(
    "times, options",
    [
        ((0.0, 2.0, DT), dict(record_velocity=True)),
        ((2.0, 0.0, -DT), dict(record_velocity=True)),  # backward: windows walk down the series
        ((0.13, 1.77, DT), dict(batch_size=120)),  # every batch walks the series again
        ((0.0, 2.0, DT), dict(dtype="float32", record_velocity=True)),
    ],
)
def test_streamed_mesh_series_equals_in_memory(cell_series, getkey, times, options):
    dtype = options.pop("dtype", "float64")
    memory = fk.io.read_vtk(cell_series, sample=["p"], stream=False)
    streamed = _streamed(
        lambda budget: fk.io.read_vtk(cell_series, sample=["p"], stream=True, max_device_bytes=budget),
        itemsize=np.dtype(dtype).itemsize,
    )
    assert isinstance(streamed, StreamedField) and streamed.n_slices == 21
    seeds = fk.seeding.random_box(300, memory.bounds, key=getkey())
    expected = fk.track(memory, seeds, *times, save_every=SAVE_EVERY, dtype=dtype, **options)
    before = tracker.compile_count()
    got = fk.track(streamed, seeds, *times, save_every=SAVE_EVERY, dtype=dtype, **options)
    info = got.stats
    assert tracker.compile_count() - before <= 1  # every window reuses the one program
    assert 2 <= info.window_slices <= 4 < streamed.n_slices
    batches = -(-300 // options.get("batch_size", 300))
    assert info.slices_read <= batches * 21  # each slice read once per pass over the series
    _assert_identical(expected, got)


def test_streamed_grid_inputs_equal_in_memory(tmp_path, getkey):
    """.vti file series (VTK), stored and compressed .npz, and a lazily opened zarr (xarray)."""
    gyre = fk.GridField.from_function(
        fk.fields.DoubleGyre(),
        [np.linspace(0, 2, 41), np.linspace(0, 1, 21)],
        times=np.linspace(0, 10, 41),
        dtype="float64",
    )
    npz = fk.io.save_grid_npz(tmp_path / "gyre.npz", gyre)
    np.savez_compressed(tmp_path / "packed.npz", **dict(np.load(npz)))
    pvd = fk.datasets.double_gyre_vti_series(tmp_path / "vti", nx=41, ny=21, times=np.linspace(0, 10, 41))
    values = np.asarray(gyre.values)
    ds = xr.Dataset(
        {"u": (("time", "x", "y"), values[..., 0]), "v": (("time", "x", "y"), values[..., 1])},
        coords={"time": np.asarray(gyre.times), "x": np.asarray(gyre.axes[0]), "y": np.asarray(gyre.axes[1])},
    )
    ds.to_zarr(tmp_path / "gyre.zarr", consolidated=False)
    readers = {
        "npz": lambda **kw: fk.io.load_grid_npz(npz, **kw),
        "npz compressed": lambda **kw: fk.io.load_grid_npz(tmp_path / "packed.npz", **kw),
        "vti series": lambda **kw: fk.io.read_vtk(pvd, **kw),
        "zarr": lambda **kw: fk.io.from_xarray(xr.open_zarr(tmp_path / "gyre.zarr", consolidated=False), **kw),
    }
    seeds = fk.seeding.random_box(200, ((0.05, 0.05), (1.95, 0.95)), key=getkey())
    for name, read in readers.items():
        memory = read(stream=False)
        streamed = _streamed(lambda budget: read(stream=True, max_device_bytes=budget), slices=5)
        expected = fk.track(memory, seeds, 0.0, 10.0, 0.05, save_every=4, dtype="float64")
        got = fk.track(streamed, seeds, 0.0, 10.0, 0.05, save_every=4, dtype="float64")
        assert 2 <= got.stats.window_slices <= 5, name
        _assert_identical(expected, got)


def test_device_memory_is_flat_in_the_number_of_time_steps(tmp_path, getkey):
    """Ten times the slices, same window: what lives on the device does not grow with T."""
    widths = []
    for n_slices in (11, 101):
        field = fk.GridField.from_function(
            fk.fields.DoubleGyre(), [np.linspace(0, 2, 21), np.linspace(0, 1, 11)], times=np.linspace(0, 10, n_slices)
        )
        npz = fk.io.save_grid_npz(tmp_path / f"g{n_slices}.npz", field)
        probe = fk.io.load_grid_npz(npz, stream=True)
        streamed = fk.io.load_grid_npz(npz, stream=True, max_device_bytes=_budget(probe, 3, 4))
        run = tracker.TrackRun(streamed, fk.seeding.random_box(50, field.bounds, key=getkey()), 0.0, 10.0, 0.01)
        resident = run.pieces.field
        assert resident.values.shape[0] == resident.times.shape[0] == run.window_width <= 3
        widths.append(run.window_width)
        assert run.run().stats.slices_read == n_slices
    assert widths[0] == widths[1]


def test_windows_are_read_in_a_background_thread(cell_series, getkey):
    streamed = _streamed(lambda budget: fk.io.read_vtk(cell_series, stream=True, max_device_bytes=budget))
    readers = set()
    read = streamed.source.read
    streamed.source.read = lambda k: readers.add(threading.current_thread().name) or read(k)
    stats = fk.track(
        streamed, fk.seeding.random_box(100, streamed.bounds, key=getkey()), 0.0, 2.0, DT, save_every=SAVE_EVERY
    ).stats
    assert readers and all(name.startswith("flowkit-window") for name in readers)
    assert stats.load_s > 0 and stats.load_wait_s <= stats.load_s


def test_window_plan_covers_every_chunk():
    """Every time a chunk evaluates (its span, widened by the rounding tolerance) interpolates
    between two slices inside that chunk's window, as `time_weights` picks them."""
    times = np.array([0.0, 0.1, 0.25, 0.3, 0.7, 1.0])
    spans = np.array([[0.0, 0.1], [0.1, 0.3], [0.3, 0.71], [0.71, 1.0], [0.25, 0.25], [-0.5, -0.2], [1.0, 1.4]])
    tol = 1e-9
    width, starts = plan_windows(times, spans, tol)
    needed = []
    for (a, b), start in zip(spans, starts):
        t = np.concatenate([np.linspace(a - tol, b + tol, 1001), times[(times >= a - tol) & (times <= b + tol)]])
        it = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
        assert start <= it.min() and it.max() + 1 < start + width <= len(times)
        needed.append(it.max() + 2 - it.min())
    assert width == max(needed)  # no wider than the widest chunk needs


def test_near_is_the_field_at_that_time(cell_series):
    memory = fk.io.read_vtk(cell_series, stream=False, dtype="float64")
    streamed = fk.io.read_vtk(cell_series, stream=True, dtype="float64")
    points = np.asarray(memory.points)[::7] * 0.9 + 0.05
    for t in (0.0, 0.37, 1.5, 2.0):
        expected, valid = memory.probe(points, t=t)
        got, _ = streamed.near(t).probe(points, t=t)
        np.testing.assert_array_equal(got[valid], expected[valid])


def test_streaming_is_chosen_by_the_budget_and_errors_are_clear(cell_series, getkey):
    probe = fk.io.read_vtk(cell_series, stream=True)
    whole = 21 * probe.slice_nbytes(4) * len(jax.local_devices())
    assert isinstance(fk.io.read_vtk(cell_series, max_device_bytes=whole // 2), StreamedField)
    assert isinstance(fk.io.read_vtk(cell_series, max_device_bytes=whole * 4), fk.MeshField)
    seeds = fk.seeding.random_box(10, probe.bounds, key=getkey())
    tiny = fk.io.read_vtk(cell_series, stream=True, max_device_bytes=_budget(probe, 1))
    with pytest.raises(
        ValueError, match="max_device_bytes=.*room for windows of 1 time slices.*spans [2-4]; lower save_every"
    ):
        fk.track(tiny, seeds, 0.0, 2.0, 0.1, save_every=1, dtype="float64")
    with pytest.raises(TypeError, match="StreamedField is read window by window; read it with stream=False"):
        jax.grad(lambda s: fk.track(probe, s, 0.0, 1.0, 0.1).positions[-1].sum())(jax.numpy.asarray(seeds))
    with pytest.raises(TypeError, match="use method='fd'"):
        fk.analysis.ftle(probe, seeds, 0.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="max_device_bytes must be positive"):
        fk.io.read_vtk(cell_series, stream=True, max_device_bytes=0)


@pytest.mark.skipif(
    not (SHARED / "tet_box").exists(), reason="../shared/data (VTK oracles) is not beside this checkout"
)
def test_streamed_pathlines_match_vtk_particle_path_filter():
    probe = fk.io.read_vtk(SHARED / "tet_box" / "tet_box.pvd", stream=True, dtype="float64")
    field = fk.io.read_vtk(
        SHARED / "tet_box" / "tet_box.pvd", stream=True, dtype="float64", max_device_bytes=_budget(probe, 4)
    )
    oracle = np.load(SHARED / "tet_box" / "oracle_pathlines.npz")
    traj = fk.track(field, oracle["seeds"], 0.0, 1.0, 0.05, fk.RK4(), save_every=2, dtype="float64")
    assert traj.stats.window_slices <= 4 < field.n_slices
    assert (traj.status == fk.Status.ACTIVE).all()
    assert np.max(np.abs(traj.positions - np.swapaxes(oracle["vtk_positions"], 0, 1))) < 1e-5


def test_streamed_periodic_grid_with_a_repeated_end_node_is_refused_clearly(tmp_path):
    """In memory the repeated node is dropped; streamed windows would still hold it, so the
    run stops with the reason instead of indexing a grid of the wrong size."""
    field = fk.GridField.from_function(
        fk.fields.DoubleGyre(), [np.linspace(0, 2, 21), np.linspace(0, 1, 11)], times=np.linspace(0, 10, 11)
    )
    npz = fk.io.save_grid_npz(tmp_path / "g.npz", field)
    assert fk.io.load_grid_npz(npz, stream=False, periodic=(2.0, False)).shape == (20, 11)
    streamed = fk.io.load_grid_npz(npz, stream=True, periodic=(2.0, False))
    with pytest.raises(
        ValueError, match=r"window's 'values' has shape \(21, 11, 2\) per slice, the field \(20, 11, 2\)"
    ):
        fk.track(streamed, np.array([[0.5, 0.5]]), 0.0, 10.0, 0.1)
