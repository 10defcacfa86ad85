"""Search and rescue: where did the crew go into the water, given where they were found?

Twelve persons in the water (class `PIW-1` of the leeway table, read from OpenDrift's published
`OBJECTPROP.DAT`) from one vessel drift for 24 h in MET Norway's ROMS Nordic currents
(`ocean-real/Nordic_subset.nc`) under a steady 10 m/s wind toward the south-west: the current
plus a downwind and a crosswind leeway, each drawing its own coefficients from the table's
spread and jibing at 4 % an hour. They are found 24 h later, scattered over kilometres.

Two answers to where they went in. Backward: 2000 elements released at the finds run 24 h back
in time, as OpenDrift's Leeway runs backward; where they end is the area they came from.
With gradients, which no peer offers: the most likely last known position under a Gaussian
reading of the forward ensemble, the release point whose forward ensemble (400 elements, drawn
once) is centred on the finds' centre; `jax.jacfwd` gives the centre's derivative with respect
to the release point through the compiled run, and Gauss–Newton steps close the miss. One find
alone would leave the answer as uncertain as the ensemble's spread (some 10 km here); twelve
narrow it by about √12."""

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

import flowkit as fk

from _data import shared

fk.configure()  # one CPU device per core (before JAX's first operation)

path = shared("ocean-real", "Nordic_subset.nc")
field = fk.io.read(path, samples={"wind": fk.fields.Uniform([-7.2, -7.0])})
person = fk.io.leeway("PIW-1")
start, hours = "2016-02-02T12", 24 * 3600.0
truth = np.array([14.32, 67.72, 0.0])  # where the person went in
run = dict(particles=person, dtype="float64")

crew = np.repeat(truth[None], 12, 0)
drift = fk.track(field, crew, 0.0, hours, "10min", key=jax.random.key(11), save_every="1h", **run)
finds = np.asarray(drift.positions[-1])
back = fk.track(field, np.resize(finds, (2004, 3)), hours, 0.0, "-10min", key=jax.random.key(1), **run)
area = np.asarray(back.positions[-1])[np.asarray(back.status[-1]) == fk.Status.ACTIVE]
find = finds.mean(0)
print(f"12 found around {find[:2].round(4)} after 24 h; the backward ensemble's centre {area[:, :2].mean(0).round(4)}")


def centre(release):
    """The forward ensemble's centre (lon, lat) after 24 h from `release` (lon, lat)."""
    seeds = jnp.broadcast_to(jnp.concatenate([release, jnp.zeros(1)]), (400, 3))
    traj = fk.track(field, seeds, 0.0, hours, 1800.0, key=jax.random.key(2), save_every=hours, **run)
    return jnp.mean(traj.positions[-1, :, :2], axis=0)


centre_at, jacobian = jax.jit(centre), jax.jit(jax.jacfwd(centre))
guess = jnp.asarray(area[:, :2].mean(0))
guesses = [np.asarray(guess)]
for _ in range(4):
    miss = centre_at(guess) - find[:2]
    guess = guess - jnp.linalg.solve(jacobian(guess), miss)
    guesses.append(np.asarray(guess))
metres = np.array([np.cos(np.radians(truth[1])) * 111_195.0, 111_195.0])
for k, g in enumerate(guesses):
    miss = np.linalg.norm((np.asarray(centre_at(jnp.asarray(g))) - find[:2]) * metres)
    print(
        f"step {k}: release {g.round(4)}, {np.linalg.norm((g - truth[:2]) * metres):5.0f} m from the truth, "
        f"forward centre {miss:5.0f} m from the find"
    )

fig, ax = plt.subplots(figsize=(7, 5.5), layout="constrained")
grid = xr.open_dataset(path)
ax.contourf(grid.lon_rho, grid.lat_rho, grid.mask_rho, levels=[-0.5, 0.5], colors=["0.8"])  # the land
ax.scatter(area[:, 0], area[:, 1], s=2, color="tab:blue", alpha=0.3, label="backward ensemble after 24 h")
paths = np.asarray(drift.positions)
ax.plot(paths[..., 0], paths[..., 1], color="k", lw=0.6)
ax.plot(*truth[:2], "k*", ms=12, label="where they went in, and their drifts")
ax.plot(finds[:, 0], finds[:, 1], "rx", ms=7, mew=1.5, label="the finds")
trail = np.array(guesses)
ax.plot(trail[:, 0], trail[:, 1], "o-", color="tab:orange", ms=4, label="Gauss–Newton on the release point")
low, high = np.percentile(area[:, :2], [0.5, 99.5], axis=0)
pad = 0.15 * (high - low)
ax.set_xlim(low[0] - pad[0], high[0] + pad[0])
ax.set_ylim(low[1] - pad[1], high[1] + pad[1])
ax.set(xlabel="longitude", ylabel="latitude", title="PIW-1 in ROMS Nordic, wind 10 m/s toward the south-west")
ax.legend(loc="upper left", fontsize=8)
fig.savefig("last_known_position.png", dpi=120)
