"""Inertial particles (droplets, aerosols, sediment): the Maxey–Riley equation with Stokes or
Schiller–Naumann drag, and the exponential update that keeps it stable when the response time
is much shorter than the step."""

import dataclasses
import logging

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

from .._custom_types import Args, Param, Position, Positions, ScalarLike, TimeLike, Velocity
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField, Hints
from ..integrators.base import AbstractIntegrator
from ..integrators.exponential import exponential_form, exponential_of
from ..integrators.runge_kutta import AbstractRungeKutta
from ..integrators.terms import AbstractDragTerm
from .base import AbstractParticles, AbstractTurnedByWalls, Fluid, ModelTerm, Needs, fluid_batch

DRAG_LAWS = ("stokes", "schiller_naumann")
SCHEMES = ("auto", "rk", "exponential")
EXPONENTIAL_ABOVE = 0.5
"""`auto` steps the drag exponentially when `|dt|` exceeds this fraction of the response time."""


class Inertial(AbstractTurnedByWalls):
    """A small sphere of its own density in the fluid (Maxey–Riley):

    $(1 + C R)\\,dv/dt = f(Re_p)\\,(u - v)/\\tau + (1 - R)\\,g + (P + C)\\,R\\,Du/Dt\\; [+ \\text{lift}]$

    with $\\tau = \\rho_p d^2 / (18 \\mu)$, $R = \\rho_f/\\rho_p$, $C = 1/2$ with `added_mass`,
    $P = 1$ with `pressure_gradient`, $f = 1$ (`drag="stokes"`) or $1 + 0.15\\,Re_p^{0.687}$
    (`"schiller_naumann"`), $Re_p = \\rho_f |u - v| d / \\mu$. The fluid's Du/Dt comes from the
    field itself by one forward-mode derivative. `lift=True` adds Saffman's shear lift
    $1.615\\, d^2 \\sqrt{\\rho_f \\mu}\\, |\\omega|^{-1/2} (u - v) \\times \\omega / m_p$ (3-D).

    SI units: metres, seconds, kg/m³, Pa·s. `gravity` is a vector, or a number g for
    $(0, …, 0, -g)$ (down the last axis). The variable `velocity` starts at the fluid's unless the
    run gives it (`particle_state={"velocity": ...}`).

    `scheme`: `"rk"` advances `(x, v)` with the run's integrator; `"exponential"` with an
    exponential Runge–Kutta method that steps the drag's relaxation exactly and keeps the order
    of the run's method at every dt/τ (Euler 1, Heun and midpoint 2, RK4 4 with five field
    evaluations per step; any other integrator gets the second-order one), stable for any dt/τ
    and the tracer's path in the limit τ → 0 (`flowkit.integrators.ExponentialDrag`); `"auto"` picks
    the exponential one when `|dt| > τ/2` (or τ is traced) and says so in the log.
    `restitution` scales the wall-normal velocity of a particle a reflecting wall turns.
    """

    diameter: float | jax.Array
    density: float | jax.Array
    fluid_density: float | jax.Array
    viscosity: float | jax.Array
    gravity: float | jax.Array
    restitution: float | jax.Array
    drag: str = eqx.field(static=True)
    lift: bool = eqx.field(static=True)
    added_mass: bool = eqx.field(static=True)
    pressure_gradient: bool = eqx.field(static=True)
    scheme: str = eqx.field(static=True)
    variable_names = ("velocity",)

    def __init__(
        self,
        diameter: Param,
        density: Param,
        fluid_density: Param = 1.2,
        viscosity: Param = 1.8e-5,
        gravity: Param = 9.81,
        drag: str = "stokes",
        lift: bool = False,
        added_mass: bool = False,
        pressure_gradient: bool = False,
        restitution: ScalarLike = 1.0,
        scheme: str = "auto",
    ):
        for name, value in (
            ("diameter", diameter),
            ("density", density),
            ("fluid_density", fluid_density),
            ("viscosity", viscosity),
        ):
            if not isinstance(value, jax.core.Tracer) and not float(value) > 0:
                raise ValueError(f"Inertial: {name} must be positive (SI units), got {value}")
        if drag not in DRAG_LAWS:
            raise ValueError(f"Inertial: drag must be one of {list(DRAG_LAWS)}, got {drag!r}")
        if scheme not in SCHEMES:
            raise ValueError(f"Inertial: scheme must be one of {list(SCHEMES)}, got {scheme!r}")
        self.diameter, self.density, self.fluid_density, self.viscosity = (
            _number(v) for v in (diameter, density, fluid_density, viscosity)
        )
        self.gravity = _number(gravity) if np.ndim(gravity) == 0 else jnp.asarray(gravity)
        self.restitution = _number(restitution)
        self.drag, self.lift, self.added_mass, self.pressure_gradient, self.scheme = (
            drag,
            bool(lift),
            bool(added_mass),
            bool(pressure_gradient),
            scheme,
        )

    @property
    def needs(self) -> Needs:
        return Needs(acceleration=self.added_mass or self.pressure_gradient, vorticity=self.lift, metres=True)

    @property
    def response_time(self):
        """τ = ρ_p d² / (18 μ), in seconds."""
        return self.density * self.diameter**2 / (18 * self.viscosity)

    def uniform_rate(self, dtype):
        """The drag's relaxation rate λ where it is the same for every particle (Stokes drag):
        `1 / (τ (1 + R/2))` with added mass, `1/τ` without; None where it depends on the slip."""
        if self.drag != "stokes":
            return None
        return jnp.asarray(self._stokes_rate(), dtype)

    def _stokes_rate(self):
        """1 / (τ (1 + C R)): Stokes drag's relaxation rate (Schiller–Naumann scales it by f(Re))."""
        return 1 / (self.response_time * self._mass_factor())

    def _mass_factor(self):
        """1 + C R: the added mass's share of the particle's inertia."""
        return 1 + (0.5 * self.fluid_density / self.density if self.added_mass else 0.0)

    def _gravity(self, dim: int, dtype):
        if jnp.ndim(self.gravity) == 0:
            return jnp.where(jnp.arange(dim) == dim - 1, -self.gravity, 0).astype(dtype)  # a one-hot, not a scatter
        return jnp.asarray(self.gravity, dtype)

    def acceleration(self, fluid: Fluid, v: Velocity) -> tuple[Velocity, Float[ArrayLike, ""]]:
        """`(dv/dt, λ)` of one particle: its acceleration and its drag's relaxation rate."""
        ratio = self.fluid_density / self.density
        mass_factor = self._mass_factor()
        slip = fluid.velocity - v
        factor = 1.0
        if self.drag == "schiller_naumann":
            squared = jnp.sum(slip * slip)
            speed = jnp.sqrt(jnp.where(squared > 0, squared, 1.0)) * (squared > 0)  # differentiable at zero slip
            reynolds = self.fluid_density * speed * self.diameter / self.viscosity
            factor = 1 + 0.15 * jnp.where(reynolds > 0, reynolds, 1.0) ** 0.687 * (reynolds > 0)
        rate = factor * self._stokes_rate()
        force = rate * slip + (1 - ratio) * self._gravity(v.shape[0], v.dtype) / mass_factor
        if fluid.acceleration is not None:
            force = (
                force
                + ((1.0 if self.pressure_gradient else 0.0) + (0.5 if self.added_mass else 0.0))
                * ratio
                * fluid.acceleration
                / mass_factor
            )
        if self.lift:
            force = force + self._lift(slip, fluid.vorticity) / mass_factor
        return force, rate

    def _lift(self, slip, vorticity):
        """Saffman's lift per unit particle mass."""
        size = jnp.sqrt(jnp.sum(vorticity * vorticity) + jnp.finfo(slip.dtype).tiny)
        mass = self.density * jnp.pi * self.diameter**3 / 6
        return (
            1.615
            * self.diameter**2
            * jnp.sqrt(self.fluid_density * self.viscosity)
            / jnp.sqrt(size)
            * jnp.cross(slip, vorticity)
            / mass
        )

    def initial(self, t: TimeLike, x: Position, fluid: Fluid, args: Args):
        return {"velocity": fluid.velocity}

    def rhs(self, t: TimeLike, state: dict, fluid: Fluid, args: Args):
        return {"x": state["velocity"], "velocity": self.acceleration(fluid, state["velocity"])[0]}

    def resolve(self, integrator: AbstractIntegrator, dt: float, dim: int) -> "Inertial":
        """This model made ready for a run (host side, before compiling): the drag's scheme
        chosen for the step (`"auto"`) and logged, the direction of time and the dimension checked."""
        if dt < 0:
            raise ValueError(
                "particles: inertial particles lose memory of their start (drag is dissipative); they "
                "cannot be tracked backward in time (dt < 0)"
            )
        if self.lift and dim != 3:
            raise ValueError(
                f"Inertial: lift=True needs a 3-D field (the Saffman lift is (u - v) × ω), this one is {dim}-D"
            )
        log = logging.getLogger("flowkit")
        if self.scheme == "exponential" and not _has_exponential_form(integrator):
            log.info("Inertial: %s has no exponential form: the drag update is second order", type(integrator).__name__)
        if self.scheme != "auto":
            return self
        if not isinstance(integrator, AbstractRungeKutta):
            log.info("Inertial: %s advances the particles' velocity with their positions", type(integrator).__name__)
            return dataclasses.replace(self, scheme="rk")
        tau = self.response_time
        if isinstance(tau, jax.core.Tracer):
            log.info("Inertial: the response time is traced; the drag is stepped exponentially (stable for any dt/τ)")
            return dataclasses.replace(self, scheme="exponential")
        ratio = abs(dt) / float(tau)
        chosen = "exponential" if ratio > EXPONENTIAL_ABOVE else "rk"
        log.info(
            "Inertial: τ = %.3g s, dt/τ = %.3g: %s",
            float(tau),
            ratio,
            f"exponential drag update of order {exponential_of(integrator).order} (stable for any dt/τ)"
            if chosen == "exponential"
            else f"{type(integrator).__name__} on position and velocity",
        )
        return dataclasses.replace(self, scheme=chosen)

    def at_wall(
        self, boundary: AbstractBoundary, x_step: Positions, x: Positions, variables: dict, turned: Bool[Array, " n"]
    ):
        v = variables["velocity"]
        turned_v = boundary.turn_velocity(x_step, x, v, self.restitution)
        return {"velocity": jnp.where(turned[:, None], turned_v, v)}


def _number(value):
    """A Python number as a float (the tracker makes floats array leaves); arrays and tracers as they are."""
    return float(value) if isinstance(value, (int, float, np.number)) else value


class DragTerm(AbstractDragTerm):
    """The term of an inertial particle, alone or moving a `Combined`: its rates, and its drag
    apart for the exponential solver."""

    field: AbstractField
    particles: AbstractParticles
    """The model stepped: the inertial particle, or a `Combined` it moves."""
    mover: Inertial
    velocity_name = "velocity"

    def rates(self, t: TimeLike, state: dict, args: Args, hint: Hints) -> tuple[dict, Hints]:
        return ModelTerm(self.field, self.particles).rates(t, state, args, hint)

    def rate(self, t: TimeLike, state: dict, args: Args) -> dict:
        return ModelTerm(self.field, self.particles).rate(t, state, args)

    def relaxation(self, t: TimeLike, x: Positions, v: Positions, args: Args, hint: Hints):
        fluid, hint = fluid_batch(self.mover, self.field, t, x, args, hint)
        a, rate = jax.vmap(self.mover.acceleration)(fluid, v)
        return a, rate, hint

    def uniform_rate(self, dtype):
        return self.mover.uniform_rate(dtype)


def _has_exponential_form(integrator: AbstractIntegrator) -> bool:
    return isinstance(integrator, AbstractRungeKutta) and exponential_form(integrator.tableau) is not None
