"""A mesh's arrays over time: slices checked against the mesh and the times, and sampled arrays
laid side by side as columns."""

import math
from collections.abc import Mapping

import numpy as np


def as_series(array, times, n_points: int, name: str):
    """`(T, P, c)` values, the times and the time range, checked against the mesh. Floating
    values keep their precision (a float32 series is not copied into float64: for the brief's
    40 slices that copy was 180 MB of the read's peak); others become float64."""
    a = np.asarray(array)
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    if times is None:
        if a.ndim != 2 or a.shape[0] != n_points:
            raise ValueError(f"MeshField: {name} must have shape ({n_points}, c) for a steady field, got {a.shape}")
        return a[None], None, (-math.inf, math.inf)
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 1 or len(t) < 2 or not np.all(np.diff(t) > 0):
        raise ValueError(
            "MeshField: times must be a strictly increasing 1-D array with at least 2 entries, got "
            f"{t.tolist() if t.size < 10 else t.shape}"
        )
    if a.ndim != 3 or a.shape[:2] != (len(t), n_points):
        raise ValueError(
            f"MeshField: {name} must have shape ({len(t)}, {n_points}, c) for {len(t)} times, got {a.shape}"
        )
    return a, t, (float(t[0]), float(t[-1]))


def sample_series(
    samples: Mapping, times, n_points: int
) -> tuple[tuple[tuple[str, int, bool], ...], np.ndarray | None]:
    """The sampled arrays `{name: (P[, c]) or (T, P[, c])}` side by side as one `(T, P, s)`
    table (None without any), and their layout: `(name, columns, vector)` each."""
    layout, columns = [], []
    for name, array in samples.items():
        a = np.asarray(array)
        vector = a.ndim == (2 if times is None else 3)
        series, _, _ = as_series(a if vector else a[..., None], times, n_points, f"samples[{name!r}]")
        layout.append((str(name), series.shape[-1], vector))
        columns.append(series)
    return tuple(layout), np.concatenate(columns, axis=-1) if columns else None


def sampled(table, layout: tuple[tuple[str, int, bool], ...]) -> dict:
    """The `(n, s)` rows of a sample table split back into the named arrays of its `layout`."""
    out, column = {}, 0
    for name, c, vector in layout:
        out[name] = table[:, column : column + c] if vector else table[:, column]
        column += c
    return out


def sample_columns(samples: Mapping) -> np.ndarray:
    """One slice of `MeshField.sample_values`: the sampled arrays `{name: (P,) or (P, c)}` side by
    side as `(P, s)` columns, in the order given (the order of `sample_layout`)."""
    return np.concatenate([np.asarray(a, np.float64).reshape(len(a), -1) for a in samples.values()], axis=1)
