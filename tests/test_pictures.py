"""What the pictures say: time scales that end when the particles stop, in hours or days since
the data's first date; hemispheres on map axes; the speed behind the paths with its scale in
m/s; colour scales from the data's robust range; a picture with nothing to show says so; and
density cells that the particle count supports."""

from pathlib import Path

import matplotlib
import meshes
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import flowkit as fk
from flowkit.analysis import plots
from flowkit.analysis.outline import outline_segments
from flowkit.app_outputs import PER_CELL, density_bins

matplotlib.use("Agg")


@pytest.fixture
def figures(monkeypatch):
    """The figures the plot functions draw, kept open instead of written."""
    kept = []
    monkeypatch.setattr(plots, "save", lambda fig, path: kept.append(fig) or Path(path))
    yield kept
    import matplotlib.pyplot as plt

    for fig in kept:
        plt.close(fig)


def _southern_current(speed=0.5):
    """A dated eastward current of `speed` m/s over 10–11°E, 35–33°S, hourly for two days."""
    lon, lat = np.linspace(10.0, 11.0, 21), np.linspace(-35.0, -33.0, 21)
    times = pd.date_range("2020-01-01", periods=49, freq="h")
    u = np.full((len(times), len(lat), len(lon)), speed, np.float32)
    ds = xr.Dataset(
        {
            "uo": (("time", "lat", "lon"), u, {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"}),
            "vo": (("time", "lat", "lon"), 0 * u, {"standard_name": "northward_sea_water_velocity", "units": "m s-1"}),
        },
        coords={
            "time": times,
            "lon": ("lon", lon, {"units": "degrees_east"}),
            "lat": ("lat", lat, {"units": "degrees_north"}),
        },
    )
    return fk.io.from_xarray(ds, dtype="float64")


def _colour_bars(fig):
    return {ax.get_ylabel(): ax for ax in fig.axes[1:]}


def test_pathlines_time_scale_ends_when_the_last_particle_stops_in_hours_since_the_date(figures):
    """Particles 0.5 m/s east of 10.5°E at 34°S leave the box (11°E) after 25.6 h of a 48 h
    run: the colour scale spans 0 to the last frame in which they moved, in hours since
    2020-01-01; latitudes read °S; the speed behind is drawn with its scale in m/s."""
    field = _southern_current()
    seeds = np.array([[10.5, -34.5], [10.5, -34.0], [10.5, -33.5]])
    traj = fk.track(field, seeds, 0.0, 48 * 3600.0, 3600.0, dtype="float64")
    assert (traj.status[-1] == fk.Status.OUT_OF_DOMAIN).all()
    moved = np.any(np.diff(traj.positions, axis=0) != 0, axis=(1, 2))
    until = traj.times[1:][moved].max()  # the particles left between 25 h and 26 h
    plots.plot_pathlines(traj, "unused.png", field)
    (fig,) = figures
    bars = _colour_bars(fig)
    time_bar = bars["hours since 2020-01-01"]
    bottom, top = time_bar.get_ylim()
    assert bottom == 0.0 and top == pytest.approx(until / 3600.0)
    assert 24 < top < 27
    assert "mean speed over the run (m/s)" in bars
    speed_bar = bars["mean speed over the run (m/s)"]
    assert speed_bar.get_ylim()[1] == pytest.approx(0.5, rel=1e-3)
    ax = fig.axes[0]
    fig.canvas.draw()
    latitudes = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert latitudes and all(text.endswith("°S") for text in latitudes), latitudes
    assert all(text.endswith("°E") for text in (t.get_text() for t in ax.get_xticklabels()) if text)


def test_a_picture_with_nothing_to_show_says_so(figures):
    """Still water: no pathline, and the picture says that no particle moved; the snapshot's
    title says the flow is at rest."""
    field = _southern_current(speed=0.0)
    traj = fk.track(field, np.array([[10.5, -34.0]]), 0.0, 7200.0, 3600.0, dtype="float64")
    plots.plot_pathlines(traj, "unused.png", field)
    plots.plot_snapshot(traj, -1, "unused.png", field)
    lines, snapshot = figures
    assert "no particle moved" in [text.get_text() for text in lines.axes[0].texts]
    assert snapshot.axes[0].get_title().endswith("the flow at rest")


def test_ftle_colours_span_its_percentiles_not_one_corner(figures):
    ftle = np.random.default_rng(0).uniform(0.0, 0.3, (40, 30))
    ftle[0, 0] = 5.0  # one corner value
    plots.plot_ftle(ftle, [np.linspace(0, 2, 40), np.linspace(0, 1, 30)], "unused.png", 0.0, 10.0)
    (fig,) = figures
    low, high = _colour_bars(fig)["FTLE (1/s)"].get_ylim()
    assert high == pytest.approx(np.percentile(ftle, 99)) and high < 0.31 and low < 0.01


@pytest.mark.parametrize("n", [123, 5_000, 10**6])
def test_density_cells_hold_enough_particles(n):
    """Square cells over a 2:1 box, no more than the particles fill with PER_CELL each, at most
    50 along the longer side."""
    nx, ny = density_bins(n, [2.0, 1.0], 50)
    assert nx * ny <= n / PER_CELL * 1.2 and nx <= 50
    assert nx == pytest.approx(2 * ny, abs=1)
    if n == 10**6:
        assert (nx, ny) == (50, 25)


@pytest.mark.parametrize("kind", ["tetra", "mixed", "quad", "mixed2d"])
def test_a_mesh_outline_is_its_boundary_seen_from_above(kind):
    """A box meshed in tets or mixed cells (3-D) or triangles and quads (2-D): its outline is
    the box's edges and nothing inside, the faces' own diagonals and seams left out."""
    points, cells, types = meshes.mesh(kind, (6, 5, 4))
    field = fk.MeshField.from_arrays(points, cells, meshes.velocity(points)[:, : points.shape[1]], types)
    segments = outline_segments(field)
    on_side = [np.isclose(segments[..., axis], edge).all(axis=1) for axis, edge in ((0, 0), (0, 2), (1, 0), (1, 1))]
    assert np.all(np.any(on_side, axis=0))
    length = np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1).sum()
    assert length == pytest.approx(6.0 if points.shape[1] == 2 else 12.0)  # the perimeter; in 3-D top and bottom


def test_pictures_of_a_real_mesh_draw_its_outline_and_name_its_open_patches(figures):
    """The 2-D EnSight cylinder: the cylinder's circle among the drawn outline, and its planar
    boundary parts named on the pathlines, the snapshot and the density."""
    from matplotlib.collections import LineCollection

    field = fk.io.read(Path(__file__).parent / "data" / "cfd" / "ensight_cylinder" / "cylinder_Re35.case")
    seeds = np.column_stack([np.full(20, 0.2), np.linspace(-3, 3, 20)])
    traj = fk.track(field, seeds, 0.0, 0.3, 0.003, save_every=10)
    plots.plot_pathlines(traj, "p.png", field=field)
    plots.plot_snapshot(traj, 5, "s.png", field=field)
    plots.plot_density(np.ones((30, 15)), ((0.0, -3.75), (15.0, 3.75)), "d.png", field=field)
    for fig in figures:
        ax = fig.axes[0]
        names = {text.get_text() for text in ax.texts}
        assert {"inlet", "outlet", "outlet_top", "outlet_bottom"} <= names
        drawn = np.concatenate([c.get_segments() for c in ax.collections if isinstance(c, LineCollection)])
        radius = np.hypot(drawn[..., 0] - 2.5, drawn[..., 1])
        assert np.sum(np.isclose(radius, 0.5, atol=2e-3).all(axis=1)) >= 60  # the cylinder wall's 63 edges
