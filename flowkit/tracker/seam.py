"""The seam of flowkit's CPU kernels that take a run's steps (`flowkit.native`): what each
declares beyond its interface (`flowkit.native.interface`), and the inputs they share.

Each kernel is a `Kernel`: an `Interface` (its buffers, attributes, vocabulary, capacities,
checked against the built kernel before its targets are registered), the field it steps and
what it refuses of a run on one (`refusals`: it takes the runs it computes as the JAX step
does), and how a run calls it (`steps`, `located`). `tracker.kernels.kernel_use` decides once
per run which kernel, if any, takes the steps, and the run compiles one program around it.
Python's codes (statuses, face kinds) go to a kernel as attributes; its own codes (cell kinds,
modes) are read from its layout.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Float

from .._status import Status
from ..fields.base import Hints
from ..integrators.runge_kutta import AbstractRungeKutta
from ..integrators.stochastic import EulerMaruyama
from ..native.interface import Interface
from ..particles.base import is_tracer
from .pieces import Rows, Slots, Times
from .step import is_due


@dataclass(frozen=True, kw_only=True)
class Kernel(Interface):
    """A compiled kernel that takes a run's steps, as Python declares and calls it."""

    field: type
    """The field it steps (`LayeredField`, `MeshField`): `tracker.kernels` offers it runs on such
    a field alone."""
    refusals: Callable
    """`(pieces, dtype) -> list[str]`: what in a run on its `field` it does not step, each in a
    phrase; none when it takes the run's steps (the platform and the build checked apart)."""
    steps: Callable
    """`(pieces, times, carry, slots, steps, block_id, *, n_blocks) -> (carry, before)`."""
    located: Callable | None = None
    """`(pieces, t0, x) -> (x, hints, inside, on land or None)`: the seeds located (and settled
    at `t0`) by the kernel, their hints exact, or None (the field's own location)."""


def stepping_refusals(pieces: Any, dtype: np.dtype, stored: Sequence[Any], walks: bool = False) -> list[str]:
    """What every kernel refuses of a run, each in a phrase: positions in another precision than
    the field's `stored` arrays, an integrator other than an explicit Runge–Kutta method (or,
    for a kernel that `walks`, `fk.EulerMaruyama`, whose diffusivity it judges itself), a
    particle model other than tracers."""
    integrator, particles = pieces.integrator, pieces.particles
    steps = "explicit Runge–Kutta methods" + (" and Euler–Maruyama" if walks else "")
    checks = (
        (
            all(a.dtype == dtype for a in stored),
            f"positions in {np.dtype(dtype).name} on a field stored in {stored[0].dtype.name}",
        ),
        (
            (isinstance(integrator, AbstractRungeKutta) and not integrator.stochastic)
            or (walks and isinstance(integrator, EulerMaruyama)),
            f"the integrator {type(integrator).__name__} (it steps {steps})",
        ),
        (is_tracer(particles), f"the particle model {type(particles).__name__} (it steps tracers)"),
    )
    return [phrase for ok, phrase in checks if not ok]


def tableau_rows(integrator: AbstractRungeKutta, dtype: DTypeLike) -> jax.Array:
    """An explicit Runge–Kutta `integrator`'s tableau as the kernels read it, `(rows, rows + 1)`
    in `dtype`: the stage matrix with the weights as its last row, the nodes (1 for the end
    point) as the last column: one row per point a kernel locates."""
    tableau = integrator.tableau
    stages = tableau.b.shape[0]
    table = np.zeros((stages + 1, stages + 2))
    table[:stages, :stages] = tableau.a
    table[stages, :stages] = tableau.b
    table[:stages, -1] = tableau.c
    table[stages, -1] = 1.0
    return jnp.asarray(table, dtype)


def release_steps(rows: Rows, slots: Slots, times: Times, t: Float[Array, " steps"], h: Float[Array, " steps"]):
    """The step of a call (starts `t`, lengths `h`) by whose end each waiting row is due for its
    release, as `one_step`'s release rule has it (-1: none of them): the kernels' `release`."""
    due = (rows.status == Status.NOT_RELEASED)[:, None] & jax.vmap(
        lambda end: is_due(end, slots.t_release, times.dt), out_axes=1
    )(t + h)
    return jnp.where(jnp.any(due, axis=1), jnp.argmax(due, axis=1), -1).astype(jnp.int32)


def hints_of(out: Any, was: Hints) -> Hints:
    """The rows' hints from a kernel's results `out` (its `cell`, `point`, `coords`), in the
    hints' own dtypes `was`."""
    return Hints(
        out.cell.astype(was.cell.dtype), out.point.astype(was.point.dtype), out.coords.astype(was.coords.dtype)
    )
