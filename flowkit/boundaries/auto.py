"""The boundary a field's own data implies: what the app does on every field unless told."""

import logging
from typing import cast

import equinox as eqx

from ..fields.base import AbstractField
from ..fields.mesh import AbstractMeshField, MeshField
from .base import AbstractBoundary, AbstractWallsConfig
from .box import Open, Reflective
from .mesh import MeshWalls
from .modes import wall_mode

_log = logging.getLogger("flowkit")


class Auto(AbstractWallsConfig):
    """Walls where the data has walls, openings where its flow leaves:

    - a mesh (CFD output): `MeshWalls(mode, open=...)`. Where the solver typed its patches
      (OpenFOAM's `wall` and `patch`; Exodus and CGNS side sets named `inlet`, `outlet`, `wall`,
      ...) its open patches are open; where it did not, the boundary faces the flow leaves
      through are (`outflow_faces`). Particles leaving get `OUT_OF_DOMAIN` and their exit time;
      every other face is a wall;
    - ocean and atmosphere data on the sphere: `Open`: particles leave a regional domain
      through its edges, and the field's own land beaches them;
    - any other field (closed-form flows, grids): `Reflective` on its box.
    """

    mode: str = eqx.field(static=True)

    def __init__(self, mode: str = "reflect"):
        self.mode = wall_mode(mode, ("reflect", "slip", "absorb", "stick"), "Auto: mode")

    def bind(self, field: AbstractField) -> AbstractBoundary:
        if field.spherical:
            return Open()
        if isinstance(field, AbstractMeshField):
            regions = cast(MeshField, field.as_mesh()).regions
            typed = {name: region.get("kind") for name, region in regions.items() if region.get("kind")}
            if not typed:
                return MeshWalls(self.mode, open=["outflow"]).bind(field)
            opens = [name for name, kind in typed.items() if kind == "open"]
            curved = [name for name in opens if "point" not in regions[name]]
            _log.info(
                "boundary: the solver's patch types: open %s, walls %s%s",
                opens,
                sorted(set(regions) - set(opens)),
                f"; {curved} curved: their faces open where the flow leaves" if curved else "",
            )
            planes = [name for name in opens if name not in curved]
            return MeshWalls(self.mode, open=planes + (["outflow"] if curved else [])).bind(field)
        return Reflective(field.bounds).bind(field)
