"""Which CPU kernel takes a run's steps: one decision over every kernel flowkit builds."""

import logging

import jax.numpy as jnp
from jax.typing import DTypeLike

from .. import native
from .mesh_kernel import MESH
from .ocean_kernel import OCEAN
from .pieces import RunPieces
from .seam import Kernel, registered

_log = logging.getLogger("flowkit")

KERNELS: dict[str, Kernel] = {kernel.name: kernel for kernel in (MESH, OCEAN)}
"""Every kernel, by name: the mesh tracker's and the ocean tracker's."""


def kernel_use(pieces: RunPieces, dtype: DTypeLike, platform: str) -> str | None:
    """The name of the kernel that takes the steps of this run, with positions of `dtype` on
    devices of `platform`, or None (the JAX step): on CPUs, with the kernels built and switched
    on (`flowkit.native.built()`), the first kernel that refuses nothing of the run. A GPU runs
    the JAX step."""
    if not _kernels_run(dtype, platform):
        return None
    taken = (k for k in KERNELS.values() if not k.refusals(pieces, jnp.dtype(dtype)) and registered(k))
    return next((k.name for k in taken), None)


def declined(pieces: RunPieces, dtype: DTypeLike, platform: str) -> str | None:
    """Why the kernel of this run's field does not take its steps, as the run's log says it (the
    JAX step is 3-4 times slower on a CPU), or None: a kernel takes them, no kernel steps such a
    field, or the run is not on CPUs with the kernels built."""
    if not _kernels_run(dtype, platform) or kernel_use(pieces, dtype, platform) is not None:
        return None
    for k in KERNELS.values():
        refused = k.refusals(pieces, jnp.dtype(dtype)) if type(pieces.field) is k.field else []
        if refused:  # (none refused: a kernel whose build did not register; `registered` said why)
            return f"the CPU {k.name} kernel does not step {'; '.join(refused)}"
    return None


def _kernels_run(dtype: DTypeLike, platform: str) -> bool:
    """Whether kernels may take a run on `platform` with positions of `dtype`."""
    return platform == "cpu" and jnp.dtype(dtype).name in native.PRECISIONS and native.built()


def described(name: str) -> str:
    """A kernel as a run's log names it: which kernel and build, by the width of its vectors."""
    return f"the CPU {name} kernel (flowkit.native, {native.simd_bytes()}-byte vectors)"


def say_steps(pieces: RunPieces, dtype: DTypeLike, platform: str, kernel: str | None) -> None:
    """The run's log line on its steps: the kernel that takes them (DEBUG), or why the kernel of
    its field does not (INFO, `declined`)."""
    if kernel is not None:
        _log.debug("steps: %s", described(kernel))
    elif why := declined(pieces, dtype, platform):
        _log.info("steps: the JAX step: %s", why)
