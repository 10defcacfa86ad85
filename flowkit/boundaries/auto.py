"""The boundary a field's own data implies: what the app does on every field unless told."""

import equinox as eqx

from ..fields.mesh import AbstractMeshField
from .base import AbstractBoundary, AbstractBoundaryConfig
from .box import Open, Reflective
from .mesh import MeshWalls
from .modes import wall_mode


class Auto(AbstractBoundaryConfig):
    """Walls where the data has walls, openings where its flow leaves:

    - a mesh (CFD output): `MeshWalls(mode, open=["outflow"])`: the boundary faces the flow
      leaves through are open (particles there leave, `OUT_OF_DOMAIN`, with their exit time),
      the rest are walls (logged with the area of each);
    - ocean and atmosphere data on the sphere: `Open`: particles leave a regional domain
      through its edges, and the field's own land beaches them;
    - any other field (closed-form flows, grids): `Reflective` on its box.
    """

    mode: str = eqx.field(static=True)

    def __init__(self, mode: str = "reflect"):
        self.mode = wall_mode(mode, ("reflect", "slip", "absorb", "stick"), "Auto: mode")

    def bind(self, field) -> AbstractBoundary:
        if field.spherical:
            return Open()
        if isinstance(field, AbstractMeshField):
            return MeshWalls(self.mode, open=["outflow"]).bind(field)
        return Reflective(field.bounds).bind(field)
