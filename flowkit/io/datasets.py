"""NetCDF/zarr files opened lazily (metadata only), each marked with its source path: what the
readers of ocean and atmosphere models start from (`flowkit.io.xarray`, a model's grid file in
`flowkit.io.ocean.companion`)."""

import glob
import logging
import re
import warnings
from pathlib import Path

from .._custom_types import Files
from .cf_times import UNDECODED_TIMES

_log = logging.getLogger("flowkit")

SUFFIXES = (".nc", ".nc4", ".cdf", ".netcdf", ".zarr")
"""Paths read as NetCDF/zarr datasets by `fk.io.read`."""


def dataset_files(directory: Path) -> list[Path]:
    """The NetCDF files of a folder (not a zarr store), in name order."""
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)


def open_datasets(path: Files) -> list:
    """Each file of `path` (a file, a glob, a list, a folder of NetCDF files) opened lazily:
    only its metadata is read."""

    directory = Path(str(path)) if isinstance(path, (str, Path)) else None
    if directory is not None and directory.is_dir() and directory.suffix.lower() != ".zarr":
        path = dataset_files(directory)
        if not path:
            raise FileNotFoundError(f"{directory}: a folder without NetCDF files ({', '.join(SUFFIXES)})")
    if isinstance(path, (list, tuple)):
        files = [Path(p) for p in path]
    elif any(ch in str(path) for ch in "*?["):
        files = [Path(p) for p in sorted(glob.glob(str(path)))]
        if not files:
            raise FileNotFoundError(f"no files match {path}")
    else:
        files = [Path(path)]
    opened = []
    for file in files:
        if not file.exists():
            raise FileNotFoundError(f"dataset {file} does not exist")
        try:
            ds = _opened(file)
        except Exception as err:  # noqa: BLE001 -- every engine's own error becomes one naming the file
            raise ValueError(f"{file}: cannot be opened as NetCDF/zarr ({type(err).__name__}: {err})") from None
        ds.attrs["flowkit_source"] = str(file)
        opened.append(ds)
    return opened


def _opened(file: Path):
    """`file` opened lazily. A scalar variable named as a dimension that other variables use
    (ADCIRC's `neta`, `nvel` beside its boundary arrays) is left out, which xarray cannot hold;
    a time that cannot be decoded (a grid file's `seconds since 0000-01-01`) is kept as numbers
    and marked, so that only a series that needs it is refused (`cf_times.time_axis`)."""
    import xarray as xr

    options: dict = {"drop_variables": []}
    undecoded = None
    while True:
        try:
            if file.suffix.lower() == ".zarr":
                ds = xr.open_zarr(file, consolidated=None, **options)
            else:
                ds = xr.open_dataset(file, **options)
        except ValueError as err:
            clash = re.fullmatch(r"dimension '(.+)' already exists as a scalar variable", str(err))
            if clash and clash[1] not in options["drop_variables"]:
                options["drop_variables"].append(clash[1])
                _log.info("%s: scalar variable %r left out (it is also a dimension's name)", file, clash[1])
                continue
            if ("decode time" in str(err) or "decoding variable" in str(err)) and undecoded is None:
                undecoded = _undecodable_times(file, options)
                options["decode_times"] = dict.fromkeys(undecoded, False)
                continue
            raise
        if undecoded:
            ds.attrs[UNDECODED_TIMES] = undecoded
        return ds


def _undecodable_times(file: Path, options: dict) -> list[str]:
    """The variables of `file` whose CF times xarray cannot decode (FVCOM's `Itime2` in `msec
    since 00:00:00`, a grid file's `seconds since 0000-01-01`): each kept as numbers."""
    import xarray as xr

    raw = xr.open_dataset(file, **options, decode_times=False)
    failing = []
    for name, var in raw.variables.items():
        if " since " not in str(var.attrs.get("units", "")):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xr.decode_cf(raw[[name]])
        except ValueError:
            failing.append(str(name))
    return failing
