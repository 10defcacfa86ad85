"""Sample data generated from analytic flows, so every example runs from the project alone."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from .._custom_types import Files, PathLike, TimesLike
from ..fields.analytic import DoubleGyre
from ..fields.grid import GridField
from ._cache import cache_root, generated
from .ocean import (
    ocean_field as ocean_field,
    sample_ocean as sample_ocean,
    sample_wind as sample_wind,
    still_sea as still_sea,
    write_ocean_sample as write_ocean_sample,
    write_wind_sample as write_wind_sample,
)


def double_gyre_grid(
    nx: int = 201, ny: int = 101, t_end: float = 20.0, nt: int = 101, dtype: DTypeLike = "float32"
) -> GridField:
    """The double gyre (`fk.fields.DoubleGyre`) sampled on an `nx × ny` grid over [0,2]×[0,1]
    at `nt` times in `[0, t_end]`: a gridded time series of the kind ocean models write."""
    axes = [np.linspace(0.0, 2.0, nx), np.linspace(0.0, 1.0, ny)]
    return GridField.from_function(DoubleGyre(), axes, times=np.linspace(0.0, t_end, nt), dtype=dtype)


def grid_field(
    path: PathLike | None = None,
    dtype: DTypeLike = "float32",
    interpolation: str = "linear",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
):
    """A gridded field from an `.npz` file (`flowkit.io.load_grid_npz`, which may stream it in
    time windows), or the double-gyre sample (`double_gyre_grid`) when `path` is None (with
    `stream=True` written once into the cache directory and streamed from there)."""
    from ..io.npz import load_grid_npz, save_grid_npz

    if path is None:
        if not stream:
            return double_gyre_grid(dtype=dtype)
        folder = generated(
            cache_root(None) / "double_gyre_v1",
            lambda f: (
                f.mkdir(parents=True) or save_grid_npz(f / "double_gyre_v1.npz", double_gyre_grid(dtype="float64"))
            ),
        )
        path = folder / "double_gyre_v1.npz"
    return load_grid_npz(
        path, dtype=dtype, interpolation=interpolation, stream=stream, max_device_bytes=max_device_bytes
    )


def double_gyre_vti_series(folder: PathLike, nx: int = 101, ny: int = 51, times: TimesLike | None = None) -> Path:
    """Write the double gyre as a `.pvd` series of `.vti` files (VTK's own writer, ParaView's
    layout `name/name_0_K.vti`, 3-component `velocity` with w = 0, `TimeValue` field data),
    evaluated in float64. Returns the `.pvd` path."""
    import jax
    import jax.numpy as jnp

    from ..io.vtk import write_pvd, write_vti

    folder = Path(folder)
    (folder / "double_gyre").mkdir(parents=True, exist_ok=True)
    times = np.linspace(0.0, 5.0, 11) if times is None else np.asarray(times, dtype=np.float64)
    mesh = np.stack(np.meshgrid(np.linspace(0.0, 2.0, nx), np.linspace(0.0, 1.0, ny), indexing="ij"), axis=-1)
    with jax.enable_x64(True):  # float64 (parameters too) here only, without switching the process
        flow = jax.jit(jax.vmap(DoubleGyre(), in_axes=(None, 0)))
        velocities = [
            np.asarray(flow(jnp.asarray(t, jnp.float64), jnp.asarray(mesh.reshape(-1, 2), jnp.float64))) for t in times
        ]
    files = []
    for k, t in enumerate(times):
        uv = velocities[k].reshape(nx, ny, 2)
        velocity = np.concatenate([uv, np.zeros((nx, ny, 1))], axis=-1)
        files.append(
            write_vti(
                folder / "double_gyre" / f"double_gyre_0_{k}.vti",
                {"velocity": velocity},
                (0.0, 0.0),
                (2.0 / (nx - 1), 1.0 / (ny - 1)),
                time=t,
            )
        )
    return write_pvd(folder / "double_gyre.pvd", files, times)


def jittered_lattice(shape: Sequence[int], extent: Sequence[float], jitter: float = 0.25, seed: int = 0) -> np.ndarray:
    """`(prod(shape), dim)` points of a regular lattice over the box `[0, extent]` (the first
    axis slowest), each moved by up to `jitter` of the spacing per axis; points on the box's
    faces move only within them, so the box keeps its planar walls."""
    shape = tuple(int(n) for n in shape)
    if min(shape) < 2 or len(extent) != len(shape):
        raise ValueError(
            f"jittered_lattice: need >= 2 points per axis and one extent per axis, got shape {shape} "
            f"and extent {extent}"
        )
    if not 0 <= jitter < 0.5:
        raise ValueError(f"jittered_lattice: jitter must lie in [0, 0.5) (a fraction of the spacing), got {jitter}")
    rng = np.random.default_rng(seed)
    index = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), axis=-1).reshape(-1, len(shape))
    interior = (index > 0) & (index < np.asarray(shape) - 1)  # per axis: free to move along it
    offsets = rng.uniform(-jitter, jitter, size=index.shape) * interior
    return (index + offsets) * (np.asarray(extent, dtype=np.float64) / (np.asarray(shape) - 1))


def jittered_tet_box(
    shape: Sequence[int] = (25, 25, 25), extent: Sequence[float] = (1.0, 1.0, 1.0), jitter: float = 0.25, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A genuinely unstructured tetrahedral mesh of the box `[0, extent]`: `(points (P, 3), tets (C, 4))`.

    A lattice of `shape` points is jittered by up to `jitter` of the spacing per axis (points on
    a face move only within it, on an edge only along it, corners stay), then every lattice
    hexahedron is split into five tetrahedra, mirrored in alternate hexahedra so that the faces
    match (a conforming mesh: each interior face is shared by exactly two cells). Every
    tetrahedron is positively oriented. `P = prod(shape)`, `C = 5 prod(shape - 1)`.
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) != 3:
        raise ValueError(f"jittered_tet_box: shape needs 3 entries, got {shape}")
    points = jittered_lattice(shape, extent, jitter, seed)
    ids = np.arange(len(points)).reshape(shape)
    i, j, k = (a.ravel() for a in np.meshgrid(*[np.arange(n - 1) for n in shape], indexing="ij"))
    corner = lambda a, b, c: ids[i + a, j + b, k + c]  # noqa: E731
    even = (i + j + k) % 2 == 0
    # the hexahedron's corners whose global index sum is even form its central tetrahedron
    corners = {(a, b, c): corner(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)}
    blocks = []
    for parity in (0, 1):
        centre = [abc for abc in corners if sum(abc) % 2 == parity]
        outer = [abc for abc in corners if sum(abc) % 2 != parity]
        rows = even if parity == 0 else ~even
        blocks.append(np.stack([corners[abc][rows] for abc in centre], axis=1))
        for abc in outer:
            near = [tuple(v ^ (axis == m) for m, v in enumerate(abc)) for axis in range(3)]
            blocks.append(np.stack([corners[abc][rows]] + [corners[n][rows] for n in near], axis=1))
    tets = np.concatenate(blocks)
    edges = np.stack([points[tets[:, m]] - points[tets[:, 0]] for m in (1, 2, 3)], axis=1)
    flip = np.linalg.det(edges) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return points, tets


def lattice_hexahedra(shape: Sequence[int], wrap_first: bool = False) -> np.ndarray:
    """`(H, 8)` node ids, in VTK's hexahedron order, of the cells of a structured lattice of
    `shape` points numbered with the first axis slowest; `wrap_first` closes the first axis
    into a ring (its last cells join node layer 0)."""
    ni, nj, nk = (int(n) for n in shape)
    ids = np.arange(ni * nj * nk).reshape(ni, nj, nk)
    if wrap_first:
        ids = np.concatenate([ids, ids[:1]], axis=0)
    i, j, k = (
        a.ravel() for a in np.meshgrid(np.arange(ids.shape[0] - 1), np.arange(nj - 1), np.arange(nk - 1), indexing="ij")
    )
    corners = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
    return np.stack([ids[i + a, j + b, k + c] for a, b, c in corners], axis=1)


def twisted_annulus(
    n_theta: int = 96,
    n_r: int = 12,
    n_z: int = 16,
    radii: tuple[float, float] = (1.0, 2.0),
    height: float = 1.0,
    twist: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """A hexahedral O-grid of an annulus around the z axis whose layers twist by `twist`
    radians over the height: `(points (P, 3), hexes (H, 8))`. The cells are curved (their side
    faces are not planar), as in a turbomachinery or rotating-disk CFD mesh, so locating a point
    in them needs the isoparametric (Newton) inversion."""
    theta = np.linspace(0.0, 2 * np.pi, n_theta, endpoint=False)
    r = np.linspace(radii[0], radii[1], n_r)
    z = np.linspace(0.0, height, n_z)
    t, rr, zz = np.meshgrid(theta, r, z, indexing="ij")
    angle = t + twist * zz / height
    points = np.stack([rr * np.cos(angle), rr * np.sin(angle), zz], axis=-1).reshape(-1, 3)
    # ids along theta slowest, then r, then z; VTK order needs a right-handed (theta, r, z)
    # frame flipped to (r, theta, z): swap corners so every cell has positive volume
    hexes = lattice_hexahedra((n_theta, n_r, n_z), wrap_first=True)
    return points, hexes[:, [0, 3, 2, 1, 4, 7, 6, 5]]


def curved_channel(
    shape: Sequence[int] = (48, 20, 12), extent: Sequence[float] = (4.0, 1.0, 1.0), bump: float = 0.25
) -> np.ndarray:
    """`(ni, nj, nk, 3)` node coordinates of a curvilinear grid: a channel along x whose floor
    rises in a smooth bump mid-way, the grid lines following it (the layout of a structured CFD
    grid, `.vts` or legacy STRUCTURED_GRID)."""
    u, v, w = np.meshgrid(*[np.linspace(0.0, 1.0, n) for n in shape], indexing="ij")
    floor = bump * extent[1] * np.exp(-(((u - 0.5) * extent[0] / 0.6) ** 2))
    x = u * extent[0]
    y = floor + v * (extent[1] - floor)
    z = w * extent[2] + 0.05 * np.sin(np.pi * v) * np.sin(2 * np.pi * u) * extent[2]
    return np.stack([x, y, z], axis=-1)


def write_vts(path: PathLike, grid_points: np.ndarray, point_arrays: dict) -> Path:
    """Write a curvilinear grid `(ni, nj, nk, 3)` with point arrays `{name: (ni, nj, nk[, c])}` as a
    `.vts` (VTK's XML writer, zlib)."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkStructuredGrid
    from vtkmodules.vtkIOXML import vtkXMLStructuredGridWriter

    from ..io.vtk import write_xml

    path = Path(path)
    ni, nj, nk = grid_points.shape[:3]
    grid = vtkStructuredGrid()
    grid.SetDimensions(ni, nj, nk)

    def flat(a):  # VTK: i fastest
        return np.ascontiguousarray(np.asarray(a).transpose(2, 1, 0, *range(3, np.ndim(a))).reshape(ni * nj * nk, -1))

    vtk_points = vtkPoints()
    vtk_points.SetData(numpy_to_vtk(flat(grid_points), deep=True))
    grid.SetPoints(vtk_points)
    for name, values in point_arrays.items():
        array = numpy_to_vtk(flat(values), deep=True)
        array.SetName(name)
        grid.GetPointData().AddArray(array)
    writer = vtkXMLStructuredGridWriter()
    writer.SetCompressorTypeToZLib()
    return write_xml(writer, grid, path)


def hex_wedge_box(
    shape: Sequence[int] = (31, 16, 13),
    extent: Sequence[float] = (2.0, 1.0, 1.0),
    jitter: float = 0.2,
    seed: int = 0,
    columns: str = "alternate",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A conforming mesh of the box of jittered hexahedra, with every other column of cells
    (along z; `columns="all"`: every column, a mesh of wedges only) split into two wedges.
    `(points, cells (-1 padded), VTK cell types)`."""
    from ..fields.cells import merge_cells

    if columns not in ("alternate", "all"):
        raise ValueError(f"hex_wedge_box: columns must be 'alternate' or 'all', got {columns!r}")
    points = jittered_lattice(shape, extent, jitter, seed)
    hexes = lattice_hexahedra(shape)
    i, j = (
        a.ravel()
        for a in np.meshgrid(np.arange(shape[0] - 1), np.arange(shape[1] - 1), np.arange(shape[2] - 1), indexing="ij")[
            :2
        ]
    )
    column = ((i + j) % 2 == 1) | (columns == "all")
    w = hexes[column]
    # VTK's wedge: the right-hand normal of (0, 1, 2) points away from (3, 4, 5)
    wedges = np.concatenate([w[:, [0, 2, 1, 4, 6, 5]], w[:, [0, 3, 2, 4, 7, 6]]])
    return (points, *merge_cells([(12, hexes[~column]), (13, wedges)]))


HEXAHEDRON_FACES = ((0, 3, 7, 4), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7))
"""A VTK hexahedron's faces (node slots): x min, x max, y min, y max, z min, z max on a lattice."""


def hexahedra_as_pyramids(points: np.ndarray, hexes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each hexahedron split into six pyramids around its centre, added as a node:
    `(points with the centres appended, (6, H, 5) pyramids in VTK's order)`, the pyramids on
    the faces in `HEXAHEDRON_FACES`' order, each base turned so its right-hand normal points to
    the apex."""
    centres = points[hexes].mean(axis=1)
    apex = len(points) + np.arange(len(hexes))
    points = np.concatenate([points, centres])
    pyramids = []
    for face in HEXAHEDRON_FACES:
        base = hexes[:, face]
        normal = np.cross(points[base[:, 1]] - points[base[:, 0]], points[base[:, 3]] - points[base[:, 0]])
        toward = np.sum(normal * (centres - points[base[:, 0]]), axis=1) > 0
        base = np.where(toward[:, None], base, base[:, ::-1])
        pyramids.append(np.concatenate([base, apex[:, None]], axis=1))
    return points, np.stack(pyramids)


def pyramid_box(
    shape: Sequence[int] = (31, 16, 13), extent: Sequence[float] = (2.0, 1.0, 1.0), jitter: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A conforming mesh of the box of pyramids only: jittered hexahedra, each split into six
    around its centre (`hexahedra_as_pyramids`). `(points, cells, VTK cell types)`."""
    points, pyramids = hexahedra_as_pyramids(jittered_lattice(shape, extent, jitter, seed), lattice_hexahedra(shape))
    cells = pyramids.reshape(-1, 5)
    return points, cells, np.full(len(cells), 14)


def cellular_flow_vtu_series(
    folder: PathLike,
    shape: Sequence[int] = (25, 25, 25),
    extent: Sequence[float] = (1.0, 1.0, 1.0),
    times: TimesLike | None = None,
    jitter: float = 0.25,
    seed: int = 0,
    extra_arrays: bool = True,
    drift: float = 0.0,
) -> Path:
    """Write `fk.fields.CellularFlow` (plus a uniform `drift` along x, which carries particles
    out through the box's end at x max) on a `jittered_tet_box` mesh as ParaView writes a CFD time
    series: a `.pvd` collection of zlib-compressed `.vtu` files (`name/name_0_K.vtu`, VTK's own
    writer, `TimeValue` field data), point data `velocity` (float32) and, with `extra_arrays`,
    a scalar `p` (float32, the kinetic energy `|u|²/2`). Returns the `.pvd` path."""
    import jax
    import jax.numpy as jnp

    from ..fields.analytic import CellularFlow
    from ..io.vtk import write_pvd, write_vtu

    folder = Path(folder)
    name = folder.name or "cellular"
    (folder / name).mkdir(parents=True, exist_ok=True)
    times = np.linspace(0.0, 2.0, 21) if times is None else np.asarray(times, dtype=np.float64)
    points, tets = jittered_tet_box(shape, extent, jitter, seed)
    points = points.astype(np.float32)
    with jax.enable_x64(True):  # float64 (parameters too) here only, without switching the process
        flow = jax.jit(jax.vmap(CellularFlow(extent), in_axes=(None, 0)))
        velocities = [np.asarray(flow(jnp.asarray(t, jnp.float64), jnp.asarray(points, jnp.float64))) for t in times]
    velocities = [velocity + np.array([drift, 0.0, 0.0]) for velocity in velocities]
    files = []
    for k, (t, velocity) in enumerate(zip(times, velocities)):
        arrays = {"velocity": velocity.astype(np.float32)}
        if extra_arrays:
            arrays["p"] = (0.5 * np.sum(velocity**2, axis=1)).astype(np.float32)
        files.append(
            write_vtu(folder / name / f"{name}_0_{k}.vtu", points, tets, np.full(len(tets), 10), arrays, time=t)
        )
    return write_pvd(folder / f"{name}.pvd", files, times)


def pipe_mesh(
    n_axial: int = 41, n_across: int = 13, length: float = 4.0, radius: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """A tetrahedral mesh of a circular pipe along x, `[0, length] × disc(radius)`: `(points, tets)`.

    A `jittered_tet_box` lattice (no jitter) of the square `[-1, 1]²` cross-section is mapped
    onto the disc by the elliptical grid map `(u, v) -> (u sqrt(1 - v²/2), v sqrt(1 - u²/2))`,
    so the square's edges land on the circle: the pipe wall is the mesh boundary, and the inlet
    (x = 0) and outlet (x = length) are flat discs of triangles.
    """
    points, tets = jittered_tet_box((n_axial, n_across, n_across), (length, 2.0, 2.0), jitter=0.0)
    u, v = points[:, 1] - 1.0, points[:, 2] - 1.0
    points = np.stack([points[:, 0], radius * u * np.sqrt(1 - v**2 / 2), radius * v * np.sqrt(1 - u**2 / 2)], axis=1)
    return points, tets


def poiseuille(points: np.ndarray, radius: float = 0.5, speed: float = 1.0) -> np.ndarray:
    """Laminar pipe flow along x, `u = speed (1 - r²/radius²)`, at `(P, 3)` points (zero on the wall)."""
    r2 = points[:, 1] ** 2 + points[:, 2] ** 2
    velocity = np.zeros_like(points, dtype=np.float64)
    velocity[:, 0] = speed * np.clip(1 - r2 / radius**2, 0, None)
    return velocity


def sample_vtk(cache_dir: PathLike | None = None) -> Path:
    """The embedded sample CFD data set, generated on first use into a cache directory
    (`$FLOWKIT_DATA`, else `~/.cache/flowkit/datasets`): `CellularFlow` on a 21×21×21-point
    jittered tetrahedral mesh (40 000 tetrahedra) at 21 times over one period, `t ∈ [0, 2]`,
    as a `.pvd` of compressed `.vtu` files. Returns the `.pvd` path."""
    folder = generated(
        cache_root(cache_dir) / "cellular_box_v1",
        lambda f: cellular_flow_vtu_series(f, shape=(21, 21, 21), times=np.linspace(0.0, 2.0, 21)),
    )
    return folder / "cellular_box_v1.pvd"


def sample_pipe(cache_dir: PathLike | None = None) -> Path:
    """The embedded flow-through sample: Poiseuille flow (`poiseuille`, peak speed 1) in a pipe of
    radius 0.5 and length 4 along x (`pipe_mesh`, 41 × 13 × 13 points, 28 800 tetrahedra), one
    steady `.vtu` written by VTK's writer, generated on first use into the cache directory.
    Inlet: the side `xmin`, outlet: `xmax`, the rest is wall."""
    from ..io.vtk import write_vtu

    def write(folder):
        folder.mkdir(parents=True)
        points, tets = pipe_mesh()
        write_vtu(
            folder / "pipe_v1.vtu",
            points,
            tets,
            np.full(len(tets), 10),
            {"velocity": poiseuille(points).astype(np.float32)},
        )

    return generated(cache_root(cache_dir) / "pipe_v1", write) / "pipe_v1.vtu"


SAMPLES = {"cellular_box": sample_vtk, "pipe": sample_pipe}


def vtk_field(
    path: Files | None = None,
    velocity: str | None = None,
    times: TimesLike | None = None,
    *,
    dataset: str = "cellular_box",
    sample: Sequence[str] | None = None,
    cell_data: str = "points",
    allow_nonfinite: bool = False,
    dtype: DTypeLike = "float32",
    stream: bool | None = None,
    max_device_bytes: int | None = None,
):
    """A field read from VTK files (`flowkit.io.read`: VTK files and every solver format it
    takes), or when `path` is None from the embedded sample `dataset` (`cellular_box`:
    `sample_vtk`; `pipe`: `sample_pipe`), generated on first use."""
    from ..io.read import read

    if path is None:
        if dataset not in SAMPLES:
            raise ValueError(f"dataset must be one of {sorted(SAMPLES)}, got {dataset!r}")
        path = SAMPLES[dataset]()
    return read(
        path,
        velocity,
        times,
        sample=sample,
        cell_data=cell_data,
        allow_nonfinite=allow_nonfinite,
        dtype=dtype,
        stream=stream,
        max_device_bytes=max_device_bytes,
    )
