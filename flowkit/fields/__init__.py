"""Velocity fields: closed-form flows and gridded data."""

from .analytic import (
    ABCFlow as ABCFlow,
    AbstractAnalyticField as AbstractAnalyticField,
    Analytic as Analytic,
    DoubleGyre as DoubleGyre,
    SolidBodyRotation as SolidBodyRotation,
    TaylorGreen as TaylorGreen,
    Uniform as Uniform,
)
from .base import AbstractField as AbstractField
from .grid import GridField as GridField
