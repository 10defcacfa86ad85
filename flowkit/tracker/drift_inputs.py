"""The drifts of a run's particles and the forcings they read, as a kernel takes them
(`native/drift_rules.h`): which models a kernel steps (`rules`, by their declared
`AbstractRuled.rule`), what of their forcings it refuses, and the buffers it reads.

A forcing goes to the kernel as a grid: a `GridField` as it holds its arrays (an A-grid,
multilinear, no slip at its land), a `Uniform` as two nodes a side on periodic axes, its one
value at each. The rows of the forcings' and drifts' tables are written by column name, in the
order the built kernel declares (`native.Layout.row`).
"""

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, Float, Int32

from .. import native
from ..fields.analytic import Uniform
from ..fields.grid import GridField
from ..particles.base import AbstractParticles, AbstractRandom, Tracer
from ..particles.drift import AbstractDrift, AbstractRuled, DriftRule
from ..particles.models import Combined
from ..particles.stepping import parts


class DriftInputs(NamedTuple):
    """The buffers of a run's drifts, the last of both ocean kernels' inputs
    (`native/grid_probe.h`, `FLOWKIT_DRIFT_INPUTS`); `Float` ones in the positions' precision,
    each empty where the run has none."""

    forcing_0: Float[Array, " values_0"]
    """The first forcing's values, flat (`(T, *shape, components)`)."""
    forcing_1: Float[Array, " values_1"]
    forcing_2: Float[Array, " values_2"]
    forcing_axes: Float[Array, " nodes"]
    """Every forcing's axes, one after the other."""
    forcing_times: Float[Array, " times"]
    forcing_ints: Int32[Array, "forcings columns"]
    """A row per forcing, its columns as the kernel declares them (`native.Layout.columns`)."""
    forcing_reals: Float[Array, "forcings columns"]
    drift_kinds: Int32[Array, "drifts 3"]
    """A row per drift: its rule's code, the forcing it reads, a second one or -1."""
    drift_numbers: Float[Array, "drifts numbers"]
    orientation: Float[Array, " n_or_none"]
    """Each row's side for leeway (+1, -1)."""
    coefficients: Float[Array, " n_times_6_or_none"]
    """Each row's own leeway coefficients (`Leeway.coefficients`), flat."""


MAX_FORCINGS = 3
"""The forcings one kernel call reads (`FLOWKIT_GRID_MAX_FORCINGS`)."""


def rules(particles: AbstractParticles) -> tuple[DriftRule, ...] | None:
    """The rules a kernel adds to the current for `particles`, in the order the JAX step adds
    them: none for tracers, the model's own rule for a ruled one (`AbstractRuled`), the mover's
    and then the riders' for a `Combined` whose mover is a tracer or ruled and whose riders are
    ruled drifts; None for any other model (the JAX step moves it)."""
    if type(particles) is Tracer:
        return ()
    if isinstance(particles, AbstractRuled):
        return None if particles.rule is None else _indexed((particles,), (particles.rule,))
    if isinstance(particles, Combined):
        mover = rules(particles.mover)
        riders = [r.rule for r in particles.riders if isinstance(r, AbstractDrift) and isinstance(r, AbstractRuled)]
        if mover is not None and None not in riders and len(riders) == len(particles.riders):
            return _indexed(parts(particles), mover + tuple(rule for rule in riders if rule is not None))
    return None


def _indexed(models: tuple, found: tuple[DriftRule, ...]) -> tuple[DriftRule, ...]:
    """`found` (the rules of `models`, one each but for a tracer mover) with each jibing rule's
    second number the index of its model among the run's random ones, what its draws are
    folded with (`particles.stepping.jumped_batch`)."""
    random = [id(m) for m in models if isinstance(m, AbstractRandom) and m.random]
    ruled = [m for m in models if isinstance(m, AbstractRuled)]
    index = lambda model: float(random.index(id(model))) if id(model) in random else 0.0  # noqa: E731
    return tuple(
        rule._replace(numbers=(rule.numbers[0], index(model))) if rule.rule == "leeway_each" else rule
        for model, rule in zip(ruled, found)
    )


def forcing_names(found: tuple[DriftRule, ...]) -> list[str]:
    """The forcings the drifts read, each once, in the order they are first read."""
    return list(dict.fromkeys(name for rule in found for name in rule.samples))


def refusals(field: Any, found: tuple[DriftRule, ...]) -> list[str]:
    """What of the drifts' forcings on `field` a kernel does not read, each in a phrase."""
    names = forcing_names(found)
    named = field.forcings.named if field.forcings is not None else {}
    phrases = [f"the drift's sample {name!r}, the field's own array (it reads forcings)" for name in names]
    phrases = [phrase for name, phrase in zip(names, phrases) if name not in named]
    if len(names) > MAX_FORCINGS:
        phrases.append(f"drifts reading {len(names)} forcings (it reads {MAX_FORCINGS})")
    for name in (name for name in names if name in named):
        phrases += _forcing_refusals(name, named[name].field)
    return phrases


def _forcing_refusals(name: str, forcing: Any) -> list[str]:
    """What of the forcing `name` a kernel does not read: none of a `Uniform`, or of a
    `GridField` that is an A-grid, multilinear, of at most 3 components, no slip at its land."""
    if isinstance(forcing, Uniform):
        return []
    if not isinstance(forcing, GridField):
        return [f"the forcing {name!r}, a {type(forcing).__name__} (it reads GridField and Uniform forcings)"]
    checks = (
        (forcing.staggering == "A", f"{forcing.staggering}-grids"),
        (forcing.interpolation == "linear", f"{forcing.interpolation} interpolation"),
        (forcing.components <= 3, f"{forcing.components} components"),
        (forcing.land is None or forcing.coast == "noslip", f"{forcing.coast} coasts"),
    )
    return [f"the forcing {name!r}'s {phrase}" for ok, phrase in checks if not ok]


def inputs(
    kernel: str, field: Any, found: tuple[DriftRule, ...], variables: dict, n: int, dtype: DTypeLike
) -> DriftInputs:
    """The buffers `kernel` reads for the drifts `found` of `n` rows (their `variables`), with
    reals in `dtype`: `forcing_0` ..., `forcing_axes`, `forcing_times`, `forcing_ints`,
    `forcing_reals`, `drift_kinds`, `drift_numbers`, `orientation`, `coefficients`. Empty without drifts."""
    layout = native.layout(kernel)
    names = forcing_names(found)
    sides = [rule.orientation for rule in found if rule.orientation is not None]
    orientation = variables[sides[0]].astype(dtype) if sides else jnp.ones(n if found else 0, dtype)
    own = [rule.coefficients for rule in found if rule.coefficients is not None]
    width = layout.capacity["leeway_coefficients"]
    coefficients = jax.vmap(own[0])(variables).astype(dtype).reshape(-1) if own else jnp.zeros(0, dtype)
    if own and coefficients.shape[0] != n * width:
        raise RuntimeError(f"leeway_each takes {width} coefficients per element in the kernel")
    forcings = _forcing_tables(layout, [field.forcings.named[name] for name in names], dtype)
    return DriftInputs(
        **forcings, **_drift_tables(layout, found, names, dtype), orientation=orientation, coefficients=coefficients
    )


def jibes(found: tuple[DriftRule, ...] | None) -> bool:
    """Whether the drifts `found` hold one whose elements jibe (leeway of each element's own),
    which a kernel steps with the side it returns."""
    return any(rule.rule == "leeway_each" for rule in found or ())


def _table(rows: list, columns: int, dtype: DTypeLike) -> jax.Array:
    """`rows` of `columns` entries each (numbers or scalar arrays) as one `(rows, columns)` array."""
    if not rows:
        return jnp.zeros((0, columns), dtype)
    return jnp.stack([jnp.stack([jnp.asarray(v, dtype) for v in row]) for row in rows])


def _forcing_tables(layout: native.Layout, forcings: list, dtype: DTypeLike) -> dict:
    """The forcings' buffers: their values (`forcing_0` ...), axes and times one after the
    other, and a row of each table per forcing."""
    grids = [_as_grid(forcing, dtype) for forcing in forcings]
    values = [grid["values"] for grid in grids] + [jnp.zeros(0, dtype)] * (MAX_FORCINGS - len(grids))
    axes = [axis for grid in grids for axis in grid["axes"]]
    times = [series for grid in grids for series in grid["times"]]
    ints, reals, axes_at, times_at = [], [], 0, 0
    for grid in grids:
        ints.append(layout.row("forcing_ints", {**grid["ints"], "axes_start": axes_at, "times_start": times_at}))
        reals.append(layout.row("forcing_reals", grid["reals"]))
        axes_at += sum(int(a.shape[0]) for a in grid["axes"])
        times_at += sum(int(t.shape[0]) for t in grid["times"])
    return {
        **{f"forcing_{j}": v for j, v in enumerate(values)},
        "forcing_axes": jnp.concatenate(axes) if axes else jnp.zeros(0, dtype),
        "forcing_times": jnp.concatenate(times) if times else jnp.zeros(0, dtype),
        "forcing_ints": _table(ints, len(layout.columns["forcing_ints"]), jnp.int32),
        "forcing_reals": _table(reals, len(layout.columns["forcing_reals"]), dtype),
    }


def _drift_tables(layout: native.Layout, found: tuple[DriftRule, ...], names: list[str], dtype: DTypeLike) -> dict:
    """The drifts' rows: each rule's code and forcings (`drift_kinds`), its numbers (`drift_numbers`)."""
    width = layout.capacity["drift_numbers"]
    kinds, numbers = [], []
    for rule in found:
        code, count = layout.drifts[rule.rule]
        if len(rule.numbers) != count:
            raise RuntimeError(
                f"the drift rule {rule.rule!r} takes {count} numbers in the kernel, not {len(rule.numbers)}"
            )
        samples = [names.index(name) for name in rule.samples] + [-1, -1]
        kinds.append(layout.row("drift_kinds", {"rule": code, "sample": samples[0], "second": samples[1]}))
        numbers.append(list(rule.numbers) + [0.0] * (width - count))
    return {
        "drift_kinds": _table(kinds, len(layout.columns["drift_kinds"]), jnp.int32),
        "drift_numbers": _table(numbers, width, dtype),
    }


def _as_grid(forcing: Any, dtype: DTypeLike) -> dict:
    """A forcing (`fields.forcing.Forcing`) as the kernel reads a grid: its `values`, `axes`,
    `times`, and the entries of its `ints` and `reals` rows (the starts in the flat axes and
    times left to the caller), in `dtype`."""
    f, real = forcing.field, lambda v: jnp.asarray(v, dtype)  # noqa: E731
    if isinstance(f, Uniform):  # one value on two nodes a side, every axis periodic: the same everywhere
        dim, axes = f.dim, [jnp.asarray([0.0, 1.0], dtype)] * f.dim
        values = jnp.broadcast_to(f.velocity.astype(dtype), (1,) + (2,) * dim + (dim,)).reshape(-1)
        n, uniform, periodic, times, components = (2,) * dim, (1,) * dim, (1,) * dim, [], dim
        origin, inv, lo, hi = [real(0.0)] * dim, [real(1.0)] * dim, [real(0.0)] * dim, [real(1.0)] * dim
    else:
        dim, axes, components = f.dim, [a.astype(dtype) for a in f.axes], f.components
        values = f.values.astype(dtype).reshape(-1)
        n, uniform, periodic = tuple(f.shape), tuple(f.uniform), tuple(f.periodic)
        times = [f.times.astype(dtype)] if f.times is not None else []
        origin, inv = [real(v) for v in f.origin], [real(v) for v in f.inv_spacing]
        lo, hi = [real(v) for v in f.bounds[0]], [real(v) for v in f.bounds[1]]
    pad = lambda seq, fill: list(seq) + [fill] * (3 - dim)  # noqa: E731
    ints = {
        "dim": dim,
        "components": components,
        **{f"n_{a}": v for a, v in enumerate(pad(n, 0))},
        **{f"uniform_{a}": int(v) for a, v in enumerate(pad(uniform, 0))},
        **{f"periodic_{a}": int(v) for a, v in enumerate(pad(periodic, 0))},
        "times": int(times[0].shape[0]) if times else 0,
        "wraps": int(forcing.longitude_start is not None),
    }
    reals = {
        **{f"origin_{a}": v for a, v in enumerate(pad(origin, real(0.0)))},
        **{f"inv_{a}": v for a, v in enumerate(pad(inv, real(0.0)))},
        **{f"lo_{a}": v for a, v in enumerate(pad(lo, real(0.0)))},
        **{f"hi_{a}": v for a, v in enumerate(pad(hi, real(0.0)))},
        "offset": real(forcing.offset),
        "longitude_start": real(forcing.longitude_start if forcing.longitude_start is not None else 0.0),
    }
    return {"values": values, "axes": axes, "times": times, "ints": ints, "reals": reals}


def with_sides(carry: Any, sides: jax.Array, particles: AbstractParticles) -> Any:
    """`carry` with its rows' leeway sides as a kernel returned them after their jibes
    (`orientation`), where the run's drifts jibe; as it is otherwise."""
    if not jibes(rules(particles)):
        return carry
    before = carry.rows.variables["orientation"]
    return eqx.tree_at(
        lambda c: c.rows.variables, carry, {**carry.rows.variables, "orientation": sides.astype(before.dtype)}
    )
