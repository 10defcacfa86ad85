"""Time integrators: explicit Runge–Kutta methods from Butcher tableaus."""

from .base import AbstractIntegrator as AbstractIntegrator
from .runge_kutta import (
    AbstractRungeKutta as AbstractRungeKutta,
    Euler as Euler,
    Heun as Heun,
    Midpoint as Midpoint,
    RK4 as RK4,
    explicit_rk_step as explicit_rk_step,
)
from .tableau import ButcherTableau as ButcherTableau
