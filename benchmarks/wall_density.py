"""Do tracers collect on no-slip walls? The density near the walls of a closed cavity after many
turnovers, against an even spread (issue 57's wall piling).

The flow: the stream function psi = sin²(pi x) sin²(pi y) on the unit square, incompressible
and zero on every wall, with the wall-normal velocity quadratic in the distance to the wall.
Tracked three ways from the same uniform seeds, RK4:

- `closed form`: the flow itself (`fk.fields.Analytic`) in a reflective box;
- `mesh, walls`: the flow sampled on the nodes of an n × n quad mesh, `fk.MeshWalls("reflect")`,
  whose faces are no-slip (the data at rest on them): beside them the normal velocity grows as
  the distance squared (`flowkit.fields.near_wall`);
- `mesh, none`: the same mesh with no boundary: linear interpolation up to the walls (a
  particle crossing a wall would leave).

Printed per run: the fraction of particles within each distance of a wall, as a ratio to an
even spread (1 = no piling). Linear shape functions make the normal velocity linear in the wall
distance, so without the walls' correction particles approach the walls exponentially and
collect on them.

    python benchmarks/wall_density.py [--n 21] [--particles 5000] [--t1 10] [--dt 0.01]
"""

import argparse

import jax.numpy as jnp
import numpy as np

import flowkit as fk


def velocity(x, y, xp=np):
    u = 2 * xp.pi * xp.sin(xp.pi * x) ** 2 * xp.sin(xp.pi * y) * xp.cos(xp.pi * y)
    v = -2 * xp.pi * xp.sin(xp.pi * x) * xp.cos(xp.pi * x) * xp.sin(xp.pi * y) ** 2
    return u, v


def quad_mesh(n: int) -> fk.MeshField:
    """The flow on the nodes of an n × n lattice of the unit square, as quads."""
    axis = np.linspace(0.0, 1.0, n)
    x, y = np.meshgrid(axis, axis, indexing="ij")
    points = np.column_stack([x.ravel(), y.ravel()])
    ids = np.arange(n * n).reshape(n, n)
    quads = np.stack([ids[:-1, :-1], ids[1:, :-1], ids[1:, 1:], ids[:-1, 1:]], axis=-1).reshape(-1, 4)
    return fk.MeshField.from_arrays(
        points, quads, np.column_stack(velocity(points[:, 0], points[:, 1])), dtype="float64"
    )


def near_walls(x: np.ndarray, widths) -> list[float]:
    """For each width, the fraction of particles within it of a wall over an even spread's."""
    distance = np.minimum.reduce([x[:, 0], 1 - x[:, 0], x[:, 1], 1 - x[:, 1]])
    return [float(np.mean(distance < w) / (1 - (1 - 2 * w) ** 2)) for w in widths]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=21, help="mesh nodes along each side")
    parser.add_argument("--particles", type=int, default=5000)
    parser.add_argument("--t1", type=float, default=10.0, help="about t1 / 2 turnovers of the fastest eddy")
    parser.add_argument("--dt", type=float, default=0.01)
    args = parser.parse_args()
    seeds = np.random.default_rng(0).uniform(0.0, 1.0, (args.particles, 2))
    closed = fk.fields.Analytic(
        lambda t, x, a: jnp.stack(velocity(x[0], x[1], jnp)), bounds=((0.0, 0.0), (1.0, 1.0)), dim=2
    )
    mesh = quad_mesh(args.n)
    runs = {
        "closed form": (closed, fk.Reflective(closed.bounds)),
        "mesh, walls": (mesh, fk.MeshWalls("reflect")),
        "mesh, none": (mesh, None),
    }
    widths = (1e-6, 1e-4, 1e-3, 0.5 / (args.n - 1))
    print(f"near-wall density / even spread, {args.particles} particles, t1 = {args.t1}, dt = {args.dt}")
    print(f"{'run':<12}" + "".join(f"{f'< {w:.0e}':>12}" for w in widths))
    for name, (field, boundary) in runs.items():
        traj = fk.track(field, seeds, 0.0, args.t1, args.dt, boundary=boundary, save_every="auto", dtype="float64")
        ratios = near_walls(np.asarray(traj.positions[-1]), widths)
        print(f"{name:<12}" + "".join(f"{r:>12.2f}" for r in ratios) + f"   {traj.status_counts()}")


if __name__ == "__main__":
    main()
