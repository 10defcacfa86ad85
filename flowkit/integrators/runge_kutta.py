"""One generic explicit Runge–Kutta step, driven by a Butcher tableau."""

from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp

from .._custom_types import Args, Position, Positions, TimeLike
from ..fields.base import AbstractField
from . import tableau as _tableau
from .base import AbstractIntegrator, StepResult


def explicit_rk_step(vf: Callable, x, t, dt, tableau: _tableau.ButcherTableau):
    """One explicit RK step of $\\dot x = $ `vf(t, x)` for `x` of any shape.

    The stages run in a `lax.scan` over the rows of the tableau, carrying the stage
    derivatives stage-major as `K[s, *x.shape]`. Measured on XLA's CPU backend this is several
    times faster than the same stages written out in straight-line code, which XLA fuses into
    one kernel that recomputes the earlier stages' lookups per element (benchmarks/RESULTS.md).
    """
    dtype = x.dtype
    a = jnp.asarray(tableau.a, dtype)
    b = jnp.asarray(tableau.b, dtype)
    c = jnp.asarray(tableau.c, dtype)
    stages = b.shape[0]
    if stages == 1:  # Euler: no stage loop needed
        return x + dt * vf(t, x)

    def stage(k, row):
        i, a_i, c_i = row
        x_i = x + dt * jnp.tensordot(a_i, k, axes=1)
        return k.at[i].set(vf(t + c_i * dt, x_i)), None

    k0 = jnp.repeat(jnp.zeros_like(x)[None], stages, axis=0)
    k, _ = jax.lax.scan(stage, k0, (jnp.arange(stages), a, c))
    return x + dt * jnp.tensordot(b, k, axes=1)


class AbstractRungeKutta(AbstractIntegrator):
    """An explicit Runge–Kutta method given entirely by its `tableau`."""

    tableau: ClassVar[_tableau.ButcherTableau]

    def step(self, field: AbstractField, x: Position, t: TimeLike, dt: TimeLike, args: Args = None, key=None) -> Position:
        return explicit_rk_step(lambda s, y: field(s, y, args), x, t, dt, self.tableau)

    def step_batch(self, field: AbstractField, x: Positions, t: TimeLike, dt: TimeLike, args: Args = None, keys=None) -> StepResult:
        batched = jax.vmap(field, in_axes=(None, 0, None))
        return StepResult(explicit_rk_step(lambda s, y: batched(s, y, args), x, t, dt, self.tableau))


class Euler(AbstractRungeKutta):
    """Forward Euler, first order, one field evaluation per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.EULER
    order: ClassVar[int] = 1


class Midpoint(AbstractRungeKutta):
    """Explicit midpoint rule, second order, two evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.MIDPOINT
    order: ClassVar[int] = 2


class Heun(AbstractRungeKutta):
    """Heun's method (explicit trapezoid), second order, two evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.HEUN
    order: ClassVar[int] = 2


class RK4(AbstractRungeKutta):
    """The classic fourth-order Runge–Kutta method, four evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.RK4
    order: ClassVar[int] = 4
