"""The seeds a run is given, checked against its field on the host (`check_seeds`): their
shape, finite and inside the field's box, their release times, the surface for horizontal
seeds on a layered ocean and the field's own range on a periodic axis."""

import functools
import logging
import operator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..fields.base import AbstractField
from ..fields.layered import LayeredField
from ..fields.streamed import StreamedField

_log = logging.getLogger("flowkit")


def is_traced(tree) -> bool:
    """Whether any leaf of `tree` is a JAX tracer (inside `grad`, `jit`, `vmap`)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree))


def at_surface(field: AbstractField | StreamedField, seeds: np.ndarray) -> np.ndarray:
    """Seeds given as `(lon, lat)` (or `(x, y)`) on a layered 3-D ocean field start at its
    surface, depth 0, as OpenDrift's users seed (logged); other seeds as given."""
    template = field.template if isinstance(field, StreamedField) else field
    if not (isinstance(template, LayeredField) and field.dim == 3 and seeds.ndim == 2 and seeds.shape[1] == 2):
        return seeds
    _log.info("seeds: %d given as horizontal positions: started at the surface (depth 0)", len(seeds))
    return np.column_stack([seeds, np.zeros(len(seeds))])


def check_seeds(field: AbstractField | StreamedField, seeds, t0: float, t1: float, t_release, spare: int = 0):
    """`(seeds, t_release)` checked against the field: seeds of shape `(N, dim)` (or one `(dim,)`
    seed), finite and inside the field's box; one release time per seed, each between `t0` and
    `t1` (default `t0`). `spare` slots added later by the boundary may make `N = 0` valid.

    Concrete inputs are NumPy float64 and fail here with a `ValueError` naming the problem.
    Traced ones (`jax.grad`, `jit`, `vmap`, `track_ensemble`) keep their type and carry the same
    checks into the program (`eqx.error_if`), failing when it runs: one set of rules for both."""
    traced = is_traced((seeds, t_release, field.bounds))
    xp = jnp if traced else np
    array = jnp.asarray if traced else lambda a: np.asarray(a, dtype=np.float64)
    seeds = array(seeds)
    if seeds.ndim == 1 and seeds.shape[0] == field.dim:
        seeds = seeds[None]
    if not traced:
        seeds = at_surface(field, seeds)
    if seeds.ndim == 2 and seeds.shape[0] + spare == 0:
        raise ValueError("no seeds (N = 0): give at least one seed, or an inlet that releases particles")
    if seeds.ndim != 2 or seeds.shape[1] != field.dim:
        raise ValueError(f"seeds must have shape (N, {field.dim}) for this {field.dim}-D field, got {seeds.shape}")
    n = seeds.shape[0]
    t_release = xp.full(n, t0) if t_release is None else array(t_release)
    if t_release.shape != (n,):
        raise ValueError(f"t_release must have shape ({n},) (one release time per seed), got {t_release.shape}")
    lo, hi = (array(b) for b in field.bounds)
    slack = 1e-6 * (hi - lo)
    if not traced and _plainly_valid(seeds, lo - slack, hi + slack, field.periodic, t_release, t0, t1):
        return _into_range(field, seeds, hi - lo, None), t_release
    # row by row, a column at a time (NumPy reduces a short last axis slowly)
    columns = [seeds[:, d] for d in range(field.dim)]
    nonfinite = ~functools.reduce(operator.and_, [xp.isfinite(c) for c in columns])
    out = [(c < lo[d] - slack[d]) | (c > hi[d] + slack[d]) for d, c in enumerate(columns) if not field.periodic[d]]
    outside = functools.reduce(operator.or_, out, xp.zeros(n, bool)) & ~nonfinite  # a periodic axis wraps below
    early = ~((min(t0, t1) <= t_release) & (t_release <= max(t0, t1)))
    box = "" if traced else f" lo={lo.tolist()}, hi={hi.tolist()}"
    problems = (
        (nonfinite, lambda k: f"seeds contain {k} non-finite positions"),
        (outside, lambda k: f"{k} of {n} seeds lie outside the field bounds{box}"),
        (early, lambda k: f"t_release: every release time must lie between t0={t0} and t1={t1}"),
    )
    for bad, message in problems:
        if traced:
            seeds = eqx.error_if(seeds, xp.any(bad), message("some"))
        elif bad.any():
            raise ValueError(message(int(bad.sum())))
    return (seeds if traced else _into_range(field, seeds, hi - lo, nonfinite)), t_release


def _plainly_valid(seeds: np.ndarray, lo, hi, periodic, t_release: np.ndarray, t0: float, t1: float) -> bool:
    """Whether host seeds are all finite and within `lo`..`hi` on each axis that does not wrap,
    and every release time between `t0` and `t1`: whole-array passes for the common case, before
    the row-by-row masks that count what is wrong."""
    if seeds.shape[0] == 0 or not (np.isfinite(seeds).all() and np.isfinite(t_release).all()):
        return False
    axes = [d for d in range(seeds.shape[1]) if not periodic[d]]
    inside = all(lo[d] <= seeds[:, d].min() and seeds[:, d].max() <= hi[d] for d in axes)
    return bool(inside and min(t0, t1) <= t_release.min() and t_release.max() <= max(t0, t1))


def _into_range(field: AbstractField | StreamedField, seeds: np.ndarray, period, nonfinite) -> np.ndarray:
    """Host seeds on a periodic axis moved into the field's own range (a sphere: [-180, 180) or
    [0, 360)) by whole `period`s (the box's extent); non-finite rows (`nonfinite`) as given."""
    if not any(field.periodic):
        return seeds
    kept = seeds if nonfinite is None else np.where(nonfinite[:, None], 0, seeds)
    canonical = np.asarray(field.canonical_batch(jnp.asarray(kept, field.bounds[0].dtype)), np.float64)
    return seeds + np.where(np.asarray(field.periodic), period * np.round((canonical - seeds) / period), 0)
