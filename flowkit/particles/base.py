"""The particle-model contract: what a particle carries beyond its position, and how it moves.

A model is an Equinox module; its numbers (diameter, density, rise velocity) are leaves, so runs
that differ only in them share one compiled program, and `jax.grad` flows through them. The
tracker advances the state `{"x": position, **variables}` of every particle with the run's
integrator, calling the model's right-hand side one particle at a time (vmapped) with the fluid
sampled where the particle is.
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._custom_types import Args, Positions, TimeLike
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, Hints
from ..integrators.base import AbstractIntegrator


class Fluid(eqx.Module):
    """The fluid at one particle (or, batched, at each of a block of particles), as a model sees it.

    - `velocity`: `(dim,)` the field's velocity there.
    - `samples`: the field's sampled arrays there (`{name: value}`), for models with
      `needs_samples`; empty otherwise.
    - `acceleration`: `(dim,)` the fluid's material derivative Du/Dt = ∂u/∂t + (u·∇)u, for
      models with `needs_acceleration`; None otherwise.
    - `particle_velocity`: `(dim,)` the particle's own dx/dt, as the moving model of a
      `Combined` gives it to the models that ride along (None elsewhere).
    - `latitude`: the particle's latitude where positions are degrees (lon/lat fields), else
      None: what `position_rate` turns m/s into degrees per second at.
    """

    velocity: Float[Array, "*batch dim"]
    samples: dict
    acceleration: Float[Array, "*batch dim"] | None = None
    particle_velocity: Float[Array, "*batch dim"] | None = None
    latitude: Float[Array, "*batch"] | None = None

    def position_rate(self, v: Float[Array, " k"]) -> Float[Array, " dim"]:
        """A velocity in m/s whose `k <= dim` components are along the first axes (a wind's east
        and north) as a rate of ONE particle's position: degrees per second on a lon/lat field
        (the vertical, if any, left at 0)."""
        from ..fields.grid import degrees_per_second

        dim = self.velocity.shape[-1]
        v = jnp.concatenate([v[:dim], jnp.zeros(dim - min(v.shape[-1], dim), v.dtype)]).astype(self.velocity.dtype)
        return v if self.latitude is None else degrees_per_second(v, self.latitude)


class AbstractParticles(eqx.Module):
    """What a particle is: its variables beyond the position, and their rate of change.

    Subclasses write, for ONE particle:

    - `rhs(t, state, fluid, args) -> dict`: d/dt of each entry of `state`, which holds `"x"`
      (the position) and the model's variables. The entry `"x"` is the particle's velocity.
    - `initial(t, x, fluid, args) -> dict`: the variables of a particle released at `(t, x)`
      (none by default); a run may also give them per particle (`fk.track(..., particle_state=)`).
    - `update(t, state, samples, args) -> dict`: optional, applied after every step with the
      field's samples at the new position, for variables that are not rates (a maximum).

    Flags say what the tracker must evaluate for the model, so that a model asking for nothing
    costs nothing: `needs_samples` (the field's sampled arrays at every evaluation),
    `needs_acceleration` (Du/Dt, by one forward-mode derivative of the field), `updates`.
    `variable_names` lists the variables. Each is false (empty) here; a model sets its own as a
    class attribute (`needs_samples = True`) or, where its options decide, a property.
    """

    @property
    def variable_names(self) -> tuple[str, ...]:
        """The names of the variables `initial` returns (what `Trajectory.variables` will hold)."""
        return ()

    @property
    def needs_samples(self) -> bool:
        """Whether `rhs` reads `fluid.samples` (the field's sampled arrays at the particle)."""
        return False

    @property
    def sample_names(self) -> tuple[str, ...]:
        """The names in `fluid.samples` that `rhs` reads, checked against the field before a run
        (empty: none, or not declared)."""
        return ()

    @property
    def needs_acceleration(self) -> bool:
        """Whether `rhs` reads `fluid.acceleration` (Du/Dt)."""
        return False

    @property
    def updates(self) -> bool:
        """Whether `update` is to be applied after every step."""
        return False

    @property
    def moves_in_metres(self) -> bool:
        """Whether the model's physics needs positions in metres (it is refused on lon/lat fields)."""
        return False

    @abc.abstractmethod
    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        """d/dt of each entry of `state` (`"x"` included) for one particle."""

    def initial(self, t: TimeLike, x: Float[Array, " dim"], fluid: Fluid, args: Args) -> dict:
        """The variables of one particle released at `(t, x)`."""
        return {}

    def update(self, t: TimeLike, state: dict, samples: dict, args: Args) -> dict:
        """The state after a step ends at `(t, state["x"])`; unchanged by default."""
        return state

    def at_wall(
        self, boundary: AbstractBoundary, x_step: Positions, x: Positions, variables: dict, turned: Bool[Array, " n"]
    ) -> dict:
        """The batch's variables after the walls, for the rows `turned` by one (`x_step` the
        integrator's end points, `x` where the boundary put them); unchanged by default. Models
        with a velocity turn it here."""
        return variables

    def resolve(self, integrator: AbstractIntegrator, dt: float, dim: int) -> "AbstractParticles":
        """This model made ready for a run (host side, before compiling): choices that depend on
        the step or the dimension, checked and logged here. Itself by default."""
        return self

    @property
    def steps_itself(self) -> bool:
        """Whether `step_batch` is the model's own update rather than the integrator's."""
        return False

    def rates_batch(self, field: AbstractField, t: TimeLike, state: dict, args: Args, hint: Hints):
        """d/dt of the batched `state` and the updated hints: what integrators call per stage."""
        return derivatives(self, field, t, state, args, hint)

    def rates_at(self, field: AbstractField, t: TimeLike, state: dict, args: Args) -> dict:
        """d/dt of ONE particle's `state` (for per-particle solvers such as diffrax's)."""
        return self.rhs(t, state, fluid_at(self, field, t, state["x"], args), args)

    def step_batch(
        self,
        integrator: AbstractIntegrator,
        field: AbstractField,
        x: Positions,
        variables: dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args,
        keys: Array | None,
        hint: Hints,
    ):
        """One step of every particle: `(StepResult, variables)`. By default the integrator's own
        method over the whole state; a model with a stiff part may step itself."""
        return integrator.step_particles(field, self, x, variables, t, dt, args, keys, hint)


class Tracer(AbstractParticles):
    """A massless tracer: it moves with the fluid and carries nothing (the default)."""

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return {"x": fluid.velocity}


def is_tracer(particles: AbstractParticles) -> bool:
    """Whether `particles` is the plain tracer, which the tracker steps as positions alone."""
    return particles is None or type(particles) is Tracer


def fluid_batch(particles: AbstractParticles, field: AbstractField, t: TimeLike, x: Positions, args: Args, hint: Hints):
    """The `Fluid` at every row of `x` (what `particles` asks for) and the updated hints."""
    u, hint = field.velocity_batch(t, x, args, hint)
    samples = field.samples_at(t, x, hint) if particles.needs_samples else {}
    acceleration = None
    if particles.needs_acceleration:
        time = jnp.asarray(t, x.dtype)
        acceleration = jax.jvp(
            lambda s, y: field.velocity_batch(s, y, args, relocated(hint))[0], (time, x), (jnp.ones_like(time), u)
        )[1]
    return Fluid(u, samples, acceleration, latitude=x[:, 1] if field.spherical else None), hint


def relocated(hint: Hints):
    """`hint` with its located points forgotten (cells kept): the field locates each row again,
    so that its coordinates, and the velocity's derivatives with respect to `x`, follow `x`
    (a row at its hinted point would reuse constant coordinates)."""
    return eqx.tree_at(lambda h: h.point, hint.marked(False), jnp.full_like(hint.point, jnp.nan))


def derivatives(particles: AbstractParticles, field: AbstractField, t: TimeLike, state: dict, args: Args, hint: Hints):
    """d/dt of the batched `state` (`{"x": (n, dim), ...}`) and the updated hints."""
    fluid, hint = fluid_batch(particles, field, t, state["x"], args, hint)
    return jax.vmap(particles.rhs, in_axes=(None, 0, 0, None))(t, state, fluid, args), hint


def initial_batch(
    particles: AbstractParticles, field: AbstractField, t: TimeLike, x: Positions, args: Args, hint: Hints
) -> dict:
    """The variables of particles released at `(t, x)` (rows located at `hint`)."""
    fluid, _ = fluid_batch(particles, field, t, x, args, hint)
    return jax.vmap(particles.initial, in_axes=(None, 0, 0, None))(t, x, fluid, args)


def fluid_at(particles: AbstractParticles, field: AbstractField, t: TimeLike, x, args: Args) -> Fluid:
    """The `Fluid` at ONE point (for per-particle solvers such as diffrax's)."""
    u = field(t, x, args)
    samples = field.samples_at_point(t, x) if particles.needs_samples else {}
    acceleration = None
    if particles.needs_acceleration:
        time = jnp.asarray(t, x.dtype)
        acceleration = jax.jvp(lambda s, y: field(s, y, args), (time, x), (jnp.ones_like(time), u))[1]
    return Fluid(u, samples, acceleration, latitude=x[1] if field.spherical else None)
