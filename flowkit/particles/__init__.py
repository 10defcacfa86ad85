"""Particle models: tracers, inertial droplets, buoyant particles, drift with the wind and the
waves (windage, Stokes drift, leeway), per-particle records, and the contract for models of your
own (`AbstractParticles` and its capabilities)."""

from .base import (
    AbstractParticles as AbstractParticles,
    AbstractRandom as AbstractRandom,
    AbstractTurnedByWalls as AbstractTurnedByWalls,
    AbstractUpdating as AbstractUpdating,
    AbstractWithVariables as AbstractWithVariables,
    Fluid as Fluid,
    ModelTerm as ModelTerm,
    Needs as Needs,
    Tracer as Tracer,
)
from .drift import (
    AbstractDrift as AbstractDrift,
    AbstractRuled as AbstractRuled,
    DriftRule as DriftRule,
    Plastic as Plastic,
    StokesDrift as StokesDrift,
    Windage as Windage,
)
from .inertial import DragTerm as DragTerm, Inertial as Inertial
from .leeway import Leeway as Leeway
from .models import (
    Aging as Aging,
    Buoyant as Buoyant,
    Combined as Combined,
    Distance as Distance,
    Extremes as Extremes,
    TimeInBox as TimeInBox,
)
