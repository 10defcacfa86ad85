"""Paths a user gives for data to read: one that names neither a file nor a folder is refused."""

import contextlib
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ._custom_types import PathLike


def refuse_special(path: PathLike, what: str = "") -> None:
    """Raise `ValueError` when `path` exists but is neither a file nor a folder (a FIFO, a
    socket, a device): reading it would wait for a writer, or never end. `what` names the
    parameter ("seeds file "). A missing path is left to the reader, which names it."""
    try:
        mode = Path(path).stat().st_mode
    except (OSError, ValueError):
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise ValueError(f"{what}{path}: {kind}, not a file or folder; give the data file itself")


@contextlib.contextmanager
def open_npz(path: PathLike, what: str) -> Iterator[Any]:
    """`np.load(path)` of an `.npz` archive, never unpickling: a file that is not one, or that
    holds pickled (object) arrays, is refused in one line naming `what` and `path`."""
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"{what} {path}: not an .npz archive of numeric arrays ({' '.join(str(err).split())}); "
            "write it with np.savez"
        ) from err
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{what} {path}: one array (.npy data), not an .npz archive of named arrays; use np.savez")
    with data:
        try:
            yield data
        except ValueError as err:
            if "allow_pickle" not in str(err):
                raise
            raise ValueError(
                f"{what} {path}: holds pickled (object) arrays, which flowkit does not load (loading runs "
                "code from the file); save numeric arrays"
            ) from err
