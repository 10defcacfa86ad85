"""Eddy diffusivities $K(t, x)$ for random-walk transport, per axis."""

import abc
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from ._custom_types import Position, TimeLike


class AbstractDiffusivity(eqx.Module):
    """Diffusivity per axis, `K(t, x) -> (dim,)`, for ONE point.

    Particles then follow the Itô SDE $dX = (u + \\nabla\\!\\cdot K)\\,dt + \\sqrt{2K}\\,dW$: the
    drift correction $\\partial_i K_i$ keeps an initially well-mixed tracer well mixed where $K$
    varies in space (Visser 1997); without it particles pile up where $K$ is low.
    """

    @abc.abstractmethod
    def __call__(self, t: TimeLike, x: Position) -> Array:
        """Diffusivity of each axis at `(t, x)`."""

    def drift_correction(self, t: TimeLike, x: Position) -> Array:
        """$\\partial K_i / \\partial x_i$ per axis, by forward-mode autodiff."""
        jacobian = jax.jacfwd(lambda y: self(t, y))(x)
        return jnp.diagonal(jacobian)


class Constant(AbstractDiffusivity):
    """The same diffusivity everywhere: a scalar (isotropic) or one value per axis."""

    K: Array = eqx.field(converter=jnp.asarray)

    def __call__(self, t: TimeLike, x: Position) -> Array:
        return jnp.broadcast_to(self.K.astype(x.dtype), x.shape)


class Analytic(AbstractDiffusivity):
    """A user function `fn(t, x) -> K` (scalar or per axis), e.g. a mixed-layer profile."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, t: TimeLike, x: Position) -> Array:
        return jnp.broadcast_to(jnp.asarray(self.fn(t, x), x.dtype), x.shape)


def as_diffusivity(value) -> AbstractDiffusivity:
    """Accept a diffusivity module, a number or a per-axis list."""
    if isinstance(value, AbstractDiffusivity):
        return value
    if callable(value):
        return Analytic(value)
    return Constant(jnp.asarray(value, dtype=jnp.result_type(float)))
