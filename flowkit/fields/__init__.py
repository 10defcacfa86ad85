"""Velocity fields: closed-form flows, gridded data and unstructured meshes."""

from .analytic import (
    ABCFlow as ABCFlow,
    AbstractAnalyticField as AbstractAnalyticField,
    Analytic as Analytic,
    CellularFlow as CellularFlow,
    DoubleGyre as DoubleGyre,
    SolidBodyRotation as SolidBodyRotation,
    TaylorGreen as TaylorGreen,
    Uniform as Uniform,
)
from .base import AbstractField as AbstractField
from .grid import GridField as GridField
from .mesh import MeshField as MeshField


def from_xarray(ds, u: str = "u", v: str = "v", w: str | None = None, **kwargs) -> GridField:
    """A `GridField` from a structured xarray Dataset; see `flowkit.io.from_xarray`."""
    from ..io.xarray import from_xarray as convert

    return convert(ds, u=u, v=v, w=w, **kwargs)
