"""Particle models: tracers, inertial droplets, buoyant particles, drift with the wind and the
waves (windage, Stokes drift, leeway), per-particle records, and the contract for models of your
own (`AbstractParticles`)."""

from .base import AbstractParticles as AbstractParticles, Fluid as Fluid, Tracer as Tracer
from .drift import AbstractDrift as AbstractDrift, Leeway as Leeway, StokesDrift as StokesDrift, Windage as Windage
from .inertial import Inertial as Inertial
from .models import (
    Aging as Aging,
    Buoyant as Buoyant,
    Combined as Combined,
    Distance as Distance,
    Extremes as Extremes,
    TimeInBox as TimeInBox,
)
