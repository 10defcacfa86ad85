"""What makes a run the run it is, as one short hash: a streamed store records it, and
`resume=True` continues a store only when the run asking is the run that made it."""

import hashlib

import jax
import numpy as np
from jaxtyping import PRNGKeyArray

_SAMPLE = 1 << 20
"""Values hashed per array at most (evenly spaced): large fields are identified by their shapes
and a sample, not read whole to the host."""


def run_identity(modules, seeds, t_release, settings: dict, key: PRNGKeyArray | None = None, series=None) -> str:
    """A hash of the run's pieces (`modules`: field, integrator, boundary, particles, args, with
    their static settings and array values), its seeds and release times, its `settings` (times,
    steps, batch size, dtype, ...), its PRNG `key` and, for a streamed field, its `series`
    (the slices' times and source)."""
    digest = hashlib.blake2b(digest_size=16)
    leaves, structure = jax.tree.flatten(modules)
    digest.update(repr(structure).encode())
    for leaf in leaves:
        if isinstance(leaf, (jax.Array, np.ndarray)):
            flat = leaf.reshape(-1)
            stride = max(1, flat.shape[0] // _SAMPLE)
            digest.update(repr((leaf.shape, str(leaf.dtype))).encode())
            digest.update(np.ascontiguousarray(np.asarray(flat[::stride])).tobytes())
        else:
            digest.update(repr(leaf).encode())
    for array in (seeds, t_release):
        digest.update(np.ascontiguousarray(np.asarray(array, np.float64)).tobytes())
    digest.update(repr(sorted(settings.items())).encode())
    if key is not None:
        digest.update(np.asarray(jax.random.key_data(key)).tobytes())
    if series is not None:
        digest.update(repr(series).encode())
    return digest.hexdigest()
