"""The compiled CPU kernel of the mesh tracker (`mesh_chunk.cc`), an XLA FFI handler.

`pip install` builds it where a C++17 compiler is found; without it, or with the environment
variable `FLOWKIT_NATIVE=0` (for comparisons and debugging), runs take the JAX path, which
computes the same tracks. A run's log says which path it took.
"""

import ctypes
import functools
import importlib.machinery
import os
from pathlib import Path

TARGETS = {"float32": "flowkit_mesh_chunk_f32", "float64": "flowkit_mesh_chunk_f64"}
"""The FFI target of each position precision."""


@functools.cache
def _library() -> ctypes.CDLL | None:
    folder = Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_mesh_chunk{suffix}"
        if path.exists():
            return ctypes.CDLL(str(path))
    return None


@functools.cache
def _registered() -> bool:
    import jax

    library = _library()
    if library is None:
        return False
    for name, symbol in zip(TARGETS.values(), ("FlowkitMeshChunkF32", "FlowkitMeshChunkF64")):
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, symbol)), platform="cpu")
    return True


def available() -> bool:
    """Whether the kernel is built and switched on (its FFI targets registered on first call)."""
    return os.environ.get("FLOWKIT_NATIVE", "1") != "0" and _registered()
