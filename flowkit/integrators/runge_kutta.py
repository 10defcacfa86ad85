"""One generic explicit Runge–Kutta step, driven by a Butcher tableau."""

from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Args, Positions, TimeLike
from ..fields.base import AbstractField, Hints
from ..fields.grid_chart import chart_of
from . import tableau as _tableau
from .base import AbstractIntegrator, StepResult, hints_for
from .terms import AbstractTerm, FlowTerm


def explicit_rk_step(
    vf: Callable,
    x,
    t: TimeLike,
    dt: TimeLike,
    tableau: _tableau.ButcherTableau,
    hint: Hints | None = None,
    locate: Callable | None = None,
    remainder: Positions | None = None,
):
    """One explicit RK step of $\\dot x = u(t, x)$ for `x` an array of positions, or a dict of
    arrays (a particle model's state, positions `x["x"]`); returns `(x_new, hint, inside,
    remainder)`.

    `vf(t, x, hint) -> (u, hint)`: the hint (where a mesh field found each point) goes from each
    stage to the next, so every stage's point location starts from the previous stage's cell.

    The stages run in a `lax.scan` over the rows of the tableau, carrying the stage
    derivatives stage-major as `K[s, *x.shape]`. On XLA's CPU backend this is faster than the
    same stages written out in straight-line code, which XLA fuses into one kernel that
    recomputes the earlier stages' lookups per element (figures in benchmarks/RESULTS.md).

    With `locate(x, hint) -> (hint, inside)`, the step's end point is one more row of the same
    scan: each row locates its point once and hands `vf` the hints as `exact`, and the last
    row evaluates nothing. The program then holds one location, not one in the stages and one
    for the end point (a mesh's walk is most of a step's compile time); `hint` locates
    `x_new` and `inside` says whether it lies in the domain. Without `locate`, `inside` is None.

    The step's end adds its increment to the positions by a compensated sum (`compensated_sum`)
    with `remainder` (what rounding left out of them at the step before; None: zeros; the
    stages' points are plain sums), and the `remainder` returned is what rounding left out of
    `x_new`'s positions: float32 positions far from 0 (longitudes of 237°, UTM metres of 5·10⁶)
    then add up their steps as float64 would, where each step's rounding (up to half a unit in
    the last place: a metre there) would otherwise accumulate.
    """
    dtype = jax.tree.leaves(x)[0].dtype
    positions = (lambda tree: tree["x"]) if isinstance(x, dict) else (lambda tree: tree)
    remainder = jnp.zeros_like(positions(x)) if remainder is None else remainder.astype(dtype)

    def advanced(k, weights, remainder):
        """`(x + dt * weights . k, what rounding left out of its positions)`, the positions'
        sum compensated with `remainder` (0: the plain sum, as a stage's point is)."""
        increment = jax.tree.map(lambda kk: dt * jnp.tensordot(weights, kk, axes=1), k)
        moved, left = compensated_sum(positions(x), positions(increment), remainder)
        y = jax.tree.map(jnp.add, x, increment)
        return ({**y, "x": moved} if isinstance(x, dict) else moved), left

    a = jnp.asarray(tableau.a, dtype)
    b = jnp.asarray(tableau.b, dtype)
    c = jnp.asarray(tableau.c, dtype)
    stages = b.shape[0]
    if locate is None and stages == 1:  # Euler: no stage loop needed
        u, hint = vf(t, x, hint)
        y, left = advanced(jax.tree.map(lambda v: v[None], u), jnp.ones(1, dtype), remainder)
        return y, hint, None, left
    rows = stages
    if locate is not None:
        a, c, rows = jnp.concatenate([a, b[None]]), jnp.concatenate([c, jnp.ones(1, dtype)]), stages + 1

    def stage(carry, row):
        k, hint, _, _, _ = carry
        i, a_i, c_i = row
        y, left = advanced(k, a_i, jnp.where(i == stages, remainder, 0))  # the end row (with `locate`)
        if locate is None:
            u, hint = vf(t + c_i * dt, y, hint)
            return (jax.tree.map(lambda kk, v: kk.at[i].set(v), k, u), hint, None, None, None), None
        hint, inside = locate(y, hint)
        # the last row evaluates nothing; it writes zeros into the last stage's slot, read no
        # more, so that the update stays in place (inside the `cond` it copied all of `K`)
        u = jax.lax.cond(
            i < stages,
            lambda: jax.tree.map(lambda kk, v: v.astype(kk.dtype), k, vf(t + c_i * dt, y, hint.marked(True))[0]),
            lambda: jax.tree.map(lambda kk: jnp.zeros_like(kk[0]), k),
        )
        k = jax.tree.map(lambda kk, v: kk.at[jnp.minimum(i, stages - 1)].set(v), k, u)
        return (k, hint, inside, y, left), None

    k0 = jax.tree.map(lambda y: jnp.repeat(jnp.zeros_like(y)[None], stages, axis=0), x)
    ends = (None, None, None) if locate is None else (jnp.zeros(positions(x).shape[0], bool), x, remainder)
    (k, hint, inside, y, left), _ = jax.lax.scan(stage, (k0, hint, *ends), (jnp.arange(rows), a, c))
    if locate is not None:  # the last row's point is the step's end
        return y, hint, inside, left
    y, left = advanced(k, b, remainder)
    return y, hint, None, left


def compensated_sum(
    x: Float[Array, "*rows"], increment: Float[Array, "*rows"], remainder: Float[Array, "*rows"]
) -> tuple[Float[Array, "*rows"], Float[Array, "*rows"]]:
    """`(x + (increment + remainder) rounded, what that rounding left out)`: Fast2Sum, exact
    where |x| >= |increment + remainder| (a position and its step), so that the two together
    hold the position to about twice the precision of either."""
    total = increment + remainder
    rounded = x + total
    return rounded, total - (rounded - x)


def end_locator(field: AbstractField) -> Callable | None:
    """`explicit_rk_step`'s `locate` for `field` and states `{"x": ..., **variables}`: its
    `locate_batch` of the positions where it shares its location (`shared_location`), else None."""
    if not field.shared_location:
        return None
    return lambda y, h: field.locate_batch(y["x"], h)


class AbstractRungeKutta(AbstractIntegrator):
    """An explicit Runge–Kutta method given entirely by its `tableau`. Tracers on a layered
    field over a curvilinear grid step the grid's fractional indices (`fields.grid_chart`)."""

    tableau: ClassVar[_tableau.ButcherTableau]

    @property
    def stochastic(self) -> bool:
        return False

    @property
    def sample_names(self) -> frozenset[str]:
        return frozenset()

    @property
    def shardable(self) -> bool:
        return True

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
        field = term.field
        chart = chart_of(field) if isinstance(term, FlowTerm) else None
        if chart is not None:  # a tracer on a curvilinear grid: steps of its fractional indices
            x = state["x"]
            start = chart.indices(x, hints_for(field, x, hint))
            end, hint, inside, _ = explicit_rk_step(
                lambda s, y, h: ({"x": chart.velocity(s, y["x"], args)}, h),
                {"x": start},
                t,
                dt,
                self.tableau,
                field.hints(x.shape[0], x.dtype),
                lambda y, h: chart.locate(y["x"]),
            )
            return StepResult({"x": chart.place(end["x"])[0]}, hint=hint, inside=inside)
        new, hint, inside, left = explicit_rk_step(
            lambda s, y, h: term.rates(s, y, args, h),
            state,
            t,
            dt,
            self.tableau,
            hints_for(field, state["x"], hint),
            end_locator(field),
            remainder,
        )
        return StepResult(new, hint=hint, inside=inside, remainder=left)


class Euler(AbstractRungeKutta):
    """Forward Euler, first order, one field evaluation per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.EULER
    order = 1
    courant_limit: ClassVar[float] = 1.0


class Midpoint(AbstractRungeKutta):
    """Explicit midpoint rule, second order, two evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.MIDPOINT
    order = 2
    courant_limit: ClassVar[float] = 1.0


class Heun(AbstractRungeKutta):
    """Heun's method (explicit trapezoid), second order, two evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.HEUN
    order = 2
    courant_limit: ClassVar[float] = 1.0


class RK4(AbstractRungeKutta):
    """The classic fourth-order Runge–Kutta method, four evaluations per step."""

    tableau: ClassVar[_tableau.ButcherTableau] = _tableau.RK4
    order = 4
    courant_limit: ClassVar[float] = 2.0
