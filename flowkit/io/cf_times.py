"""CF time axes of datasets that follow one another in time: seconds since the first step, and
its calendar date."""

import numpy as np

from .._time import TimeOrigin
from .cf import where

UNDECODED_TIMES = "flowkit_undecoded_times"
"""The attribute `open_datasets` sets on a dataset: the variables whose CF times xarray could not decode."""


def seconds_since_first(raw) -> np.ndarray:
    """Decoded CF times (datetime64, timedelta64 or cftime objects) as seconds since the first."""
    raw = np.asarray(raw)
    if np.issubdtype(raw.dtype, np.datetime64) or np.issubdtype(raw.dtype, np.timedelta64):
        return (raw - raw[0]) / np.timedelta64(1, "s")
    if raw.dtype == object:
        return np.array([(t - raw[0]).total_seconds() for t in raw], dtype=np.float64)
    return np.asarray(raw, dtype=np.float64) - float(raw[0])


def time_axis(datasets, time_dim):
    """`(steps, times, origin)` of datasets consecutive along `time_dim`: each step as
    `(dataset, index)`, seconds since the first step (None without a time dimension) and the
    calendar date of that first step (None when the times are not dates)."""
    if time_dim is None:
        if len(datasets) > 1:
            raise ValueError(f"{where(datasets[0])}: several datasets but no time dimension to join them along")
        return [(datasets[0], None)], None, None
    for ds in datasets:
        if time_dim not in ds.variables:
            raise ValueError(
                f"{where(ds)}: the dimension {time_dim!r} has no variable of times; flowkit does not count "
                "time steps as times"
            )
        if time_dim in ds.attrs.get(UNDECODED_TIMES, ()):
            raise ValueError(
                f"{where(ds)}: its times {time_dim!r} cannot be read as dates (units "
                f"{ds[time_dim].attrs.get('units')!r}, calendar {ds[time_dim].attrs.get('calendar', 'standard')!r})"
            )
    steps = [(d, k) for d in datasets for k in range(d.sizes[time_dim])]
    raw = np.concatenate([np.asarray(d[time_dim].values) for d in datasets])
    times = seconds_since_first(raw)
    if len(times) > 1 and not np.all(np.diff(times) > 0):
        bad = int(np.argmin(np.diff(times) > 0))
        raise ValueError(
            f"{where(steps[bad + 1][0])}: times must increase across the files (step {bad + 1} at "
            f"{raw[bad + 1]} does not follow {raw[bad]}); give the files in time order"
        )
    var = datasets[0][time_dim]
    encoding = {**var.attrs, **var.encoding}
    first = raw[0]
    # a NumPy date, or a cftime date (non-standard calendars), which has isoformat and calendar
    date = (
        str(np.datetime_as_string(first, unit="s"))
        if isinstance(first, np.datetime64)
        else first.isoformat()
        if hasattr(first, "isoformat")
        else None
    )
    origin = None
    if date is not None:
        origin = TimeOrigin(
            date.replace(" ", "T"),
            str(encoding.get("units", f"seconds since {date}")),
            str(encoding.get("calendar", getattr(first, "calendar", "standard")) or "standard"),
        )
    return steps, times, origin
