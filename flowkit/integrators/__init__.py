"""Time integrators: explicit Runge–Kutta methods from Butcher tableaus, Euler–Maruyama, diffrax,
and the exponential solver of drag; and the terms they step."""

from .base import AbstractIntegrator as AbstractIntegrator, StepResult as StepResult
from .diffrax import Diffrax as Diffrax
from .exponential import ExponentialDrag as ExponentialDrag
from .runge_kutta import (
    RK4 as RK4,
    AbstractRungeKutta as AbstractRungeKutta,
    Euler as Euler,
    Heun as Heun,
    Midpoint as Midpoint,
    explicit_rk_step as explicit_rk_step,
)
from .stochastic import EulerMaruyama as EulerMaruyama
from .tableau import ButcherTableau as ButcherTableau
from .terms import AbstractDragTerm as AbstractDragTerm, AbstractTerm as AbstractTerm, FlowTerm as FlowTerm
