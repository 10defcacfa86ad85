"""Oil: its properties from NOAA's ADIOS records, the weathering schemes, and spills as they
happen (the particle model is `flowkit.particles.Oil`, its budget `flowkit.statistics.OilBudget`)."""

from . import records as records, weathering as weathering
from .properties import OilType as OilType
from .release import Spill as Spill, spill as spill
