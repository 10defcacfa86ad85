"""Where an inlet restarts particles: each seed's projection onto the inlet (`grid` mode),
located once on the host, and the default mode that fits the seeds."""

import dataclasses
import logging

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, Hints
from ..fields.streamed import StreamedField

_log = logging.getLogger("flowkit")


def inlet_origins(field: AbstractField | StreamedField, boundary: AbstractBoundary, seeds, key):
    """`(boundary, key, hints)`: an inlet's default `mode="auto"` resolved, and where its `grid`
    restart points lie, as host-side hints (located once, here, not at every restart; None for
    a boundary that restarts nowhere fixed).

    `grid` inlets restart slots at their seeds projected onto the inlet: every seed inside the
    domain must project into the domain and the inlet's region (seeds outside never move).
    `auto` is `grid` when they all do, else `random` on the inlet (a small patch of a real
    case, seeds spread through the domain), logged, with a key made if none was given."""
    auto = getattr(boundary, "mode", None) == "auto"
    if not (auto or boundary.restarts_at_origins):
        return boundary, key, None
    hints, bad = _projected(field, boundary, seeds, boundary.origins(seeds))
    if auto and bad.any():
        _log.info(
            "boundary: %d of %d seeds project outside the inlet: particles leaving through the outlet restart at "
            "random on the inlet (mode='random'%s; mode='grid' would restart each at its seed's projection)",
            int(bad.sum()),
            len(seeds),
            "" if key is not None else ", key=0",
        )
        return dataclasses.replace(boundary, mode="random"), jax.random.key(0) if key is None else key, None
    if bad.any():
        raise ValueError(
            f"boundary: {int(bad.sum())} of {len(seeds)} seeds project onto the inlet plane outside "
            "the domain or the inlet's region (grid mode restarts each slot at its seed's "
            "projection); seed on or in front of the inlet, or use mode='random'"
        )
    return (dataclasses.replace(boundary, mode="grid") if auto else boundary), key, hints


def _projected(field: AbstractField, boundary: AbstractBoundary, seeds, origins) -> tuple[Hints, np.ndarray]:
    """The hints of the seeds' projections onto the inlet, and which seeds inside the domain
    project outside it or the inlet's region."""
    locate = eqx.filter_jit(field.locate_batch)
    dtype = field.bounds[0].dtype
    unknown = field.hints(len(seeds), dtype)
    inside = np.asarray(locate(jnp.asarray(seeds, dtype), unknown)[1])
    hints, lands = locate(jnp.asarray(origins, dtype), unknown)
    hints, lands = jax.tree.map(np.array, hints), np.array(lands)
    region = boundary.origin_region
    if region is not None:
        scale = 1e-9 * np.max(np.asarray(field.bounds[1]) - np.asarray(field.bounds[0]))
        lands &= np.all((origins >= region[0] - scale) & (origins <= region[1] + scale), axis=1)
    return hints, inside & ~lands
