"""Working precision: float32 by default, float64 on request."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

logger = logging.getLogger("flowkit")
_ALLOWED = {"float32": jnp.float32, "float64": jnp.float64}


def resolve(dtype: DTypeLike) -> np.dtype:
    """Turn "float32"/"float64" (or a numpy/jax dtype) into a numpy dtype.

    Asking for float64 switches on JAX's x64 mode for the process, with a log line: the one
    global setting the library changes, and only when float64 is requested. It is global, not
    scoped to the run, because a float64 field must stay float64 wherever it is evaluated
    afterwards (`field(t, x)`, a diffrax term), and JAX narrows float64 arrays outside x64 mode.
    """
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in _ALLOWED:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    if name == "float64" and not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)
        logger.info("float64 requested: JAX's x64 mode is now on for this process (jax_enable_x64)")
    return np.dtype(name)


def cast_floating(tree, dtype: DTypeLike):
    """Cast every floating array leaf of a pytree to `dtype` (no-op for leaves already in it)."""

    def cast(leaf):
        if isinstance(leaf, (jax.Array, np.ndarray)) and jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf if leaf.dtype == dtype else jnp.asarray(leaf, dtype)
        return leaf

    return jax.tree.map(cast, tree)
