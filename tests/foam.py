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
    return (
        f"{len(rows)}\n(\n"
        + "\n".join(f"({a:.17g} {b:.17g} {c:.17g})" for a, b, c in np.asarray(rows, np.float64))
        + "\n)\n"
    )


def _scalars(values) -> str:
    return f"{len(values)}\n(\n" + "\n".join(f"{v:.17g}" for v in values) + "\n)\n"


def box_mesh(shape=(6, 5, 4), lo=(0.0, 0.0, 0.0), hi=(1.0, 1.0, 1.0), processor=(0, 1), split=0):
    """`(points, faces, owner, neighbour, patches, cell_centres, face_centres)` of a hexahedral box;
    `patches` maps `inlet` (x = lo), `outlet` (x = hi) and `walls` (the rest) to face ranges.
    `processor=(k, n)` keeps processor k's share of n slabs along x, as `decomposePar` leaves
    it: every patch listed (empty where the share has none), then its `procBoundary` patches.
    `split=m` writes every m-th internal face as two triangles, so the cells on both sides are
    polyhedra (seven faces), as snappyHexMesh and polyDualMesh leave them."""
    axes = [np.linspace(a, b, n + 1) for a, b, n in zip(lo, hi, shape)]
    rank, n = processor
    i0, i1 = shape[0] * rank // n, shape[0] * (rank + 1) // n
    axes[0] = axes[0][i0 : i1 + 1]
    nx, ny, nz = i1 - i0, shape[1], shape[2]
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
    if split:
        internal = [
            piece
            for k, (o, n_, f) in enumerate(internal)
            for piece in ([(o, n_, f[:3]), (o, n_, [f[0], f[2], f[3]])] if k % split == 0 else [(o, n_, f)])
        ]
    groups = {
        "inlet": sides["xmin"] if rank == 0 else [],
        "outlet": sides["xmax"] if rank == n - 1 else [],
        "walls": sum((sides[s] for s in ("ymin", "ymax", "zmin", "zmax")), []),
    }
    if rank > 0:
        groups[f"procBoundary{rank}to{rank - 1}"] = sides["xmin"]
    if rank < n - 1:
        groups[f"procBoundary{rank}to{rank + 1}"] = sides["xmax"]
    faces = [f for _, _, f in internal]
    owner = [o for o, _, _ in internal]
    neighbour = [n for _, n, _ in internal]
    patches = {}
    for name, group in groups.items():
        patches[name] = (len(faces), len(group))
        faces += [f for _, f in group]
        owner += [o for o, _ in group]
    centres = (
        np.stack(np.meshgrid(*[(a[1:] + a[:-1]) / 2 for a in axes], indexing="ij"), -1)
        .transpose(2, 1, 0, 3)
        .reshape(-1, 3)
    )
    return (
        points,
        faces,
        np.asarray(owner),
        np.asarray(neighbour),
        patches,
        centres,
        np.array([points[f].mean(axis=0) for f in faces]),
    )


def _write_mesh(folder: Path, mesh, processor=None) -> None:
    points, faces, owner, neighbour, patches = mesh[:5]
    _write(folder / "points", "vectorField", _vectors(points))
    _write(
        folder / "faces",
        "faceList",
        f"{len(faces)}\n(\n" + "\n".join(f"{len(f)}(" + " ".join(map(str, f)) + ")" for f in faces) + "\n)\n",
    )
    _write(folder / "owner", "labelList", f"{len(owner)}\n(\n" + "\n".join(map(str, owner)) + "\n)\n")
    _write(folder / "neighbour", "labelList", f"{len(neighbour)}\n(\n" + "\n".join(map(str, neighbour)) + "\n)\n")

    def entry(name, start, count):
        if name.startswith("procBoundary"):
            mine, theirs = name.removeprefix("procBoundary").split("to")
            kind = (
                f"processor;\n    matchTolerance 0.0001;\n    transform unknown;\n    myProcNo {mine};\n  "
                f"  neighbProcNo {theirs}"
            )
        else:
            kind = "wall" if name == "walls" else "patch"
        return f"{name}\n{{\n    type {kind};\n    nFaces {count};\n    startFace {start};\n}}\n"

    boundary = "".join(entry(name, start, count) for name, (start, count) in patches.items())
    _write(folder / "boundary", "polyBoundaryMesh", f"{len(patches)}\n(\n{boundary})\n")


def _write_fields(folder: Path, mesh, velocity, t, name_u="U") -> None:
    patches, centres, face_centres = mesh[4:]
    for name, cls, dims, values, text in (
        (name_u, "volVectorField", "[0 1 -1 0 0 0 0]", lambda x: velocity(t, x), _vectors),
        ("p", "volScalarField", "[0 2 -2 0 0 0 0]", lambda x: np.linalg.norm(x, axis=1), _scalars),
    ):
        kind = "vector" if text is _vectors else "scalar"

        def entry(patch, start, count):
            rule = "processor" if patch.startswith("procBoundary") else "calculated"
            return (
                f"    {patch}\n    {{\n        type {rule};\n        value nonuniform List<{kind}> "
                f"{text(values(face_centres[start : start + count]))};\n    }}\n"
            )

        patch_text = "".join(entry(patch, start, count) for patch, (start, count) in patches.items())
        _write(
            folder / name,
            cls,
            f"dimensions {dims};\ninternalField nonuniform List<{kind}> "
            f"{text(values(centres))};\nboundaryField\n{{\n{patch_text}}}\n",
        )


def write_case(
    root,
    velocity,
    times=(0.0, 0.5, 1.0),
    shape=(6, 5, 4),
    zero_holds_u=True,
    processors=1,
    split=0,
    name="U",
    application="icoFoam",
):
    """An OpenFOAM case at `root` whose `U` at time `t` is `velocity(t, x)` at the cell centres
    (and the boundary faces' centres); `p` is `|x|`. With `processors > 1` it is decomposed
    along x into `processor*/` directories, as `decomposePar` leaves it. Returns the root."""
    root = Path(root)
    _write(
        root / "system" / "controlDict",
        "dictionary",
        f"application {application};\nstartFrom startTime;\nstartTime 0;\nstopAt endTime;\nendTime "
        "1;\ndeltaT 0.1;\nwriteControl timeStep;\nwriteInterval 1;\nwriteFormat ascii;\n",
    )
    shares = [(root, box_mesh(shape, split=split))]
    if processors > 1:
        shares = [(root / f"processor{k}", box_mesh(shape, processor=(k, processors))) for k in range(processors)]
    for folder, mesh in shares:
        _write_mesh(folder / "constant" / "polyMesh", mesh)
        for t in times:
            if t == times[0] and not zero_holds_u:
                _write(
                    folder / f"{t:g}" / "p",
                    "volScalarField",
                    (
                        "dimensions [0 2 -2 0 0 0 0];\ninternalField uniform 0;\n"
                        'boundaryField\n{\n    ".*" { type zeroGradient; }\n}\n'
                    ),
                )
                continue
            _write_fields(folder / f"{t:g}", mesh, velocity, t, name)
    return root
