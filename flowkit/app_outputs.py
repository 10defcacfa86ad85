"""What the `track` app writes beside its trajectories: the run's summary, the density,
deposition and snapshot files it was asked for, and its pictures."""

import logging
import platform
import time
from collections import Counter
from pathlib import Path

import jax
import numpy as np
from omegaconf import DictConfig, OmegaConf

from . import __version__, tracker
from ._files import written
from .analysis.animation import animate
from .analysis.density import histogram
from .analysis.deposition import deposition_map, write_deposition_map_vtp, write_deposition_vtp
from .analysis.picture import view_box
from .analysis.plots import plot_density, plot_oil_budget, plot_pathlines, plot_snapshot
from .fields.base import AbstractField
from .fields.streamed import StreamedField
from .io.vtk_arrays import is_expression
from .trajectory import RunStats, Trajectory

_log = logging.getLogger("flowkit")


def summary(cfg: DictConfig, run: tracker.TrackRun, traj: Trajectory, info: RunStats, cache: Counter) -> dict:
    """What `summary.json` records of a finished run."""
    plan, pieces, device = run.plan, run.pieces, run.devices[0]
    summary = {
        "n_particles": info.n_particles,
        "n_steps": info.n_steps,
        "n_saves": info.n_saves,
        "dtype": info.dtype,
        "device": info.device,
        "n_devices": info.n_devices,
        "compile_s": info.compile_s,
        "compilation_cache": {"hits": cache["hits"], "misses": cache["misses"]},
        "run_s": info.run_s,
        "particle_steps_per_s": info.particle_steps_per_s,
        "lost_releases": info.lost_releases,
        "process": {
            "index": jax.process_index(),
            "count": jax.process_count(),
            "first_particle": run.first_particle,
            "n_particles_total": run.n_particles_total,
        },
        "stream": {
            "window_slices": info.window_slices,
            "slices_read": info.slices_read,
            "load_s": info.load_s,
            "first_window_s": info.first_window_s,
            "load_wait_s": info.load_wait_s,
        }
        if plan.stream is not None
        else None,
        "restarts": int(np.asarray(traj.generation)[-1].sum()) if traj.generation is not None else 0,
        "status_counts": traj.status_counts(),
        "field": type(pieces.field).__name__,
        "velocity": velocity_record(pieces.field),
        "integrator": type(pieces.integrator).__name__,
        "particles": type(pieces.particles).__name__,
        "t0": plan.t0,
        "t1": plan.t1,
        "dt": plan.dt,
        "courant": info.courant,
        "inputs": inputs(cfg),
        "config": OmegaConf.to_container(cfg, resolve=True),
        "versions": versions(),
        "device_kind": device.device_kind,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    memory = device.memory_stats()  # None on backends without allocator statistics (CPU)
    if memory:
        summary["device_memory"] = {
            k: int(v) for k, v in memory.items() if k in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
        }
    return summary


def write_outputs(cfg: DictConfig, run: tracker.TrackRun, traj: Trajectory, out: Path, summary: dict) -> list[str]:
    """Write the trajectories in the formats `cfg.output` asks for, and the deposition on walls;
    return the names of the files written."""
    field = run.plan.stream or run.plan.pieces.field
    files = [] if run.output is None else [run.output.name]
    replace = cfg.overwrite or cfg.resume  # a resumed run's outputs are its own, written again
    if cfg.output.trajectories:
        files.append(traj.save(out / "trajectories.npz", overwrite=replace).name)
        if field.spherical:  # ocean/atmosphere data: the CF trajectory file its users read
            files.append(
                traj.save(
                    out / "trajectories.nc", spherical=True, time_origin=field.time_origin, overwrite=replace
                ).name
            )
    if cfg.output.vtp:
        files.append(traj.save(out / "trajectories.vtp", spherical=field.spherical, overwrite=replace).name)
        if summary["status_counts"]["absorbed"]:  # particles deposited on walls: where, when and how fast, for ParaView
            write_deposition_vtp(traj, out / "deposition.vtp")
            files.append("deposition.vtp")
            deposited = deposition_map(traj, field)
            summary["deposition"] = {
                "deposits": int(deposited.counts.sum()),
                "faces_hit": int(np.sum(deposited.counts > 0)),
            }
            if deposited.points is not None:
                write_deposition_map_vtp(deposited, out / "deposition_map.vtp")
                files.append("deposition_map.vtp")
    if cfg.output.get("clouds"):
        files.append(traj.save(out / "particles.pvd", overwrite=replace).name)
    for name, dataset in (traj.statistics or {}).items():  # gathered during the run: CF NetCDF
        with written(out / f"statistics_{name}.nc", overwrite=replace) as temporary:
            temporary.write_bytes(dataset.to_netcdf(engine="h5netcdf"))
        files.append(f"statistics_{name}.nc")
    return files


def plot(cfg: DictConfig, run: tracker.TrackRun, traj: Trajectory, out: Path) -> list[str]:
    """Pathlines, the last frame and the particles' density at the end, over the field, and the
    run's animation where `output.animation` asks for it (`animated`); the names of those drawn.
    A picture that fails is said in the log and left out: a finished run's data is kept whatever
    its pictures do."""
    stream, field = run.plan.stream, run.plan.stream or run.plan.pieces.field
    at = lambda t: stream.near(t) if stream is not None else field  # noqa: E731  (a streamed series: the slices around t)
    times = np.asarray(traj.times, dtype=np.float64)
    pictures = {
        "trajectories.png": lambda: plot_pathlines(
            traj,
            out / "trajectories.png",
            field=at(times[0]),
            max_lines=cfg.output.max_plot_lines,
            color_by=cfg.output.color_by,
        ),
        "snapshot.png": lambda: plot_snapshot(traj, -1, out / "snapshot.png", field=at(times[-1])),
        "density.png": lambda: _density_picture(cfg, traj, field, at(times[-1]), out / "density.png"),
    }
    if "oil_budget" in (traj.statistics or {}):
        pictures["oil_budget.png"] = lambda: plot_oil_budget(traj.statistics["oil_budget"], out / "oil_budget.png")
    if animated(cfg, traj):
        pictures["animation.mp4"] = lambda: animate(traj, out / "animation.mp4", field=stream or field, progress=False)
    drawn, took = [], []
    for name, draw in pictures.items():
        try:
            start = time.perf_counter()
            made = draw()
            drawn.append(made.name if isinstance(made, Path) else name)  # an animation may come out as a GIF
            took.append(f"{drawn[-1]} {time.perf_counter() - start:.1f} s")
        except Exception as err:  # noqa: BLE001 -- every picture's failure is one line, the run goes on
            _log.warning(
                "%s not drawn (%s: %s); the trajectories and summary are written", name, type(err).__name__, err
            )
    if took:
        _log.info("pictures: %s", ", ".join(took))
    return drawn


ANIMATED = 2_000_000
"""Particle-frames (saved times × particles) up to which `output.animation=auto` animates a run."""


def animated(cfg: DictConfig, traj: Trajectory) -> bool:
    """Whether the run is animated: `output.animation` true, or `auto` (the default) for runs of
    at most `ANIMATED` particle-frames, where rendering takes seconds."""
    choice = cfg.output.get("animation", "auto")
    if choice == "auto":
        return traj.positions.shape[0] * traj.positions.shape[1] <= ANIMATED
    return bool(choice)


PER_CELL = 10
"""Particles a density cell holds on average when they are spread evenly over the picture."""


def density_bins(n: int, sides, most: int) -> list[int]:
    """Cells along each side of a density picture of `n` particles over a box of `sides`: square,
    at most `most` along the longer side, and no more than `n / PER_CELL` in all."""
    sides = np.asarray(sides, dtype=np.float64)
    across = min(most, np.sqrt(max(n, 1) / PER_CELL * sides.max() / sides.min()))
    return [max(1, round(across * side / sides.max())) for side in sides]


def _density_picture(cfg: DictConfig, traj: Trajectory, field, near, path: Path) -> None:
    """The particles' density at the end, on square cells of the particles' region: at most
    `output.density_bins` along its longer side, and no more cells than the particles fill
    with `PER_CELL` each if spread evenly (a count of 0–6 is noise, not a density)."""
    lo, hi = (np.array(b, dtype=np.float64) for b in field.bounds)
    lo[:2], hi[:2] = view_box(traj, field)  # the particles' region, not a whole globe
    sides = (hi - lo)[:2] * ([np.cos(np.deg2rad(0.5 * (lo[1] + hi[1]))), 1.0] if field.spherical else 1.0)
    there = int(np.all(np.isfinite(np.asarray(traj.positions[-1])), axis=1).sum())
    bins = density_bins(there, sides, cfg.output.density_bins) + [1] * (field.dim - 2)
    cells = histogram(traj, bins, (lo, hi), frames=[-1])[0]
    plot_density(
        cells if field.dim == 2 else cells.sum(axis=2),
        (lo[:2], hi[:2]),
        path,
        time=float(traj.times[-1]),
        field=near,
        projected=field.dim == 3,
    )


def write_text(path: Path, text: str) -> None:
    with written(path, overwrite=True) as temporary:
        temporary.write_text(text)


def inputs(cfg: DictConfig) -> dict:
    """What the run read: the field's builder and every path it or the seeds were given (a
    builder with no path reads the sample `flowkit.datasets` writes, named as `dataset`)."""
    found = {"field": cfg.field._target_}
    for group in ("field", "seeds"):
        given = OmegaConf.to_container(cfg[group], resolve=True)
        for key, value in given.items():
            if key == "dataset" and given.get("path") is not None:
                continue  # a sample's name, unused when a path is read
            if key in ("path", "grid", "file", "dataset") and value is not None:
                found[f"{group}.{key}"] = (
                    str(value)
                    if key == "dataset" or any(ch in str(value) for ch in "*?[")
                    else str(Path(value).resolve())
                )
    return found


def velocity_record(field: AbstractField | StreamedField) -> dict | None:
    """Which of the file's arrays the velocity is, and why: a vector or components named as a
    velocity, or momentum over density (a compressible solver's file); None for a field not
    read from a solver's arrays."""
    name = getattr(field, "velocity_array", "")
    if not name:
        return None
    if is_expression(name):
        meaning = "momentum over density (the file holds no velocity)"
    elif "," in name:
        meaning = "components"
    else:
        meaning = "vector"
    return {"array": name, "meaning": meaning}


def versions() -> dict:
    """The versions of what computed the run."""
    import importlib.metadata

    names = ("jax", "jaxlib", "equinox", "diffrax", "vtk", "numpy", "xarray", "hydra-core")
    versions = {"flowkit": __version__, "python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions
