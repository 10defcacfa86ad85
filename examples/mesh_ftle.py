"""FTLE on a mesh: the shear layer behind OpenFOAM's backward-facing step

Finite-time Lyapunov exponents need no grid of the flow: on the `pitzDaily` case (the converged
simpleFoam run of `real/openfoam_pitzdaily`, 12 225 hexahedra read by VTK's OpenFOAM reader) a
lattice of 360 × 60 points in the middle plane is advected for 5 ms and the exponents come from
the flow map's exact Jacobians through the mesh interpolation. Points whose particle leaves
the mesh within the time get none (NaN, blank). The ridge that comes off the step's lip is the
shear layer that bounds the recirculation."""

import numpy as np

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(shared("real", "openfoam_pitzdaily", "pitzDaily"))
lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
x = np.linspace(-0.02, 0.25, 360)
y = np.linspace(-0.025, 0.025, 60)
gx, gy = np.meshgrid(x, y, indexing="ij")
points = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, 0.5 * (lo[2] + hi[2]))], axis=1)
exponents = fk.analysis.ftle(field, points, t0=0.0, T=0.005, dt=2.5e-5).reshape(gx.shape)
print(f"FTLE of {np.isfinite(exponents).sum()} points: up to {np.nanmax(exponents):.0f} 1/s")
fk.analysis.plot_ftle(exponents, (x, y), "forward_ftle.png", t0=0.0, T=0.005)
