"""Boundaries applied to particles after every step."""

from .base import AbstractBoundary as AbstractBoundary
from .box import (
    MODES as MODES,
    AbstractBox as AbstractBox,
    AbstractUniformBox as AbstractUniformBox,
    Absorbing as Absorbing,
    Clamp as Clamp,
    Mixed as Mixed,
    Open as Open,
    Periodic as Periodic,
    Reflective as Reflective,
)
