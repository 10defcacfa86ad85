"""Every file of a NetCDF/zarr series checked against the first: the same velocity variables,
shapes and coordinates, so that no file is read on another file's grid."""

import logging

import numpy as np

from .cf import AXES, attr, where

_log = logging.getLogger("flowkit")


def conformed(ds, first, names, dims):
    """`ds` (a later file of the series) on the grid of `first`: its velocity variables `names`
    (each on its spatial `dims`, None for a w of 0) present with the same shapes, and every 1-D
    coordinate of those dims equal to the first file's. A coordinate holding the same values
    in another order (longitudes on 0-360 against -180-180, latitudes descending) is reindexed
    to the first file's order, said in the log; any other difference is one `ValueError`
    naming the file, the variable or coordinate and both shapes or ranges."""
    for name, var_dims in zip(names, dims):
        if var_dims is None:
            continue
        if name not in ds.variables:
            raise ValueError(f"{where(ds)}: no variable {name!r}, which {where(first)} (the series' first file) has")
        shape, expected = (tuple(d.sizes.get(dim) for dim in var_dims) for d in (ds[name], first[name]))
        if shape != expected:
            raise ValueError(
                f"{where(ds)}: {name} has shape {shape} on {tuple(var_dims)}, but {where(first)} has "
                f"{expected}: every file of a series must be on the first file's grid"
            )
    order = {}
    for dim in dict.fromkeys(d for var_dims in dims if var_dims for d in var_dims):
        if dim not in first.coords or first[dim].ndim != 1 or not np.issubdtype(first[dim].dtype, np.number):
            continue
        a, b = np.asarray(first[dim].values, np.float64), np.asarray(ds[dim].values, np.float64)
        tolerance = 1e-6 * max(float(np.ptp(a)), 1.0)
        if np.allclose(a, b, rtol=0, atol=tolerance):
            continue
        period = 360.0 if _is_longitude(first[dim]) else None
        permutation = _matching(a, b, period, tolerance)
        if permutation is None:
            raise ValueError(
                f"{where(ds)}: its {dim} runs {b[0]:g} … {b[-1]:g}, but {where(first)} (the series' first "
                f"file) has {a[0]:g} … {a[-1]:g}: every file of a series must be on the first file's grid"
            )
        order[dim] = permutation
    if order:
        _log.info(
            "%s: %s reordered to the first file's (%s)",
            where(ds),
            ", ".join(order),
            ", ".join(f"{d} {float(ds[d].values[0]):g} … {float(ds[d].values[-1]):g}" for d in order),
        )
        ds = ds.isel(order)
    return ds


def _is_longitude(coord) -> bool:
    """Degrees east (not a projection's x in metres): compared modulo 360."""
    _, _, units, _ = AXES["x"]
    return (
        attr(coord, "standard_name") in ("longitude", "grid_longitude")
        or attr(coord, "units").lower() in units
        or str(coord.name).lower() in ("lon", "longitude", "nav_lon")
    )


def _matching(a, b, period, tolerance):
    """Indices `p` with `b[p]` equal to `a` (modulo `period`), or None when some value of `a`
    has no match in `b`."""
    if len(a) != len(b):
        return None
    key_a, key_b = (np.mod(v, period) if period else v for v in (a, b))
    order = np.argsort(key_b)
    sorted_b = key_b[order]
    right = np.clip(np.searchsorted(sorted_b, key_a), 0, len(b) - 1)
    candidates = np.stack([right, (right - 1) % len(b)], axis=1)
    gap = np.abs(sorted_b[candidates] - key_a[:, None])
    if period:
        gap = np.minimum(gap, period - gap)
    best = np.argmin(gap, axis=1)
    if np.any(gap[np.arange(len(a)), best] > tolerance):
        return None
    permutation = order[candidates[np.arange(len(a)), best]]
    return permutation if len(np.unique(permutation)) == len(a) else None


def same_grid(datasets: list, names, what: str) -> None:
    """Every dataset's variables `names` (a grid's coordinates or connectivity, of any shape)
    equal the first dataset's holding them, to the files' precision (float32 round-off of the
    values' range): a file cut from another window, or a mesh renumbered, is refused in one
    `ValueError` naming both files and the variable (`what`: the kind of file, for the message)."""
    holding = [ds for ds in datasets if all(n in ds.variables for n in names)]
    if len(holding) < 2:
        return
    first = holding[0]
    for ds in holding[1:]:
        for name in names:
            a, b = (np.asarray(d[name].values) for d in (first, ds))
            if a.shape != b.shape:
                raise ValueError(
                    f"{where(ds)}: its {name} has shape {b.shape}, {where(first)}'s {a.shape}: {what} of one run share "
                    "their grid"
                )
            if not np.issubdtype(a.dtype, np.number):
                continue
            a, b = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(a) & np.isfinite(b)
            scale = max(float(np.max(np.abs(a[finite]), initial=0.0)), 1.0)
            off = np.abs(a - b)[finite]
            if (np.isfinite(a) != np.isfinite(b)).any() or (off.size and off.max() > 1e-6 * scale):
                worst = float(off.max()) if off.size else float("nan")
                raise ValueError(
                    f"{where(ds)}: its {name} differs from {where(first)}'s (by up to {worst:g}): {what} of one run "
                    "share their grid; this one is another window, grid or numbering"
                )
