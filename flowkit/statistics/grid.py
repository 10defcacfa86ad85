"""Counts of particles on a grid of cells, per time window and age class."""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .base import (
    AbstractStatistic,
    RunFacts,
    Tally,
    active,
    frames_per_window,
    position_attrs,
    position_names,
    window_index,
    window_starts,
    windows,
)


class GridCounts(AbstractStatistic):
    """Particle counts in the cells of a rectilinear grid, summed over the frames of each time
    window (OceanTracker's gridded statistics): `count[time, (age,) (z,) y, x]`, with `frames[time]`
    the frames each window sums (a window's mean count is `count / frames`).

    **Arguments:**

    - `edges`: the cells' edges along each position axis used (`x`, `y`, optionally `z`),
      ascending; a particle outside them is not counted.
    - `window`: the length of the time windows (the run's time unit, seconds), from the run's
      start; None: one window, the whole run.
    - `age`: edges of age classes (time since each particle's release); None: no age classes.
      A particle outside them is not counted.
    - `name`: its key in `Trajectory.statistics`.
    """

    edges: tuple[Float[Array, " e"], ...]
    window: float | None = eqx.field(static=True)
    age: Float[Array, " a"] | None
    name: str = eqx.field(static=True)

    def __init__(
        self,
        edges: Sequence[ArrayLike | Sequence[float]],
        window: float | None = None,
        age: ArrayLike | Sequence[float] | None = None,
        name: str = "grid_counts",
    ):
        self.edges = tuple(_ascending(e, f"GridCounts: edges[{i}]") for i, e in enumerate(edges))
        if not 1 <= len(self.edges) <= 3:
            raise ValueError(f"GridCounts: edges for 1 to 3 position axes, got {len(self.edges)}")
        if window is not None and not window > 0:
            raise ValueError(f"GridCounts: window must be a positive duration, got {window}")
        self.window = None if window is None else float(window)
        self.age = None if age is None else _ascending(age, "GridCounts: age")
        self.name = str(name)

    @classmethod
    def over(
        cls,
        field,
        cells: Sequence[int],
        window: float | None = None,
        age: ArrayLike | Sequence[float] | None = None,
        name: str = "grid_counts",
    ) -> "GridCounts":
        """Counts on a grid of `cells` per axis (the first `len(cells)` position axes) spanning
        `field.bounds`."""
        lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
        if not 1 <= len(cells) <= len(lo):
            raise ValueError(f"GridCounts.over: cells for 1 to {len(lo)} axes, got {list(cells)}")
        edges = [np.linspace(lo[a], hi[a], int(n) + 1) for a, n in enumerate(cells)]
        return cls(edges, window=window, age=age, name=name)

    def _shape(self, run: RunFacts) -> tuple[int, ...]:
        ages = () if self.age is None else (len(self.age) - 1,)
        return (windows(run, self.window), *ages, *(len(e) - 1 for e in reversed(self.edges)))

    def tally(self, run: RunFacts, n_slots: int) -> Tally:
        shape = self._shape(run)
        return Tally(slots={}, totals={"count": np.zeros(shape, np.int32)})

    def start(self, tally: Tally, x) -> Tally:
        return tally

    def add(self, tally, frame, t, save_interval, x, status, t_release, index, variables) -> Tally:
        count = tally.totals["count"]
        shape = count.shape
        flat = window_index(frame, save_interval, self.window, shape[0])
        valid = active(status)
        axes = [(jnp.abs(t - t_release), self.age)] if self.age is not None else []
        axes += [(x[:, axis], edges) for axis, edges in reversed(list(enumerate(self.edges)))]
        for (value, edges), size in zip(axes, shape[1:]):
            cell = jnp.searchsorted(edges, value, side="right") - 1
            valid &= (value >= edges[0]) & (value <= edges[-1])  # as np.histogram: the last edge closed
            flat = flat * size + jnp.clip(cell, 0, size - 1)
        counted = count.reshape(-1).at[jnp.where(valid, flat, count.size)].add(1, mode="drop")  # in place
        return Tally(tally.slots, {"count": counted.reshape(shape)})

    def dataset(self, totals: dict, run: RunFacts):
        import xarray as xr

        names = position_names(run, len(self.edges))
        time, time_attrs = window_starts(run, self.window, totals["count"].shape[0])
        coords = {"time": ("time", time, time_attrs)}
        dims = ["time"]
        if self.age is not None:
            age = np.asarray(self.age, np.float64)
            coords["age"] = ("age", 0.5 * (age[1:] + age[:-1]), {"long_name": "time since release", "units": "s"})
            coords["age_bounds"] = (("age", "bounds"), np.stack([age[:-1], age[1:]], axis=1))
            dims.append("age")
        for name, edges in reversed(list(zip(names, self.edges))):
            e = np.asarray(edges, np.float64)
            coords[name] = (name, 0.5 * (e[1:] + e[:-1]), {**position_attrs(name), "bounds": f"{name}_bounds"})
            coords[f"{name}_bounds"] = ((name, "bounds"), np.stack([e[:-1], e[1:]], axis=1))
            dims.append(name)
        return xr.Dataset(
            {
                "count": (
                    dims,
                    np.asarray(totals["count"], np.int64),
                    {
                        "long_name": "particles in the cell, summed over the window's frames",
                        "units": "1",
                        "cell_methods": "time: sum",
                    },
                ),
                "frames": (
                    "time",
                    frames_per_window(run, self.window, len(time)),
                    {"long_name": "frames in the window"},
                ),
            },
            coords=coords,
            attrs={
                "Conventions": "CF-1.8",
                "title": "flowkit gridded particle counts",
                "save_interval_s": abs(run.save_interval),
            },
        )


def _ascending(values, what: str) -> np.ndarray:
    values = np.asarray(values, np.float64)
    if values.ndim != 1 or len(values) < 2 or not np.all(np.diff(values) > 0):
        raise ValueError(f"{what}: needs at least two strictly ascending values, got {values}")
    return values
