"""Advection plus random-walk diffusion, stepped natively."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from .._custom_types import Args, Position, Positions, TimeLike
from ..diffusion import AbstractDiffusivity, as_diffusivity
from ..fields.base import AbstractField, Hints
from .base import AbstractIntegrator, StepResult, hints_for


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

    def __init__(self, diffusivity):
        self.diffusivity = as_diffusivity(diffusivity)

    def walk(self, t: TimeLike, x: Position, dt: TimeLike, key: PRNGKeyArray) -> Position:
        """One point's random-walk displacement over `dt`: the drift correction
        $\\partial_i K_i$ times `dt` plus noise of variance $2K\\,dt$ (the same for a single
        point, a batch and a particle model's step)."""
        noise = jax.random.normal(key, x.shape, x.dtype) * jnp.sqrt(jnp.abs(dt))
        return self.diffusivity.drift_correction(t, x) * dt + jnp.sqrt(2 * self.diffusivity(t, x)) * noise

    def step(
        self,
        field: AbstractField,
        x: Position,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        key: PRNGKeyArray | None = None,
    ) -> Position:
        if key is None:
            raise ValueError("EulerMaruyama needs a PRNG key: pass key=... to fk.track")
        return x + field(t, x, args) * dt + self.walk(t, x, dt, key)

    def step_batch(
        self,
        field: AbstractField,
        x: Positions,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
    ) -> StepResult:
        if keys is None:
            raise ValueError("EulerMaruyama needs a PRNG key: pass key=... to fk.track")
        u, hint = field.velocity_batch(t, x, args, hints_for(field, x, hint))

        return StepResult(x + u * dt + jax.vmap(lambda y, key: self.walk(t, y, dt, key))(x, keys), hint=hint)

    def step_particles(
        self,
        field: AbstractField,
        particles,
        x: Positions,
        variables: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        keys: Array | None = None,
        hint: Hints | None = None,
    ):
        """The model's rates by Euler, the random walk on the position only."""
        if keys is None:
            raise ValueError("EulerMaruyama needs a PRNG key: pass key=... to fk.track")
        rates, hint = particles.rates_batch(field, t, {"x": x, **variables}, args, hints_for(field, x, hint))

        moved = {name: value + dt * rates[name] for name, value in variables.items()}
        return StepResult(
            x + rates["x"] * dt + jax.vmap(lambda y, key: self.walk(t, y, dt, key))(x, keys), hint=hint
        ), moved
