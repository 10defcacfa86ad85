"""Closed-form flows: reference solutions for tests and ready-made examples.

Every parameter is an array leaf (`converter=jnp.asarray`), so changing one never recompiles.
"""

import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, Bool

from .._custom_types import Args, Bounds, BoundsLike, HostOrDevice, Param, Position, Positions, TimeLike, Velocity
from .base import TIME_INVARIANT, AbstractField, Hints, as_bounds, plain_locate_batch, plain_velocity_batch

_INF_TIME = (-math.inf, math.inf)


def _param(value) -> Array:
    """A physical parameter as a floating array in JAX's default float precision."""
    return jnp.asarray(value, dtype=jnp.result_type(float))


class AbstractAnalyticField(AbstractField):
    """A flow given by a formula, defined everywhere in space and time: no data, no cells, no
    land, nothing located; positions in plain coordinates and times in seconds."""

    spherical: ClassVar[bool] = False
    time_origin: ClassVar[None] = None
    times: ClassVar[None] = None
    forcings: ClassVar[None] = None
    shared_location: ClassVar[bool] = False
    kernel: ClassVar[str | None] = None
    time_invariant: ClassVar[frozenset[str]] = TIME_INVARIANT

    def in_domain(self, x: Position) -> Bool[Array, ""]:
        return jnp.asarray(True)

    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        return Hints.unknown(n, 0, dtype, xp)

    def velocity_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        return plain_velocity_batch(self, t, x, args, hint)

    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Array, Hints]:
        return plain_velocity_batch(self, t, x, args, hint)

    def locate_batch(self, x: Positions, hint: Hints | None) -> tuple[Hints, Bool[Array, " n"]]:
        return plain_locate_batch(self, x, hint)

    def sample_batch(self, t: TimeLike, x: Positions, hint: Hints) -> dict[str, Array]:
        return {}

    def beached_batch(self, x: Positions, hint: Hints | None = None) -> None:
        return None

    def settle_batch(
        self, t: TimeLike, x: Positions, hint: Hints | None, reflect: bool = False
    ) -> tuple[Positions, Hints | None]:
        return x, hint

    def cell_sizes(self, x: Positions, hint: Hints) -> None:
        return None

    def max_courant_rate(self) -> None:
        return None

    def time_leaves(self) -> dict:
        return {}

    def value_components(self) -> int:
        return self.dim

    def describe(self) -> str:
        return ""

    def canonical_batch(self, x: Positions) -> Positions:
        return x


class Analytic(AbstractAnalyticField):
    """Wraps any user function `fn(t, x, args) -> u` written for one point.

    **Arguments:**

    - `fn`: the velocity function; must be traceable by JAX (no Python branches on `x`).
    - `bounds`: `(lo, hi)` of the region of interest (used by seeding and box boundaries).
    - `dim`: number of dimensions.
    - `periodic`: per-axis flags, informational for analytic flows.
    """

    fn: Callable = eqx.field(static=True)
    bounds: Bounds
    dim: int = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True)
    periodic: tuple[bool, ...] = eqx.field(static=True)

    def __init__(
        self,
        fn: Callable,
        bounds: BoundsLike,
        dim: int,
        time_range: tuple[float, float] = _INF_TIME,
        periodic: Sequence[bool] | None = None,
    ):
        self.fn = fn
        self.dim = int(dim)
        self.bounds = as_bounds(bounds, self.dim)
        self.time_range = (float(time_range[0]), float(time_range[1]))
        self.periodic = tuple(bool(p) for p in periodic) if periodic is not None else (False,) * self.dim

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        return jnp.asarray(self.fn(t, x, args), dtype=x.dtype)


class Uniform(AbstractAnalyticField):
    r"""Constant velocity $u(t, x) = U$. Exact trajectory $x(t) = x_0 + U (t - t_0)$."""

    velocity: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=())

    def __init__(self, velocity: Param = (1.0, 0.0), bounds: BoundsLike | None = None):
        self.velocity = _param(velocity)
        self.dim = int(self.velocity.shape[0])
        self.bounds = as_bounds(bounds if bounds is not None else ([0.0] * self.dim, [1.0] * self.dim), self.dim)
        self.periodic = (False,) * self.dim
        self.time_range = _INF_TIME

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        return self.velocity.astype(x.dtype)

    def exact(self, t: Param, x0: Param, t0: Param = 0.0) -> HostOrDevice:
        """Closed-form position at time `t` of the particle at `x0` at time `t0`."""
        return x0 + self.velocity * (t - t0)


class SolidBodyRotation(AbstractAnalyticField):
    r"""2-D rigid rotation about `center` at angular velocity `omega`.

    $u = -\omega (y - y_c)$, $v = \omega (x - x_c)$; every particle returns to its start after
    the period $2\pi/\omega$.
    """

    omega: Array = eqx.field(converter=jnp.asarray)
    center: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True, default=2)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=(False, False))

    def __init__(self, omega: Param = 1.0, center: Param = (0.0, 0.0), bounds: BoundsLike = ((-1.0, -1.0), (1.0, 1.0))):
        self.omega = _param(omega)
        self.center = _param(center)
        self.bounds = as_bounds(bounds, 2)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        r = x - self.center.astype(x.dtype)
        w = self.omega.astype(x.dtype)
        return jnp.stack([-w * r[1], w * r[0]])

    def exact(self, t: Param, x0: Param, t0: Param = 0.0) -> HostOrDevice:
        """Closed-form position at time `t` (rotation of `x0` by `omega * (t - t0)`)."""
        a = self.omega * (t - t0)
        r = x0 - self.center
        c, s = jnp.cos(a), jnp.sin(a)
        return self.center + jnp.stack([c * r[..., 0] - s * r[..., 1], s * r[..., 0] + c * r[..., 1]], axis=-1)


class DoubleGyre(AbstractAnalyticField):
    r"""The time-periodic double gyre of Shadden, Lekien & Marsden (2005) on $[0,2]\times[0,1]$.

    $a(t) = \varepsilon \sin\omega t$, $b(t) = 1 - 2\varepsilon\sin\omega t$, $f = a x^2 + b x$;
    $u = -\pi A \sin(\pi f)\cos(\pi y)$, $v = \pi A \cos(\pi f)\sin(\pi y)\,\partial_x f$.
    The box boundary is a material line.
    """

    A: Array = eqx.field(converter=jnp.asarray)
    eps: Array = eqx.field(converter=jnp.asarray)
    omega: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True, default=2)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=(False, False))

    def __init__(self, A: Param = 0.1, eps: Param = 0.25, omega: Param = 2 * math.pi / 10):
        self.A = _param(A)
        self.eps = _param(eps)
        self.omega = _param(omega)
        self.bounds = as_bounds(((0.0, 0.0), (2.0, 1.0)), 2)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        dt = x.dtype
        A, eps, omega = self.A.astype(dt), self.eps.astype(dt), self.omega.astype(dt)
        s = jnp.sin(omega * t)
        a = eps * s
        b = 1 - 2 * eps * s
        f = a * x[0] ** 2 + b * x[0]
        dfdx = 2 * a * x[0] + b
        u = -jnp.pi * A * jnp.sin(jnp.pi * f) * jnp.cos(jnp.pi * x[1])
        v = jnp.pi * A * jnp.cos(jnp.pi * f) * jnp.sin(jnp.pi * x[1]) * dfdx
        return jnp.stack([u, v])


class ABCFlow(AbstractAnalyticField):
    r"""Arnold–Beltrami–Childress flow, steady, 3-D, $2\pi$-periodic in every axis.

    $u = A\sin z + C\cos y$, $v = B\sin x + A\cos z$, $w = C\sin y + B\cos x$.
    """

    A: Array = eqx.field(converter=jnp.asarray)
    B: Array = eqx.field(converter=jnp.asarray)
    C: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True, default=3)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=(True, True, True))

    def __init__(self, A: Param = math.sqrt(3), B: Param = math.sqrt(2), C: Param = 1.0):
        self.A = _param(A)
        self.B = _param(B)
        self.C = _param(C)
        self.bounds = as_bounds(((0.0,) * 3, (2 * math.pi,) * 3), 3)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        dt = x.dtype
        A, B, C = self.A.astype(dt), self.B.astype(dt), self.C.astype(dt)
        return jnp.stack(
            [
                A * jnp.sin(x[2]) + C * jnp.cos(x[1]),
                B * jnp.sin(x[0]) + A * jnp.cos(x[2]),
                C * jnp.sin(x[1]) + B * jnp.cos(x[0]),
            ]
        )


class TaylorGreen(AbstractAnalyticField):
    r"""2-D Taylor–Green vortices on $[0, 2\pi/k]^2$, periodic, optionally decaying.

    $u = U \sin kx \cos ky\, e^{-2\nu k^2 t}$, $v = -U \cos kx \sin ky\, e^{-2\nu k^2 t}$
    (`nu = 0` gives the steady cellular flow).
    """

    U: Array = eqx.field(converter=jnp.asarray)
    k: Array = eqx.field(converter=jnp.asarray)
    nu: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True, default=2)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=(True, True))

    def __init__(self, U: Param = 1.0, k: Param = 1.0, nu: Param = 0.0):
        self.U = _param(U)
        self.k = _param(k)
        self.nu = _param(nu)
        side = 2 * math.pi / float(k)
        self.bounds = as_bounds(((0.0, 0.0), (side, side)), 2)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        dt = x.dtype
        U, k, nu = self.U.astype(dt), self.k.astype(dt), self.nu.astype(dt)
        decay = jnp.exp(-2 * nu * k**2 * t)
        u = U * jnp.sin(k * x[0]) * jnp.cos(k * x[1]) * decay
        v = -U * jnp.cos(k * x[0]) * jnp.sin(k * x[1]) * decay
        return jnp.stack([u, v])


class CellularFlow(AbstractAnalyticField):
    r"""A time-periodic 3-D cellular flow in the box $[0, L_x]\times[0, L_y]\times[0, L_z]$,
    divergence-free and tangent to all six walls (the flow of the VTK sample data).

    With $\hat x = x / L$ per axis, $A = \cos\omega t$, $B = \cos(\omega t - 2\pi/3)$,
    $C = \cos(\omega t + 2\pi/3)$ (so $A + B + C = 0$):
    $u = U L_x A \sin\pi\hat x \cos\pi\hat y \cos\pi\hat z$, and cyclically for $v$ and $w$.
    """

    U: Array = eqx.field(converter=jnp.asarray)
    omega: Array = eqx.field(converter=jnp.asarray)
    extent: Array = eqx.field(converter=jnp.asarray)
    bounds: Bounds
    dim: int = eqx.field(static=True, default=3)
    time_range: tuple[float, float] = eqx.field(static=True, default=_INF_TIME)
    periodic: tuple[bool, ...] = eqx.field(static=True, default=(False, False, False))

    def __init__(self, extent: Param = (1.0, 1.0, 1.0), U: Param = 1.0, omega: Param = math.pi):
        self.U = _param(U)
        self.omega = _param(omega)
        self.extent = _param(extent)
        self.bounds = as_bounds(((0.0,) * 3, tuple(float(e) for e in extent)), 3)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        dt = x.dtype
        extent = self.extent.astype(dt)
        phase = self.omega.astype(dt) * t + jnp.asarray([0.0, -2 * math.pi / 3, 2 * math.pi / 3], dt)
        s, c = jnp.sin(jnp.pi * x / extent), jnp.cos(jnp.pi * x / extent)
        products = jnp.stack([s[0] * c[1] * c[2], c[0] * s[1] * c[2], c[0] * c[1] * s[2]])
        return self.U.astype(dt) * extent * jnp.cos(phase) * products
