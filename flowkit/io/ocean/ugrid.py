"""Unstructured ocean models in NetCDF (the UGRID conventions: FVCOM, SCHISM, ADCIRC, Delft3D-FM)
read into a `LayeredField` over the model's own triangles and quadrilaterals, on the host.

- The mesh: the variable whose `cf_role` is `mesh_topology` (the 2-D one, beside Delft3D-FM's
  1-D networks) names the node coordinates and the face-node connectivity (its `start_index`;
  a fill value or NaN pads a face of fewer corners in a mixed mesh). Delft3D-FM's pentagons and
  hexagons are cut into triangles from their first corner. FVCOM files without it are read by
  FVCOM's names (`nv`, `lon`/`lat`). Node coordinates in degrees are tracked on the sphere; an FVCOM Cartesian run,
  whose `lon`/`lat` are all 0, in the metres of its `x`/`y`.
- The velocity: by `standard_name`, else by each model's names (FVCOM `u`, `v`, `ww`; SCHISM
  `horizontalVelX`, `horizontalVelY`, `verticalVelocity`, or v10's `hvel` pairs (its 2-D
  output's depth-averaged `dahv` pairs where there is no `hvel`); ADCIRC
  `u-vel`, `v-vel`; Delft3D-FM `mesh2d_ucx`, `mesh2d_ucy`, `mesh2d_ucz`; the depth-averaged
  `ua`, `va` and `depthAverageVelX`, `depthAverageVelY`). Of two variables of one meaning (a
  3-D run's layer velocity and its depth average), the one on levels is taken. Values on faces
  (FVCOM's element centres) are averaged to the nodes, each face weighted by its area (as
  OceanTracker does), since the mesh path interpolates node values.
- The vertical: sigma layers (FVCOM's `siglay`, Delft3D-FM's `mesh2d_layer_sigma`: standard
  name `ocean_sigma_coordinate`; a level lies `-sigma` times the water column below the free
  surface, the column `h + zeta`, or Delft3D-FM's `mesh2d_waterdepth`), Delft3D-FM's z-layers
  (`mesh2d_layer_z`, heights below its water level `mesh2d_s1`), SCHISM's `zCoordinates` (v5.10's split
  output) or `zcor` (v10's combined `schout_*.nc`) per node and time (levels below the sea
  floor, NaN or under `node_bottom_index`, take the deepest wet level's values). A velocity
  without levels is depth-averaged: positions are `(x, y)`.
- Files holding different variables of the same times (SCHISM's `out2d_1.nc`,
  `horizontalVelX_1.nc`, `zCoordinates_1.nc`) are joined; files of consecutive times make the
  series.

The coast is the mesh's boundary: a particle that reaches it leaves the mesh (`OUT_OF_DOMAIN`).
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import STANDARD, InMetresPerSecond, attr, component, where
from ..cf_times import time_axis
from ..checks import check_velocity, named
from ..series import same_grid
from .ugrid_vertical import levels

_log = logging.getLogger("flowkit")

_MODEL_NAMES = {
    "u": ("u-vel", "horizontalvelx", "hvel", "dahv", "mesh2d_ucx", "ua", "depthaveragevelx", "mesh2d_ucxa"),
    "v": ("v-vel", "horizontalvely", "mesh2d_ucy", "va", "depthaveragevely", "mesh2d_ucya"),
    "w": ("ww", "verticalvelocity", "mesh2d_ucz"),
}


def detect(datasets: list) -> bool:
    """Whether one of `datasets` holds an unstructured mesh: a UGRID `mesh_topology`, or FVCOM's `nv`."""
    return any(is_ugrid(ds) for ds in datasets)


def is_ugrid(ds) -> bool:
    """Whether `ds` holds an unstructured mesh: a UGRID `mesh_topology`, or FVCOM's `nv`."""
    return _topology(ds) is not None or ("nv" in ds.variables and "nele" in ds.dims)


def build(
    datasets: list, u: str | None = None, v: str | None = None, w: str | None = None, *, dtype: DTypeLike = "float32"
) -> LayeredField:
    """A `LayeredField` from the files of an unstructured model (see the module docstring):
    `datasets` opened lazily, in any order. `u`, `v`, `w` name the velocity variables.

    **Raises:** `ValueError` naming the file and the variable for a missing mesh variable or
    velocity, a connectivity that points past the nodes, levels it cannot place.
    """
    joined = _joined(datasets)
    first = joined[0]
    source = where(first)
    points, cells, spherical, node_dim, face_dim = _mesh(first)
    same_grid(joined, _mesh_variables(first), "the files of an unstructured model")
    u_name = _component(first, "u", u)
    pair = first[u_name].ndim >= 3 and first.sizes[first[u_name].dims[-1]] == 2  # SCHISM's hvel: (time, node, level, 2)
    names = [u_name] if pair else [u_name, _component(first, "v", v)]
    time_dim = "time" if "time" in first[u_name].dims else None
    level_dim = next(
        (d for d in first[u_name].dims if d not in (node_dim, face_dim, time_dim) and first.sizes[d] > 2), None
    )
    w_name = _component(first, "w", w, first[u_name].dims) if level_dim is not None or w is not None else None
    _, times, origin = time_axis(joined, time_dim)
    weights = _face_to_node(points, cells)
    faced = face_dim in first[u_name].dims  # finite-volume values: each face's centre joins the mesh
    extend = _with_centres(cells, len(points)) if faced else (lambda values: values)
    if w_name is not None and level_dim is not None:
        joined = [_on_layers(ds, w_name, level_dim) for ds in joined]

    in_mps = InMetresPerSecond()

    def read(name, comp=None, speed=False):  # (T, K, P) float64 on the nodes (then the faces' centres where faced)
        parts = []  # a speed is converted to m/s by each file's own units, each step checked before averaging
        for ds in joined:
            var = ds[name] if comp is None else ds[name].isel({ds[name].dims[-1]: comp})
            order = [d for d in (time_dim, level_dim) if d in var.dims] + [
                d for d in var.dims if d not in (time_dim, level_dim)
            ]
            array = np.asarray(var.transpose(*order).values, np.float64)
            if time_dim not in var.dims:
                array = array[None]
            if level_dim not in var.dims:
                array = array[:, None]
            if speed:
                for k, values in enumerate(array):
                    check_velocity(values, where(ds), repr(name), sum(len(p) for p in parts) + k)
                array = in_mps(ds, name, array)
            horizontal = order[-1]
            if horizontal == face_dim:  # the nodes' area-weighted mean, and each face's own value at its centre
                on_nodes = _on_nodes(array, weights)
                array = np.concatenate([on_nodes, np.nan_to_num(array)], axis=-1) if faced else on_nodes
            elif array.shape[-1] == len(points):
                array = extend(array)
            else:
                raise ValueError(
                    f"{where(ds)}: {name!r} has {array.shape[-1]} values along {horizontal!r}, not one per "
                    f"node ({len(points)}) or face ({len(cells)})"
                )
            parts.append(array)
        return np.concatenate(parts)

    if pair:
        components = [read(u_name, 0, speed=True), read(u_name, 1, speed=True)]
    else:
        components = [read(n, speed=True) for n in names]
    if w_name is not None and level_dim is not None:
        components.append(-read(w_name, speed=True))  # upward in the files, positive down here
    velocity = np.moveaxis(np.stack(components, axis=-1), 1, 2)  # (T, P, K, C)
    depths, velocity, water, vertical = levels(first, read, velocity, level_dim, len(points), extend)
    on_faces = (
        " on faces, each face's value at its centre (the mesh fanned from the centres), the nodes the faces' mean"
    )
    place = "degrees" if spherical else "metres"
    _log.info(
        "UGRID: %s: %d nodes, %d faces (%s), %s, velocity %s%s, %d time steps",
        *(source, len(points), len(cells), place, vertical, "+".join(names), on_faces if faced else "", len(depths)),
    )
    field = LayeredField.from_arrays(
        np.concatenate([points, _centres(first, points, cells, spherical)]) if faced else points,
        _centre_fans(cells, len(points)) if faced else _fanned(cells),
        depths,
        velocity,
        water,
        times=times if times is not None and len(times) > 1 else None,
        spherical=spherical,
        time_origin=origin,
        dtype=dtype,
    )
    return named(field, names + ([w_name] if len(components) > 2 else []))


def _topology(ds, said: bool = False):
    """The mesh's topology variable: the 2-D one where a file also holds 1-D networks (`said`:
    logged)."""
    found = [ds[n] for n in ds.variables if attr(ds[n], "cf_role") == "mesh_topology"]
    chosen = next((t for t in found if str(t.attrs.get("topology_dimension", 2)) == "2"), None)
    if said and chosen is not None and len(found) > 1:
        others = ", ".join(f"{t.name!r} ({t.attrs.get('topology_dimension', '?')}-D)" for t in found if t is not chosen)
        _log.info("UGRID: %s: the 2-D mesh %r is tracked; beside it %s", where(ds), chosen.name, others)
    return chosen


def _joined(datasets) -> list:
    """The datasets merged where they hold the same times (one per time span), in time order."""
    import xarray as xr

    spans: dict = {}
    for ds in datasets:
        key = tuple(np.asarray(ds["time"].values).tolist()) if "time" in ds.variables else ()
        spans.setdefault(key, []).append(ds)
    joined = []
    for group in spans.values():
        group.sort(key=lambda ds: not is_ugrid(ds))  # the file with the mesh first: its name in messages
        merged = (
            group[0]
            if len(group) == 1
            else xr.merge(group, compat="override", join="override", combine_attrs="override")
        )
        if len(group) > 1:
            merged.attrs["flowkit_source"] = f"{where(group[0])} (+ {len(group) - 1} files of the same times)"
        joined.append(merged)
    joined.sort(key=lambda ds: np.asarray(ds["time"].values)[0] if "time" in ds.variables and ds["time"].size else 0)
    if not any(is_ugrid(ds) for ds in joined[:1]):
        raise ValueError(
            f"{where(joined[0])}: the unstructured mesh (a mesh_topology variable, or FVCOM's nv) is "
            "not in the files of its first times"
        )
    return joined


def _mesh_variables(ds) -> tuple[str, ...]:
    """The mesh's node coordinates and face-node connectivity: what every file of a series
    holding them must hold alike."""
    topology = _topology(ds)
    connectivity = attr(topology, "face_node_connectivity") if topology is not None else "nv"
    return (*_coordinate_names(ds), connectivity)


def _coordinate_names(ds) -> tuple[str, str]:
    topology = _topology(ds)
    names = attr(topology, "node_coordinates").split() if topology is not None else ["lon", "lat"]
    missing = [n for n in names[:2] if n not in ds.variables]
    if len(names) < 2 or missing:
        raise ValueError(f"{where(ds)}: node coordinates {names} of the mesh are not in the file")
    return names[0], names[1]


def _mesh(ds):
    """`(points (P, 2), cells (C, 3 or 4; -1 pads a mixed mesh's triangles), spherical, the
    node dimension, the face dimension)`."""
    xname, yname = _coordinate_names(ds)
    x, y = (np.asarray(ds[n].values, np.float64) for n in (xname, yname))
    spherical = attr(ds[xname], "units").lower().startswith("degree") or attr(ds[xname], "standard_name") == "longitude"
    if spherical and not np.any(x) and not np.any(y) and "x" in ds.variables and "y" in ds.variables:
        x, y, spherical = (
            np.asarray(ds["x"].values, np.float64),
            np.asarray(ds["y"].values, np.float64),
            False,
        )  # FVCOM's Cartesian runs
        xname, yname = "x", "y"
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        raise ValueError(
            f"{where(ds)}: the node coordinates {xname!r}, {yname!r} are not finite at {int(bad.sum())} of {bad.size} "
            f"nodes (the first: {int(np.argmax(bad))})"
        )
    topology = _topology(ds, said=True)
    name = attr(topology, "face_node_connectivity") if topology is not None else "nv"
    if name not in ds.variables:
        raise ValueError(f"{where(ds)}: the face-node connectivity {name!r} of the mesh is not in the file")
    var = ds[name]
    if var.ndim != 2:
        raise ValueError(f"{where(ds)}: {name!r} must be 2-D (faces, corners), got dims {var.dims}")
    stated_faces = attr(topology, "face_dimension") if topology is not None else ""
    corners = next((d for d in var.dims if stated_faces in var.dims and d != stated_faces), None) or min(
        var.dims, key=lambda d: ds.sizes[d]
    )  # the face dimension the topology names, else the shorter one
    table = np.asarray(var.transpose(..., corners).values, np.float64)
    fill = var.attrs.get("_FillValue", var.encoding.get("_FillValue"))
    valid = np.isfinite(table) & (table >= 0) & ((table != fill) if fill is not None else True)
    stated = var.attrs.get("start_index", var.encoding.get("start_index"))
    # FVCOM and ADCIRC count from 1 without saying so: a table of 1..P is numbered from 1
    start = int(stated) if stated is not None else int(table[valid].min() == 1 and table[valid].max() == len(x))
    valid &= table >= start
    cells = np.where(valid, table - start, -1).astype(np.int64)
    if cells.max() >= len(x) or np.any(valid.sum(axis=1) < 3):
        raise ValueError(
            f"{where(ds)}: {name!r} (start_index {start}) names nodes past the {len(x)} nodes, or "
            "faces of fewer than 3 corners"
        )
    cells = np.take_along_axis(
        cells, np.argsort(~valid, axis=1, kind="stable"), axis=1
    )  # the corners first, in their order
    if np.all(valid.sum(axis=1) == 3):
        cells = cells[:, :3]
    faces = next(d for d in var.dims if d != corners)
    return np.column_stack([x, y]), cells, spherical, ds[xname].dims[0], faces


def _component(ds, which, given, dims=None):
    """The variable of velocity component `which` (on `dims` where one is; of two with one
    meaning, the one on levels); None for a missing `w`."""
    if given is None:
        meaning = [n for n in ds.data_vars if attr(ds[n], "standard_name") in STANDARD[which] and ds[n].ndim >= 2]
        on_dims = [n for n in meaning if dims is not None and set(ds[n].dims) == set(dims)]
        deepest = [n for n in meaning if ds[n].ndim == max(ds[m].ndim for m in meaning)]
        if len(on_dims) == 1 or len(deepest) == 1:
            return on_dims[0] if len(on_dims) == 1 else deepest[0]
    found = component(ds, which, given, None)
    if found is None:
        found = next((n for name in _MODEL_NAMES[which] for n in ds.data_vars if str(n).lower() == name), None)
    if found is None and which != "w":
        known = ", ".join(_MODEL_NAMES[which][:3])
        raise ValueError(
            f"{where(ds)}: no {'eastward' if which == 'u' else 'northward'} velocity found (by "
            f"standard_name or as {which}, {known}, ...) among {sorted(ds.data_vars)}; pass "
            "velocity='u,v'"
        )
    return found


def _face_to_node(points, cells):
    """The `(P, C)` sparse matrix averaging face values to nodes, weighted by face area."""
    from scipy.sparse import csr_matrix

    k = cells.shape[1]
    x = points[np.maximum(cells, 0)]
    ring = np.where((cells >= 0)[..., None], x, x[:, :1])  # a missing corner repeats the first
    area = 0.5 * np.abs(
        np.sum(
            ring[:, :, 0] * np.roll(ring[:, :, 1], -1, axis=1) - np.roll(ring[:, :, 0], -1, axis=1) * ring[:, :, 1],
            axis=1,
        )
    )
    face = np.repeat(np.arange(len(cells)), k)
    node = cells.reshape(-1)
    keep = node >= 0
    matrix = csr_matrix((np.repeat(area, k)[keep], (node[keep], face[keep])), shape=(len(points), len(cells)))
    total = np.asarray(matrix.sum(axis=1)).reshape(-1)
    return csr_matrix(matrix.multiply(1.0 / np.maximum(total, np.finfo(float).tiny)[:, None]))


def _on_layers(ds, name: str, level_dim: str):
    """`ds` with `name` on the layers `level_dim` where it is given on their interfaces (one more,
    Delft3D-FM's `mesh2d_ww1`): each layer the mean of its two interfaces."""
    var = ds[name]
    interfaces = next((d for d in var.dims if d != level_dim and ds.sizes[d] == ds.sizes[level_dim] + 1), None)
    if interfaces is None or level_dim in var.dims:
        return ds
    mean = 0.5 * (var.isel({interfaces: slice(1, None)}).values + var.isel({interfaces: slice(None, -1)}).values)
    dims = tuple(level_dim if d == interfaces else d for d in var.dims)
    return ds.assign({name: (dims, mean, var.attrs)})


def _fanned(cells: np.ndarray) -> np.ndarray:
    """The faces of more than four corners (Delft3D-FM's pentagons, hexagons) cut into triangles
    from their first corner; triangles and quadrilaterals kept (-1 pads a triangle)."""
    if cells.shape[1] <= 4:
        return cells
    corners = (cells >= 0).sum(axis=1)
    kept = cells[corners <= 4, :4]
    fans = [
        np.column_stack([cells[big, 0], cells[big, i], cells[big, i + 1], np.full(int(big.sum()), -1)])
        for i in range(1, cells.shape[1] - 1)
        if (big := (corners > 4) & (corners > i + 1)).any()
    ]
    return np.concatenate([kept, *fans]) if fans else kept


def _centres(ds, points: np.ndarray, cells: np.ndarray, spherical: bool) -> np.ndarray:
    """Each face's centre `(F, 2)`: where the model puts its face values (the topology's
    `face_coordinates`: Delft3D-FM's circumcentres; FVCOM's `lonc`/`latc`, or `xc`/`yc` in
    metres) where that lies inside the face, else the mean of its corners (inside every convex
    face)."""
    valid = cells >= 0
    corners = np.where(valid[..., None], points[np.maximum(cells, 0)], 0.0)
    centres = corners.sum(axis=1) / valid.sum(axis=1)[:, None]
    topology = _topology(ds)
    names = attr(topology, "face_coordinates").split() if topology is not None else []
    if topology is None:  # FVCOM's element centres
        names = ["lonc", "latc"] if spherical else ["xc", "yc"]
    if len(names) >= 2 and all(n in ds.variables and ds[n].shape == (len(cells),) for n in names[:2]):
        given = np.column_stack([np.asarray(ds[n].values, np.float64) for n in names[:2]])
        ring = np.where(valid[..., None], corners, corners[:, :1])  # a missing corner repeats the first
        edge = np.roll(ring, -1, axis=1) - ring
        to_point = given[:, None, :] - ring
        cross = edge[..., 0] * to_point[..., 1] - edge[..., 1] * to_point[..., 0]
        margin = 1e-3 * np.sum(edge**2, axis=-1)  # strictly inside: no centre on a side (a flat triangle)
        real = np.sum(edge**2, axis=-1) > 0  # a repeated corner's side has no length
        inside = np.all((cross > margin) | ~real, axis=1) | np.all((cross < -margin) | ~real, axis=1)
        centres = np.where((inside & np.all(np.isfinite(given), axis=1))[:, None], given, centres)
    return centres


def _with_centres(cells: np.ndarray, n_points: int):
    """`extend(values)`: node values `(..., P)` followed by their mean over each face's
    corners, at the faces' centres `(..., P + F)`."""
    from scipy.sparse import csr_matrix

    valid = cells >= 0
    faces = np.repeat(np.arange(len(cells)), cells.shape[1])[valid.reshape(-1)]
    weights = np.repeat(1.0 / valid.sum(axis=1), cells.shape[1])[valid.reshape(-1)]
    mean = csr_matrix((weights, (faces, cells[valid])), shape=(len(cells), n_points))

    def extend(values):
        values = np.asarray(values, np.float64)
        flat = values.reshape(-1, n_points)
        centres = np.asarray(mean @ flat.T).T.reshape(*values.shape[:-1], len(cells))
        return np.concatenate([values, centres], axis=-1)

    return extend


def _centre_fans(cells: np.ndarray, n_points: int) -> np.ndarray:
    """Each face cut into triangles from its centre (point `n_points + face`) to each of its
    sides: a field linear on them takes the face's own value at its centre, as a finite-volume
    model's (FVCOM's element, Delft3D-FM's face) velocity is. -1 pads the triangles."""
    corners = (cells >= 0).sum(axis=1)
    triangles = []
    for i in range(cells.shape[1]):
        has = corners > i
        after = np.where(i + 1 < corners, cells[:, (i + 1) % cells.shape[1]], cells[:, 0])
        triangles.append(np.column_stack([np.arange(len(cells)) + n_points, cells[:, i], after])[has])
    fans = np.concatenate(triangles)
    return np.column_stack([fans, np.full(len(fans), -1)])


def _on_nodes(array, weights):
    """`(T, K, C)` face values as `(T, K, P)` node values (NaN faces, dry, counted as 0)."""
    lead = array.shape[:-1]
    flat = np.nan_to_num(array.reshape(-1, array.shape[-1]))
    return np.asarray((weights @ flat.T).T).reshape(*lead, weights.shape[0])
