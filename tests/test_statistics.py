"""Statistics gathered inside the run (`fk.track(..., statistics=[...])`) against the same
statistics computed from the stored frames of the same run: counts exactly, times to round-off;
on a grid field, a mesh run by the CPU kernel, several devices and batches, and without tracks."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest
import shapely
from helpers import Stopped, stopped_after

import flowkit as fk
from flowkit.statistics.polygons import inside_polygons, polygon_edges


def _window_of_frames(traj, window):
    interval = abs(traj.times[1] - traj.times[0])
    per = round(window / interval)
    count = int(np.ceil(abs(traj.times[-1] - traj.times[0]) / window - 1e-9))
    return np.minimum(np.arange(len(traj.times)) // per, count - 1), count


def grid_reference(traj, edges, window, age):
    """`GridCounts`' counts from the stored frames: NumPy's histogram of each frame's active
    particles, by window and age class."""
    windows, count = _window_of_frames(traj, window)
    shape = (count, len(age) - 1, *(len(e) - 1 for e in reversed(edges)))
    counts = np.zeros(shape, np.int64)
    for k in range(len(traj.times)):
        moving = traj.status[k] == fk.Status.ACTIVE
        ages = np.abs(traj.times[k] - traj.t_release)[moving]
        sample = np.column_stack([ages, *(traj.positions[k][moving][:, a] for a in reversed(range(len(edges))))])
        counts[windows[k]] += np.histogramdd(sample, bins=[age, *reversed(edges)])[0].astype(np.int64)
    return counts


def double_gyre_run(**kw):
    field = fk.datasets.double_gyre_grid()
    rng = np.random.default_rng(0)
    seeds = rng.uniform([0.0, 0.0], [2.0, 1.0], (3000, 2))
    t_release = rng.uniform(0.0, 3.0, 3000)
    return field, seeds, dict(t_release=t_release, save_every=5, **kw)


def test_grid_counts_equal_those_of_the_stored_frames_on_devices_and_batches():
    field, seeds, kw = double_gyre_run(batch_size=1100)  # three batches over two devices
    edges, age = [np.linspace(0, 2, 17), np.linspace(0, 1, 9)], [0.0, 1.0, 3.0, 20.0]
    stat = fk.statistics.GridCounts(edges, window=2.0, age=age)
    traj = fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=[stat], **kw)
    assert traj.stats.n_devices == 2  # totals gathered over the devices' rows and the batches
    ds = traj.statistics["grid_counts"]
    expected = grid_reference(traj, edges, 2.0, age)
    assert ds["count"].dims == ("time", "age", "y", "x") and expected.sum() > 20000
    np.testing.assert_array_equal(ds["count"].values, expected)
    np.testing.assert_array_equal(ds["frames"].values, [4, 4, 4, 4, 5])
    np.testing.assert_allclose(ds["time"].values, [0, 2, 4, 6, 8])
    assert ds.attrs["Conventions"].startswith("CF") and ds["x_bounds"].shape == (16, 2)


def test_statistics_are_gathered_in_the_chunk_without_host_traffic_in_one_program():
    field, seeds, kw = double_gyre_run()
    stats = [
        fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=1.0),
        fk.statistics.PolygonStats(list(POLYGONS.values())),
    ]
    run = fk.tracker.TrackRun(field, seeds, 0.0, 4.0, 0.1, statistics=stats, tracks=False, **kw)
    state, slots, _ = run.initial_state()
    before = fk.tracker.compile_count()
    with jax.transfer_guard("disallow"):
        state, frames = run.advance(state, slots)
    assert frames is None and fk.tracker.compile_count() == before + 1
    traj = run.run()  # the same shapes: no other program
    assert fk.tracker.compile_count() == before + 1 and set(traj.statistics) == {"grid_counts", "polygons"}


def test_a_run_without_tracks_gathers_the_same_and_keeps_its_ends():
    field, seeds, kw = double_gyre_run()
    stat = fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=5.0)
    full = fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=[stat], **kw)
    bare = fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=[stat], tracks=False, **kw)
    np.testing.assert_array_equal(bare.statistics["grid_counts"]["count"], full.statistics["grid_counts"]["count"])
    assert bare.positions.shape == (2, 3000, 2) and bare.velocities is None
    np.testing.assert_array_equal(bare.positions[[0, -1]], full.positions[[0, -1]])
    np.testing.assert_array_equal(bare.status[-1], full.status[-1])
    np.testing.assert_array_equal(bare.times, full.times[[0, -1]])


def polygon_reference(traj, polygons, window):
    """`PolygonStats` from the stored frames, with shapely's point-in-polygon test."""
    windows, count = _window_of_frames(traj, window)
    n_frames, n = traj.status.shape
    p = len(polygons)
    moving = traj.status == fk.Status.ACTIVE
    x, y = traj.positions[..., 0], traj.positions[..., 1]
    inside = np.stack([shapely.contains_xy(poly, x, y) for poly in polygons], axis=-1) & moving[..., None]
    seen = np.cumsum(moving, axis=0) > 0
    out = {k: np.zeros((count, p), np.int64) for k in ("count", "entries", "exits")}
    for k in range(n_frames):
        out["count"][windows[k]] += inside[k].sum(axis=0)
        if k:
            out["entries"][windows[k]] += (inside[k] & ~inside[k - 1] & seen[k - 1][:, None]).sum(axis=0)
            out["exits"][windows[k]] += (inside[k - 1] & ~inside[k]).sum(axis=0)
    at_seed = np.stack([shapely.contains_xy(poly, x[0], y[0]) for poly in polygons], axis=-1)
    release = np.where(at_seed.any(axis=1), np.argmax(at_seed, axis=1), p)
    out["released"] = np.bincount(release[seen[-1]], minlength=p + 1)
    visited = inside.any(axis=0)
    first = np.argmax(inside, axis=0)  # (n, p) first frame inside
    age = np.abs(traj.times[first] - traj.t_release[:, None])
    out["connectivity"] = np.zeros((p + 1, p), np.int64)
    out["first_arrival_min"] = np.full((p + 1, p), np.nan)
    mean = np.full((p + 1, p), np.nan)
    for r in range(p + 1):
        for q in range(p):
            arrived = visited[:, q] & (release == r)
            out["connectivity"][r, q] = arrived.sum()
            if arrived.any():
                out["first_arrival_min"][r, q] = age[arrived, q].min()
                mean[r, q] = age[arrived, q].mean()
    out["first_arrival_mean"] = mean
    interval = abs(traj.times[1] - traj.times[0])
    out["residence_time"] = inside.sum(axis=(0, 1)) * interval / visited.sum(axis=0)
    entered = inside[1:] & ~inside[:-1] & seen[:-1, :, None]
    left = inside[:-1] & ~inside[1:]
    events = [(i, q, k + 1, 1) for k, i, q in zip(*np.nonzero(entered))]
    events += [(i, q, k + 1, -1) for k, i, q in zip(*np.nonzero(left))]
    out["events"] = sorted(events, key=lambda e: (e[0], e[2], e[1]))  # by particle, frame, polygon
    return out


POLYGONS = {
    "square": shapely.box(0.2, 0.2, 0.8, 0.8).difference(shapely.box(0.4, 0.4, 0.6, 0.6)),  # a hole
    "disc": shapely.Point(1.5, 0.5).buffer(0.3),
    "pair": shapely.MultiPolygon([shapely.box(0.9, 0.05, 1.1, 0.3), shapely.box(0.9, 0.7, 1.1, 0.95)]),
}


def test_polygon_statistics_equal_those_of_the_stored_frames():
    field, seeds, kw = double_gyre_run(batch_size=1600, dtype="float64")
    stat = fk.statistics.PolygonStats(list(POLYGONS.values()), names=list(POLYGONS), window=2.5, events=20_000)
    traj = fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=[stat], **kw)
    ds = traj.statistics["polygons"]
    expected = polygon_reference(traj, list(POLYGONS.values()), 2.5)
    assert expected["entries"].sum() > 100 and expected["exits"].sum() > 100 and expected["released"][:3].min() > 50
    for name in ("count", "entries", "exits", "released", "connectivity"):
        np.testing.assert_array_equal(ds[name].values, expected[name], err_msg=name)
    for name in ("first_arrival_min", "first_arrival_mean", "residence_time"):
        np.testing.assert_allclose(ds[name].values, expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
    assert list(ds["release"].values) == [*POLYGONS, "outside"]
    # the log of entries and exits (two devices, two batches): every one, by particle, frame, polygon
    frames = np.searchsorted(traj.times, ds["event_time"].values)
    polygon = [list(POLYGONS).index(name) for name in ds["event_polygon"].values]
    got = list(zip(ds["event_particle"].values, polygon, frames, ds["event_kind"].values))
    assert got == expected["events"] and int(ds["events_lost"]) == 0
    np.testing.assert_array_equal(traj.times[frames], ds["event_time"].values)


def test_polygon_events_past_the_log_are_counted_and_said(caplog):
    field, seeds, kw = double_gyre_run(dtype="float64")
    polygons = list(POLYGONS.values())
    full = fk.statistics.PolygonStats(polygons, names=list(POLYGONS), events=100_000)
    short = fk.statistics.PolygonStats(polygons, names=list(POLYGONS), events=50, name="short")
    kw["t_release"] = kw["t_release"][:400]
    traj = fk.track(field, seeds[:400], 0.0, 5.0, 0.1, statistics=[full, short], **kw)
    everything, kept = traj.statistics["polygons"], traj.statistics["short"]
    assert everything.sizes["event"] > 2 * 2 * 50 and int(everything["events_lost"]) == 0
    assert kept.sizes["event"] <= 2 * 50  # two devices
    assert int(kept["events_lost"]) == everything.sizes["event"] - kept.sizes["event"]
    assert "did not fit events=50" in caplog.text


def test_statistics_on_a_mesh_the_kernel_runs_where_particles_leave():
    """A tet box whose flow drifts out through x max: the CPU kernel takes the steps (where it
    is built), particles stop as they leave, the counts follow the stored frames."""
    extent = np.array([2.0, 1.0, 1.0])
    points, tets = fk.datasets.jittered_tet_box((11, 6, 6), (2.0, 1.0, 1.0), jitter=0.2)
    values = np.column_stack([np.full(len(points), 0.5), 0.2 * np.sin(np.pi * points[:, 0]), np.zeros(len(points))])
    field = fk.MeshField.from_arrays(points, tets, values)
    seeds = np.random.default_rng(1).uniform([0.05, 0.05, 0.05], extent - 0.05, (2000, 3))
    edges = [np.linspace(0, 2, 9), np.linspace(0, 1, 5), np.linspace(0, 1, 3)]
    stat = fk.statistics.GridCounts(edges, window=1.0, age=[0.0, 10.0])
    traj = fk.track(field, seeds, 0.0, 3.0, 0.05, save_every=4, statistics=[stat])
    assert 0.3 < np.mean(traj.status[-1] == fk.Status.OUT_OF_DOMAIN) < 0.9
    counts = traj.statistics["grid_counts"]["count"]
    assert counts.dims == ("time", "age", "z", "y", "x")
    np.testing.assert_array_equal(counts.values, grid_reference(traj, edges, 1.0, [0.0, 10.0]))


def test_even_odd_inside_matches_shapely_on_holes_and_multipolygons():
    rng = np.random.default_rng(4)
    points = rng.uniform([-0.1, -0.1], [2.1, 1.1], (5000, 2))
    inside = np.asarray(inside_polygons(points, *polygon_edges(list(POLYGONS.values()))))
    expected = np.stack([shapely.contains_xy(p, points[:, 0], points[:, 1]) for p in POLYGONS.values()], axis=-1)
    np.testing.assert_array_equal(inside, expected)
    assert expected.sum(axis=0).min() > 50


def test_polygons_read_from_geojson_and_shapefiles(tmp_path):
    import shapefile

    features = [
        {"type": "Feature", "properties": {"name": name}, "geometry": shapely.geometry.mapping(poly)}
        for name, poly in POLYGONS.items()
    ]
    (tmp_path / "sites.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    files = {part: open(tmp_path / f"sites.{part}", "wb") for part in ("shp", "shx", "dbf")}
    with shapefile.Writer(**files, shapeType=shapefile.POLYGON) as writer:  # files of ours: pyshp 3.1.9 leaks its own
        writer.field("name", "C")
        for name, poly in POLYGONS.items():
            parts = poly.geoms if isinstance(poly, shapely.MultiPolygon) else [poly]
            rings = [list(ring.coords) for part in parts for ring in (part.exterior, *part.interiors)]
            writer.poly([[(x, y) for x, y in ring] for ring in rings])
            writer.record(name)
    for file in files.values():
        file.close()
    for path in (tmp_path / "sites.geojson", tmp_path / "sites.shp"):
        geometries, names = fk.statistics.read_polygons(path)
        assert names == list(POLYGONS)
        for got, want in zip(geometries, POLYGONS.values()):
            assert got.symmetric_difference(want).area < 1e-12, path
        stat = fk.statistics.PolygonStats(path)
        assert stat.names == tuple(POLYGONS)


def test_statistics_refuse_what_they_cannot_gather():
    field, seeds, kw = double_gyre_run()
    grid = fk.statistics.GridCounts([np.linspace(0, 2, 5), np.linspace(0, 1, 3)], window=0.7)
    with pytest.raises(ValueError, match="window=0.7 s must be a whole number of the run's save interval"):
        fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=[grid], **kw)
    with pytest.raises(ValueError, match="tracks=False keeps no frames"):
        fk.track(field, seeds, 0.0, 1.0, 0.1, tracks=False)
    ok = fk.statistics.GridCounts([np.linspace(0, 2, 5), np.linspace(0, 1, 3)])
    with pytest.raises(ValueError, match="each needs its own name"):
        fk.track(field, seeds, 0.0, 1.0, 0.1, statistics=[ok, ok])
    with pytest.raises(TypeError, match="expected flowkit.statistics objects"):
        fk.track(field, seeds, 0.0, 1.0, 0.1, statistics=["counts"])
    with pytest.raises(ValueError, match="strictly ascending"):
        fk.statistics.GridCounts([np.array([0.0, 1.0, 0.5])])
    with pytest.raises(ValueError, match="not a \\(multi\\)polygon"):
        fk.statistics.PolygonStats([shapely.Point(0, 0)])


def test_a_store_keeps_the_statistics_and_a_resumed_run_adds_on_to_them(tmp_path, monkeypatch):
    """With `output=`, the store keeps the statistics' totals after every batch and their
    datasets at the end; a run stopped after two of three batches and resumed gathers what an
    uninterrupted in-memory run does (the event log in the same order), with or without tracks."""
    field, seeds, kw = double_gyre_run(batch_size=1100)
    stats = [
        fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=2.0),
        fk.statistics.PolygonStats(list(POLYGONS.values()), names=list(POLYGONS), events=40_000),
    ]
    reference = fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=stats, **kw).statistics
    for tracks in (True, False):
        store = tmp_path / f"tracks{tracks}.zarr"
        restore = stopped_after(monkeypatch, 2)
        with pytest.raises(Stopped):
            fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=stats, tracks=tracks, output=store, **kw)
        restore()
        assert sorted(p.name for p in (store / "flowkit_totals").iterdir() if p.is_dir()) == ["2"]
        opened = fk.track(
            field, seeds, 0.0, 10.0, 0.1, statistics=stats, tracks=tracks, output=store, resume=True, **kw
        )
        assert opened.attrs["flowkit_statistics"] == ["grid_counts", "polygons"]
        assert opened.sizes["obs"] == (21 if tracks else 2) and not (store / "flowkit_totals").exists()
        loaded = fk.Trajectory.load(store).statistics
        for name, expected in reference.items():
            xr_assert_identical(loaded[name], expected)
    with pytest.raises(ValueError, match="made by another run .*output differ"):  # other statistics: not this run
        fk.track(field, seeds, 0.0, 10.0, 0.1, statistics=stats[:1], output=store, resume=True, **kw)


def xr_assert_identical(a, b):
    """Two datasets equal in values (NaN where NaN), dimensions, coordinates and attributes."""
    import xarray as xr

    xr.testing.assert_identical(a, b)
    assert a["count"].sum() > 0


def test_statistics_on_nemos_own_output_equal_those_of_the_stored_frames():
    """NEMO's ORCA025 North Sea files (`tests/data/nemo`): a grid of 0.25 degrees and two boxes
    in degrees, on the model's calendar (dates as the windows' times); positions agree with the
    stored frames' counts exactly."""
    files = sorted(str(p) for p in (Path(__file__).parent / "data" / "nemo").glob("ORCA*.nc"))
    field = fk.io.read(files, dtype="float64")
    seeds = fk.seeding.random_inside(1500, field, key=jax.random.key(5))[:, :2]
    lo, hi = (np.asarray(b)[:2] for b in field.bounds)
    edges = [
        np.arange(np.floor(lo[0]), np.ceil(hi[0]) + 0.25, 0.25),
        np.arange(np.floor(lo[1]), np.ceil(hi[1]) + 0.25, 0.25),
    ]
    middle = 0.5 * (lo + hi)
    boxes = [shapely.box(*(middle - 1.0), *middle), shapely.box(*middle, *(middle + 1.0))]
    stats = [
        fk.statistics.GridCounts(edges, window=86400.0),
        fk.statistics.PolygonStats(boxes, names=["south_west", "north_east"], window=86400.0),
    ]
    traj = fk.track(field, seeds, 0.0, 3 * 86400.0, 1800.0, save_every=6, dtype="float64", statistics=stats)
    grid, sites = traj.statistics["grid_counts"], traj.statistics["polygons"]
    assert grid["count"].dims == ("time", "lat", "lon") and grid["lon"].attrs["units"] == "degrees_east"
    assert "since" in grid["time"].attrs["units"] and "calendar" in grid["time"].attrs
    np.testing.assert_array_equal(grid["count"].values, grid_reference_2d(traj, edges, 86400.0))
    expected = polygon_reference(traj, boxes, 86400.0)
    assert expected["count"].min() > 0
    for name in ("count", "entries", "exits", "released", "connectivity"):
        np.testing.assert_array_equal(sites[name].values, expected[name], err_msg=name)
    np.testing.assert_allclose(sites["first_arrival_mean"].values, expected["first_arrival_mean"], rtol=1e-12)


def grid_reference_2d(traj, edges, window):
    """`GridCounts` without age classes from the stored frames."""
    windows, count = _window_of_frames(traj, window)
    counts = np.zeros((count, len(edges[1]) - 1, len(edges[0]) - 1), np.int64)
    for k in range(len(traj.times)):
        moving = traj.status[k] == fk.Status.ACTIVE
        x, y = traj.positions[k][moving, 0], traj.positions[k][moving, 1]
        counts[windows[k]] += np.histogram2d(y, x, bins=[edges[1], edges[0]])[0].astype(np.int64)
    return counts


def test_a_streamed_series_gathers_what_the_resident_one_does(tmp_path):
    pvd = fk.datasets.double_gyre_vti_series(tmp_path, nx=41, ny=21, times=np.linspace(0, 10, 11))
    resident = fk.io.read(pvd, stream=False)
    streamed = fk.io.read(pvd, stream=True, max_device_bytes=41 * 21 * 2 * 4 * 16)
    seeds = np.random.default_rng(0).uniform([0.1, 0.1], [1.9, 0.9], (500, 2))
    grid = fk.statistics.GridCounts([np.linspace(0, 2, 9), np.linspace(0, 1, 5)], window=2.0)
    both = [
        fk.track(f, seeds, 0.0, 10.0, 0.05, save_every=10, statistics=[grid], tracks=False)
        for f in (resident, streamed)
    ]
    assert both[1].stats.slices_read == 11  # windows of the series swapped in between chunks
    np.testing.assert_array_equal(*(t.statistics["grid_counts"]["count"].values for t in both))
    assert int(both[0].statistics["grid_counts"]["count"].sum()) == 500 * 21


def test_a_backward_run_gathers_what_its_stored_frames_give():
    """Tracking back from t = 10 to 0 (particles released back in time): windows back from the
    start, ages and residence times positive."""
    field = fk.datasets.double_gyre_grid()
    rng = np.random.default_rng(3)
    seeds, t_release = rng.uniform([0, 0], [2, 1], (1500, 2)), rng.uniform(7.0, 10.0, 1500)
    edges, age = [np.linspace(0, 2, 9), np.linspace(0, 1, 5)], [0.0, 1.0, 2.5, 20.0]
    stats = [
        fk.statistics.GridCounts(edges, window=2.0, age=age),
        fk.statistics.PolygonStats(list(POLYGONS.values()), names=list(POLYGONS), window=2.0),
    ]
    traj = fk.track(
        field, seeds, 10.0, 0.0, -0.05, save_every=10, statistics=stats, t_release=t_release, dtype="float64"
    )
    grid, sites = traj.statistics["grid_counts"], traj.statistics["polygons"]
    np.testing.assert_array_equal(grid["time"].values, [10, 8, 6, 4, 2])
    np.testing.assert_array_equal(grid["count"].values, grid_reference(traj, edges, 2.0, age))
    expected = polygon_reference(traj, list(POLYGONS.values()), 2.0)
    for name in ("count", "entries", "exits", "released", "connectivity"):
        np.testing.assert_array_equal(sites[name].values, expected[name], err_msg=name)
    for name in ("first_arrival_mean", "residence_time"):
        np.testing.assert_allclose(sites[name].values, expected[name], rtol=1e-12, err_msg=name)
    assert np.nanmin(sites["residence_time"].values) > 0 and np.nanmin(sites["first_arrival_min"].values) >= 0


def test_a_run_without_tracks_is_checked_for_the_two_frames_it_keeps(monkeypatch):
    """Host memory that the frames of a long run would overflow still holds a run with
    statistics only: the memory checks count the first and last frames that it keeps, where a
    run with tracks is refused (before seeding, and again as it is laid out)."""
    from flowkit.tracker import memory

    field, seeds, kw = double_gyre_run()
    grid = fk.statistics.GridCounts([np.linspace(0, 2, 5), np.linspace(0, 1, 3)])
    times = (0.0, 20.0, 0.01)  # 401 frames of 3 000 particles: about 11 MB
    monkeypatch.setattr(memory, "available_memory", lambda: 4 * 2**20)
    with pytest.raises(MemoryError, match="the run's frames need"):
        fk.track(field, seeds, *times, statistics=[grid], **kw)
    with pytest.raises(MemoryError, match="the run's frames need"):
        memory.check_seeds_fit((field, seeds, *times), kw, streamed=False)
    memory.check_seeds_fit((field, seeds, *times), kw, streamed=False, tracks=False)
    run = fk.tracker.TrackRun(field, seeds, *times, statistics=[grid], tracks=False, **kw)
    assert run.host_bytes < 2**17  # two frames and the end times: ~0.1 MB of the 10.8 MiB a run with tracks holds
