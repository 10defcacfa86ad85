"""Boundaries applied to particles after every step: walls, round domains, mesh walls, inlets."""

from .auto import Auto as Auto
from .base import AbstractBoundary as AbstractBoundary, AbstractBoundaryConfig as AbstractBoundaryConfig, Block as Block
from .box import (
    MODES as MODES,
    Absorbing as Absorbing,
    AbstractBox as AbstractBox,
    Clamp as Clamp,
    Mixed as Mixed,
    Open as Open,
    Periodic as Periodic,
    Reflective as Reflective,
)
from .compose import Composed as Composed, compose as compose
from .inlet import (
    AbstractInlet as AbstractInlet,
    BoundContinuousInlet as BoundContinuousInlet,
    BoundInletOutlet as BoundInletOutlet,
    ContinuousInlet as ContinuousInlet,
    InletOutlet as InletOutlet,
    ReleaseSchedule as ReleaseSchedule,
)
from .mesh import BoundMeshWalls as BoundMeshWalls, MeshWalls as MeshWalls
from .modes import WALL_MODES as WALL_MODES, wall_mode as wall_mode
from .regions import InletSurface as InletSurface, Plane as Plane
from .shapes import Cylinder as Cylinder, Sphere as Sphere
