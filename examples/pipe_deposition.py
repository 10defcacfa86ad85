"""Inertial particles depositing in a pipe

Droplets in laminar pipe flow, settling under gravity (along -y) across it: flowkit's flow-through sample
(Poiseuille flow in a tetrahedral pipe of radius 0.5 m and length 4 m, written by VTK's writer
on first use) and `fk.particles.Inertial`, the Maxey–Riley equation with Stokes drag, stepped
by the exponential Runge–Kutta method where the time step exceeds half the response time. The
pipe wall sticks: each droplet that reaches it is recorded once, where and when it crossed, with
its velocity there. Heavier droplets deposit nearer the inlet; the map counts deposits per wall
face, and `deposition_map.vtp` opens in ParaView."""

import jax
import matplotlib.pyplot as plt
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core (before JAX's first operation)

field = fk.io.read(fk.datasets.sample_pipe())
seeds = fk.seeding.disk((0.02, 0.0, 0.0), 0.45, 1500, key=jax.random.key(0), normal=(1.0, 0.0, 0.0))
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
for diameter in (100e-6, 200e-6):
    droplets = fk.particles.Inertial(
        diameter=diameter, density=1000.0, fluid_density=1.2, viscosity=1.8e-5, gravity=(0.0, -9.81, 0.0)
    )
    traj = fk.track(field, seeds, 0.0, 8.0, 0.005, particles=droplets, boundary=fk.MeshWalls("stick"), save_every=20)
    hits = fk.analysis.deposits(traj)
    print(
        f"{diameter * 1e6:.0f} µm: response time {float(droplets.response_time) * 1e3:.1f} ms, {len(hits.times)} of "
        f"{len(seeds)} deposited, at x = {np.median(hits.positions[:, 0]):.2f} m (median)"
    )
    ax.hist(hits.positions[:, 0], bins=40, range=(0, 1.6), histtype="step", label=f"{diameter * 1e6:.0f} µm")
ax.set(xlabel="x where a droplet reached the wall (m)", ylabel="droplets")
ax.legend()
fig.savefig("deposits_along_the_pipe.png", dpi=120)
dmap = fk.analysis.deposition_map(traj, field)
fk.analysis.deposition.write_deposition_map_vtp(dmap, "deposition_map.vtp")
fk.analysis.plot_pathlines(traj, "pathlines_200um.png", field=field, title="200 µm droplets settling in a pipe")
