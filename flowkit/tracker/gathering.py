"""A run's statistics on the host: each batch's tallies made and started on the devices, their
totals gathered over devices and batches, the datasets at the end (`flowkit.statistics`)."""

import jax
import numpy as np

from ..statistics.base import RunFacts, Tally, combined, gathered
from ..trajectory import Frame
from .plan import RunPlan


class Gathering:
    """The statistics of one `TrackRun` (`plan.pieces.statistics`)."""

    def __init__(self, plan: RunPlan, statistics: tuple, n_devices: int, sharding, time_origin):
        self.statistics = statistics
        self.facts = RunFacts(
            t0=plan.t0,
            t1=plan.t1,
            save_interval=plan.dt * plan.save_every,
            n_frames=plan.n_saves + 1,
            dtype=plan.dtype,
            time_origin=time_origin,
            spherical=plan.pieces.field.spherical,
        )
        self.n_devices, self.sharding = n_devices, sharding
        self.totals = [None] * len(self.statistics)
        for statistic in self.statistics:  # a window that is not a whole number of saves: said now
            statistic.tally(self.facts, 1)

    def new(self, count: int) -> tuple:
        """Zero tallies of a batch of `count` slots on the devices; totals with a row per device
        (counted in 32 bits on the devices, gathered in 64 on the host)."""
        if count * self.facts.n_frames >= 2**31:
            raise ValueError(
                f"statistics: a batch of {count} particles over {self.facts.n_frames} frames could count past "
                f"2**31 in one cell; give batch_size below {2**31 // self.facts.n_frames}"
            )
        put = lambda a: jax.device_put(a, self.sharding)  # noqa: E731
        return tuple(
            Tally(
                slots={name: put(a) for name, a in tally.slots.items()},
                totals={name: put(np.repeat(a[None], self.n_devices, axis=0)) for name, a in tally.totals.items()},
            )
            for tally in (statistic.tally(self.facts, count) for statistic in self.statistics)
        )

    def add(self, tallies: tuple) -> None:
        """A finished batch's totals, gathered over its devices, into the run's."""
        for i, tally in enumerate(tallies):
            batch = {name: gathered(name, np.asarray(total)) for name, total in tally.totals.items()}
            self.totals[i] = batch if self.totals[i] is None else combined(self.totals[i], batch)

    def datasets(self) -> dict:
        """Each statistic's `xarray.Dataset`, by its name."""
        return {s.name: s.dataset(totals, self.facts) for s, totals in zip(self.statistics, self.totals)}


def check_statistics(plan: RunPlan, tracks: bool) -> None:
    """Statistics go with runs of particles that are not restarted; `tracks=False` needs
    statistics (it keeps only the first and last frames)."""
    statistics = plan.pieces.statistics
    if not tracks and not statistics:
        raise ValueError("tracks=False keeps no frames but the first and last: give statistics=[...] to gather")
    if statistics and (plan.pieces.boundary.restarts or plan.pieces.boundary.extra_slots):
        raise ValueError(
            f"statistics=: {type(plan.pieces.boundary).__name__} restarts or releases particles into slots, "
            "which the statistics do not follow yet; gather them from the stored tracks"
        )


def bare(positions, status) -> Frame:
    """A frame of positions and status alone (what a run without tracks keeps of its first
    and last frames)."""
    return Frame(positions, status, None, {}, None, {})
