"""What the compiled chunk takes and carries: the run's pieces, the particle state, the
per-slot inputs and the run's times, each one pytree."""

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, Hints
from ..integrators.base import AbstractIntegrator
from ..particles.base import AbstractParticles


class RunPieces(eqx.Module):
    """The pieces a run is made of, as one pytree: what the compiled chunk takes."""

    field: AbstractField
    integrator: AbstractIntegrator
    boundary: AbstractBoundary
    particles: AbstractParticles
    args: Any
    statistics: tuple = ()
    """The statistics gathered at every saved frame (`flowkit.statistics`)."""


class Rows(eqx.Module):
    """What each particle of a block carries from step to step."""

    x: jax.Array
    status: jax.Array
    exit_time: jax.Array
    hint: Hints
    variables: dict
    generation: jax.Array
    remainder: jax.Array
    """`(n, dim)`: what rounding left out of each position at its last step by a method that sums
    positions compensated (explicit Runge–Kutta methods: `StepResult.remainder`), added into its
    next step; 0 where anything else moved it last."""


class Carry(eqx.Module):
    """A block's state through its steps: its rows, and how many releases found no free slot."""

    rows: Rows
    lost: jax.Array


class State(eqx.Module):
    """Everything that changes from chunk to chunk, resident on the device."""

    rows: Rows
    """What each particle carries: its position, status, exit time, where it was last located
    (`hint`: mesh fields, its cell and coordinates there), its model's variables and its count
    of restarts (`generation`: inlets; each generation is a separate path)."""
    lost: jax.Array
    """Per-block count of releases that found no free slot."""
    step: jax.Array
    courant: jax.Array
    """Per-block largest Courant number `max_i |dx_i| / size_i` of the active particles' last
    step before each saved frame (0 for fields without cells)."""
    tallies: tuple = ()
    """Each statistic's `Tally`: rows per slot, and totals with one row per device."""


class Slots(eqx.Module):
    """Per-particle inputs that never change during a run."""

    t_release: jax.Array
    keys: jax.Array
    """Raw PRNG keys (used by stochastic integrators and inlets, folded with the global step)."""
    origin: jax.Array
    """Where `grid` inlets restart each slot."""
    origin_hint: Hints
    """Where each `origin` lies (located once, before the run)."""
    index: jax.Array
    """Global slot index (-1: padding)."""


class Times(eqx.Module):
    """Numeric run parameters: leaves, so a new `t0`/`dt`/`t1` reuses the compiled program."""

    t0: jax.Array
    dt: jax.Array
    t1: jax.Array


@functools.cache
def blank_parts(
    count: int, width: int, dim: int, dtype: str, per_block: int, direction: float, rows, replicated, keys: bool
):
    """A program that makes on the devices what a new batch of `count` slots holds before its
    particles' data: `(parts, step 0)`, the parts hints of `width` located nowhere, no exit time
    (`direction * inf`), no restart, no remainder of their `dim` coordinates, zero counters per
    block and, with `keys`, zero keys (a run without a key), laid out as `rows`. One call,
    instead of a copy of each array to each device."""
    names = ("exit_time", "hint", "generation", "remainder", "lost", "courant") + ("keys",) * keys

    def blank():
        parts = dict(
            exit_time=jnp.full(count, direction * np.inf, dtype),
            hint=Hints.unknown(count, width, dtype),
            generation=jnp.zeros(count, jnp.int32),
            remainder=jnp.zeros((count, dim), dtype),
            lost=jnp.zeros(per_block, jnp.int32),
            courant=jnp.zeros(per_block, dtype),
        )
        if keys:
            parts["keys"] = jnp.zeros((count, 2), jnp.uint32)
        return parts, jnp.int32(0)

    return jax.jit(blank, out_shardings=(dict.fromkeys(names, rows), replicated))
