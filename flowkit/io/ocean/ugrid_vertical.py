"""The vertical of the unstructured models (`flowkit.io.ocean.ugrid`): a depth average, SCHISM's
z levels (the levels under `node_bottom_index` dropped), or sigma layers (FVCOM's `siglay`) over
the water column from the bathymetry and the free surface."""

import numpy as np

from ..cf import attr, where


def levels(first, read, velocity: np.ndarray, level_dim, n_points: int, extend):
    """`(depths, velocity, water depth, description)`: the levels below the free surface of a
    depth-averaged model, SCHISM's z levels, or sigma layers."""
    if level_dim is None:
        depths = np.zeros(velocity.shape[:3])
        water = _water_depth(first, read, velocity.shape[:2], extend)
        vertical = "depth-averaged"
    elif "zCoordinates" in first.variables or "zcor" in first.variables:
        name = "zCoordinates" if "zCoordinates" in first.variables else "zcor"
        depths, velocity, water = _schism_levels(_above_bottom(first, read(name)), velocity)
        vertical = f"{depths.shape[2]} SCHISM levels ({name})"
    else:
        sigma = extend(_sigma(first, level_dim, n_points).T).T
        water = _water_depth(first, read, velocity.shape[:2], extend, required=True)
        depths = -sigma[None] * water[..., None]
        order = np.argsort(depths[0, 0])
        depths, velocity = depths[:, :, order], velocity[:, :, order]
        vertical = f"{len(order)} sigma layers"
    return depths, velocity, water, vertical


def _water_depth(first, read, shape, extend, required=False):
    """Sea floor below the free surface `(T, P)`: the model's water column where it writes one
    (`sea_floor_depth_below_sea_surface`: Delft3D-FM's `mesh2d_waterdepth`), else the
    bathymetry (`h`, `depth`) plus `zeta` (`elevation`) when the files hold it."""
    column = next(
        (n for n in first.data_vars if attr(first[n], "standard_name") == "sea_floor_depth_below_sea_surface"), None
    )
    if column is not None:
        return np.broadcast_to(np.nan_to_num(read(column)[:, 0]), shape).copy()
    bathymetry = next((n for n in ("h", "depth") if n in first.variables), None)
    if bathymetry is None:
        if required:
            raise ValueError(f"{where(first)}: no bathymetry (h or depth) to place the sigma layers")
        return np.zeros(shape)
    h = np.asarray(first[bathymetry].values, np.float64)
    h = extend(h) if h.shape[-1:] != shape[-1:] else np.broadcast_to(h, shape[-1:])
    elevation = next((n for n in ("zeta", "elevation") if n in first.variables and first[n].ndim == 2), None)
    zeta = np.nan_to_num(read(elevation)[:, 0]) if elevation is not None else 0.0
    if required and not np.any(h > 0):
        raise ValueError(
            f"{where(first)}: the bathymetry {bathymetry!r} is 0 or above the surface at every node: the sigma "
            "layers need a sea floor below it"
        )
    return np.maximum(np.broadcast_to(h + zeta, shape), 0.0)  # a dry node (zeta below -h): no water


def _sigma(ds, level_dim, n_points):
    """The sigma of each level at each node `(P, K)`, in [-1, 0]."""
    name = next(
        (
            n
            for n in ds.variables
            if level_dim in ds[n].dims and attr(ds[n], "standard_name") == "ocean_sigma_coordinate"
        ),
        level_dim if level_dim in ds.variables else None,
    )
    z_layers = [n for n in ds.variables if str(n).endswith("layer_z") and level_dim in ds[n].dims]
    if name is None or z_layers:
        raise ValueError(
            f"{where(ds)}: no sigma coordinate for the velocity's levels {level_dim!r} (a variable "
            "with standard_name ocean_sigma_coordinate, as FVCOM's siglay)"
            + (
                f"; {z_layers[0]!r}: z-layers are not read, track the depth average (velocity="
                "'mesh2d_ucxa,mesh2d_ucya')"
                if z_layers
                else ""
            )
        )
    var = ds[name]
    sigma = np.asarray(var.transpose(*[d for d in var.dims if d != level_dim], level_dim).values, np.float64)
    sigma = np.broadcast_to(sigma, (n_points, ds.sizes[level_dim]))
    if np.nanmin(sigma) < -1 - 1e-6 or np.nanmax(sigma) > 1e-6:
        raise ValueError(
            f"{where(ds)}: {name!r} must lie in [-1, 0] (sigma, positive up), got "
            f"[{np.nanmin(sigma):g}, {np.nanmax(sigma):g}]"
        )
    return sigma


def _above_bottom(ds, z: np.ndarray) -> np.ndarray:
    """SCHISM's level heights `(T, K, P)` with the levels below each node's bottom NaN: those
    under `node_bottom_index` (v10's combined output, 1-based; its values there are junk), as
    the split output writes them."""
    name = next((n for n in ("node_bottom_index", "bottom_index_node") if n in ds.variables), None)
    if name is None:
        return z
    bottom = np.asarray(ds[name].values, np.int64) - 1
    outside = int(np.sum((bottom < 0) | (bottom >= z.shape[1])))
    if outside:
        raise ValueError(
            f"{where(ds)}: {name!r} lies outside the {z.shape[1]} levels (1 to {z.shape[1]}) at {outside} of "
            f"{bottom.size} nodes"
        )
    return np.where(np.arange(z.shape[1])[None, :, None] < bottom[None, None, :], np.nan, z)


def _schism_levels(z, velocity):
    """SCHISM's levels `z` `(T, K, P)` (upward, bottom first, NaN below the floor) as depths below
    the surface `(T, P, K)` surface first, with the velocity of the deepest wet level below it."""
    z = np.moveaxis(z, 1, 2)[:, :, ::-1]  # (T, P, K), surface first
    velocity = velocity[:, :, ::-1]
    wet = np.isfinite(z)
    deepest = np.maximum(wet.sum(axis=2) - 1, 0)
    bottom = np.take_along_axis(z, deepest[..., None], axis=2)
    depths = np.where(wet, z[:, :, :1] - z, z[:, :, :1] - bottom)
    velocity = np.where(wet[..., None], velocity, np.take_along_axis(velocity, deepest[..., None, None], axis=2))
    return np.nan_to_num(depths), velocity, np.nan_to_num(z[:, :, 0] - bottom[..., 0])
