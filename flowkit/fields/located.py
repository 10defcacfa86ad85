"""Fields whose points are located in a mesh of linear cells (`MeshField`, `CurvilinearField`)."""

import abc

from .._custom_types import Positions, TimeLike
from .base import AbstractField, Hints


class AbstractMeshField(AbstractField):
    """A field whose points are located in a mesh of linear cells, with hints in its cells:
    what mesh walls, inlets on a solver's patches, seeding inside cells and deposition maps
    need of it is that mesh's geometry, `as_mesh()`. Its positions need no folding after a
    step: the mesh's walls and boundaries keep them."""

    @abc.abstractmethod
    def as_mesh(self) -> "AbstractMeshField":
        """The mesh this field's points are located in: a `MeshField` (which is its own)."""

    def canonical_batch(self, x: Positions) -> Positions:
        return x

    def settle_batch(
        self, t: TimeLike, x: Positions, hint: Hints | None, reflect: bool = False
    ) -> tuple[Positions, Hints | None]:
        return x, hint
