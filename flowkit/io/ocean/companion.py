"""A model's grid file beside its output (NEMO's mesh mask, MOM6's static file): given, listed
among the files, or found next to the first one."""

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from ..cf import where
from ..datasets import open_datasets

_log = logging.getLogger("flowkit")


def grid_file(model: str, data: list, listed: list, grid, patterns: Sequence[str], is_grid: Callable, holds: str):
    """The grid file of `model`'s output `data`: `grid` (a path or an `xarray.Dataset`), else the
    one of `listed` (the grid files given among the paths), else the one file beside the first of
    `data` that matches `patterns`, else None. `is_grid` tells a grid file of the model from any
    other, `holds` says what one holds (for the refusal of one that does not).

    **Raises:** `FileNotFoundError` for a `grid` path that does not exist; `ValueError` naming the
    files where several are given or found, or a given file that is no grid file of the model."""
    import xarray as xr

    if isinstance(grid, xr.Dataset):
        return grid
    if grid is not None:
        if not Path(grid).exists():
            raise FileNotFoundError(f"{model} grid file {grid} does not exist")
        return model_grid(Path(grid), model, is_grid, holds)
    if len(listed) > 1:
        raise ValueError(
            f"{where(data[0])}: several grid files given ({', '.join(where(ds) for ds in listed)}); give one, or grid="
        )
    if listed:
        return listed[0]
    source = data[0].attrs.get("flowkit_source")
    if source is None:
        return None
    found = sorted({p for pattern in patterns for p in Path(source).parent.glob(pattern)})
    if len(found) > 1:
        raise ValueError(
            f"{source}: several {model} grid files beside it ({', '.join(p.name for p in found)}); pass grid= "
            "one of them"
        )
    if not found:
        return None
    _log.info("%s: %s: grid read from %s (beside it)", model, source, found[0])
    return model_grid(found[0], model, is_grid, holds)


def model_grid(path: Path, model: str, is_grid: Callable, holds: str):
    """The grid file at `path` opened (lazily), refused in one line naming it when it cannot be
    read or is not a grid file of `model` (`is_grid`; `holds`: what one holds)."""

    (ds,) = open_datasets([path])
    if not is_grid(ds):
        names = ", ".join(sorted(map(str, ds.variables))[:8])
        raise ValueError(f"{path}: not a {model} grid file (that holds {holds}); it holds {names}")
    return ds
