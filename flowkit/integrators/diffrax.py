"""diffrax as the alternate engine: any diffrax solver, adaptive steps, exit events, SDEs."""

from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from .._custom_types import Args, Position, Positions, TimeLike
from .._status import Status
from ..diffusion import AbstractDiffusivity, as_diffusivity
from ..fields.base import Hints
from .base import AbstractIntegrator, StepResult
from .terms import AbstractTerm, FlowTerm


class Diffrax(AbstractIntegrator):
    """Each tracker step `[t, t + dt]` is one `diffrax.diffeqsolve` per particle.

    The tracker's `dt` is then the interval at which boundaries, statuses and saves are applied;
    inside it the solver takes its own (adaptive, per-particle) steps. The field is used as
    `diffrax.ODETerm(field)` directly.

    **Arguments:**

    - `solver`: any diffrax solver (default `diffrax.Tsit5()`); for SDEs one that accepts a
      `MultiTerm` of drift and diffusion (e.g. `diffrax.Euler()`, `diffrax.Heun()`, `diffrax.SRA1()`).
    - `stepsize_controller`: default `diffrax.PIDController(rtol, atol)` for adaptive solvers,
      otherwise `diffrax.ConstantStepSize()` with `substeps` steps per tracker step.
    - `rtol`, `atol`: tolerances of the default controller.
    - `max_steps`: solver steps allowed per tracker step; a particle that needs more gets status
      `MAX_STEPS` (never an exception). Other failures give `SOLVER_FAILED`.
    - `exit_event`: stop a particle exactly where it leaves the field's box (non-periodic axes),
      located by root finding on the dense solution: status `OUT_OF_DOMAIN`, position on the
      wall, exit time in `Trajectory.exit_time`.
    - `diffusivity`: add random-walk diffusion (number, per-axis list, function or
      `flowkit.diffusion.AbstractDiffusivity`): drift $u + \\partial_i K_i$, diffusion
      $\\sqrt{2K}\\,dW$ with a `diffrax.VirtualBrownianTree` per particle and step.
    """

    solver: Any  # a diffrax solver
    stepsize_controller: object
    diffusivity: AbstractDiffusivity | None
    max_steps: int = eqx.field(static=True)
    substeps: int = eqx.field(static=True)
    exit_event: bool = eqx.field(static=True)
    courant_limit: ClassVar[float] = 1.0

    def __init__(
        self,
        solver=None,
        stepsize_controller=None,
        *,
        rtol: float = 1e-6,
        atol: float = 1e-9,
        max_steps: int = 4096,
        substeps: int = 1,
        exit_event: bool = False,
        diffusivity=None,
    ):
        import diffrax

        self.solver = diffrax.Tsit5() if solver is None else solver
        if stepsize_controller is None:
            if isinstance(self.solver, diffrax.AbstractAdaptiveSolver) and diffusivity is None:
                stepsize_controller = diffrax.PIDController(rtol=rtol, atol=atol)
            else:
                stepsize_controller = diffrax.ConstantStepSize()
        self.stepsize_controller = stepsize_controller
        self.diffusivity = None if diffusivity is None else as_diffusivity(diffusivity)
        if self.diffusivity is not None and self.diffusivity.sample_names:
            raise ValueError(
                f"Diffrax: the diffusivity reads the field's samples {sorted(self.diffusivity.sample_names)}, which "
                "diffrax's terms cannot see; use fk.EulerMaruyama(diffusivity)"
            )
        self.max_steps = int(max_steps)
        self.substeps = int(substeps)
        self.exit_event = bool(exit_event)

    @property
    def order(self) -> int:
        import diffrax

        return int(self.solver.order(diffrax.ODETerm(lambda t, y, args: y)))

    @property
    def stochastic(self) -> bool:
        return self.diffusivity is not None

    @property
    def shardable(self) -> bool:
        # optimistix's closure conversion in the event root finder, and lineax's check of an
        # implicit solver's linear solves, reject shard_map's per-device values: runs with exit
        # events or implicit (stiff) solvers stay on one device.
        import diffrax

        return not self.exit_event and not isinstance(self.solver, diffrax.AbstractImplicitSolver)

    @property
    def sample_names(self) -> frozenset[str]:
        return frozenset()  # a diffusivity reading the field's samples is refused at construction

    def _terms(self, term: AbstractTerm, x, t, dt, key):
        """diffrax's terms for one particle: the field itself for a tracer's position (with
        the random walk, if any), else the term's rate of the particle's whole state."""
        import diffrax
        import lineax

        diffusivity = self.diffusivity
        if not isinstance(term, FlowTerm):  # the state is the particle's {"x": ..., **variables}
            if diffusivity is None:
                return diffrax.ODETerm(term.rate)
            raise ValueError(
                f"Diffrax: a diffusivity with the particle model of {type(term).__name__} is not "
                "supported; use fk.EulerMaruyama(K)"
            )
        field = term.field
        if diffusivity is None:
            return diffrax.ODETerm(field)
        drift = diffrax.ODETerm(lambda s, y, args: field(s, y, args) + diffusivity.drift_correction(s, y))
        start, end = jnp.minimum(t, t + dt), jnp.maximum(t, t + dt)
        brownian = diffrax.VirtualBrownianTree(
            start, end, tol=jnp.abs(dt) / 2**12, shape=jax.ShapeDtypeStruct(x.shape, x.dtype), key=key
        )
        noise = diffrax.ControlTerm(
            lambda s, y, args: lineax.DiagonalLinearOperator(jnp.sqrt(2 * diffusivity(s, y))), brownian
        )
        return diffrax.MultiTerm(drift, noise)

    def _event(self, field, dtype):
        import diffrax
        import optimistix

        lo, hi = field.bounds
        walls = ~np.array(field.periodic, dtype=bool)
        if not walls.any():
            return None

        def inside_distance(t, y, args, **kwargs):
            y = y["x"] if isinstance(y, dict) else y  # a particle model's state
            distance = jnp.minimum(y - lo.astype(y.dtype), hi.astype(y.dtype) - y)
            # in JAX's default float type: diffrax compares it with a Python 0.0 inside a cond
            return jnp.min(jnp.where(walls, distance, jnp.inf)).astype(jnp.result_type(float))

        tol = 1e-12 if dtype == jnp.float64 else 1e-5
        return diffrax.Event(inside_distance, root_finder=optimistix.Newton(rtol=tol, atol=tol))

    def solve(
        self,
        term: AbstractTerm,
        y: Position | dict,
        t: TimeLike,
        dt: TimeLike,
        args: Args = None,
        key: PRNGKeyArray | None = None,
    ):
        """The `diffrax.Solution` of one particle over `[t, t + dt]` (saved at `t + dt` or the
        exit): `y` its position along a `FlowTerm`, else its state `{"x": ..., **variables}`."""
        import diffrax

        if self.stochastic and key is None:
            raise ValueError("Diffrax with a diffusivity needs a PRNG key: pass key=... to fk.track")
        adaptive = not isinstance(self.stepsize_controller, diffrax.ConstantStepSize)
        dt0 = None if adaptive else dt / self.substeps
        return diffrax.diffeqsolve(
            self._terms(term, y, t, dt, key),
            self.solver,
            t,
            t + dt,
            dt0,
            y,
            args=args,
            saveat=diffrax.SaveAt(t1=True),
            stepsize_controller=self.stepsize_controller,
            max_steps=self.max_steps,
            event=self._event(term.field, jax.tree.leaves(y)[0].dtype) if self.exit_event else None,
            throw=False,
        )

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
        """One `diffeqsolve` per particle. A particle model's whole state is solved together:
        a stiff solver (`diffrax.Kvaerno5()`) handles drag much faster than the step."""
        import diffrax

        flow = isinstance(term, FlowTerm)

        def one(y, key):
            sol = self.solve(term, y, t, dt, args, key)
            result = sol.result
            exited = result == diffrax.RESULTS.event_occurred
            code = jnp.where(
                (result == diffrax.RESULTS.successful),
                Status.ACTIVE,
                jnp.where(
                    exited,
                    Status.OUT_OF_DOMAIN,
                    jnp.where(result == diffrax.RESULTS.max_steps_reached, Status.MAX_STEPS, Status.SOLVER_FAILED),
                ),
            )
            # an exit stops the particle at the located exit; a failure leaves it where the step began
            end = jax.tree.map(lambda a: a[0], sol.ys)
            return end, code.astype(jnp.int32), jnp.where(exited, sol.ts[0], t).astype(jax.tree.leaves(y)[0].dtype)

        y0 = state["x"] if flow else state
        y1, status, t_stop = jax.vmap(one)(y0, keys if self.stochastic else None)
        return StepResult({"x": y1} if flow else y1, status, t_stop)
