"""Particle models: tracers, inertial droplets, buoyant particles, drift with the wind and the
waves (windage, Stokes drift, leeway), plastics, oil, fish eggs and larvae, sediments, per-particle
records, and the contract for models of your own (`AbstractParticles` and its capabilities)."""

from .base import (
    AbstractDated as AbstractDated,
    AbstractMovedByEvents as AbstractMovedByEvents,
    AbstractParticles as AbstractParticles,
    AbstractRandom as AbstractRandom,
    AbstractResting as AbstractResting,
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
from .eggs import Larva as Larva, PelagicEgg as PelagicEgg, neutral_salinity as neutral_salinity
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
from .oil import Oil as Oil
from .seawater import Seawater as Seawater, terminal_velocity as terminal_velocity, viscosity as viscosity
from .sediment import Sediment as Sediment
