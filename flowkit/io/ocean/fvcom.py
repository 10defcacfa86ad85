"""FVCOM output: the unstructured reader (`flowkit.io.ocean.ugrid`: `nv`, `siglay`, `u`/`v`
on the elements) with FVCOM's own clock.

FVCOM writes its times three ways: `time` in float32 modified Julian days (days since
1858-11-17, about 5 minutes apart at today's dates), `Itime` (whole days) with `Itime2`
(milliseconds since midnight), and `Times` as text. The exact ones are read: `Itime`/`Itime2`,
else `Times`; `time` alone is used with a warning.
"""

import logging

import numpy as np
from jax.typing import DTypeLike

from ...fields.layered import LayeredField
from ..cf import where
from . import ugrid

_log = logging.getLogger("flowkit")

_MJD_EPOCH = np.datetime64("1858-11-17T00:00:00", "ms")


def detect(datasets: list) -> bool:
    """Whether a dataset is FVCOM's: its `source` says so, or it holds FVCOM's `nv(three, nele)`."""
    return any(
        str(ds.attrs.get("source", "")).upper().startswith("FVCOM") or ("nv" in ds.variables and "nele" in ds.dims)
        for ds in datasets
    )


def build(
    datasets: list, u: str | None = None, v: str | None = None, w: str | None = None, *, dtype: DTypeLike = "float32"
) -> LayeredField:
    """The `LayeredField` of FVCOM's files (`flowkit.io.ocean.ugrid.build`) on FVCOM's exact times."""
    return ugrid.build([_on_exact_times(ds) for ds in datasets], u, v, w, dtype=dtype)


def _on_exact_times(ds):
    """`ds` with its `time` from `Itime`/`Itime2` or `Times` (as datetime64, to the millisecond)."""
    if "time" not in ds.dims:
        return ds
    if "Itime" in ds.variables and "Itime2" in ds.variables:
        days = np.asarray(ds["Itime"].values)  # decoded by xarray from its units, or whole days
        if not np.issubdtype(days.dtype, np.datetime64):
            days = _MJD_EPOCH + days.astype(np.int64) * np.timedelta64(86_400_000, "ms")
        exact = days.astype("datetime64[ms]") + np.asarray(ds["Itime2"].values, np.int64) * np.timedelta64(1, "ms")
    elif "Times" in ds.variables:
        text = [t.decode() if isinstance(t, bytes) else str(t) for t in np.asarray(ds["Times"].values).reshape(-1)]
        try:
            exact = np.array([np.datetime64(t.strip().replace(" ", "T").rstrip("Z"), "ms") for t in text])
        except ValueError:
            raise ValueError(f"{where(ds)}: FVCOM's Times {text[:2]} are not dates") from None
        blank = int(np.sum(np.isnat(exact)))
        if blank:
            if "time" not in ds.variables:
                raise ValueError(f"{where(ds)}: FVCOM's Times are blank at {blank} of {len(text)} steps, and no 'time'")
            _log.warning(
                "FVCOM: %s: its Times are blank at %d of %d steps: times from 'time' (float32 days are about 5 "
                "minutes apart at today's dates)",
                where(ds),
                blank,
                len(text),
            )
            return ds
    else:
        _log.warning(
            "FVCOM: %s has neither Itime/Itime2 nor Times: times from 'time' (float32 days are about 5 minutes "
            "apart at today's dates)",
            where(ds),
        )
        return ds
    return ds.assign_coords(time=("time", exact.astype("datetime64[ns]")))
