"""Files written whole or not at all, and never over another result unasked.

Every writer writes to a temporary name beside the final one and renames it on success (a
rename within one folder is atomic), so a file under its final name is always whole: a kill,
a full disk or an exception mid-write leaves the earlier file as it was and no partial one.
"""

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ._custom_types import PathLike


def refuse_existing(path: PathLike, overwrite: bool, what: str = "") -> None:
    """A `FileExistsError` in one line when `path` exists and `overwrite` is false."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{path} exists{what}: pass overwrite=True (overwrite=true in the app) to replace it, or "
            "choose another name"
        )


@contextlib.contextmanager
def written(path: PathLike, overwrite: bool = False) -> Iterator[Path]:
    """A temporary path beside `path` (same suffix) to write to; renamed to `path` when the
    block succeeds, removed when it fails. An existing `path` (a file or a folder such as a
    `.zarr` store) is refused unless `overwrite`. A write that fails for want of space or
    permission raises one `OSError` line naming `path`."""
    path = Path(path)
    refuse_existing(path, overwrite)
    temporary = path.with_name(f".{path.name}.partial-{os.getpid()}{path.suffix}")
    _remove(temporary)
    try:
        yield temporary
        replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        if error.errno is None:
            raise
        raise OSError(
            error.errno, f"{path} was not written: {os.strerror(error.errno)}; any earlier {path.name} is unchanged"
        ) from None
    except BaseException:
        _remove(temporary)
        raise


def replace(source: Path, target: Path) -> None:
    """Move `source` to `target`, replacing it: a file in one atomic rename; a folder (or a
    folder's place) by moving the old one aside first, then removing it."""
    if (target.is_dir() and not target.is_symlink()) or (source.is_dir() and target.exists()):
        aside = target.with_name(f".{target.name}.old-{os.getpid()}")
        _remove(aside)
        os.replace(target, aside)
        os.replace(source, target)
        _remove(aside)
    else:
        os.replace(source, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
