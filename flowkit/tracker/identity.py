"""What makes a run the run it is: a hash of each of its parts, which a streamed store records,
so that `resume=True` continues a store only when the run asking is the run that made it, and a
refusal names the parts that differ.

Every value is hashed whole (xxHash's XXH3, about 0.1 s per GB on one core): the field's arrays,
the seeds, the release times, the other pieces' arrays and settings. A streamed series' slices
stay on disk; its files are identified by their names, sizes, modification times and a hash of
four sampled blocks each (`flowkit.fields.streamed.sampled_hash`).
"""

from typing import Any

import jax
import numpy as np
import xxhash
from jaxtyping import PRNGKeyArray

PARTS = ("field", "boundary", "integrator", "particles", "seeds", "release times", "times", "key", "batches", "output")
"""The parts of a run's identity, in the order a refusal names them."""


def content_hash(*values: Any) -> str:
    """A hash of `values`: pytrees whose array leaves (JAX or NumPy) are hashed whole, with their
    shapes and dtypes, and whose other leaves and structure by their `repr`."""
    digest = xxhash.xxh3_128()
    for value in values:
        leaves, structure = jax.tree.flatten(value)
        digest.update(repr(structure).encode())
        for leaf in leaves:
            if isinstance(leaf, (jax.Array, np.ndarray)):
                if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                    leaf = jax.random.key_data(leaf)
                array = np.ascontiguousarray(np.asarray(leaf))
                digest.update(repr((array.shape, array.dtype.str)).encode())
                digest.update(memoryview(array).cast("B"))
            else:
                digest.update(repr(leaf).encode())
    return digest.hexdigest()


def run_identity(
    pieces: Any,
    seeds: np.ndarray,
    t_release: np.ndarray,
    times: dict,
    batches: dict,
    output: dict,
    key: PRNGKeyArray | None = None,
    series: Any = None,
) -> dict[str, str]:
    """The hash of each of `PARTS`: `pieces` (a `RunPieces`: field, integrator, boundary,
    particles and their `args`), the `seeds` and `t_release`, the `times` (t0, t1, dt, saves),
    the PRNG `key`, the `batches` (batch size, padding, the process's part), the `output`
    (precision, velocities recorded, tracks kept, with the statistics gathered) and, for a
    streamed field, its `series` (a `flowkit.fields.streamed.StreamedField`: its template,
    times and files) in place of the field."""
    field = (
        content_hash(pieces.field)
        if series is None
        else content_hash(series.template, series.times, series.source.description, series.source.stamps())
    )
    return {
        "field": field,
        "boundary": content_hash(pieces.boundary),
        "integrator": content_hash(pieces.integrator),
        "particles": content_hash(pieces.particles, pieces.args),
        "seeds": content_hash(np.asarray(seeds, np.float64)),
        "release times": content_hash(np.asarray(t_release, np.float64)),
        "times": content_hash(sorted(times.items())),
        "key": content_hash(None if key is None else jax.random.key_data(key)),
        "batches": content_hash(sorted(batches.items())),
        "output": content_hash(sorted(output.items()), pieces.statistics),
    }


def differences(recorded: dict, identity: dict) -> list[str]:
    """The parts of `identity` that differ from a store's `recorded` one (all of them when the
    store recorded none)."""
    return [part for part in PARTS if recorded.get(part) != identity.get(part)]
