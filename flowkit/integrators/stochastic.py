"""Advection plus random-walk diffusion, stepped natively."""

from typing import ClassVar

import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from .._custom_types import Args, Position, Positions, TimeLike
from ..diffusion import AbstractDiffusivity, Sampler, as_diffusivity
from ..fields.base import AbstractField, Hints
from .base import AbstractIntegrator, StepResult, hints_for
from .terms import AbstractTerm


class EulerMaruyama(AbstractIntegrator):
    """Euler–Maruyama for $dX = (u + \\partial_i K_i)\\,dt + \\sqrt{2K}\\,dW$ (strong order 1/2).

    **Arguments:**

    - `diffusivity`: a number (isotropic), a per-axis list, a function `fn(t, x)` or a
      `flowkit.diffusion.AbstractDiffusivity`. Spatially varying $K$ gets the drift correction.

    Each particle draws its noise from its own key (derived from the run's `key` and the
    particle's index), so results do not depend on batch size or device count.
    """

    diffusivity: AbstractDiffusivity
    order = 1
    stochastic = True
    shardable = True
    courant_limit: ClassVar[float] = 1.0

    def __init__(self, diffusivity):
        self.diffusivity = as_diffusivity(diffusivity)

    @property
    def sample_names(self) -> frozenset[str]:
        return self.diffusivity.sample_names

    def walk(self, t: TimeLike, x: Position, dt: TimeLike, key: PRNGKeyArray, sampler: Sampler | None = None):
        """One point's random-walk displacement over `dt`: the drift correction
        $\\partial_i K_i$ times `dt` plus noise of variance $2K\\,dt$ (the same for a single
        point, a batch and a particle model's step); `sampler`: the field's samples at a point,
        for a diffusivity that reads them."""
        noise = jax.random.normal(key, x.shape, x.dtype) * jnp.sqrt(jnp.abs(dt))
        k, reads = self.diffusivity, () if sampler is None else (sampler,)  # a user's K(t, x) takes no sampler
        return k.drift_correction(t, x, *reads) * dt + jnp.sqrt(2 * k(t, x, *reads)) * noise

    def walks(self, field: AbstractField, t: TimeLike, x: Positions, dt: TimeLike, keys: Array, hint: Hints):
        """Every row's random walk. A diffusivity that reads samples gets each row's samples
        from `field` (located from its `hint`) with their slopes along each axis, linearised
        once for the batch: its drift correction is then exact at the row, by the chain rule."""
        if not self.sample_names:
            return jax.vmap(lambda y, key: self.walk(t, y, dt, key))(x, keys)
        names = self.sample_names
        values, slopes_of = jax.linearize(
            lambda y: {n: v for n, v in field.samples_at(t, y, hint).items() if n in names}, x
        )
        axes = [slopes_of(jnp.zeros_like(x).at[:, i].set(1)) for i in range(x.shape[1])]
        slopes = {n: jnp.stack([axis[n] for axis in axes], axis=1) for n in names}  # (rows, axes, ...)

        def one(y, key, value, slope):
            def sampler(z):
                return {n: value[n] + jnp.tensordot(z - y, slope[n], axes=1) for n in names}

            return self.walk(t, y, dt, key, sampler)

        return jax.vmap(one)(x, keys, values, slopes)

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
        """The term's rates by Euler, the random walk on the position only."""
        if keys is None:
            raise ValueError("EulerMaruyama needs a PRNG key: pass key=... to fk.track")
        x = state["x"]
        rates, hint = term.rates(t, state, args, hints_for(term.field, x, hint))
        moved = {name: value + dt * rates[name] for name, value in state.items()}
        moved["x"] = moved["x"] + self.walks(term.field, t, x, dt, keys, hint)
        return StepResult(moved, hint=hint)
