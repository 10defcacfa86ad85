"""A gradient through a track: where was it released?

`fk.track` is differentiable: inside `jax.jacfwd` (or `jax.grad`) it runs as one traced
program. Here a particle found at a point of the double gyre after 10 time units is traced back
to where it started, not by running the flow backward but by Gauss–Newton on the release point:
the miss is the distance between the simulated and the observed end point, and the Jacobian of
the end point with respect to the release point comes through the compiled RK4 run (forward-mode
autodiff); each step solves it for the correction, halved until the miss shrinks. The picture
shows the guesses' tracks closing in."""

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import flowkit as fk

fk.configure()  # one CPU device per core (before JAX's first operation)

jax.config.update("jax_enable_x64", True)
field = fk.fields.DoubleGyre()
truth = np.array([0.7, 0.3])


def end_point(release):
    return fk.track(field, release[None], 0.0, 10.0, 0.02, dtype="float64").positions[-1, 0]


found = end_point(jnp.asarray(truth))
end_at, jacobian = jax.jit(end_point), jax.jit(jax.jacfwd(end_point))
guess = jnp.array([0.85, 0.45])
tried = [np.asarray(guess)]
miss = float(jnp.linalg.norm(end_at(guess) - found))
for _ in range(40):
    correction = jnp.linalg.solve(jacobian(guess), end_at(guess) - found)
    length = 1.0
    while length > 1e-6:  # the longest step along the correction that shrinks the miss
        trial = jnp.clip(guess - length * correction, 1e-3, jnp.array([2.0, 1.0]) - 1e-3)  # kept in the gyre
        trial_miss = float(jnp.linalg.norm(end_at(trial) - found))
        if trial_miss < miss:
            break
        length /= 2
    guess, miss = trial, trial_miss
    tried.append(np.asarray(guess))
    if miss < 1e-10:
        break
print(
    f"after {len(tried) - 1} Gauss-Newton steps: release {np.asarray(guess).round(8)} (true {truth}), miss {miss:.1e}"
)
fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
for k, start in enumerate(tried):
    path = np.asarray(fk.track(field, start[None], 0.0, 10.0, 0.02, dtype="float64", save_every=5).positions[:, 0])
    ax.plot(path[:, 0], path[:, 1], lw=0.8, color=plt.cm.viridis(k / max(1, len(tried) - 1)))
ax.plot(*truth, "k*", ms=10, label="true release")
ax.plot(*tried[0], "ko", ms=5, mfc="none", label="first guess")
ax.plot(*np.asarray(found), "rx", ms=8, label="found here at t = 10")
ax.set(xlim=(0, 2), ylim=(0, 1), aspect="equal", title="the guesses' tracks, first (purple) to last (yellow)")
ax.legend(loc="upper right", fontsize=8)
fig.savefig("release_point.png", dpi=120)
