"""Checks every reader applies to each time step it reads: velocity that cannot be tracked in."""

import logging

import numpy as np

_log = logging.getLogger("flowkit")


def check_velocity(values, where: str, variable, step: int, time: float | None = None) -> None:
    """Raise when a time step's velocity is NaN everywhere (no water or fluid to track in: a
    fill value not decoded, a diverged solver, the wrong variable); warn when it is zero
    everywhere (a solver's initial condition, a step written before the flow started). The
    line names the file, the variable and the step."""
    at = f"time step {step}" + ("" if time is None or not np.isfinite(time) else f" (t = {time:g})")
    values = np.asarray(values)
    finite = np.isfinite(values)
    if not finite.any():
        raise ValueError(
            f"{where}: velocity {variable} is NaN everywhere at {at}: nothing to track in (a fill "
            "value not decoded, a diverged solver, or the wrong variable)"
        )
    if not np.any(np.where(finite, values, 0)):
        _log.warning("%s: velocity %s is zero everywhere at %s", where, variable, at)


def is_default(value, default) -> bool:
    """Whether an option was left at its default (a user's `None`, `False` or equal value)."""
    return value is None if default is None else type(value) is type(default) and value == default


def named(field, names):
    """`field` recording the file's variables its velocity was read from (`velocity_array`,
    which `summary.json` reports), logged once; a streamed series' template records them."""
    import dataclasses

    names = ",".join(str(n) for n in names if n)
    target = getattr(field, "template", field)
    if not hasattr(target, "velocity_array"):
        return field
    recorded = dataclasses.replace(target, velocity_array=names)
    _log.info("read: velocity from the variables %s", names)
    if target is field:
        return recorded
    field.template = recorded
    return field
