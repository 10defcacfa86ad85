"""Step sizes counted in cells, as VTK's `vtkStreamTracer` counts them (`CELL_LENGTH_UNIT`):
`dt="auto"` from a Courant number, and the Courant number a run had."""

import logging
import math

import jax
import numpy as np

from .._time import as_seconds
from ..fields.base import AbstractField
from ..integrators.base import AbstractIntegrator

_log = logging.getLogger("flowkit")

AUTO = "auto"
DEFAULT_COURANT = 0.5


def auto_dt(field: AbstractField, t0: float, t1: float, save_every, courant: float = DEFAULT_COURANT) -> float:
    """The step whose Courant number `max_i |u_i| dt / size_i` is at most `courant` in the
    data's fastest cell (`field.max_courant_rate()`, over all its nodes and times) and that spans
    at most one of the data's time intervals (a tide sampled every 524 s), shortened
    so that a whole number of steps fills the save interval (a duration `save_every`) or else
    the run; signed like `t1 - t0`."""
    if not (isinstance(courant, (int, float)) and math.isfinite(courant) and courant > 0):
        raise ValueError(f"courant must be a positive number (the cells a step may cross), got {courant!r}")
    rate = field.max_courant_rate()
    if rate is None:
        raise ValueError(
            f"dt='auto' counts a step in cells, and {type(field).__name__} has none (a closed-form "
            "flow): give dt in seconds"
        )
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(
            f"dt='auto': the field's velocity is {'zero' if rate == 0 else 'not finite'} everywhere, "
            "so no step size follows from it: give dt in seconds"
        )
    span = abs(t1 - t0)
    duration = isinstance(save_every, str) and save_every != AUTO
    interval = as_seconds(save_every, "save_every", duration=True) if duration else span
    data_step = _data_step(field)
    per_second = max(rate / courant, 1.0 / data_step)
    steps = max(1, math.ceil(min(interval, span) * per_second - 1e-9))
    dt = min(interval, span) / steps
    _log.info(
        "dt=auto: %g s, Courant number %g in the data's fastest cell (%g cells/s there)%s%s",
        dt,
        dt * rate,
        rate,
        f"; no step spans more than the data's time step ({data_step:g} s)" if 1.0 / data_step > rate / courant else "",
        f"; {steps} steps per save of {interval:g} s" if interval < span else "",
    )
    return math.copysign(dt, t1 - t0)


def _data_step(field: AbstractField) -> float:
    """The shortest interval between the field's time slices (inf for a steady field): a step
    of `dt="auto"` spans at most one, so that it does not leap over what the data samples."""
    times = field.times
    if times is None or len(times) < 2:
        return math.inf
    return float(np.min(np.diff(np.asarray(times, np.float64))))


def has_cells(field: AbstractField) -> bool:
    """Whether `field` measures cells (`cell_sizes` is not None), found without computing (and
    traced once per field structure: a run asks every time)."""
    structure = jax.tree.structure(field)
    if structure not in _HAS_CELLS:
        x = jax.ShapeDtypeStruct((1, field.dim), field.bounds[0].dtype)
        _HAS_CELLS[structure] = jax.eval_shape(lambda x: field.cell_sizes(x, field.hints(1, x.dtype)), x) is not None
    return _HAS_CELLS[structure]


_HAS_CELLS: dict = {}


def report(courant: float | None, dt: float, integrator: AbstractIntegrator) -> None:
    """Warn once when the run's largest Courant number exceeds the integrator's limit, naming
    a dt that brings it to half the limit, or is 0 (nothing moved)."""
    limit = integrator.courant_limit
    if courant is not None and math.isinf(courant):
        _log.warning(
            "a step ended in a cell of zero size along an axis (a collapsed cell): its Courant number is "
            "infinite; the mesh has cells to mend (dt=%g elsewhere is measured by the other cells)",
            abs(dt),
        )
    elif courant == 0:
        _log.warning(
            "the largest Courant number of the run is 0: no particle crossed any part of a cell in a "
            "step (the flow is still where they are, or dt=%g is far too short for it)",
            abs(dt),
        )
    elif courant is not None and courant > limit:
        better = abs(dt) * 0.5 * limit / courant
        _log.warning(
            "the largest Courant number of the run is %.3g (over %g for %s): steps of dt=%g jump "
            "over cells' detail; dt=%.3g (or dt='auto') would bring it to %g",
            courant,
            limit,
            type(integrator).__name__,
            abs(dt),
            float(np.format_float_positional(better, 3, fractional=False)),
            0.5 * limit,
        )
