"""Times as users give them: seconds, durations (`"1h"`), and dates on a field's CF calendar.

A field read from dated data (NetCDF/CF) keeps its `time_origin`: the date of its first time
step, with the input's units and calendar. The tracker works in seconds since that origin;
dates are converted on the host, before compiling, and back when results are written.
"""

from typing import NamedTuple

import numpy as np


class TimeOrigin(NamedTuple):
    """Where a field's time 0 lies on the calendar (hashable: a static part of the field)."""

    date: str
    """ISO date of time 0, e.g. `"2024-01-01T00:00:00"`."""
    units: str
    """The input's CF time units, e.g. `"hours since 1950-01-01"` (kept for writing results)."""
    calendar: str
    """The CF calendar: `"standard"`, `"noleap"`, `"360_day"`, ..."""

    @property
    def seconds_units(self) -> str:
        return f"seconds since {self.date}"

    def seconds(self, date) -> float:
        """Seconds from this origin to `date` (an ISO string, `datetime`, `np.datetime64` or
        `cftime` date) on this calendar."""
        import cftime

        if isinstance(date, np.datetime64):
            date = str(np.datetime_as_string(date, unit="s"))
        if isinstance(date, str):
            parts = np.datetime64(date, "s").astype(object)  # parses ISO dates; the calendar's fields stay as written
            date = cftime.datetime(
                parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second, calendar=self.calendar
            )
        return float(cftime.date2num(date, self.seconds_units, calendar=self.calendar))

    def dates(self, seconds) -> np.ndarray:
        """The calendar dates of `seconds` since this origin (`cftime` objects)."""
        import cftime

        return np.asarray(
            cftime.num2date(np.asarray(seconds, dtype=np.float64), self.seconds_units, calendar=self.calendar)
        )

    def from_units(self, values) -> np.ndarray:
        """Numbers in the input's own units and calendar (as `in_units` writes them; NaN kept)
        back to seconds since this origin."""
        import cftime

        values = np.asarray(values, dtype=np.float64)
        finite = np.isfinite(values)
        out = np.full(values.shape, np.nan)
        if finite.any():
            dates = cftime.num2date(values[finite], self.units, calendar=self.calendar)
            out[finite] = cftime.date2num(dates, self.seconds_units, calendar=self.calendar)
        return out

    def in_units(self, seconds) -> np.ndarray:
        """`seconds` since this origin as numbers in the input's own units and calendar."""
        import cftime

        return np.asarray(cftime.date2num(self.dates(seconds), self.units, calendar=self.calendar), dtype=np.float64)


def as_seconds(value, name: str, origin: TimeOrigin | None = None, *, duration: bool = False) -> float:
    """`value` in seconds: a number as it is; a string as a duration (`"1h"`, `"30min"`,
    `"2 days"`, for `duration=True`) or a date on the field's calendar (`"2024-01-05"`, which
    needs the field's `origin`). Errors name the parameter."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(
            f"{name} must be a number of seconds{' or a duration like 1h' if duration else ' or a date'}, got {value!r}"
        )
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    if duration:
        import pandas as pd

        try:
            return float(pd.Timedelta(text).total_seconds())
        except ValueError:
            raise ValueError(
                f"{name}: {value!r} is neither a number of seconds nor a duration like '1h', '30min', '2 days'"
            ) from None
    try:
        np.datetime64(text, "s")
    except ValueError:
        raise ValueError(
            f"{name}: {value!r} is neither a number of seconds nor an ISO date like '2024-01-05'"
        ) from None
    if origin is None:
        raise ValueError(
            f"{name}: {value!r} is a date, but this field has no time origin (only fields read from "
            "dated data, e.g. NetCDF, have one); give seconds"
        )
    return origin.seconds(text)
