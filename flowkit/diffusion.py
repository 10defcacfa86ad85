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


class Horizontal(AbstractDiffusivity):
    """Eddy diffusivity in m²/s for positions in degrees of longitude and latitude (then depth
    in metres), as ocean models and Parcels' `DiffusionUniformKh`/`AdvectionDiffusionM1` give
    it: a horizontal $K_h$ and a vertical $K_v$.

    $K_h$ becomes $K_h / (R\\cos\\varphi)^2$ and $K_h / R^2$ in degrees² per second, $\\cos\\varphi$
    kept above 1e-6. The drift correction adds the sphere's metric term $-K_\\varphi\\tan\\varphi$
    to $\\partial_\\varphi K_\\varphi$, so particles spread uniformly per area stay uniform per area
    (Parcels' kernels do not add it). Near the poles the walk in lon/lat is singular: the term is held at
    its value 0.1° from the pole.

    **Arguments:**

    - `Kh`: a number, or a function `fn(t, x) -> m²/s` (a scalar `GridField` of a model's
      diffusivity is one), evaluated at the particle.
    - `Kv`: vertical diffusivity in m²/s for 3-D positions (number or function; default 0).
    """

    Kh: Array | Callable
    Kv: Array | Callable

    def __init__(self, Kh, Kv=0.0):
        self.Kh = Kh if callable(Kh) else jnp.asarray(Kh, dtype=jnp.result_type(float))
        self.Kv = Kv if callable(Kv) else jnp.asarray(Kv, dtype=jnp.result_type(float))

    @staticmethod
    def _at(k, t, x):
        return jnp.reshape(jnp.asarray(k(t, x) if callable(k) else k), (-1,))[0].astype(x.dtype)

    def __call__(self, t: TimeLike, x: Position) -> Array:
        from .fields.grid import EARTH_RADIUS

        per_degree = (jnp.pi / 180 * EARTH_RADIUS) ** 2  # m² in a degree² of latitude
        cos_lat = jnp.maximum(jnp.cos(jnp.deg2rad(x[1])), 1e-6)
        kh = self._at(self.Kh, t, x) / per_degree
        k = [kh / cos_lat**2, kh] + ([self._at(self.Kv, t, x)] if x.shape[0] == 3 else [])
        return jnp.stack(k)

    def drift_correction(self, t: TimeLike, x: Position) -> Array:
        # d ln cos(lat) / d lat per degree; within 0.1° of a pole held at its value there, so a
        # step lands at most a few degrees over the pole (which the field folds back)
        metric = -self(t, x)[1] * jnp.tan(jnp.deg2rad(jnp.clip(x[1], -89.9, 89.9))) * jnp.pi / 180
        return super().drift_correction(t, x).at[1].add(metric)
