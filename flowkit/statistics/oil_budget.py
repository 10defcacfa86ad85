"""An oil spill's mass budget, gathered inside the run at every saved frame (OpenOil's
`get_oil_budget`, without stored tracks)."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._status import Status
from .base import AbstractStatistic, RunFacts, Tally, window_starts

TERMS = ("surface", "submerged", "stranded", "outside", "evaporated", "dispersed", "biodegraded")
"""Where the released oil is: on the sea (at the surface, below it), on the coast (beached or
absorbed by a wall), gone with elements that left the domain or stopped otherwise, and what
the weathering took (evaporated, dispersed as fine droplets, biodegraded)."""


class OilBudget(AbstractStatistic):
    """The mass (kg) of released oil in each of `TERMS` at every saved frame, from the
    variables of `flowkit.particles.Oil`; the terms sum to the mass released by then
    (`released`), to round-off."""

    name: str = eqx.field(static=True, default="oil_budget")

    def tally(self, run: RunFacts, n_slots: int) -> Tally:
        zeros = {term: np.zeros(run.n_frames, run.dtype) for term in (*TERMS, "released")}
        return Tally(slots={}, totals=zeros)

    def start(self, tally: Tally, x) -> Tally:
        return tally

    def add(self, tally, frame, t, save_interval, x, status, t_release, index, variables) -> Tally:
        if "components" not in variables:
            raise ValueError(
                f"OilBudget: the run's particles carry no oil (variables {sorted(variables)}); "
                "track fk.particles.Oil to gather its budget"
            )
        oil = jnp.sum(variables["components"], axis=-1)
        released = (status != Status.NOT_RELEASED) & (index >= 0)
        moving = status == Status.ACTIVE
        stranded = (status == Status.BEACHED) | (status == Status.ABSORBED)
        under = variables["submerged"] > 0.5
        parts = {
            "surface": oil * (moving & ~under),
            "submerged": oil * (moving & under),
            "stranded": oil * stranded,
            "outside": oil * (released & ~moving & ~stranded),
            "evaporated": variables["evaporated"] * released,
            "dispersed": variables["dispersed"] * released,
            "biodegraded": variables["biodegraded"] * released,
        }
        parts["released"] = sum(parts.values())
        totals = {k: v.at[frame].add(jnp.sum(parts[k]).astype(v.dtype)) for k, v in tally.totals.items()}
        return Tally(tally.slots, totals)

    def dataset(self, totals: dict, run: RunFacts):
        import xarray as xr

        direction = 1.0 if run.t1 >= run.t0 else -1.0
        times = run.t0 + direction * np.minimum(np.arange(run.n_frames) * abs(run.save_interval), abs(run.t1 - run.t0))
        if run.time_origin is None:
            time, attrs = times, {"long_name": "time", "units": "s"}
        else:  # dates, as the windows of the other statistics give them
            time, attrs = run.time_origin.in_units(times), window_starts(run, None, 1)[1]
        names = {**{term: f"oil {term}" for term in TERMS}, "released": "oil released so far"}
        data = {
            k: ("time", np.asarray(totals[k], np.float64), {"long_name": names[k], "units": "kg"})
            for k in (*TERMS, "released")
        }
        return xr.Dataset(
            data,
            coords={
                "time": ("time", time, attrs),
                "elapsed": ("time", times - run.t0, {"long_name": "time since the run's start", "units": "s"}),
            },
            attrs={"Conventions": "CF-1.8", "title": "flowkit oil mass budget", "terms": " ".join(TERMS)},
        )
