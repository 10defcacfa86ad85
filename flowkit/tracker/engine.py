"""Which evaluations of a run flowkit's CPU engine takes: the batched evaluations of a field
that declares it can be evaluated so (`fields.base.AbstractEngineField`), on CPUs with the
kernels built (`flowkit.native.built()`); the step's other rules stay in JAX."""

import dataclasses
import logging

from .. import native
from ..fields.base import AbstractEngineField
from .pieces import RunPieces

_log = logging.getLogger("flowkit")


def engine_refusals(pieces: RunPieces, platform: str) -> list[str] | None:
    """Why the engine does not take this run's field evaluations, each in a phrase (empty: it
    does), or None where there is no engine for the field, the platform or the build."""
    field = pieces.field
    if not isinstance(field, AbstractEngineField) or platform != "cpu" or not native.built():
        return None
    return field.engine_refusals()


def engaged(pieces: RunPieces, platform: str) -> RunPieces:
    """The run's pieces with its field's `engine` on where the engine takes its evaluations."""
    if engine_refusals(pieces, platform) != []:
        return pieces
    return dataclasses.replace(pieces, field=dataclasses.replace(pieces.field, engine=True))


def described(pieces: RunPieces, platform: str) -> str:
    """The field's evaluations as the run's log names them."""
    refused = engine_refusals(pieces, platform)
    if refused is None:
        return "the field's evaluations in JAX"
    if refused:
        return f"the field's evaluations in JAX (the CPU engine does not evaluate {'; '.join(refused)})"
    return f"the field's evaluations by the CPU engine (flowkit.native, its {native.build()} build)"
