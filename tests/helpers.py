"""Shared references for the tests."""

import numpy as np

import flowkit as fk

ALL_INTEGRATORS = [fk.Euler(), fk.Midpoint(), fk.Heun(), fk.RK4()]


def exp_sin_field():
    """$\\dot x = x \\cos t$ per component: exact $x(t) = x_0 e^{\\sin t - \\sin t_0}$ (time-dependent, nonlinear in t)."""
    import jax.numpy as jnp

    return fk.fields.Analytic(lambda t, x, args: x * jnp.cos(t), bounds=((-10.0, -10.0), (10.0, 10.0)), dim=2)


def exp_sin_exact(x0, t, t0=0.0):
    return np.asarray(x0) * np.exp(np.sin(t) - np.sin(t0))
