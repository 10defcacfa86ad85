"""flowkit: compiled particle tracking through velocity fields with JAX and Equinox."""

from . import (
    analysis as analysis,
    boundaries as boundaries,
    datasets as datasets,
    diffusion as diffusion,
    fields as fields,
    integrators as integrators,
    io as io,
    oil as oil,
    particles as particles,
    seeding as seeding,
    statistics as statistics,
)
from ._host_devices import configure as configure
from ._status import Status as Status
from .boundaries import (
    Absorbing as Absorbing,
    Auto as Auto,
    Clamp as Clamp,
    ContinuousInlet as ContinuousInlet,
    Cylinder as Cylinder,
    InletOutlet as InletOutlet,
    MeshWalls as MeshWalls,
    Mixed as Mixed,
    Open as Open,
    Periodic as Periodic,
    Reflective as Reflective,
    Sphere as Sphere,
)
from .fields import GridField as GridField, MeshField as MeshField
from .integrators import (
    RK4 as RK4,
    Diffrax as Diffrax,
    Euler as Euler,
    EulerMaruyama as EulerMaruyama,
    Heun as Heun,
    Midpoint as Midpoint,
)
from .tracker import clear_caches as clear_caches, track as track, track_ensemble as track_ensemble
from .trajectory import RunStats as RunStats, Trajectory as Trajectory

__version__ = "0.1.0"
