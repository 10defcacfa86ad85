"""Statistics gathered inside the compiled run, at every saved frame, without storing tracks:
`fk.track(..., statistics=[...])` (each equals the same statistic computed from the stored
frames of the same run)."""

from .base import AbstractStatistic as AbstractStatistic, RunFacts as RunFacts, Tally as Tally
from .grid import GridCounts as GridCounts
from .oil_budget import OilBudget as OilBudget
from .polygons import PolygonStats as PolygonStats, read_polygons as read_polygons
