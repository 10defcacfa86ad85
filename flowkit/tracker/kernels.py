"""Which CPU kernel takes a run's steps: one decision over every kernel flowkit builds."""

import jax.numpy as jnp
from jax.typing import DTypeLike

from .. import native
from .mesh_kernel import MESH
from .ocean_kernel import OCEAN
from .pieces import RunPieces
from .seam import Kernel, registered

KERNELS: dict[str, Kernel] = {kernel.name: kernel for kernel in (MESH, OCEAN)}
"""Every kernel, by name: the mesh tracker's and the ocean tracker's."""


def kernel_use(pieces: RunPieces, dtype: DTypeLike, platform: str) -> str | None:
    """The name of the kernel that takes the steps of this run, with positions of `dtype` on
    devices of `platform`, or None (the JAX step): on CPUs, with the kernels built and switched
    on (`flowkit.native.built()`), the first kernel that `takes` the run. A GPU runs the JAX step."""
    if platform != "cpu" or jnp.dtype(dtype).name not in native.PRECISIONS or not native.built():
        return None
    return next((k.name for k in KERNELS.values() if k.takes(pieces, jnp.dtype(dtype)) and registered(k)), None)


def described(name: str) -> str:
    """A kernel as a run's log names it: which kernel and build, by the width of its vectors."""
    return f"the CPU {name} kernel (flowkit.native, {native.simd_bytes()}-byte vectors)"
