"""OpenFOAM cases written here as the plain-text dictionaries they are: a box of hexahedra whose
cell-centred `U` (and `p`) come from an analytic flow, with `inlet`, `outlet` and `walls` patches."""

from pathlib import Path

import numpy as np

_HEADER = """FoamFile
{{
    version     2.0;
    format      ascii;
    class       {cls};
    location    "{location}";
    object      {name};
}}
"""


def _write(path: Path, cls: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_HEADER.format(cls=cls, location=path.parent.name, name=path.name) + body)


def _vectors(rows) -> str:
    return f"{len(rows)}\n(\n" + "\n".join(f"({a:.17g} {b:.17g} {c:.17g})" for a, b, c in np.asarray(rows, np.float64)) + "\n)\n"


def _scalars(values) -> str:
    return f"{len(values)}\n(\n" + "\n".join(f"{v:.17g}" for v in values) + "\n)\n"


def box_mesh(shape=(6, 5, 4), lo=(0.0, 0.0, 0.0), hi=(1.0, 1.0, 1.0)):
    """`(points, faces, owner, neighbour, patches, cell_centres, face_centres)` of a hexahedral box;
    `patches` maps `inlet` (x = lo), `outlet` (x = hi) and `walls` (the rest) to face ranges."""
    nx, ny, nz = shape
    axes = [np.linspace(a, b, n + 1) for a, b, n in zip(lo, hi, shape)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), -1).transpose(2, 1, 0, 3).reshape(-1, 3)

    def p(i, j, k):
        return i + (nx + 1) * (j + (ny + 1) * k)

    def c(i, j, k):
        return i + nx * (j + ny * k)

    internal, sides = [], {name: [] for name in ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")}
    for k in range(nz):
        for j in range(ny):
            for i in range(nx + 1):
                face = [p(i, j, k), p(i, j + 1, k), p(i, j + 1, k + 1), p(i, j, k + 1)]  # normal +x
                if i == 0:
                    sides["xmin"].append((c(i, j, k), face[::-1]))
                elif i == nx:
                    sides["xmax"].append((c(i - 1, j, k), face))
                else:
                    internal.append((c(i - 1, j, k), c(i, j, k), face))
    for k in range(nz):
        for j in range(ny + 1):
            for i in range(nx):
                face = [p(i, j, k), p(i, j, k + 1), p(i + 1, j, k + 1), p(i + 1, j, k)]  # normal +y
                if j == 0:
                    sides["ymin"].append((c(i, j, k), face[::-1]))
                elif j == ny:
                    sides["ymax"].append((c(i, j - 1, k), face))
                else:
                    internal.append((c(i, j - 1, k), c(i, j, k), face))
    for k in range(nz + 1):
        for j in range(ny):
            for i in range(nx):
                face = [p(i, j, k), p(i + 1, j, k), p(i + 1, j + 1, k), p(i, j + 1, k)]  # normal +z
                if k == 0:
                    sides["zmin"].append((c(i, j, k), face[::-1]))
                elif k == nz:
                    sides["zmax"].append((c(i, j, k - 1), face))
                else:
                    internal.append((c(i, j, k - 1), c(i, j, k), face))
    internal.sort(key=lambda f: (f[0], f[1]))
    groups = {"inlet": sides["xmin"], "outlet": sides["xmax"], "walls": sum((sides[s] for s in ("ymin", "ymax", "zmin", "zmax")), [])}
    faces = [f for _, _, f in internal]
    owner = [o for o, _, _ in internal]
    neighbour = [n for _, n, _ in internal]
    patches = {}
    for name, group in groups.items():
        patches[name] = (len(faces), len(group))
        faces += [f for _, f in group]
        owner += [o for o, _ in group]
    faces = np.asarray(faces)
    centres = np.stack(np.meshgrid(*[(a[1:] + a[:-1]) / 2 for a in axes], indexing="ij"), -1).transpose(2, 1, 0, 3).reshape(-1, 3)
    return points, faces, np.asarray(owner), np.asarray(neighbour), patches, centres, points[faces].mean(axis=1)


def write_case(root, velocity, times=(0.0, 0.5, 1.0), shape=(6, 5, 4), zero_holds_u=True, decomposed=False):
    """An OpenFOAM case at `root` whose `U` at time `t` is `velocity(t, x)` at the cell centres
    (and the boundary faces' centres); `p` is `|x|`. Returns the root."""
    root = Path(root)
    points, faces, owner, neighbour, patches, centres, face_centres = box_mesh(shape)
    _write(root / "system" / "controlDict", "dictionary", "application icoFoam;\nstartFrom startTime;\nstartTime 0;\nstopAt endTime;\nendTime 1;\ndeltaT 0.1;\nwriteControl timeStep;\nwriteInterval 1;\nwriteFormat ascii;\n")
    mesh = root / "constant" / "polyMesh"
    _write(mesh / "points", "vectorField", _vectors(points))
    _write(mesh / "faces", "faceList", f"{len(faces)}\n(\n" + "\n".join("4(" + " ".join(map(str, f)) + ")" for f in faces) + "\n)\n")
    _write(mesh / "owner", "labelList", f"{len(owner)}\n(\n" + "\n".join(map(str, owner)) + "\n)\n")
    _write(mesh / "neighbour", "labelList", f"{len(neighbour)}\n(\n" + "\n".join(map(str, neighbour)) + "\n)\n")
    kinds = {"inlet": "patch", "outlet": "patch", "walls": "wall"}
    boundary = "".join(f"{name}\n{{\n    type {kinds[name]};\n    nFaces {count};\n    startFace {start};\n}}\n" for name, (start, count) in patches.items())
    _write(mesh / "boundary", "polyBoundaryMesh", f"{len(patches)}\n(\n{boundary})\n")
    for t in times:
        folder = root / f"{t:g}"
        if t == times[0] and not zero_holds_u:
            _write(folder / "p", "volScalarField", 'dimensions [0 2 -2 0 0 0 0];\ninternalField uniform 0;\nboundaryField\n{\n    ".*" { type zeroGradient; }\n}\n')
            continue
        for name, cls, dims, values, text in (
            ("U", "volVectorField", "[0 1 -1 0 0 0 0]", lambda x: velocity(t, x), _vectors),
            ("p", "volScalarField", "[0 2 -2 0 0 0 0]", lambda x: np.linalg.norm(x, axis=1), _scalars),
        ):
            kind = "vector" if text is _vectors else "scalar"
            patch_text = "".join(f"    {patch}\n    {{\n        type calculated;\n        value nonuniform List<{kind}> {text(values(face_centres[start : start + count]))};\n    }}\n" for patch, (start, count) in patches.items())
            _write(folder / name, cls, f"dimensions {dims};\ninternalField nonuniform List<{kind}> {text(values(centres))};\nboundaryField\n{{\n{patch_text}}}\n")
    return root
