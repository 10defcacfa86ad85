"""Host-side planning of a run: its inputs checked and resolved once (`prepare` -> `RunPlan`),
the checks of its pieces, its time grid, block sizes per platform, buckets and the restart
origins' cells."""

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Float, PRNGKeyArray

from .. import _dtypes
from .._custom_types import Args, TimeLike
from .._time import as_seconds
from ..boundaries.base import AbstractBoundary
from ..boundaries.box import Open
from ..boundaries.mesh import BoundMeshWalls
from ..fields.base import AbstractField, Hints
from ..fields.forcing import sample_names
from ..fields.mesh import MeshField
from ..fields.streamed import StreamedField, refuse_streamed
from ..integrators.base import AbstractIntegrator
from ..integrators.runge_kutta import RK4
from ..particles.base import AbstractParticles, Tracer, is_tracer, variable_names
from ..particles.stepping import dated, drawing, drawn_state, resolved
from ..statistics.base import checked
from .courant import AUTO, DEFAULT_COURANT, auto_dt
from .origins import inlet_origins
from .pieces import RunPieces
from .seeds import check_seeds, is_traced

_log = logging.getLogger("flowkit")

BLOCK = 8192
"""Particles per cache block inside one CPU device's share: a block's state stays in cache
through a save interval (the size chosen by measurement: benchmarks/RESULTS.md)."""


def block_size(platform: str) -> int | None:
    """Particles per block on a platform, None for "the device's whole share at once".

    CPU: cache-sized blocks, run one after another by `lax.map`; each keeps its state in cache
    through a save interval, and a block with nothing moving is skipped. GPU/TPU: one block per
    device, since a `lax.map` over cache-sized blocks would serialise a million particles into
    hundreds of small kernels per step, leaving the accelerator idle."""
    return BLOCK if platform == "cpu" else None


CHUNK_BYTES = 256 * 2**20
"""Upper bound on the saved frames one chunk keeps on the device."""


def bucket_size(n: int, minimum: int = 1) -> int:
    """The smallest size `>= n` of the form `2^k × (1, 1.25, 1.5 or 1.75)` (and `>= minimum`): a
    few sizes per octave, so padding costs at most 25 % and usually much less."""
    n = max(int(n), minimum)
    if n <= 4:
        return n
    octave = 1 << (n.bit_length() - 1)
    quarter = max(octave // 4, 1)
    return octave + quarter * math.ceil((n - octave) / quarter)


def check_pieces(
    field: object, integrator: object, boundary: object, key: PRNGKeyArray | None
) -> tuple[AbstractIntegrator, AbstractBoundary]:
    """The run's integrator and bound boundary (defaults for None), each checked to be a flowkit
    piece: what a user passes is anything until here, so that the message says what was meant."""
    integrator = RK4() if integrator is None else integrator
    boundary = Open() if boundary is None else boundary
    if not isinstance(field, AbstractField):
        raise TypeError(f"field must be a flowkit field (AbstractField), got {type(field).__name__}")
    if not isinstance(integrator, AbstractIntegrator):
        raise TypeError(f"integrator must be a flowkit integrator, got {type(integrator).__name__}")
    if not isinstance(boundary, AbstractBoundary):
        raise TypeError(f"boundary must be a flowkit boundary, got {type(boundary).__name__}")
    if field.value_components() != field.dim:
        raise ValueError(
            f"field: a velocity field needs {field.dim} components, this one has {field.value_components()}"
        )
    if integrator.stochastic and key is None:
        raise ValueError(
            f"key: {type(integrator).__name__} is stochastic and needs a PRNG key, e.g. key=jax.random.key(0)"
        )
    check_samples(field, integrator.sample_names, "integrator: its diffusivity")
    boundary = boundary.bind(field)
    if boundary.stochastic and key is None:
        raise ValueError(
            f"key: {type(boundary).__name__} draws random positions and needs a PRNG key, e.g. key=jax.random.key(0)"
        )
    return integrator, boundary


def check_samples(field: AbstractField, names, reader: str) -> None:
    """Refuse, before compiling, a piece (`reader`) that reads samples `names` the field lacks."""
    missing = sorted(set(names) - sample_names(field)) if names else []
    if missing:
        raise ValueError(
            f"{reader} reads the sampled {missing}, but the field samples {sorted(sample_names(field))}: give "
            "forcings as fk.io.read(currents, samples={name: fk.io.read(file)}) (field.samples.<name>.path= in "
            "the app), or the file's own arrays with sample=[...]"
        )


AUTO_FRAMES = 50
"""The fewest frames a run saves with `save_every="auto"` (besides the first; at most twice as
many, and every step of a shorter run): enough for pathlines and an animation, whatever the step."""


MAX_STEPS = 2**31 - 1
"""The most steps a run takes: the compiled loop counts them in 32 bits."""


def time_plan(field: AbstractField | StreamedField, t0: float, t1: float, dt: float, save_every):
    """Check the run's times; return `(n_steps, save_every, n_saves, saved_times)`."""
    for name, value in (("t0", t0), ("t1", t1), ("dt", dt)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if dt == 0:
        raise ValueError("dt must be non-zero")
    if t1 == t0:
        raise ValueError(f"t1 must differ from t0 (both are {t0})")
    if (t1 - t0) * dt < 0:
        raise ValueError(
            f"dt must have the sign of t1 - t0 (t0={t0}, t1={t1}, dt={dt}); use a negative dt to track backward"
        )
    lo_t, hi_t = field.time_range
    slack = 1e-9 * abs(t1 - t0)
    if math.isfinite(lo_t) and math.isfinite(hi_t):  # a time read back from float32 `field.times` is the same time
        slack = max(slack, 2 * float(np.finfo(np.float32).eps) * max(abs(lo_t), abs(hi_t)))
    for name, value in (("t0", t0), ("t1", t1)):
        if not (lo_t - slack <= value <= hi_t + slack):
            raise ValueError(f"{name}={value} lies outside the field's time range [{lo_t}, {hi_t}]")
    if abs(dt) > abs(t1 - t0) * (1 + 1e-9):
        raise ValueError(
            f"dt={dt:g} is longer than the run (t1 - t0 = {t1 - t0:g}): a step would be cut to the "
            f"run's length; give dt <= {abs(t1 - t0):g}"
        )
    n_steps = max(1, math.ceil(abs(t1 - t0) / abs(dt) - 1e-9))
    if n_steps > MAX_STEPS:
        raise ValueError(
            f"dt={dt:g}: the run (t1 - t0 = {t1 - t0:g}) would take {n_steps:.3g} steps, more than the "
            f"{MAX_STEPS} (2**31 - 1) a run counts; give a larger dt, or run the time in parts"
        )
    if abs(n_steps * abs(dt) - abs(t1 - t0)) > 1e-9 * abs(t1 - t0):
        _log.info(
            "dt=%g does not divide the run (t1 - t0 = %g): %d steps, the last one %g long",
            dt,
            t1 - t0,
            n_steps,
            abs(t1 - t0) - (n_steps - 1) * abs(dt),
        )
    if save_every == AUTO:  # AUTO_FRAMES to twice that many frames, whatever the step
        save_every = max(1, n_steps // AUTO_FRAMES)
    elif isinstance(save_every, str):  # a duration: a whole number of steps
        seconds = as_seconds(save_every, "save_every", duration=True)
        steps = seconds / abs(dt)
        if seconds <= 0 or abs(steps - round(steps)) > 1e-9 * max(1.0, steps) or round(steps) < 1:
            raise ValueError(
                f"save_every={save_every!r} ({seconds:g} s) is not a whole number of steps of "
                f"dt={abs(dt):g} s ({steps:g} steps)"
            )
        save_every = int(round(steps))
    elif isinstance(save_every, bool) or int(save_every) != save_every or save_every < 1:
        raise ValueError(
            f"save_every must be a positive integer (steps), a duration like '6h' or 'auto', got {save_every!r}"
        )
    save_every = min(int(save_every), n_steps)
    if n_steps % save_every:
        _log.info(
            "save_every: the run's %d steps are not a multiple of %d; the last frame is at t1, %d "
            "steps after the one before",
            n_steps,
            save_every,
            n_steps % save_every,
        )
    n_saves = math.ceil(n_steps / save_every)
    save_steps = np.minimum(np.arange(n_saves + 1) * save_every, n_steps)
    return n_steps, save_every, n_saves, np.where(save_steps == n_steps, t1, t0 + save_steps * dt)


def _warn_if_below_a_surface_drift(particles: AbstractParticles, seeds: np.ndarray) -> None:
    """A surface drift (`Windage` above its `depth`) on seeds that all start deeper moves none."""
    depth = getattr(particles, "depth", None)
    if depth is None or np.ndim(depth) != 0 or seeds.ndim != 2 or seeds.shape[1] != 3 or not len(seeds):
        return
    depth = float(depth)
    if np.all(seeds[:, 2] > depth):
        _log.warning(
            "particles: %s acts above %g m, and all %d seeds start deeper: it moves none of them; seed at the "
            "surface ((lon, lat) seeds start there)",
            type(particles).__name__,
            depth,
            len(seeds),
        )


def check_particles(
    particles: object, integrator: AbstractIntegrator, field: AbstractField | StreamedField, dt: TimeLike
) -> tuple[AbstractParticles, AbstractIntegrator]:
    """The run's particle model (default a tracer), checked and resolved for this step and field,
    and the solver that steps it (the run's integrator, or the exponential solver of drag)."""
    particles = Tracer() if particles is None else particles
    if not isinstance(particles, AbstractParticles):
        raise TypeError(
            "particles must be a flowkit particle model (fk.particles.AbstractParticles), got "
            f"{type(particles).__name__}"
        )
    if is_tracer(particles):
        return particles, integrator
    # floats become array leaves: runs that differ only in them share one compiled program
    model: AbstractParticles = jax.tree.map(
        lambda leaf: np.asarray(leaf, np.float64) if isinstance(leaf, float) else leaf, particles
    )
    check_samples(field, model.needs.sample_names, f"particles: {type(model).__name__}")
    if field.spherical and model.needs.metres:
        raise ValueError(
            f"particles: {type(model).__name__} moves in metres, but this field's positions are "
            "degrees of longitude and latitude"
        )
    return resolved(dated(model, field.time_origin), integrator, dt, field.dim)


def _with_draws(particles: AbstractParticles, key, count: int, given: dict) -> dict:
    """The particles' given variables and, for a model that draws its own (`AbstractRandom`),
    each particle's draws, kept through the run (restarts too); a variable given wins."""
    if not drawing(particles):
        return given
    if key is None:
        raise ValueError(
            f"key: particles {type(particles).__name__} draws each particle's variables at random and "
            "needs a PRNG key, e.g. key=jax.random.key(0)"
        )
    return {**drawn_state(particles, key, count), **given}


def check_particle_state(particle_state, particles: AbstractParticles, n: int) -> dict[str, np.ndarray]:
    """Per-particle starting values of the model's variables given by the run, `{name: (n, ...)}`."""
    if not particle_state:
        return {}
    if is_tracer(particles):
        raise ValueError(
            "particle_state: a tracer carries no variables; pass particles=... with the model they belong to"
        )
    known = variable_names(particles)
    given = {}
    for name, values in dict(particle_state).items():
        if name not in known:
            raise ValueError(
                f"particle_state: {type(particles).__name__} has no variable {name!r}; its variables are "
                f"{sorted(known)}"
            )
        traced = is_traced(values)
        values = values if traced else np.asarray(values, np.float64)
        if values.ndim == 0 or values.shape[0] != n or not (traced or np.all(np.isfinite(values))):
            raise ValueError(
                f"particle_state[{name!r}] must hold one finite value per seed ({n} rows), got shape {values.shape}"
            )
        given[name] = values
    return given


class RunPlan(eqx.Module):
    """A run's inputs, checked and resolved once (`prepare`): what both ways of running it
    start from, the traced program (`grad`, `jit`, `vmap`) and the chunked host driver
    (`TrackRun`, which adds only the devices, blocks and chunks)."""

    pieces: RunPieces
    """Field (a streamed field's template), integrator, bound boundary, resolved particle model
    and `args`, floating leaves in `dtype`."""
    stream: StreamedField | None
    seeds: Float[Any, "N dim"]
    """Start positions (float64 on the host, or traced), an inlet's spare slots appended at its
    parking place."""
    t_release: Float[Any, " N"]
    """Release times; spare slots wait for the inlet (infinity)."""
    given: dict
    """Starting values of the particle model's variables given per seed (`particle_state`)."""
    origins: Float[Any, "N dim"]
    """Where a restarting boundary puts each slot back."""
    origin_hints: Hints | None
    """Where the `origins` lie, located once on the host where the boundary restarts slots
    there (`grid` inlets); None otherwise."""
    saved_times: np.ndarray
    key: Any
    t0: float
    t1: float
    dt: float
    n_steps: int
    save_every: int
    n_saves: int
    dtype: np.dtype
    record_velocity: bool
    traced: bool


def prepare(
    field: AbstractField | StreamedField,
    seeds,
    t0: float | str,
    t1: float | str,
    dt: float | str,
    integrator=None,  # checked by plan.check_pieces, whose message names what a run takes
    boundary=None,  # checked by plan.check_pieces
    save_every: int | str = 1,
    *,
    t_release=None,
    args: Args = None,
    key: PRNGKeyArray | None = None,
    record_velocity: bool = False,
    dtype: DTypeLike = "float32",
    particles=None,  # checked by plan.check_particles
    particle_state: dict | None = None,
    courant: float = DEFAULT_COURANT,
    statistics=None,  # checked by statistics.base.checked
) -> RunPlan:
    """Check and resolve a run's inputs (the arguments of `fk.track`), before anything is
    compiled or placed on a device. Errors name the parameter."""
    traced = is_traced((seeds, field, args, t_release, particles, particle_state))
    stream = field if isinstance(field, StreamedField) else None
    if stream is not None:
        if traced:
            refuse_streamed(
                field, "tracking with traced inputs (grad, jit, vmap, track_ensemble)", "read it with stream=False"
            )
        field = stream.template
    integrator, boundary = check_pieces(field, integrator, boundary, key)
    if key is not None and not (hasattr(key, "dtype") and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"key: expected a key made by jax.random.key(seed), got {type(key).__name__} {key!r:.40}")
    if isinstance(boundary, BoundMeshWalls) and type(field) is MeshField and stream is None and not traced:
        field = boundary.near_wall_field(field)
    dtype = _dtypes.resolve(dtype)
    origin = (stream or field).time_origin
    t0, t1 = _seconds(t0, "t0", origin), _seconds(t1, "t1", origin)
    if isinstance(dt, str) and dt == AUTO:
        if is_traced(field):
            raise ValueError(
                "dt='auto' reads the field's data on the host; with a traced field (grad, jit, vmap over "
                "its parameters) give dt in seconds"
            )
        dt = auto_dt(stream or field, t0, t1, save_every, courant)
    else:
        dt = _seconds(dt, "dt", duration=True)
    particles, integrator = check_particles(particles, integrator, field, dt)
    n_steps, save_every, n_saves, saved_times = time_plan(stream or field, t0, t1, dt, save_every)
    spare = boundary.extra_slots
    if spare and traced:
        raise ValueError(
            f"boundary: {type(boundary).__name__} fills spare slots during the run; call track with "
            "concrete (untraced) inputs"
        )
    seeds, t_release = check_seeds(field, seeds, t0, t1, t_release, spare)
    if not traced:
        _warn_if_below_a_surface_drift(particles, seeds)
    if field.forcings is not None and not traced:
        field.forcings.report(seeds, t0, t1)
    given: dict = check_particle_state(particle_state, particles, seeds.shape[0])
    if spare:  # slots for particles released later by the boundary: waiting, never due by themselves
        if dt < 0:
            raise ValueError(
                f"boundary: {type(boundary).__name__} releases particles forward in time only; got dt={dt}"
            )
        if given:
            raise ValueError(
                f"particle_state: {type(boundary).__name__} releases particles of its own; their "
                "variables start at the model's initial values, so give none"
            )
        seeds = np.concatenate([seeds, np.repeat(np.asarray(boundary.parking, np.float64)[None], spare, axis=0)])
        t_release = np.concatenate([t_release, np.full(spare, np.inf)])
    given = _with_draws(particles, key, seeds.shape[0], given)
    origin_hints = None
    if not traced:
        boundary, key, origin_hints = inlet_origins(field, boundary, seeds, key)
    origins = boundary.origins(seeds)
    pieces = _dtypes.cast_floating(RunPieces(field, integrator, boundary, particles, args, checked(statistics)), dtype)
    return RunPlan(
        pieces=pieces,
        stream=stream,
        seeds=seeds,
        t_release=t_release,
        given=given,
        origins=origins,
        origin_hints=origin_hints,
        saved_times=saved_times,
        key=key,
        t0=t0,
        t1=t1,
        dt=dt,
        n_steps=n_steps,
        save_every=save_every,
        n_saves=n_saves,
        dtype=dtype,
        record_velocity=bool(record_velocity),
        traced=traced,
    )


def _seconds(value, name: str, origin=None, *, duration: bool = False) -> float:
    """A time parameter in seconds (`as_seconds`); a traced one is refused, since the times set
    the number of steps, which shapes the program."""
    if is_traced(value):
        raise TypeError("t0, t1 and dt set the number of steps and must be concrete numbers, not traced values")
    if isinstance(value, jax.Array):
        value = float(value)
    return as_seconds(value, name, origin, duration=duration)


def share(plan: RunPlan, part, output) -> tuple[RunPlan, Any, int]:
    """This process's contiguous share of the plan's particles (`part = (index, count)`, default
    this process's in a multi-host run), its store's name and its first particle's global index:
    noise keys and slot indices stay global, so the shares together equal a one-process run."""
    index, count = (jax.process_index(), jax.process_count()) if part is None else (int(part[0]), int(part[1]))
    if not 0 <= index < count:
        raise ValueError(f"part must be (index, count) with 0 <= index < count, got {part}")
    if count == 1:
        return plan, output, 0
    if plan.pieces.boundary.extra_slots:
        raise ValueError(
            f"boundary: {type(plan.pieces.boundary).__name__} releases into one shared set of slots; "
            "run it in a single process (part=(0, 1))"
        )
    total = plan.seeds.shape[0]
    first, stop = (total * i // count for i in (index, index + 1))
    if first == stop:
        raise ValueError(f"part {index} of {count} holds none of the {total} seeds; use fewer processes")
    rows = slice(first, stop)
    plan = dataclasses.replace(
        plan,
        seeds=plan.seeds[rows],
        t_release=plan.t_release[rows],
        given={k: a[rows] for k, a in plan.given.items()},
        origins=np.asarray(plan.origins)[rows],
        origin_hints=None if plan.origin_hints is None else plan.origin_hints.rows(rows),
    )
    if output is not None:  # one store per share, never two writers on one store
        output = Path(output).with_name(f"{Path(output).stem}.part{index}{Path(output).suffix}")
    return plan, output, first


def positive_integer(value, name: str) -> int:
    """`value` as an int, or one line naming `name` when it is not a positive whole number."""
    try:
        whole = int(value)
        ok = not isinstance(value, bool) and whole == float(value) and whole >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return whole
