"""FTLE: the double gyre's Lagrangian coherent structures

The time-periodic double gyre of Shadden, Lekien & Marsden (2005), `fk.fields.DoubleGyre()`:
forward (repelling) and backward (attracting) finite-time Lyapunov exponents over 15 time units
on a 400 × 200 grid, from the exact Jacobians of the discrete flow map (forward-mode autodiff
through the compiled RK4 run: no finite-difference stencil to tune)."""

import flowkit as fk

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.fields.DoubleGyre()
points = fk.seeding.uniform_grid(resolution=(400, 200), bounds=field.bounds, include_boundaries=True)
coords = (points[:, 0].reshape(400, 200)[:, 0], points[:, 1].reshape(400, 200)[0])
for T, name in ((15.0, "forward_ftle.png"), (-15.0, "backward_ftle.png")):
    exponents = fk.analysis.ftle(field, points, t0=0.0, T=T, dt=0.05)
    print(f"T = {T:+g}: FTLE from {exponents.min():.3f} to {exponents.max():.3f}")
    fk.analysis.plot_ftle(exponents.reshape(400, 200), coords, name, t0=0.0, T=T)
