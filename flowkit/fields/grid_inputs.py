"""A `GridField`'s inputs checked and laid out on the host: axes, periodicity, options, the
time series and the sampled arrays, each error naming the argument and what was expected."""

import numpy as np

INTERPOLATIONS = ("linear", "nearest")
STAGGERINGS = ("A", "C")
COASTS = ("noslip", "freeslip", "partialslip")


def checked_axes(axes) -> list[np.ndarray]:
    """The 2 or 3 coordinate arrays, each 1-D, finite, strictly increasing, with 2 nodes or more."""
    if not isinstance(axes, (list, tuple)) or len(axes) not in (2, 3):
        size = len(axes) if isinstance(axes, (list, tuple, np.ndarray)) else "?"
        raise ValueError(
            f"GridField: axes must be a list of 2 or 3 coordinate arrays, got {type(axes).__name__} of length {size}"
        )
    out = []
    for i, ax in enumerate(axes):
        ax = np.asarray(ax, dtype=np.float64)
        if ax.ndim != 1 or ax.shape[0] < 2:
            raise ValueError(f"GridField: axes[{i}] must be 1-D with at least 2 nodes, got shape {ax.shape}")
        if not np.all(np.isfinite(ax)) or not np.all(np.diff(ax) > 0):
            raise ValueError(f"GridField: axes[{i}] must be strictly increasing (monotonic) and finite")
        out.append(ax)
    return out


def checked_periodic(periodic, axes: list[np.ndarray]) -> tuple[tuple[bool, ...], list[float | None]]:
    """Per axis, whether it is periodic and its stated period (None: `True` was given, the `n`
    nodes spanning one period `n * h`); a periodic axis must be uniform."""
    dim = len(axes)
    periodic = tuple((periodic,) * dim if np.ndim(periodic) == 0 else periodic)
    if len(periodic) != dim:
        raise ValueError(f"GridField: periodic needs one flag or period per axis ({dim}), got {periodic}")
    periods = [None if isinstance(p, (bool, np.bool_)) else float(p) for p in periodic]
    flags = tuple(bool(p) for p in periodic)
    for i in range(dim):
        if flags[i] and not is_uniform(axes[i]):
            raise ValueError(f"GridField: periodic axis {i} must be uniformly spaced")
    return flags, periods


def check_options(interpolation: str, coast: str, staggering: str) -> None:
    """The interpolation, coast and staggering, and the combinations the grid supports."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"GridField: interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
    if coast not in COASTS or (coast != "noslip" and (staggering != "A" or interpolation != "linear")):
        raise ValueError(
            f"GridField: coast must be one of {COASTS} (slip on linear A-grids), got {coast!r} with "
            f"staggering {staggering!r}, {interpolation!r}"
        )
    if staggering not in STAGGERINGS or (staggering == "C" and interpolation != "linear"):
        raise ValueError(
            f"GridField: staggering must be one of {STAGGERINGS} (a C-grid with linear "
            f"interpolation), got {staggering!r} with {interpolation!r}"
        )


def checked_series(data: np.ndarray, times, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray | None]:
    """`(data (T, *shape, c), times)`: steady data (`times` None) gets a time axis of one."""
    dim = len(shape)
    components = int(data.shape[-1]) if data.ndim >= 1 else 0
    if times is None:
        expected = shape + (components,)
        if data.ndim != dim + 1 or data.shape != expected or components < 1:
            raise ValueError(
                f"GridField: steady data must have shape {expected} (axes lengths + components, {dim} for "
                f"a velocity), got {data.shape}"
            )
        return data[None], None
    times = np.asarray(times, dtype=np.float64)
    if times.ndim != 1 or times.shape[0] < 2 or not np.all(np.diff(times) > 0):
        raise ValueError(
            f"GridField: times must be a strictly increasing 1-D array with at least 2 entries, got shape {times.shape}"
        )
    expected = (times.shape[0],) + shape + (components,)
    if data.ndim != dim + 2 or data.shape != expected or components < 1:
        raise ValueError(
            f"GridField: time-series data must have shape {expected} (len(times), axes lengths, "
            f"components), got {data.shape}"
        )
    return data, times


def sample_tables(samples: dict | None, slices: int, shape: tuple[int, ...], series: bool):
    """`samples` as `{name: (T, *shape, c)}` tables (T = 1 when steady) and the scalar ones' names."""
    tables: dict[str, np.ndarray] = {}
    scalars: list[str] = []
    for name, array in (samples or {}).items():
        a = np.asarray(array, np.float64)
        lead = (slices,) if series else ()
        if a.shape[: len(lead) + len(shape)] != lead + shape or a.ndim > len(lead) + len(shape) + 1:
            raise ValueError(
                f"GridField: samples[{name!r}] must have shape {lead + shape} or {lead + shape + ('c',)} "
                f"(one value per node{' and time' if series else ''}), got {a.shape}"
            )
        if a.ndim == len(lead) + len(shape):
            a, scalars = a[..., None], scalars + [name]
        tables[name] = a if series else a[None]
    return tables, tuple(scalars)


def longitude_origin(lon: np.ndarray) -> float:
    """Where a global grid's positions start their period: -180 when the data's longitudes lie in
    [-180, 180), 0 when they lie in [0, 360), else the axis's first node."""
    for origin in (-180.0, 0.0):
        if lon[0] >= origin - axis_resolution(lon) and lon[-1] < origin + 360:
            return origin
    return float(lon[0])


def axis_resolution(axis: np.ndarray) -> float:
    """The round-off of an axis's values in the precision it was written in: float32 when every
    value is a float32 number (most model files), else float64."""
    single = np.array_equal(axis, axis.astype(np.float32))
    return 4 * float(np.finfo(np.float32 if single else np.float64).eps) * float(np.max(np.abs(axis)))


def is_uniform(axis: np.ndarray) -> bool:
    """Whether the steps of `axis` agree to the round-off of its values (a float32 axis of 1°
    steps spaced 1 ± 8e-6° is uniform)."""
    steps = np.diff(axis)
    mean = (axis[-1] - axis[0]) / (len(axis) - 1)
    return bool(np.all(np.abs(steps - mean) <= 1e-6 * abs(mean) + 2 * axis_resolution(axis)))


def refuse_repeated_end(axis: np.ndarray, data: np.ndarray, index: int) -> None:
    """`periodic=True` takes an axis's `n` nodes as `n` distinct ones spanning the period `n * h`.
    Raise when the end node looks like a repeat of the first: the axis spans a round period (2π,
    360, 1, ...), or the data on the end node equal those on the first while not constant along
    the axis. The message names `periodic=<period>`, which drops the end node."""
    span = float(axis[-1] - axis[0])
    tolerance = 1e-6 * abs(span) + len(axis) * axis_resolution(axis)
    decade = 10.0 ** np.floor(np.log10(span))
    round_spans = [np.pi, 2 * np.pi, 4 * np.pi, 180.0, 360.0, *(m * decade for m in (1.0, 2.0, 2.5, 5.0, 10.0))]
    named = next((p for p in round_spans if abs(span - p) <= tolerance), None)
    along = index + 1  # data: times first
    first, last = np.take(data, 0, axis=along), np.take(data, -1, axis=along)
    planes = [np.take(data, k, axis=along) for k in (1, len(axis) // 2)]
    scale = max(float(np.nanmax(np.abs(p), initial=0.0)) for p in (first, last, *planes))
    same = lambda a: np.allclose(a, first, rtol=1e-6, atol=1e-6 * scale, equal_nan=True)  # noqa: E731
    varies = not all(same(p) for p in planes)
    equal_ends = len(axis) > 2 and varies and same(last)
    if named is None and not equal_ends:
        return
    why = " and ".join(
        ([f"spans {span:g}"] if named is not None else [])
        + (["has the same values on its end node as on its first"] if equal_ends else [])
    )
    raise ValueError(
        f"GridField: periodic axis {index} {why}, so its end node looks like a repeat of the first; "
        f"periodic=True takes the {len(axis)} nodes as distinct (period {span * len(axis) / (len(axis) - 1):g}): "
        f"give periodic={span!r} to drop the end node, or the axis without it"
    )


def repeats_first_node(axis: np.ndarray, period: float | None, index: int) -> bool:
    """Whether a periodic `axis` ends with a repeat of its first node, decided from the
    coordinates alone: with a stated `period`, whether the axis spans it (within the round-off of
    its values); with `periodic=True`, never (the `n` nodes span one period `n * h`)."""
    if period is None:
        return False
    h = (axis[-1] - axis[0]) / (len(axis) - 1)
    span = axis[-1] - axis[0]
    tolerance = 1e-6 * period + len(axis) * axis_resolution(axis)
    if abs(span + h - period) <= tolerance:
        return False
    if abs(span - period) <= tolerance and len(axis) > 2:
        import logging

        logging.getLogger("flowkit").info(
            "GridField: periodic axis %d: its last node repeats the first (the axis spans the period %g): dropped",
            index,
            period,
        )
        return True
    raise ValueError(
        f"GridField: periodic axis {index} spans {span:g} with spacing {h:g}: neither one period "
        f"of {period:g} ({len(axis)} distinct nodes) nor one with its end node repeated"
    )


def checked_land(land, shape: tuple[int, ...]) -> np.ndarray | None:
    """The land mask as booleans of the grid's shape (one flag per node), or None."""
    if land is None:
        return None
    land = np.asarray(land, dtype=bool)
    if land.shape != shape:
        raise ValueError(f"GridField: land must have the grid's shape {shape} (one flag per node), got {land.shape}")
    return land


def check_spherical(spherical: bool, axes: list[np.ndarray]) -> None:
    """Spherical axes are longitude and latitude in degrees, latitudes within [-90, 90]."""
    if spherical and (len(axes) < 2 or axes[1][0] < -90 - 1e-9 or axes[1][-1] > 90 + 1e-9):
        raise ValueError(
            "GridField: spherical axes are longitude and latitude in degrees; latitudes must lie in "
            f"[-90, 90], got [{axes[1][0]:g}, {axes[1][-1]:g}]"
        )


def one_period(axes: list[np.ndarray], periodic, periods, data: np.ndarray, land, tables: dict):
    """`(axes, data, land, tables)` with each periodic axis holding one period of distinct nodes:
    a repeated end node dropped (a stated period the axis spans), a likely repeat refused."""
    axes = list(axes)
    for i, axis in enumerate(axes):
        if not periodic[i]:
            continue
        if periods[i] is None:
            refuse_repeated_end(axis, data, i)
        if repeats_first_node(axis, periods[i], i):
            kept = np.arange(len(axis) - 1)
            axes[i] = axis[:-1]
            data = np.take(data, kept, axis=i + 1)
            land = None if land is None else np.take(land, kept, axis=i)
            tables = {name: np.take(table, kept, axis=i + 1) for name, table in tables.items()}
    return axes, data, land, tables
