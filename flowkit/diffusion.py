"""Eddy diffusivities $K(t, x)$ for random-walk transport, per axis.

A diffusivity's value may be a number, a function `fn(t, x)`, a profile (`Profile`,
`WindDriven`) or the name of an array the field samples at the particle (`"AKs"` from
`fk.io.read(roms, sample=["AKs"])`, a `"wind"` forcing): such a diffusivity is evaluated with
a `sampler`, `sampler(x) -> {name: value}`, the field's samples at one point, through which its
drift correction is differentiated too (dK/dz of a model's own `AKs`).
A sample that is not finite there (land) counts as no mixing.
"""

import abc
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from ._custom_types import Position, TimeLike

Sampler = Callable[[Position], dict[str, Array]]
"""The field's samples at one point: `sampler(x) -> {name: value}`."""


class AbstractDiffusivity(eqx.Module):
    """Diffusivity per axis, `K(t, x) -> (dim,)`, for ONE point.

    Particles then follow the Itô SDE $dX = (u + \\nabla\\!\\cdot K)\\,dt + \\sqrt{2K}\\,dW$: the
    drift correction $\\partial_i K_i$ keeps an initially well-mixed tracer well mixed where $K$
    varies in space (Visser 1997); without it particles pile up where $K$ is low.
    """

    @abc.abstractmethod
    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        """Diffusivity of each axis at `(t, x)` (`sampler`: the field's samples at a point, for
        diffusivities that read them)."""

    @property
    @abc.abstractmethod
    def sample_names(self) -> frozenset[str]:
        """The field's samples this diffusivity reads."""

    @abc.abstractmethod
    def drift_correction(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        """$\\partial K_i / \\partial x_i$ per axis (`divergence` computes it by autodiff)."""


def divergence(diffusivity: AbstractDiffusivity, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
    """$\\partial K_i / \\partial x_i$ per axis of `diffusivity` at `(t, x)`, by forward-mode autodiff."""
    reads = () if sampler is None else (sampler,)  # a user's K(t, x) takes no sampler
    jacobian = jax.jacfwd(lambda y: diffusivity(t, y, *reads))(x)
    return jnp.diagonal(jacobian)


class Constant(AbstractDiffusivity):
    """The same diffusivity everywhere: a scalar (isotropic) or one value per axis."""

    K: Array = eqx.field(converter=jnp.asarray)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return jnp.broadcast_to(self.K.astype(x.dtype), x.shape)

    sample_names = frozenset()

    def drift_correction(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return jnp.zeros_like(x)  # the same everywhere


class Analytic(AbstractDiffusivity):
    """A user function `fn(t, x) -> K` (scalar or per axis), e.g. a mixed-layer profile."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return jnp.broadcast_to(jnp.asarray(self.fn(t, x), x.dtype), x.shape)

    sample_names = frozenset()

    def drift_correction(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return divergence(self, t, x, sampler)


def as_diffusivity(value) -> AbstractDiffusivity:
    """Accept a diffusivity module, a number or a per-axis list."""
    if isinstance(value, AbstractDiffusivity):
        return value
    if callable(value):
        return Analytic(value)
    return Constant(jnp.asarray(value, dtype=jnp.result_type(float)))


class AbstractProfile(eqx.Module):
    """A scalar diffusivity in m²/s at one point, `profile(t, x, sampler) -> K`, that a
    diffusivity takes as its value (`Vertical(Profile(...))`); it may read samples."""

    @abc.abstractmethod
    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array: ...

    @property
    @abc.abstractmethod
    def sample_names(self) -> frozenset[str]:
        """The field's samples the profile reads."""


def _number_or_function(k):
    """A diffusivity argument: a function `fn(t, x)`, a profile or a sample's name as it is, a
    number as a float array (a leaf)."""
    return k if callable(k) or isinstance(k, str) else jnp.asarray(k, dtype=jnp.result_type(float))


def _names(k) -> frozenset[str]:
    """The samples a diffusivity argument reads."""
    if isinstance(k, str):
        return frozenset({k})
    return k.sample_names if isinstance(k, AbstractProfile) else frozenset()


def _at(k, t, x, sampler: Sampler | None = None):
    """A scalar diffusivity argument (number, function, profile or sample name) at `(t, x)`,
    in `x`'s precision; a sample that is not finite there is 0."""
    if isinstance(k, str):
        value = _sampled(k, x, sampler)
        return jnp.where(jnp.isfinite(value), value, 0)
    value = k(t, x, sampler) if isinstance(k, AbstractProfile) else k(t, x) if callable(k) else k
    return jnp.reshape(jnp.asarray(value), (-1,))[0].astype(x.dtype)


def _sampled(name: str, x: Position, sampler: Sampler | None) -> Array:
    """The field's sample `name` at the point `x`: a scalar (a vector's length: a wind's speed)."""
    if sampler is None:
        raise ValueError(f"the diffusivity reads the field's sample {name!r}: it is evaluated with a sampler")
    value = jnp.asarray(sampler(x)[name]).astype(x.dtype)
    return value if value.ndim == 0 else jnp.sqrt(jnp.sum(value * value))


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

    - `Kh`: a number, a function `fn(t, x) -> m²/s` (a scalar `GridField` of a model's
      diffusivity is one), or the name of an array the field samples, at the particle.
    - `Kv`: vertical diffusivity in m²/s for 3-D positions (the same kinds, or a profile:
      `Profile`, `WindDriven`; `"AKs"` with `fk.io.read(roms, sample=["AKs"])`; default 0).
    """

    Kh: Array | Callable | str
    Kv: Array | Callable | str

    def __init__(self, Kh, Kv=0.0):
        self.Kh, self.Kv = _number_or_function(Kh), _number_or_function(Kv)

    @property
    def sample_names(self) -> frozenset[str]:
        return _names(self.Kh) | _names(self.Kv)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        from .fields.grid import EARTH_RADIUS

        per_degree = (jnp.pi / 180 * EARTH_RADIUS) ** 2  # m² in a degree² of latitude
        cos_lat = jnp.maximum(jnp.cos(jnp.deg2rad(x[1])), 1e-6)
        kh = _at(self.Kh, t, x, sampler) / per_degree
        k = [kh / cos_lat**2, kh] + ([_at(self.Kv, t, x, sampler)] if x.shape[0] == 3 else [])
        return jnp.stack(k)

    def drift_correction(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        # d ln cos(lat) / d lat per degree; within 0.1° of a pole held at its value there, so a
        # step lands at most a few degrees over the pole (which the field folds back)
        metric = -self(t, x, sampler)[1] * jnp.tan(jnp.deg2rad(jnp.clip(x[1], -89.9, 89.9))) * jnp.pi / 180
        return divergence(self, t, x, sampler).at[1].add(metric)


class Vertical(AbstractDiffusivity):
    """Vertical mixing only: `Kv` (m²/s; a number, a function `fn(t, x)`, a profile such as
    `Profile` or `WindDriven`, or a sample's name: `"AKs"`, a ROMS file's own diffusivity at
    each particle) along the last axis, none along the others. On a lon/lat field with depth
    use `Horizontal(Kh, Kv)`, which takes the same `Kv`. The drift correction `dKv/dz` is
    Visser's (1997) term; a `LayeredField` mirrors random walks at the surface and the sea floor."""

    Kv: Array | Callable | str

    def __init__(self, Kv):
        self.Kv = _number_or_function(Kv)

    @property
    def sample_names(self) -> frozenset[str]:
        return _names(self.Kv)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return jnp.zeros_like(x).at[-1].set(_at(self.Kv, t, x, sampler))

    def drift_correction(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        return divergence(self, t, x, sampler)


class Profile(AbstractProfile):
    """A diffusivity profile `K(z)` in m²/s, linear between given depths (metres, positive
    down, the last coordinate of a position) and held beyond them; with `times`, one profile
    per time, linear in time between them. A function `fn(t, x)` for `Vertical` and `Horizontal`.

    `flowkit.io.ocean.roms.column_profile(path, "AKs", lon, lat)` reads a ROMS history file's
    vertical diffusivity (`AKs`, `AKt`, `AKv` on the w-levels) in the water column nearest to
    `(lon, lat)`."""

    depths: Array
    values: Array
    times: Array | None
    sample_names = frozenset()

    def __init__(self, depths, values, times=None):
        import numpy as np

        depths, values = np.atleast_2d(np.asarray(depths, float)), np.atleast_2d(np.asarray(values, float))
        if depths.shape != values.shape:
            raise ValueError(f"Profile: depths {depths.shape} and values {values.shape} must have the same shape")
        order = np.argsort(depths, axis=-1)
        self.depths = jnp.asarray(np.take_along_axis(depths, order, -1))
        self.values = jnp.asarray(np.take_along_axis(values, order, -1))
        if times is not None and np.shape(times) != (depths.shape[0],):
            raise ValueError(f"Profile: give one time per profile ({depths.shape[0]}), got shape {np.shape(times)}")
        self.times = None if times is None else jnp.asarray(times, float)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        from .fields.base import time_weights

        z = x[-1]
        it, wt = time_weights(self.times, jnp.asarray(t, x.dtype))
        k = jnp.interp(z, self.depths[it].astype(x.dtype), self.values[it].astype(x.dtype))
        if wt is None:
            return k
        later = jnp.interp(z, self.depths[it + 1].astype(x.dtype), self.values[it + 1].astype(x.dtype))
        return k + wt * (later - k)


class WindDriven(AbstractProfile):
    """Vertical diffusivity in the surface mixed layer from the wind speed, as OpenDrift's
    `vertical_mixing:diffusivitymodel` computes it:

    - `"windspeed_Sundby1983"`: `K = 76.1e-4 + 2.26e-4 W²` m²/s down to the mixed layer depth;
    - `"windspeed_Large1994"`: `K = 0.08 · MLD · G(z/MLD) · ρ_a c_d W²` with the cubic shape
      `G(σ) = σ (1 - σ)²` (OpenDrift's stability function 0.2 and von Kármán 0.4).

    Below the mixed layer `K` is `background`; OpenDrift's step at the mixed layer depth is a
    linear ramp over its last metre here, so that the drift correction stays finite. `wind` is a
    speed in m/s (a number: a sweep or a gradient leaf), a function `fn(t, x) -> m/s`, or the
    name of a forcing the field samples (`"wind"`: the speed of that wind at each particle)."""

    wind: float | Array | Callable | str
    mixed_layer_depth: float = 50.0
    background: float = 0.0
    model: str = eqx.field(static=True, default="windspeed_Sundby1983")

    def __check_init__(self):
        if self.model not in ("windspeed_Sundby1983", "windspeed_Large1994"):
            raise ValueError(
                f"WindDriven: model must be 'windspeed_Sundby1983' or 'windspeed_Large1994', got {self.model!r}"
            )

    @property
    def sample_names(self) -> frozenset[str]:
        return _names(self.wind)

    def __call__(self, t: TimeLike, x: Position, sampler: Sampler | None = None) -> Array:
        w = _at(self.wind, t, x, sampler)
        z, mld = jnp.abs(x[-1]), jnp.asarray(self.mixed_layer_depth, x.dtype)
        if self.model == "windspeed_Sundby1983":
            top = 76.1e-4 + 2.26e-4 * w * w
        else:
            sigma = jnp.clip(z / mld, 0, 1)
            top = mld * 0.2 * 0.4 * sigma * (1 - sigma) ** 2 * w * w * 1.25e-3 * 1.22 + sigma * self.background
        ramp = jnp.clip(mld - z, 0, 1)  # 1 above MLD - 1 m, 0 below MLD
        return self.background + ramp * (top - self.background)
