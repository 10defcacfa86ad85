"""The particle-model contract: what a particle carries beyond its position, and how it moves.

A model is an Equinox module; its numbers (diameter, density, rise velocity) are leaves, so runs
that differ only in them share one compiled program, and `jax.grad` flows through them. A model
is a vector field over the particle's state `{"x": position, **variables}`: its `rhs` gives
the rates of ONE particle's state from the fluid sampled where the particle is, and the tracker
steps the batched state with the run's integrator through the model's term (`ModelTerm`).
What a model can do beyond that is a capability it declares by its base class: variables
(`AbstractWithVariables`), values set after each step (`AbstractUpdating`), a velocity that
walls turn (`AbstractTurnedByWalls`), variables drawn at random (`AbstractRandom`), random
events that move it (`AbstractMovedByEvents`), rest on the bed (`AbstractResting`), read the
calendar (`AbstractDated`).
"""

import abc
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from .._custom_types import Args, Positions, TimeLike
from .._time import TimeOrigin
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, AbstractSampledTogether, AbstractWithSeaFloor, Hints
from ..integrators.terms import AbstractTerm


class Needs(NamedTuple):
    """What a model's `rhs` reads beyond the fluid's velocity, so that a model asking for
    nothing costs nothing, and the units it moves in.

    - `samples`: the field's sampled arrays (`fluid.samples`); `sample_names` the names it
      reads, checked against the field before a run (giving names implies `samples`).
    - `acceleration`: the fluid's Du/Dt (`fluid.acceleration`, one forward-mode derivative).
    - `vorticity`: ∇ × u (`fluid.vorticity`, three forward-mode derivatives; 3-D).
    - `metres`: the physics needs positions in metres (refused on lon/lat fields).
    - `sea_floor`: the sea floor's depth below the surface at the particle (`fluid.sea_floor`;
      fields with a floor: `flowkit.fields.AbstractWithSeaFloor`).
    """

    samples: bool = False
    sample_names: tuple[str, ...] = ()
    acceleration: bool = False
    vorticity: bool = False
    metres: bool = False
    sea_floor: bool = False

    @property
    def reads_samples(self) -> bool:
        return self.samples or bool(self.sample_names)

    def merged(self, other: "Needs") -> "Needs":
        """What two models riding together need."""
        return Needs(
            self.samples or other.samples,
            self.sample_names + tuple(n for n in other.sample_names if n not in self.sample_names),
            self.acceleration or other.acceleration,
            self.vorticity or other.vorticity,
            self.metres or other.metres,
            self.sea_floor or other.sea_floor,
        )


class Fluid(eqx.Module):
    """The fluid at one particle (or, batched, at each of a block of particles), as a model sees it.

    - `velocity`: `(dim,)` the field's velocity there.
    - `samples`: the field's sampled arrays there (`{name: value}`), for models whose `needs`
      read them; empty otherwise.
    - `acceleration`: `(dim,)` the fluid's material derivative Du/Dt = ∂u/∂t + (u·∇)u, for
      models whose `needs.acceleration`; None otherwise.
    - `vorticity`: `(3,)` ∇ × u, for models whose `needs.vorticity`; None otherwise.
    - `particle_velocity`: `(dim,)` the particle's own dx/dt, as the moving model of a
      `Combined` gives it to the models that ride along (None elsewhere).
    - `latitude`: the particle's latitude where positions are degrees (lon/lat fields), else
      None: what `position_rate` turns m/s into degrees per second at.
    - `sea_floor`: the sea floor's depth below the surface there (metres), for models whose
      `needs.sea_floor`; None otherwise.
    """

    velocity: Float[Array, "*batch dim"]
    samples: dict
    acceleration: Float[Array, "*batch dim"] | None = None
    vorticity: Float[Array, "*batch 3"] | None = None
    particle_velocity: Float[Array, "*batch dim"] | None = None
    latitude: Float[Array, "*batch"] | None = None
    sea_floor: Float[Array, "*batch"] | None = None

    def position_rate(self, v: Float[Array, " k"]) -> Float[Array, " dim"]:
        """A velocity in m/s whose `k <= dim` components are along the first axes (a wind's east
        and north) as a rate of ONE particle's position: degrees per second on a lon/lat field
        (the vertical, if any, left at 0)."""
        from ..fields.grid import degrees_per_second

        dim = self.velocity.shape[-1]
        v = jnp.concatenate([v[:dim], jnp.zeros(dim - min(v.shape[-1], dim), v.dtype)]).astype(self.velocity.dtype)
        return v if self.latitude is None else degrees_per_second(v, self.latitude)

    def velocity_metres(self) -> Float[Array, " dim"]:
        """ONE particle's fluid velocity in m/s (east and north on a lon/lat field; depth as it is)."""
        from ..fields.grid import degrees_per_second

        if self.latitude is None:
            return self.velocity
        return self.velocity / degrees_per_second(jnp.ones_like(self.velocity), self.latitude)


class AbstractParticles(eqx.Module):
    """What a particle is: how its state moves.

    - `rhs(t, state, fluid, args) -> dict`: d/dt of ONE particle's `state`, which holds `"x"`
      (the position) and the model's variables. The entry `"x"` is the particle's velocity; a
      variable whose rate it leaves out stays constant through the step.
    - `needs`: what `rhs` reads of the fluid (`Needs`), a class attribute or, where the model's
      options decide, a property.
    """

    @property
    @abc.abstractmethod
    def needs(self) -> Needs:
        """What `rhs` reads of the fluid."""

    @abc.abstractmethod
    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        """d/dt of entries of `state` (`"x"` always) for one particle."""


class AbstractWithVariables(AbstractParticles):
    """A model that carries variables beyond the position (saved in `Trajectory.variables`)."""

    @property
    @abc.abstractmethod
    def variable_names(self) -> tuple[str, ...]:
        """The names of the variables `initial` returns (what `Trajectory.variables` will hold)."""

    @abc.abstractmethod
    def initial(self, t: TimeLike, x: Float[Array, " dim"], fluid: Fluid, args: Args) -> dict:
        """The variables of one particle released at `(t, x)`; a run may also give them per
        particle (`fk.track(..., particle_state=)`)."""


class AbstractUpdating(AbstractWithVariables):
    """A model with variables that are not rates (a running maximum, a stage), set after every
    step."""

    @abc.abstractmethod
    def update(self, t: TimeLike, dt: TimeLike, state: dict, fluid: Fluid, args: Args) -> dict:
        """ONE particle's variables after a step of length `dt` ends at `(t, state["x"])`, from
        the fluid there (its samples and sea floor as the model's `needs` ask)."""


class AbstractResting(AbstractWithVariables):
    """A model whose particles may rest (a sediment grain on the bed): the tracker keeps a
    resting particle where it is through a step, neither drifting nor walking at random."""

    @abc.abstractmethod
    def resting(self, state: dict) -> Bool[Array, ""]:
        """Whether ONE particle rests through the next step, from its variables."""


class AbstractTurnedByWalls(AbstractWithVariables):
    """A model with a velocity of its own, which a reflecting wall turns."""

    @abc.abstractmethod
    def at_wall(
        self, boundary: AbstractBoundary, x_step: Positions, x: Positions, variables: dict, turned: Bool[Array, " n"]
    ) -> dict:
        """The batch's variables after the walls, for the rows `turned` by one (`x_step` the
        integrator's end points, `x` where the boundary put them)."""


class AbstractRandom(AbstractWithVariables):
    """A model whose particles differ by chance: each draws variables of its own once, from
    the run's `key` (a leeway object's coefficients), and random events may change them after
    each step (a jibe). Its runs need a `key`; each particle's draws come from the key folded
    with its index, so they do not depend on batch size or device count."""

    random: eqx.AbstractVar[bool]
    """Whether this instance draws anything (a model with no spread draws nothing and needs no
    key): a static field, known before the run is traced."""

    @abc.abstractmethod
    def drawn(self, key: PRNGKeyArray) -> dict:
        """ONE particle's own random variables, drawn from `key` before the run (kept through
        it; a variable the run gives per particle is not drawn)."""

    @abc.abstractmethod
    def jumped(self, t: TimeLike, dt: TimeLike, state: dict, key: PRNGKeyArray) -> dict:
        """ONE particle's variables after a step of length `dt` ending at `t`, with the step's
        random events drawn from `key`."""


class AbstractMovedByEvents(AbstractRandom):
    """A random model whose events may move a particle in the water (an oil element that a
    breaking wave entrains under the slick, or that reaches the surface again): its `jumped`
    may return `"x"`, the particle's new position, which the tracker takes and locates again.
    The position it returns must be in the water, where the step left the particle but for its
    depth."""


class AbstractDated(AbstractParticles):
    """A model that reads the calendar (larvae that migrate by the sun): before a run it is
    given the date of the field's time 0."""

    @abc.abstractmethod
    def dated(self, origin: "TimeOrigin | None") -> "AbstractDated":
        """This model for a field whose time 0 is `origin` (None: the field has no dates)."""


class Tracer(AbstractParticles):
    """A massless tracer: it moves with the fluid and carries nothing (the default)."""

    needs = Needs()

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return {"x": fluid.velocity}


def is_tracer(particles: AbstractParticles) -> bool:
    """Whether `particles` is the plain tracer, which the tracker steps as positions alone."""
    return particles is None or type(particles) is Tracer


def variable_names(particles: AbstractParticles) -> tuple[str, ...]:
    """The names of the variables `particles` carries (none for models without)."""
    return particles.variable_names if isinstance(particles, AbstractWithVariables) else ()


def own_state(model: AbstractParticles, state: dict) -> dict:
    """The entries of `state` that are `model`'s: the position and its variables."""
    return {"x": state["x"], **{name: state[name] for name in variable_names(model)}}


class ModelTerm(AbstractTerm):
    """A particle model's term: the rates of its state from the fluid at each particle."""

    field: AbstractField
    particles: AbstractParticles

    def rates(self, t: TimeLike, state: dict, args: Args, hint: Hints) -> tuple[dict, Hints]:
        return derivatives(self.particles, self.field, t, state, args, hint)

    def rate(self, t: TimeLike, state: dict, args: Args) -> dict:
        fluid = fluid_at(self.particles, self.field, t, state["x"], args)
        return _completed(self.particles.rhs(t, state, fluid, args), state)


def _completed(rates: dict, state: dict) -> dict:
    """`rates` with a zero rate for each entry of `state` it leaves out."""
    return {name: rates[name] if name in rates else jnp.zeros_like(value) for name, value in state.items()}


def fluid_batch(particles: AbstractParticles, field: AbstractField, t: TimeLike, x: Positions, args: Args, hint: Hints):
    """The `Fluid` at every row of `x` (what `particles` asks for) and the updated hints."""
    needs = particles.needs
    floor = None
    if isinstance(field, AbstractSampledTogether) and (needs.reads_samples or needs.sea_floor):
        u, samples, floor, hint = field.values_together(t, x, args, hint, needs.reads_samples, needs.sea_floor)
    else:
        u, hint = field.velocity_batch(t, x, args, hint)
        samples = field.samples_at(t, x, hint) if needs.reads_samples else {}
        if needs.sea_floor:
            floor = sea_floor_batch(field, t, x, hint, type(particles).__name__)
    acceleration = vorticity = None
    if needs.acceleration:
        time = jnp.asarray(t, x.dtype)
        acceleration = jax.jvp(
            lambda s, y: field.velocity_batch(s, y, args, relocated(hint))[0], (time, x), (jnp.ones_like(time), u)
        )[1]
    if needs.vorticity:
        fresh = relocated(hint)
        columns = [
            jax.jvp(lambda y: field.velocity_batch(t, y, args, fresh)[0], (x,), (jnp.zeros_like(x).at[:, i].set(1),))[1]
            for i in range(x.shape[1])
        ]
        vorticity = jax.vmap(curl)(jnp.stack(columns, axis=-1))
    latitude = x[:, 1] if field.spherical else None
    return Fluid(u, samples, acceleration, vorticity, latitude=latitude, sea_floor=floor), hint


def sea_floor_batch(field: AbstractField, t: TimeLike, x: Positions, hint: Hints, model: str):
    """The sea floor below the surface at each row of `x`, or an error naming the model that
    asked and what the field is."""
    if not isinstance(field, AbstractWithSeaFloor):
        raise ValueError(
            f"particles: {model} needs the sea floor, but {type(field).__name__} has none: read an ocean "
            "model's 3-D output with its bathymetry (ROMS/CROCO h, SCHISM depth, FVCOM h), a LayeredField"
        )
    return field.sea_floor_batch(t, x, hint)


def curl(gradient: Float[Array, "3 3"]) -> Float[Array, " 3"]:
    """∇ × u from `gradient[i, j] = ∂u_i/∂x_j` (3-D)."""
    if gradient.shape != (3, 3):
        raise ValueError(f"particles: the vorticity needs a 3-D field, this one is {gradient.shape[0]}-D")
    g = gradient
    return jnp.stack([g[2, 1] - g[1, 2], g[0, 2] - g[2, 0], g[1, 0] - g[0, 1]])


def relocated(hint: Hints):
    """`hint` with its located points forgotten (cells kept): the field locates each row again,
    so that its coordinates, and the velocity's derivatives with respect to `x`, follow `x`
    (a row at its hinted point would reuse constant coordinates)."""
    return eqx.tree_at(lambda h: h.point, hint.marked(False), jnp.full_like(hint.point, jnp.nan))


def derivatives(particles: AbstractParticles, field: AbstractField, t: TimeLike, state: dict, args: Args, hint: Hints):
    """d/dt of the batched `state` (`{"x": (n, dim), ...}`) and the updated hints."""
    fluid, hint = fluid_batch(particles, field, t, state["x"], args, hint)
    rates = jax.vmap(particles.rhs, in_axes=(None, 0, 0, None))(t, state, fluid, args)
    return _completed(rates, state), hint


def initial_batch(
    particles: AbstractParticles, field: AbstractField, t: TimeLike, x: Positions, args: Args, hint: Hints
) -> dict:
    """The variables of particles released at `(t, x)` (rows located at `hint`)."""
    if not isinstance(particles, AbstractWithVariables):
        return {}
    fluid, _ = fluid_batch(particles, field, t, x, args, hint)
    return jax.vmap(particles.initial, in_axes=(None, 0, 0, None))(t, x, fluid, args)


def fluid_at(particles: AbstractParticles, field: AbstractField, t: TimeLike, x, args: Args) -> Fluid:
    """The `Fluid` at ONE point (for per-particle solvers such as diffrax's)."""
    u = field(t, x, args)
    needs = particles.needs
    samples = field.samples_at_point(t, x) if needs.reads_samples else {}
    acceleration = vorticity = None
    if needs.acceleration:
        time = jnp.asarray(t, x.dtype)
        acceleration = jax.jvp(lambda s, y: field(s, y, args), (time, x), (jnp.ones_like(time), u))[1]
    if needs.vorticity:
        vorticity = curl(jax.jacfwd(lambda y: field(t, y, args))(x))
    floor = None
    if needs.sea_floor:
        floor = sea_floor_batch(field, t, x[None], field.hints(1, x.dtype), type(particles).__name__)[0]
    return Fluid(u, samples, acceleration, vorticity, latitude=x[1] if field.spherical else None, sea_floor=floor)
