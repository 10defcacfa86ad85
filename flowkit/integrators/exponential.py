"""The exponential solver: Runge–Kutta steps for a velocity relaxing toward the fluid's that step
the drag exactly, at the order of the run's own tableau.

A particle with position `x` and velocity `v` under drag obeys `x' = v`, `v' = λ (W - v)`, where
`W = v + a / λ` is the velocity it relaxes toward (the fluid's, plus the settling velocity and
the other forces). With `λ` frozen at the step's start, `y = (x, v)` solves `y' = L y + N(y)`,
`L = [[0, I], [0, -λ I]]`, `N = (0, λ W)`: an exponential RK method (Hochbruck & Ostermann,
Acta Numerica 2010) steps the linear part exactly and takes `W` from the stages,

    Y_i = exp(c_i h L) y0 + h Σ_j a_ij(h L) N_j,     y1 = exp(h L) y0 + h Σ_i b_i(h L) N_i,

with `a_ij(z)`, `b_i(z)` combinations of the φ functions. `L` is upper triangular with
eigenvalues 0 and `-λ`, so a function `g(hL)` applied to `(0, λ W)` is `(h (g(0) - g(z)) W,
-z g(z) W)` with `z = -λ h`. In `(x, x + v/λ)` the same problem has a bounded nonlinearity
(`W`), so methods of stiff order p (Hochbruck & Ostermann) keep order p at every `dt/τ`.

Each method here is a classical method at `z = 0`, so as `λ → ∞` (`z → -∞`, every
`φ_k(z) → 0`) the position is stepped by that method applied to `x' = W`, the tracer's path:
exponential Euler for Euler, ETD2 for Heun and the midpoint rule (their own tableaus at `z = 0`),
and for RK4 a five-stage method of stiff order 4 (a fourth-order classical method at `z = 0`,
not RK4's own tableau). For a constant `W` every one is exact (settling in still fluid).
"""

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Args, Positions, TimeLike
from ..fields.base import Hints
from . import tableau as _tableau
from .base import AbstractIntegrator, StepResult, hints_for
from .runge_kutta import AbstractRungeKutta
from .terms import AbstractDragTerm, AbstractTerm


def phis(z: Float[Array, "*shape"], count: int) -> list[Float[Array, "*shape"]]:
    """`[φ_0(z), …, φ_count(z)]`, `φ_0 = e^z`, `φ_{k+1}(z) = (φ_k(z) - 1/k!) / z`: by that
    recurrence where `|z| ≥ 1`; below, where it cancels, `φ_count` by its Taylor series (18
    terms, Horner: float64 round-off) and the lower ones by the recurrence run backward,
    `φ_k = z φ_{k+1} + 1/k!` (stable for `|z| < 1`)."""
    small = jnp.abs(z) < 1
    safe = jnp.where(small, -1.0, z)
    forward = [jnp.exp(safe)]
    for k in range(1, count + 1):
        forward.append((forward[-1] - 1 / math.factorial(k - 1)) / safe)
    terms = 18
    backward = [jnp.full_like(z, 1 / math.factorial(terms - 1 + count))]
    for m in range(terms - 2, -1, -1):
        backward[0] = backward[0] * z + 1 / math.factorial(m + count)
    for k in range(count - 1, 0, -1):
        backward.insert(0, z * backward[0] + 1 / math.factorial(k))
    return [jnp.exp(z)] + [jnp.where(small, b, f) for b, f in zip(backward, forward[1:])]


class ExponentialTableau(NamedTuple):
    """An exponential RK method: its nodes `c`, and `coefficients(z)` -> `(a, b)` with `a[i][j]`
    and `b[i]` arrays of `z`'s shape (`None` for a zero); `order` its classical order."""

    c: tuple[float, ...]
    coefficients: Callable
    order: int


def _euler(z):
    return [[None]], [phis(z, 1)[1]]


def _heun(z):  # ETD2RK (Cox & Matthews 2002): Heun's method at z = 0
    _, p1, p2 = phis(z, 2)
    return [[None, None], [p1, None]], [p1 - p2, p2]


def _midpoint(z):  # Hochbruck & Ostermann's second-order family with c2 = 1/2: the midpoint rule at z = 0
    _, p1, p2 = phis(z, 2)
    return [[None, None], [0.5 * phis(z / 2, 1)[1], None]], [p1 - 2 * p2, 2 * p2]


def _rk4(z):
    """Hochbruck & Ostermann (2005), stiff order 4 in five stages: a classical fourth-order
    method at z = 0 (weights 1/6, 0, 0, 1/6, 2/3). Krogstad's four-stage ETDRK4-B, which is the
    classic RK4 at z = 0, has stiff order 3 only: measured, its order falls to 3.1 at dt/τ = 5."""
    _, p1, p2, p3 = phis(z, 3)
    _, h1, h2, h3 = phis(z / 2, 3)
    a52 = 0.5 * h2 - p3 + 0.25 * p2 - 0.5 * h3
    a54 = 0.25 * h2 - a52
    a = [
        [None] * 5,
        [0.5 * h1, None, None, None, None],
        [0.5 * h1 - h2, h2, None, None, None],
        [p1 - 2 * p2, p2, p2, None, None],
        [0.5 * h1 - 2 * a52 - a54, a52, a52, a54, None],
    ]
    return a, [p1 - 3 * p2 + 4 * p3, None, None, 4 * p3 - p2, 4 * p2 - 8 * p3]


EXPONENTIAL = {
    "euler": (_tableau.EULER, ExponentialTableau((0.0,), _euler, 1)),
    "heun": (_tableau.HEUN, ExponentialTableau((0.0, 1.0), _heun, 2)),
    "midpoint": (_tableau.MIDPOINT, ExponentialTableau((0.0, 0.5), _midpoint, 2)),
    "rk4": (_tableau.RK4, ExponentialTableau((0.0, 0.5, 0.5, 1.0, 0.5), _rk4, 4)),
}


def exponential_form(tableau: _tableau.ButcherTableau | None) -> ExponentialTableau | None:
    """The exponential method that is `tableau` at `z = 0` (None when flowkit has none for it)."""
    for classical, exponential in EXPONENTIAL.values():
        if tableau is not None and all(np.array_equal(p, q) for p, q in zip(classical, tableau)):
            return exponential
    return None


def exponential_step(
    method: ExponentialTableau,
    relax: Callable,
    x: Float[Array, "n dim"],
    v: Float[Array, "n dim"],
    t: TimeLike,
    dt: TimeLike,
    hint: Hints,
    rate: Float[Array, ""] | None = None,
):
    """One exponential RK step of `x' = v`, `v' = a`: `((x1, v1), hint)`.

    `relax(t, x, v, hint) -> (a, λ, hint)` gives the acceleration and the drag's rate per row
    (`λ` `(n,)`); the rate at the step's start is the one stepped exactly, or `rate`, one for
    every row, where the drag's rate does not depend on the particle (Stokes drag): its
    coefficients are then computed for one number, not per row (half the step's cost with RK4).

    The stages run in a `lax.scan` (as `explicit_rk_step`'s do), carrying each stage's `W`
    stage-major. Each stage computes the coefficients from `z` and picks its row by
    arithmetic: elementwise work that XLA fuses. Carried as arrays and indexed by the stage, or
    summed by a reduction over the stage axis, they made the step 2-10x slower on XLA's CPU
    backend."""
    stages = len(method.c)
    classical_a, classical_b = method.coefficients(jnp.zeros((), x.dtype))

    def combined(weights, targets):
        return sum(weights[j] * targets[j] for j in range(stages) if weights[j] is not None)

    def pick(i, rows):  # the stage's row: (i == k) arithmetic, not an index
        return [
            sum(jnp.where(i == k, rows[k][j], 0) for k in range(stages) if rows[k][j] is not None)
            if any(rows[k][j] is not None for k in range(stages))
            else None
            for j in range(stages)
        ]

    def stage(carry, i):
        targets, z, hint = carry
        a, _ = method.coefficients(z)
        row, row0 = pick(i, a), pick(i, classical_a)
        c = sum(jnp.where(i == k, ck, 0) for k, ck in enumerate(method.c))
        decay, phi = phis(c * z, 1)
        point = x + dt * (c * phi * v + combined([None if p is None else p - q for p, q in zip(row0, row)], targets))
        velocity = decay * v - z * combined(row, targets)
        acceleration, stage_rate, hint = relax(t + c * dt, point, velocity, hint)
        if rate is None:
            z = jnp.where(i == 0, -dt * stage_rate[:, None], z)
        return (targets.at[i].set(velocity - acceleration * dt / z), z, hint), None

    z = jnp.full_like(v[:, :1], -1.0) if rate is None else jnp.asarray(-dt * rate, x.dtype)
    start = (jnp.zeros((stages,) + v.shape, v.dtype), z, hint)
    (targets, z, hint), _ = jax.lax.scan(stage, start, jnp.arange(stages))
    _, b = method.coefficients(z)
    decay, phi = phis(z, 1)
    x_new = x + dt * (phi * v + combined([None if p is None else p - q for p, q in zip(classical_b, b)], targets))
    v_new = decay * v - z * combined(b, targets)
    return (x_new, v_new), hint


def exponential_of(integrator: AbstractIntegrator) -> ExponentialTableau:
    """The exponential method that is `integrator`'s tableau at `z = 0`, or the second-order one
    for integrators without one (or not Runge–Kutta)."""
    tableau = integrator.tableau if isinstance(integrator, AbstractRungeKutta) else None
    return exponential_form(tableau) or EXPONENTIAL["heun"][1]


class ExponentialDrag(AbstractIntegrator):
    """The exponential solver of an `AbstractDragTerm`, at the order of the run's integrator
    (`classical`): position and velocity by `exponential_step`, any other variables of the
    state by the midpoint rule along the step's chord (their rates at its middle, where the
    particle moves along the chord: `(x1 - x0) / dt`). Stable for any `dt/τ`."""

    classical: AbstractIntegrator

    @property
    def method(self) -> ExponentialTableau:
        return exponential_of(self.classical)

    @property
    def order(self) -> int:
        return self.method.order

    @property
    def stochastic(self) -> bool:
        return False

    @property
    def sample_names(self) -> frozenset[str]:
        return frozenset()

    @property
    def shardable(self) -> bool:
        return True

    @property
    def courant_limit(self) -> float:
        return self.classical.courant_limit

    def step(
        self,
        term: AbstractTerm,
        state: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
        remainder: Positions | None = None,
    ) -> StepResult:
        if not isinstance(term, AbstractDragTerm):
            raise TypeError(f"ExponentialDrag steps a drag term (a velocity relaxing toward the fluid's), got {term}")
        name = term.velocity_name
        x, v = state["x"], state[name]
        hint = hints_for(term.field, x, hint)
        (x_new, v_new), hint = exponential_step(
            self.method,
            lambda s, y, u, h: term.relaxation(s, y, u, args, h),
            x,
            v,
            t,
            dt,
            hint,
            term.uniform_rate(v.dtype),
        )
        new = {**state, "x": x_new, name: v_new}
        others = [key for key in state if key not in ("x", name)]
        if others:  # the variables riding along: their rates at the chord's middle
            middle = {**state, "x": (x + x_new) / 2, name: (x_new - x) / dt}
            rates, _ = term.rates(t + dt / 2, middle, args, hint)
            new.update({key: state[key] + dt * rates[key] for key in others})
        return StepResult(new, hint=hint)
