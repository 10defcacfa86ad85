"""Compiled chunk programs, one per run structure and shape (AOT), kept for the process; and
the last run's pieces as placed on its devices."""

import functools
import time
import weakref
from typing import Any

import equinox as eqx
import jax
import numpy as np

from .._xla import options_for
from .kernel import advance, laid_out_as

_COMPILED: dict = {}
_MAX_PROGRAMS = 64


_compiles = 0


def clear_caches() -> None:
    """Forget every compiled program: flowkit's chunk programs and JAX's own caches. A process
    that tracks many differently shaped runs (a test suite, a notebook) releases their
    executables' memory this way; the next run of each shape compiles again."""
    _COMPILED.clear()
    _PLACED.clear()
    jax.clear_caches()


_PLACED: list = []  # at most one entry: (weak references to the leaves, structure, sharding, the placed tree)


def placed(tree: Any, sharding: jax.sharding.Sharding) -> Any:
    """`jax.device_put(tree, sharding)`, the last tree placed kept: the next run of the same
    field on the same devices (its arrays the same objects: JAX arrays do not change) takes the
    copy already placed instead of copying the field to every device again (3 ms for a small
    ROMS file on two devices; a second for a field of gigabytes). The copy is dropped when a
    source array is collected or another tree is placed. Trees with NumPy leaves, which can
    change in place, are always copied."""
    leaves, structure = jax.tree.flatten(tree)
    if _PLACED:
        refs, kept_structure, kept_sharding, kept = _PLACED[0]
        same = kept_structure == structure and kept_sharding == sharding and len(refs) == len(leaves)
        if same and all(ref() is leaf for ref, leaf in zip(refs, leaves)):
            return kept
    result = jax.device_put(tree, sharding)
    _PLACED.clear()
    if all(isinstance(leaf, jax.Array) for leaf in leaves):
        _PLACED.append(([weakref.ref(leaf, _forget) for leaf in leaves], structure, sharding, result))
    return result


@functools.lru_cache(maxsize=16)
def placed_scalars(values: tuple, dtype: str, sharding: jax.sharding.Sharding) -> list:
    """`values` as 0-d arrays of `dtype` placed with `sharding` in one transfer, kept for the
    next run of the same times (no program donates them)."""
    return jax.device_put([np.asarray(v, dtype) for v in values], sharding)


def _forget(_: weakref.ref) -> None:
    """A placed tree's source array was collected: drop its copy."""
    _PLACED.clear()


def compile_count() -> int:
    """How many chunk programs this process has compiled (for tests and diagnostics)."""
    return _compiles


def compiled_program(call_args, call_kwargs):
    """AOT-compile `advance` once per structure and shape; return it and the compile time."""
    global _compiles
    leaves, treedef = jax.tree.flatten(call_args)  # one pass: the arrays' shapes, the rest as they are
    arrays = [leaf for leaf in leaves if eqx.is_array(leaf)]
    key = (
        treedef,
        tuple(("array", leaf.shape, leaf.dtype, leaf.sharding) if eqx.is_array(leaf) else leaf for leaf in leaves),
        tuple(sorted(call_kwargs.items())),
    )
    if key in _COMPILED:
        return _COMPILED[key], 0.0
    _compiles += 1
    start = time.perf_counter()
    compiled = advance.lower(*call_args, **call_kwargs).compile(options_for(arrays))
    if len(_COMPILED) >= _MAX_PROGRAMS:  # forget the oldest program rather than grow without bound
        _COMPILED.pop(next(iter(_COMPILED)))

    def program(pieces, times, state, slots):
        new_state, *results = compiled(pieces, times, state, slots, **call_kwargs)
        return laid_out_as(new_state, state), *results

    _COMPILED[key] = program
    return program, time.perf_counter() - start
