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
from .base import (
    AbstractField as AbstractField,
    AbstractSampledTogether as AbstractSampledTogether,
    AbstractWithSeaFloor as AbstractWithSeaFloor,
)
from .curvilinear import CurvilinearField as CurvilinearField
from .grid import GridField as GridField
from .layered import LayeredField as LayeredField
from .mesh import MeshField as MeshField
