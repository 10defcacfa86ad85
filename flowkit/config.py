"""Build a run from a Hydra/OmegaConf config and execute it (with `app_errors`, the only modules importing Hydra).

Every group in `conf/` names a final flowkit class or function with `_target_`; this module
instantiates them with `_convert_="all"` (a DictConfig would otherwise become one opaque static
leaf), fills in what comes from other pieces (a boundary's or seeder's `bounds: null` means the
field's bounds; random seeders get a key from the integer `seed`), and writes the outputs.
"""

import dataclasses
import inspect
import json
import logging
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.utils import get_method, instantiate
from omegaconf import MISSING, DictConfig, OmegaConf

from . import __version__, app_outputs as outputs, tracker
from ._custom_types import PathLike
from ._files import written
from .analysis.ftle import ftle
from .analysis.plots import plot_ftle
from .app_defaults import check_step, grid_resolution, run_times, surface_seeds_for
from .app_setup import cache_counts, enable_compilation_cache, join_processes, run_key
from .fields.base import AbstractField
from .fields.layered import LayeredField
from .fields.streamed import StreamedField
from .io.vtk import write_vti
from .particles.base import variable_names
from .particles.stepping import drawing
from .seeding import in_flow, off_walls, random_inside, uniform_grid
from .tracker.memory import check_seed_memory
from .tracker.plan import AUTO_FRAMES
from .trajectory import RunStats, Trajectory

_log = logging.getLogger("flowkit")


@dataclasses.dataclass
class TrackConfig:
    """The schema of `conf/track.yaml` (its values live there): types are checked when Hydra
    composes the job, so `t1=abc` fails before anything runs, naming the key."""

    field: Any = MISSING
    boundary: Any = MISSING
    integrator: Any = MISSING
    particles: Any = MISSING
    seeds: Any = MISSING
    output: Any = MISSING
    t0: Any = MISSING  # seconds, or a date on a dated field's calendar ("2024-01-05")
    t1: Any = MISSING
    dt: Any = MISSING  # seconds, a duration ("1h"), or "auto" (from the Courant number)
    overwrite: bool = MISSING
    resume: bool = MISSING
    courant: float = MISSING
    save_every: Any = MISSING  # steps, or a duration ("6h") that is a whole number of steps
    dtype: str = MISSING
    seed: int = MISSING
    batch_size: int | None = MISSING
    bucket: bool = MISSING
    progress: bool = MISSING
    warmup: bool = MISSING
    record_velocity: bool = MISSING
    profile: bool = MISSING
    compilation_cache: str | None = MISSING
    distributed: Any = MISSING
    statistics: Any = None  # named statistics gathered during the run (conf/statistics)


@dataclasses.dataclass
class FtleConfig:
    """The schema of `conf/ftle.yaml` (its values live there)."""

    field: Any = MISSING
    integrator: Any = MISSING
    t0: float = MISSING
    T: float = MISSING
    dt: float = MISSING
    resolution: list[int] = MISSING
    bounds: Any = MISSING
    method: str = MISSING
    dtype: str = MISSING
    compilation_cache: str | None = MISSING
    overwrite: bool = MISSING


ConfigStore.instance().store(name="track_schema", node=TrackConfig)
ConfigStore.instance().store(name="ftle_schema", node=FtleConfig)


SURFACE_LAYER = 1e-3
"""The depth (m) below an ocean field's shallowest depth within which the app's drawn seeds start."""


def _ocean_volume(field) -> bool:
    """Whether `field` is a 3-D ocean (longitude, latitude, depth; or a layered model's
    columns in metres), whose drawn seeds start at its surface."""
    field = getattr(field, "template", field)  # a streamed series: its first window
    return field.dim == 3 and (bool(field.spherical) or isinstance(field, LayeredField))


def _bounds_lists(field):
    return [np.asarray(b, dtype=np.float64).tolist() for b in field.bounds]


def build_field(cfg: DictConfig):
    field_cfg = OmegaConf.to_container(cfg.field, resolve=True)
    target = get_method(field_cfg["_target_"])
    if "dtype" in inspect.signature(target).parameters and "dtype" not in field_cfg:
        field_cfg["dtype"] = cfg.dtype
    return instantiate(field_cfg, _convert_="all")


def build_boundary(cfg: DictConfig, field: AbstractField | StreamedField):
    extra = {}
    if "bounds" in cfg.boundary and cfg.boundary.bounds is None:
        extra["bounds"] = _bounds_lists(field)
    return instantiate(cfg.boundary, _convert_="all", **extra)


def build_seeds(cfg: DictConfig, field: AbstractField | StreamedField):
    """The seeds of `cfg.seeds`: `bounds: null` is the field's box (but `random_inside` draws in
    the field's own domain), `n` for a lattice becomes a resolution, random seeders get the run's
    key, a seeder taking `field` gets it. The count made is logged."""
    seeds_cfg = OmegaConf.to_container(cfg.seeds, resolve=True)
    target = get_method(seeds_cfg.pop("_target_"))
    parameters = inspect.signature(target).parameters
    surface = seeds_cfg.get("bounds", 0) is None and target in (uniform_grid, random_inside) and _ocean_volume(field)
    if surface:  # a drift starts at the sea surface: a lattice through the depths puts few seeds near it
        box = _bounds_lists(field)
        box[1][2] = box[0][2] + SURFACE_LAYER
        seeds_cfg["bounds"] = box
        _log.info(
            "seeds: at the surface of the 3-D ocean field (depth %g m, its shallowest); give seeds.bounds with "
            "depths to seed below it",
            box[0][2],
        )
    elif seeds_cfg.get("bounds", 0) is None and "field" not in parameters:
        seeds_cfg["bounds"] = _bounds_lists(field)
    if seeds_cfg.get("n") is not None and (not isinstance(seeds_cfg["n"], int) or seeds_cfg["n"] < 1):
        raise ValueError(f"seeds.n must be a positive integer, got {seeds_cfg['n']!r}")
    asked = None
    if "resolution" in seeds_cfg:
        asked = seeds_cfg.pop("n", None)
        if seeds_cfg["resolution"] is None:
            if asked is None:
                raise ValueError("seeds: give resolution (one count per axis) or n (a total)")
            box = [side[:2] for side in seeds_cfg["bounds"]] if surface else seeds_cfg["bounds"]
            resolution = grid_resolution(int(asked), box, bool(field.spherical))
            seeds_cfg["resolution"] = resolution + [1] if surface else resolution
    if "key" in parameters:
        seeds_cfg["key"] = run_key(cfg.seed)
    if "field" in parameters:
        seeds_cfg["field"] = field
    seeds = np.asarray(target(**seeds_cfg))
    if target is uniform_grid:  # a lattice over the box: only its points in the flow (in the mesh, in the water)
        made, seeds = (
            len(seeds),
            seeds[in_flow(field, seeds, float(cfg.t0) if isinstance(cfg.t0, (int, float)) else None)],
        )
        if len(seeds) < made:
            _log.info(
                "seeds: %d of the lattice's %d points lie outside the flow (outside the mesh, on land, "
                "below the sea floor): left out",
                made - len(seeds),
                made,
            )
        if not len(seeds):
            raise ValueError(
                f"seeds: none of the lattice's {made} points lies inside the field's domain; give "
                "seeds.bounds inside it"
            )
    seeds, moved = off_walls(field, seeds)
    if moved.any():
        _log.info(
            "seeds: %d lie on the mesh boundary (a wall would hold them): moved into their cells by "
            "1/1000 of the way to the centre",
            int(moved.sum()),
        )
    how = (
        f"a {'×'.join(map(str, seeds_cfg['resolution']))} lattice over the box"
        + (f" (n={asked} asked: whole points per axis in proportion to the sides)" if asked else "")
        if "resolution" in seeds_cfg
        else target.__name__
    )
    _log.info("seeds: %d from %s", len(seeds), how)
    return seeds


def build(cfg: DictConfig):
    """Instantiate `(field, seeds, integrator, boundary, particles)` from a composed `track` config."""
    check_step(cfg)  # what needs no data, before reading it
    field = build_field(cfg)
    run_times(cfg, field)
    particles = instantiate(cfg.particles, _convert_="all") if cfg.get("particles") is not None else None
    _check_seeds_fit(cfg, field.dim)
    return (
        field,
        surface_seeds_for(particles, build_seeds(cfg, field), cfg),
        instantiate(cfg.integrator, _convert_="all"),
        build_boundary(cfg, field),
        particles,
    )


def build_statistics(cfg: DictConfig, field) -> list:
    """The statistics `cfg.statistics` names (`conf/statistics`), each built over `field` where
    its target takes one (`GridCounts.over`)."""
    statistics = []
    for entry in (cfg.get("statistics") or {}).values():
        takes_field = "field" in inspect.signature(get_method(entry._target_)).parameters
        made = instantiate(entry, _convert_="all", _partial_=takes_field)  # a field is no config value
        statistics.append(made(field=field) if takes_field else made)
    return statistics


def _check_seeds_fit(cfg: DictConfig, dim: int) -> None:
    """Before seeding: the seeds asked for (`seeds.n`, or a lattice's `resolution`) and their
    frames fit the host's memory (`tracker.memory.check_seed_memory`)."""
    seeds = cfg.seeds
    resolution = seeds.get("resolution")
    n = int(np.prod(list(resolution))) if resolution else seeds.get("n")
    if not isinstance(n, int) or n < 1:
        return  # build_seeds names what is wrong
    times = [cfg.get(k) for k in ("t0", "t1", "dt")]
    frames = 0
    if all(isinstance(v, (int, float)) for v in times) and times[2] and isinstance(cfg.save_every, int):
        frames = int(abs((times[1] - times[0]) / times[2]) / max(cfg.save_every, 1)) + 2
    elif cfg.save_every == "auto":
        frames = 2 * AUTO_FRAMES + 1  # at most
    check_seed_memory(
        n,
        dim,
        frames,
        np.dtype(cfg.dtype).itemsize,
        bool(cfg.record_velocity),
        bool(cfg.output.get("store")),
        bool(cfg.output.get("tracks", True)),
    )


def _output_dir(output_dir) -> Path:
    if output_dir is not None:
        return Path(output_dir)
    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path.cwd()


def _describe(run) -> str:
    if run.plan.stream is None:
        return run.plan.pieces.field.describe()
    return (
        f"{run.plan.pieces.field.describe()}; the series' {run.plan.stream.n_slices} times "
        f"streamed in windows of {run.window_width}"
    )


def run_track(cfg: DictConfig, output_dir: PathLike | None = None) -> Trajectory:
    """Run the `track` app: build the run and print its header, track, write the trajectories,
    summary and pictures."""
    enable_compilation_cache(cfg.get("compilation_cache"))
    join_processes(cfg.get("distributed"))
    out = _output_dir(output_dir)
    if jax.process_count() > 1:  # every process tracks its share of the particles and writes it apart
        out = out / f"process{jax.process_index()}"
    out.mkdir(parents=True, exist_ok=True)
    run, boundary_name = build_run(cfg, out)
    cache_before = cache_counts()
    if cfg.get("profile"):
        with jax.profiler.trace(str(out / "profile")):
            traj = run.run()
    else:
        traj = run.run()
    try:
        traj, files, summary, info = _write_outputs(cfg, run, traj, out, boundary_name, cache_counts() - cache_before)
    except KeyboardInterrupt:
        kept = (
            f"the tracks are complete in {run.output} (resume=True writes the outputs from it)"
            if run.output is not None
            else "the tracks were not kept (output.store=true keeps them)"
        )
        raise KeyboardInterrupt(f"interrupted while writing the outputs: {kept}") from None
    courant = "" if info.courant is None else f"; largest Courant number {info.courant:.3g}"
    _log.info(
        "done: %.2f M particle-steps/s (compile %.2f s, run %.2f s); final status %s%s; wrote %s",
        info.particle_steps_per_s / 1e6,
        info.compile_s,
        info.run_s,
        summary["status_counts"],
        courant,
        ", ".join(files),
    )
    return traj


def _write_outputs(cfg: DictConfig, run, traj, out: Path, boundary_name: str, cache_counts) -> tuple:
    """The finished run's outputs, summary and pictures: `(trajectory, files, summary, stats)`."""
    if run.output is not None:  # the lazily opened store: its stats, then its frames for the other outputs
        info = RunStats(**json.loads(traj.attrs["flowkit_stats"]))
        traj = Trajectory.load(run.output)
    else:
        info = traj.stats
    summary = outputs.summary(cfg, run, traj, info, cache_counts)
    summary["boundary"] = boundary_name
    files = outputs.write_outputs(cfg, run, traj, out, summary)
    if cfg.output.plot:
        files += outputs.plot(cfg, run, traj, out)
    files = summary["files"] = files + ["summary.json"]
    outputs.write_text(out / "summary.json", json.dumps(summary, indent=2, default=str))
    return traj, files, summary, info


def build_run(cfg: DictConfig, out: Path) -> tuple[tracker.TrackRun, str]:
    """The app's run, planned and laid out (nothing compiled yet), with its header logged, and
    the name of the boundary as configured (before it was bound to the field)."""
    key = run_key(cfg.seed)  # checked whether or not the run draws from it
    field, seeds, integrator, boundary, particles = build(cfg)
    # frames streamed to disk: bounded memory, kept when interrupted
    store = out / "trajectories.zarr" if cfg.output.get("store") else None
    if cfg.resume and store is None:
        raise ValueError(
            "resume=true continues the frames a run streamed to trajectories.zarr: give "
            "output.store=true (the interrupted run had it)"
        )
    run = tracker.TrackRun(
        field,
        seeds,
        cfg.t0,
        cfg.t1,
        cfg.dt,
        integrator,
        boundary,
        cfg.save_every,
        key=key if integrator.stochastic or boundary.stochastic or drawing(particles) else None,
        record_velocity=cfg.record_velocity
        or (
            particles is not None and "velocity" in variable_names(particles)
        ),  # a particle's velocity beside the fluid's
        dtype=cfg.dtype,
        batch_size=cfg.batch_size,
        progress=cfg.progress,
        bucket=cfg.get("bucket", False),
        warmup=cfg.get("warmup", False),
        particles=particles,
        courant=cfg.courant,
        output=store,
        overwrite=cfg.overwrite,
        resume=cfg.resume,
        statistics=build_statistics(cfg, field),
        tracks=cfg.output.get("tracks", True),
    )
    plan, pieces, device = run.plan, run.pieces, run.devices[0]
    traj_bytes = (plan.n_saves + 1) * run.n_particles * (pieces.field.dim * plan.dtype.itemsize + 1)
    _log.info(
        "flowkit %s | jax %s | %s × %d (%s)",
        __version__,
        jax.__version__,
        device.platform,
        len(run.devices),
        device.device_kind,
    )
    _log.info(
        f"field {type(pieces.field).__name__} {_describe(run)} {pieces.field.nbytes / 2**20:.1f} "
        f"MiB | dtype {plan.dtype.name} | "
        f"{run.n_particles} particles × {plan.n_steps} steps of "
        f"{type(pieces.integrator).__name__}, dt={plan.dt:g}{' (auto)' if cfg.dt == 'auto' else ''} "
        "| "
        f"particles {type(pieces.particles).__name__} | boundary {type(boundary).__name__} | "
        f"{plan.n_saves + 1} frames, {traj_bytes / 2**20:.1f} MiB | output {out}"
    )
    return run, type(boundary).__name__


def run_ftle(cfg: DictConfig, output_dir: PathLike | None = None) -> np.ndarray:
    """Run the `ftle` app: FTLE on a uniform grid; writes ftle.npz, ftle.vti, ftle.png, summary.json."""
    enable_compilation_cache(cfg.get("compilation_cache"))
    out = _output_dir(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    field = build_field(cfg)
    integrator = instantiate(cfg.integrator, _convert_="all")
    bounds = [np.asarray(b, dtype=np.float64) for b in (cfg.bounds if cfg.bounds is not None else _bounds_lists(field))]
    resolution = tuple(int(r) for r in cfg.resolution)
    if len(resolution) != field.dim:
        raise ValueError(f"resolution needs one count per axis of the {field.dim}-D field, got {list(resolution)}")
    points = uniform_grid(resolution, bounds, include_boundaries=True)
    print(
        f"flowkit {__version__} | FTLE of {type(field).__name__} on {'×'.join(map(str, resolution))} "
        f"points, t0={cfg.t0}, T={cfg.T}, dt={cfg.dt}, {cfg.method}, {cfg.dtype} | output {out}",
        flush=True,
    )
    start = time.perf_counter()
    values = ftle(field, points, cfg.t0, cfg.T, cfg.dt, integrator, method=cfg.method, dtype=cfg.dtype).reshape(
        resolution
    )
    seconds = time.perf_counter() - start
    axes = [np.linspace(lo, hi, n) for lo, hi, n in zip(bounds[0], bounds[1], resolution)]
    with written(out / "ftle.npz", overwrite=True) as temporary:
        np.savez(temporary, ftle=values, **{name: ax for name, ax in zip("xyz", axes)}, t0=cfg.t0, T=cfg.T)
    spacing = [(hi - lo) / max(n - 1, 1) for lo, hi, n in zip(bounds[0], bounds[1], resolution)]
    write_vti(
        out / "ftle.vti",
        {"ftle": np.nan_to_num(values, nan=0.0), "valid": np.isfinite(values).astype(np.float64)},
        bounds[0],
        spacing,
    )
    plot_ftle(values, axes, out / "ftle.png", cfg.t0, cfg.T)
    summary = {
        "points": int(points.shape[0]),
        "resolution": list(resolution),
        "method": cfg.method,
        "seconds": seconds,
        "ftle_max": float(np.nanmax(values)),
        "invalid_points": int(np.sum(~np.isfinite(values))),
        "versions": {"flowkit": __version__, "jax": jax.__version__},
    }
    outputs.write_text(out / "summary.json", json.dumps(summary, indent=2))
    print(
        f"done in {seconds:.2f} s: max FTLE {summary['ftle_max']:.3f}, "
        f"{summary['invalid_points']} points left the field",
        flush=True,
    )
    return values


class SweepSummary(Callback):
    """Hydra callback: after a multirun, gather every job's `summary.json` into one
    `sweep_summary.csv` in the sweep directory (one row per job, its overrides as columns)."""

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        import csv

        sweep = Path(config.hydra.sweep.dir)
        rows = []
        for summary_path in sorted(
            sweep.glob("*/summary.json"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else p.parent.name
        ):
            summary = json.loads(summary_path.read_text())
            row = {"job": summary_path.parent.name}
            overrides = summary_path.parent / ".hydra" / "overrides.yaml"
            if overrides.exists():
                for item in OmegaConf.load(overrides):
                    key, _, value = str(item).partition("=")
                    row[f"override:{key}"] = value
            for key, value in summary.items():
                if isinstance(value, dict):
                    row.update({f"{key}.{k}": v for k, v in value.items()})
                else:
                    row[key] = value
            rows.append(row)
        if not rows:
            return
        columns = list(dict.fromkeys(k for row in rows for k in row))
        with written(sweep / "sweep_summary.csv", overwrite=True) as temporary, open(temporary, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
