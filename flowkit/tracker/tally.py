"""What a run counts as its batches go by, and the `RunStats` it reports at the end."""

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from ..trajectory import RunStats
from .courant import has_cells, report
from .plan import RunPlan

_log = logging.getLogger("flowkit")


@dataclasses.dataclass
class Tally:
    """What a run counts as its batches go by."""

    bar: Any = None
    outside: int = 0
    ashore: int = 0
    lost: int = 0
    courant: float = 0.0
    chunk: int = 0


def run_stats(
    plan: RunPlan,
    n: int,
    devices: Sequence,
    compile_s: float,
    tally: Tally,
    run_s: float,
    warmup_s: float,
    streamed: dict,
) -> RunStats:
    """The `RunStats` of a run of `plan` with `n` particles on `devices`, after warning of seeds
    that could not start and releases not made."""
    if tally.bar is not None:
        tally.bar.close()
    if tally.outside:
        _log.warning(
            "%d of %d seeds lie outside the field's domain (e.g. outside the mesh): they are marked "
            "OUT_OF_DOMAIN from the start; fk.seeding.random_inside draws seeds inside",
            tally.outside,
            n,
        )
    if tally.ashore:
        _log.warning("%d of %d seeds lie on land: they start BEACHED", tally.ashore, n)
    if tally.lost:
        _log.warning(
            "%d releases found no free slot and were not made: give the inlet more slots (it has %d)",
            tally.lost,
            plan.pieces.boundary.extra_slots,
        )
    courant = tally.courant if has_cells(plan.pieces.field) else None
    report(courant, plan.dt, plan.pieces.integrator)
    platform = devices[0].platform
    return RunStats(
        n,
        plan.n_steps,
        plan.n_saves + 1,
        plan.dtype.name,
        platform,
        len(devices),
        compile_s,
        run_s,
        tally.lost,
        warmup_s,
        courant=courant,
        **streamed,
    )


def progress_bar(progress: bool, total: int):
    """The run's tqdm bar, in particle-steps (None without `progress`)."""
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="particle-step", unit_scale=True, desc="tracking", smoothing=0.3)
