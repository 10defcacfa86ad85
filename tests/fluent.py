"""Fluent cases (`.cas` + `.dat`) written as the ASCII sections they are: nodes, cells and faces
(hexadecimal ids, each face with the cells on its two sides) and cell-centred solution fields.
No Fluent writer comes with the `vtk` package; these follow Fluent's documented file format."""

from pathlib import Path

import numpy as np

# VTK's hexahedron faces, each ordered so that its right-hand normal points out of the cell
_HEX_FACES = [(0, 4, 7, 3), (1, 2, 6, 5), (0, 1, 5, 4), (3, 7, 6, 2), (0, 3, 2, 1), (4, 5, 6, 7)]
_X_VELOCITY = 111  # Fluent's solution variable ids (SV_U, SV_V, SV_W and SV_P)
_PRESSURE = 1


def hex_faces(hexes: np.ndarray):
    """`(faces (F, 4), c0 (F,), c1 (F,))` of a hexahedral mesh, ids 1-based and 0 for no cell:
    each face once, its nodes ordered so that the right-hand normal points out of `c0` into `c1`
    (out of the domain on the boundary, where `c1 == 0`): Fluent's convention, which VTK's reader
    relies on to order each hexahedron's nodes. Interior faces come first."""
    seen = {}
    for cell, nodes in enumerate(hexes, start=1):
        for face in _HEX_FACES:
            ordered = nodes[list(face)]
            key = tuple(sorted(ordered))
            if key in seen:  # met again from the other side
                seen[key] = (*seen[key][:2], cell)
            else:  # ordered out of this first cell
                seen[key] = (ordered, cell, 0)
    faces, c0, c1 = (np.array(column) for column in zip(*seen.values()))
    faces = faces + 1
    order = np.argsort(c1 == 0, kind="stable")
    return faces[order], c0[order], c1[order]


def write_fluent(
    path,
    points: np.ndarray,
    hexes: np.ndarray,
    velocity: np.ndarray,
    zones: np.ndarray | None = None,
    pressure: np.ndarray | None = None,
) -> Path:
    """`path` (`.cas`) and the `.dat` beside it: hexahedra on `points`, `velocity` `(C, 3)` per
    cell as Fluent's X/Y/Z_VELOCITY, cells in the cell zones `zones` (`(C,)` of 0, 1, ...;
    cells must be sorted by zone). Returns the case path."""
    path = Path(path)
    zones = np.zeros(len(hexes), int) if zones is None else np.asarray(zones)
    faces, c0, c1 = hex_faces(hexes)
    interior = int(np.sum(c1 > 0))
    cell_zone = lambda k: 10 + k  # noqa: E731
    lines = ['(0 "flowkit test case: hexahedra, written as Fluent ASCII sections")', "(2 3)"]
    lines.append(f"(10 (0 1 {len(points):x} 0 3))")
    lines.append(f"(10 (1 1 {len(points):x} 1 3)(")
    lines += [" ".join(f"{v:.17g}" for v in p) for p in points]
    lines.append("))")
    lines.append(f"(12 (0 1 {len(hexes):x} 0))")
    for k in np.unique(zones):
        ids = np.flatnonzero(zones == k) + 1
        lines.append(f"(12 ({cell_zone(k):x} {ids[0]:x} {ids[-1]:x} 1 4))")
    lines.append(f"(13 (0 1 {len(faces):x} 0))")
    for zone, bc, rows in ((2, 2, slice(0, interior)), (3, 3, slice(interior, None))):  # interior, wall
        first, last = rows.indices(len(faces))[:2]
        lines.append(f"(13 ({zone:x} {first + 1:x} {last:x} {bc:x} 4)(")
        lines += [" ".join(f"{v:x}" for v in (*f, a, b)) for f, a, b in zip(faces[rows], c0[rows], c1[rows])]
        lines.append("))")
    lines += [f"(45 ({cell_zone(k)} fluid fluid-{k})())" for k in np.unique(zones)]
    lines += ["(45 (2 interior default-interior)())", "(45 (3 wall walls)())"]
    path.write_text("\n".join(lines) + "\n")
    data = ['(0 "flowkit test data")', f"(33 ({len(hexes)} {len(faces)} {len(points)}))"]
    fields = [(_X_VELOCITY + axis, velocity[:, axis]) for axis in range(3)]
    if pressure is not None:
        fields.append((_PRESSURE, pressure))
    for variable, values in fields:
        for k in np.unique(zones):
            ids = np.flatnonzero(zones == k)
            data.append(f"(300 ({variable} {cell_zone(k)} 1 0 0 {ids[0] + 1} {ids[-1] + 1})(")
            data += [f"{v:.17g}" for v in values[ids]]
            data.append("))")
    path.with_suffix(".dat").write_text("\n".join(data) + "\n")
    return path
