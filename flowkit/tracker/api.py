"""`track` and `track_ensemble`: the public entry points, chunked on the host or traced whole."""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import PRNGKeyArray

from .. import _dtypes
from .._custom_types import Args, PathLike
from .._status import Status
from ..fields.base import AbstractField
from ..fields.streamed import StreamedField
from ..trajectory import Trajectory
from .courant import DEFAULT_COURANT
from .kernel import advance_local, located_seeds, particle_keys
from .memory import check_seeds_fit
from .pieces import Rows, Slots, State, Times
from .plan import RunPlan, prepare
from .run import TrackRun
from .step import is_due


def track(
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
    batch_size: int | None = None,
    bucket: bool = False,
    progress: bool = False,
    devices: Sequence[jax.Device] | None = None,
    output: PathLike | None = None,
    warmup: bool = False,
    part: tuple[int, int] | None = None,
    particles=None,  # checked by plan.check_particles
    particle_state: dict | None = None,
    courant: float = DEFAULT_COURANT,
    overwrite: bool = False,
    resume: bool = False,
    statistics=None,  # checked by statistics.base.checked
    tracks: bool = True,
):  # a Trajectory, or with `output` the store's xarray.Dataset (xarray is imported only then)
    """Track particles from `seeds` through `field` from `t0` to `t1` in steps of `dt`.

    **Arguments:**

    - `field`: any `flowkit.fields.AbstractField`.
    - `seeds`: `(N, dim)` start positions (inside `field.bounds`).
    - `t0`, `t1`, `dt`: start, end and step; `t1 < t0` with `dt < 0` tracks backward. The last
      step is shortened so the run ends exactly at `t1`. On a field read from dated data
      (`field.time_origin`), `t0`/`t1` may be dates (`"2024-01-05"`, on the data's calendar);
      `dt` may be a duration (`"1h"`, `"30min"`). `dt="auto"` takes the step whose Courant
      number (`max_i |u_i| dt / size_i`, the cells a step crosses) is `courant` in the data's
      fastest cell, shortened to fill the save interval (or the run) with whole steps.
    - `integrator`: default `fk.RK4()`.
    - `boundary`: default none (`fk.Open()`): particles are limited only by the field's domain.
      Inlets (`fk.InletOutlet`, `fk.ContinuousInlet`) restart slots inside the run; the result
      then has `generation` (and `particle_id`) per frame, and a `ContinuousInlet`'s spare slots
      are appended after the seeds (seeds may then be empty, shape `(0, dim)`).
    - `save_every`: save a frame every this many steps, or every duration (`"6h"`, `"2.5s"`:
      a whole number of steps), or `"auto"` (50 to 100 frames over the run; a shorter run saves
      every step), and always at `t1`.
    - `t_release`: `(N,)` release times; a particle waits (status `NOT_RELEASED`) at its seed
      until the first step that starts at or after its release time.
    - `args`: passed to the field as its third argument.
    - `key`: a `jax.random.key` for stochastic integrators and random/flux inlets (each particle's noise comes from
      this key folded with the particle's index).
    - `record_velocity`: also save the field velocity at each saved position.
    - `particles`: what the particles are (`flowkit.particles`): default `Tracer()`, massless;
      `Inertial(...)` droplets, `Buoyant(w)`, `Combined(model, Aging(), ...)`, or a model of
      your own. Its variables are saved in `Trajectory.variables`.
    - `particle_state`: `{name: (N, ...)}` starting values of the model's variables per seed
      (e.g. an inertial particle's `velocity`); the others start at the model's `initial`.
    - `courant`: the Courant number `dt="auto"` aims at (default 0.5). Every run on a grid or
      mesh records its largest Courant number (the cells a step crossed, sampled at the last
      step before each saved frame) in `traj.stats.courant`, and warns once when it exceeds the
      integrator's limit (1; 2 for RK4), naming a dt that would bring it under.
    - `dtype`: `"float32"` (default) or `"float64"`.
    - `batch_size`: track at most this many particles at once (bounded memory); every batch
      reuses the same compiled program.
    - `bucket`: pad the particles (per device) to one of a few sizes, `2^k × (1, 1.25, 1.5, 1.75)`,
      so that runs with new particle counts reuse a compiled program (padded slots are never
      released). Off by default: on the mesh benchmark a bucketed block ran slower than its
      padding explains (benchmarks/RESULTS.md); `False` pads to a multiple of 8 only.
    - `progress`: show a tqdm bar with particle-steps per second.
    - `devices`: devices to shard the particles over (default: all local devices).
    - `warmup`: before the timed run, execute one chunk of the first batch and drop it, so
      `traj.stats.run_s` excludes first-call costs (buffer allocation, thread start-up) as well as
      compilation (which is always done ahead of time, in `compile_s`); for benchmarks.
    - `part`: `(index, count)`: track only share `index` of `count` contiguous shares of the
      seeds (default: this process's share in a multi-host run, `(jax.process_index(),
      jax.process_count())`, so every process of a `jax.distributed` job tracks its own
      particles on its own devices). Noise keys and slot indices stay global: the shares
      together equal a one-process run. The result holds this share's particles only; an
      `output` store becomes `name.part<index>.zarr`.
    - `output`: a `.zarr` path to stream the frames to, chunk by chunk, instead of keeping them
      in memory (for 10⁷–10⁸ particles × many saves; combine with `batch_size`). `track` then
      returns the store opened lazily as an `xarray.Dataset` in the CF trajectory layout, its
      `attrs["flowkit_stats"]` the run's `RunStats` as JSON. An existing store is refused
      unless `overwrite=True`. Until its last batch is written the store's
      `attrs["flowkit_complete"]` is false and `flowkit_batches_done` counts the batches in it
      (frames not written are NaN, status -1); `Trajectory.load` refuses such a store unless
      `partial=True`.
    - `resume`: continue the store at `output` that this same run began and did not finish (a
      job killed by its time limit, a Ctrl-C): it checks that the field, seeds, times,
      integrator, particles, key and batch size are the same (a hash the store records) and
      tracks only the batches missing; the result equals an uninterrupted run's.
    - `statistics`: statistics gathered inside the run at every saved frame
      (`flowkit.statistics`: `GridCounts`, `PolygonStats`), returned in `Trajectory.statistics`
      as xarray datasets; each equals the same statistic computed from the stored frames. With
      `output`, the store keeps them: their totals after every batch (a resumed run adds on to
      them), and at the end each dataset as the zarr group `statistics/<name>`, named in the
      store's `attrs["flowkit_statistics"]` (`Trajectory.load` reads them).
    - `tracks`: False keeps no frames but the first and the last (positions and status), for
      runs whose result is their statistics: memory (or an `output` store) no longer grows with
      the saves.

    **Returns:** a `flowkit.Trajectory` with `T = ceil(n_steps / save_every) + 1` frames; its
    `stats` (a `flowkit.RunStats`) hold the run's timings, sizes and counters.

    **Differentiable:** when `seeds`, the field's parameters or `args` are JAX tracers (inside
    `jax.grad`, `jax.jacfwd`, `jax.jit`, ...), `track` runs as one traced program (no chunks,
    no host copies, no sharding) and returns a `Trajectory` of JAX arrays, so gradients of
    final positions with respect to seeds and field parameters flow through the integrator.
    The seeds are checked as in any run, inside the program (`eqx.error_if`); `batch_size`,
    `output`, `part` and `devices` are refused there.

    **Raises:** `ValueError` naming the parameter, before anything is compiled, for seeds outside
    the bounds or of the wrong shape, a zero or wrongly signed `dt`, times outside the field's
    time range, bad `save_every`/`t_release`/`dtype`.
    """
    inputs = dict(
        t_release=t_release,
        args=args,
        key=key,
        record_velocity=record_velocity,
        dtype=dtype,
        particles=particles,
        particle_state=particle_state,
        courant=courant,
        statistics=statistics,
    )
    positional = (field, seeds, t0, t1, dt, integrator, boundary, save_every)
    check_seeds_fit(positional, inputs, streamed=output is not None, tracks=tracks)
    plan = prepare(*positional, **inputs)
    if plan.traced:
        host_only = {
            "batch_size": batch_size,
            "output": output,
            "part": part,
            "devices": devices,
            "resume": resume or None,
            "statistics": statistics or None,
            "tracks=False": None if tracks else True,
        }
        given = [name for name, value in host_only.items() if value is not None]
        if given:
            raise ValueError(
                f"{', '.join(given)}: a traced run (grad, jit, vmap, track_ensemble) is one program on "
                f"one device with its frames in memory; drop {' and '.join(given)} or call track with "
                "concrete inputs"
            )
        return _track_traced(plan)
    layout = dict(
        batch_size=batch_size,
        devices=devices,
        progress=progress,
        output=output,
        bucket=bucket,
        warmup=warmup,
        part=part,
        overwrite=overwrite,
        resume=resume,
        tracks=tracks,
    )
    return TrackRun.from_plan(plan, **layout).run()


def _track_traced(plan: RunPlan) -> Trajectory:
    """A planned run as one pure traced computation, for autodiff and for use inside user `jit`s."""
    pieces, dtype, n = plan.pieces, plan.dtype, plan.seeds.shape[0]
    x0, t_rel = jnp.asarray(plan.seeds, dtype), jnp.asarray(plan.t_release, dtype)
    direction = 1.0 if plan.dt > 0 else -1.0
    times = Times(t0=jnp.asarray(plan.t0, dtype), dt=jnp.asarray(plan.dt, dtype), t1=jnp.asarray(plan.t1, dtype))
    given = {name: jnp.asarray(values, dtype) for name, values in plan.given.items()}
    rows = Rows(
        x=x0,
        status=jnp.where(is_due(plan.t0, t_rel, plan.dt), Status.ACTIVE, Status.NOT_RELEASED).astype(jnp.int32),
        exit_time=jnp.full(n, direction * jnp.inf, dtype),
        hint=pieces.field.hints(n, dtype),
        variables=given,
        generation=jnp.zeros(n, jnp.int32),
        remainder=jnp.zeros_like(x0),
    )
    state = State(
        rows=rows,
        lost=jnp.zeros(1, jnp.int32),
        step=jnp.asarray(0, jnp.int32),
        courant=jnp.zeros(1, dtype),
    )
    restarts = pieces.boundary.restarts
    state, first = located_seeds(pieces, times.t0, state, record_velocity=plan.record_velocity, restarts=restarts)
    origins = jnp.asarray(plan.origins, dtype)
    origin_hints = (
        pieces.field.locate_batch(origins, pieces.field.hints(n, dtype))[0]
        if restarts
        else pieces.field.hints(n, dtype)
    )
    slots = Slots(
        t_release=t_rel,
        keys=jnp.asarray(particle_keys(plan.key, 0, n)),
        origin=origins,
        origin_hint=origin_hints,
        index=jnp.arange(n, dtype=jnp.int32),
    )
    state, frames = advance_local(
        pieces,
        times,
        state,
        slots,
        saves=plan.n_saves,
        save_every=plan.save_every,
        blocks=1,
        n_blocks=1,
        record_velocity=plan.record_velocity,
        given=tuple(sorted(given)),
    )
    frames = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, frames)
    return Trajectory(
        times=jnp.asarray(plan.saved_times, dtype),
        positions=frames.positions,
        status=frames.status.astype(jnp.int8),
        t_release=t_rel,
        exit_time=state.rows.exit_time,
        velocities=frames.velocities,
        samples=frames.samples or None,
        generation=frames.generation,
        variables=frames.variables or None,
    )


def track_ensemble(
    build,
    params,
    seeds,
    t0: float,
    t1: float,
    dt: float,
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
) -> Trajectory:
    """Many runs that differ only in numeric parameters, `vmap`ped into one compiled program.

    `build(p)` returns a field, a `(field, integrator)` pair or a `(field, integrator, particles)`
    triple for one parameter set `p` (e.g. 16 droplet diameters);
    `params` is an array (or pytree of arrays) with the ensemble on its leading axis — e.g. 64
    double-gyre amplitudes, or 64 diffusivities with `build = lambda K: (field, fk.EulerMaruyama(K))`.
    Use this instead of a Hydra multirun when only numbers change: one compile, one program.

    **Returns:** a `Trajectory` whose arrays carry a leading ensemble axis (`positions[E, T, N, d]`).
    """
    dtype = _dtypes.resolve(dtype)
    params = jax.tree.map(jnp.asarray, params)
    seeds = jnp.asarray(seeds, dtype)
    if boundary is not None:  # resolve its geometry once, on the host, against the first member's field
        first = build(jax.tree.map(lambda a: a[0], params))
        boundary = boundary.bind(first[0] if isinstance(first, tuple) else first)

    def member(p):
        piece = build(p)
        field, member_integrator, member_particles = (
            (tuple(piece) + (integrator, particles)[len(piece) - 1 :])
            if isinstance(piece, tuple)
            else (piece, integrator, particles)
        )
        inputs = dict(
            t_release=t_release,
            args=args,
            key=key,
            record_velocity=record_velocity,
            dtype=dtype,
            particles=member_particles,
            particle_state=particle_state,
        )
        return _track_traced(prepare(field, seeds, t0, t1, dt, member_integrator, boundary, save_every, **inputs))

    return eqx.filter_jit(jax.vmap(member))(params)
