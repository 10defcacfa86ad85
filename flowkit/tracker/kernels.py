"""Which CPU kernel takes a run's steps: one decision over every kernel flowkit builds."""

import logging

import jax.numpy as jnp
from jax.typing import DTypeLike

from .. import native
from .grid_kernel import GRID
from .mesh_kernel import MESH
from .ocean_kernel import OCEAN
from .pieces import RunPieces
from .seam import Kernel, registered

_log = logging.getLogger("flowkit")

KERNELS: dict[str, Kernel] = {kernel.name: kernel for kernel in (MESH, OCEAN, GRID)}
"""Every kernel, by name: the mesh tracker's, the ocean tracker's and the structured grids'."""


def kernel_use(pieces: RunPieces, dtype: DTypeLike, platform: str) -> str | None:
    """The name of the kernel that takes the steps of this run, with positions of `dtype` on
    devices of `platform`, or None (the JAX step): on CPUs, with the kernels built and switched
    on (`flowkit.native.built()`), the kernel of the run's field if it refuses nothing of the
    run. A GPU runs the JAX step."""
    kernel = _of_field(pieces, dtype, platform)
    if kernel is None or kernel.refusals(pieces, jnp.dtype(dtype)) or not registered(kernel):
        return None
    return kernel.name


def declined(pieces: RunPieces, dtype: DTypeLike, platform: str) -> str | None:
    """Why the kernel of this run's field does not take its steps, as the run's log says it (the
    JAX step is 3-4 times slower on a CPU), or None: it takes them (or its build did not
    register: `registered` said why), no kernel steps such a field, or the run is not on CPUs
    with the kernels built."""
    kernel = _of_field(pieces, dtype, platform)
    refused = [] if kernel is None else kernel.refusals(pieces, jnp.dtype(dtype))
    return f"the CPU {kernel.name} kernel does not step {'; '.join(refused)}" if kernel and refused else None


def _of_field(pieces: RunPieces, dtype: DTypeLike, platform: str) -> Kernel | None:
    """The kernel the run's field names (`AbstractField.kernel`), where kernels may take a run on
    `platform` with positions of `dtype`; None for fields no kernel evaluates, other platforms
    and precisions, or no build."""
    if platform != "cpu" or jnp.dtype(dtype).name not in native.PRECISIONS or not native.built():
        return None
    return KERNELS.get(pieces.field.kernel)


def described(name: str) -> str:
    """A kernel as a run's log names it: which kernel and build, by the width of its vectors."""
    return f"the CPU {name} kernel (flowkit.native, its {native.build()} build, {native.simd_bytes()}-byte vectors)"


def say_steps(pieces: RunPieces, dtype: DTypeLike, platform: str, kernel: str | None) -> None:
    """The run's log line on its steps: the kernel that takes them (DEBUG), or why the kernel of
    its field does not (INFO, `declined`)."""
    if kernel is not None:
        _log.debug("steps: %s", described(kernel))
    elif why := declined(pieces, dtype, platform):
        _log.info("steps: the JAX step: %s", why)
