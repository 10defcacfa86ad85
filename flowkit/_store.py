"""The progress a streamed trajectory store records (zarr attributes), read by
`Trajectory.load` and written by the tracker's `ZarrSink`.

Until its last batch is written a store's attribute `flowkit_complete` is false and
`flowkit_batches_done` counts the batches written (of `flowkit_batches`, each of
`flowkit_batch_size` particles); frames not written are NaN, with status `NOT_WRITTEN_STATUS`
(-1). `flowkit_identity` holds a hash of each part of the run that made it (field, seeds, times,
...), so that `resume=True` continues only that run and says which parts differ. One process
writes a store at a time (`StoreLock`), and every written chunk is a file, so a store missing
one is found damaged (`missing_chunks`).
"""

import contextlib
import fcntl
import json
import logging
import math
import os
import socket
import time
from pathlib import Path

_log = logging.getLogger("flowkit")

NOT_WRITTEN_STATUS = -1
"""The status of a frame a streamed store has not been written yet (a run killed part-way)."""


def unfinished(attrs, n: int) -> tuple[int, int, int] | None:
    """For a store's `attrs` (of `n` particles): `(batches done, batches, particles held)` when
    its run did not finish, else None (finished, or not a streamed store)."""
    if attrs.get("flowkit_complete", True) is not False:
        return None
    done, total, size = (int(attrs[k]) for k in ("flowkit_batches_done", "flowkit_batches", "flowkit_batch_size"))
    return done, total, min(done * size, n)


STORE_FORMAT = 2
"""`flowkit_store_format` of stores whose every written chunk is a file (zarr's
`write_empty_chunks`), so a missing chunk file is damage, not a chunk of fill values."""


def write_dataset(dataset, path: Path, group: str) -> None:
    """`dataset` written as the zarr group `group` of the store at `path` (a run's statistics),
    its fixed-width strings (names of polygons) as variable-length ones: zarr's format 3
    specifies no fixed-width string type."""
    dataset = dataset.copy()
    for name in [name for name, v in dataset.variables.items() if v.dtype.kind == "U"]:
        dataset[name] = dataset[name].astype(object)
    dataset.to_zarr(path, group=group, mode="w", consolidated=False)


def read_dataset(path: Path, group: str):
    """The dataset `write_dataset` wrote, loaded, its strings NumPy's fixed-width ones again."""
    import numpy as np
    import xarray as xr

    with xr.open_zarr(path, group=group, consolidated=False) as opened:
        dataset = opened.load()
    for name in [name for name, v in dataset.variables.items() if v.dtype.kind in "OT"]:
        dataset[name] = dataset[name].copy(data=np.array(dataset[name].values.tolist(), dtype=str))
    return dataset


def check_store(path: Path) -> None:
    """Raise one line when `path` is not a flowkit trajectory store: a plain file, a folder
    without `zarr.json`, a damaged `zarr.json`, or a zarr group flowkit did not stream."""
    what = "give output= a new path, or overwrite=True to replace it"
    if not path.is_dir():
        raise ValueError(f"{path}: a file, not a trajectory store (a folder); {what}")
    meta = path / "zarr.json"
    if not meta.is_file():
        raise ValueError(f"{path}: a folder without zarr.json, not a trajectory store; {what}")
    try:
        attrs = json.loads(meta.read_text())["attributes"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: its zarr.json is damaged ({type(err).__name__}: {err}); {what}") from None
    if "flowkit_batches" not in attrs:
        raise ValueError(f"{path}: a zarr store that no flowkit run streamed (no flowkit_batches); {what}")


def missing_chunks(group) -> list[str]:
    """The chunk keys of `group`'s per-particle arrays over the particles its written batches
    hold that zarr's listing of the store lacks (stores of `STORE_FORMAT` only: others may leave
    out chunks of fill values)."""
    import itertools

    from zarr.core.sync import sync

    n = group["status"].shape[0] if "status" in group else 0
    progress = unfinished(group.attrs, n)
    rows = n if progress is None else progress[2]
    if group.attrs.get("flowkit_store_format") != STORE_FORMAT or rows == 0:
        return []

    async def listing():
        return {key async for key in group.store.list_prefix("")}

    present, missing = sync(listing()), []
    for name, array in group.arrays():
        if (array.metadata.dimension_names or ("",))[0] != "trajectory":
            continue
        spans = [range(math.ceil(rows / array.chunks[0]))] + [
            range(math.ceil(size / chunk)) for size, chunk in zip(array.shape[1:], array.chunks[1:])
        ]
        for coords in itertools.product(*spans):
            key = f"{name}/{array.metadata.encode_chunk_key(coords)}"
            if key not in present:
                missing.append(key)
    return missing


class StoreLock:
    """One writer per store: a lock file beside the store (`.tracks.zarr.lock`: zarr takes every
    file in a store for a member of it, and warns of any other) holds the writing process's id
    and host, made with `O_EXCL` so that of two processes one wins, and `flock`ed by its writer
    for as long as it writes. A lock that nobody holds (its process gone: the system released
    it) is taken over by whoever `flock`s it first, in place, so that of two processes taking
    over one stale lock one wins; any other lock is refused in one line."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self.path = self.store.with_name(f".{self.store.name}.lock")
        self.held = False
        self._descriptor: int | None = None

    def acquire(self) -> None:
        self.store.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
                fcntl.flock(descriptor, fcntl.LOCK_EX)  # waits only while another process checks it
            except FileExistsError:
                descriptor = self._take_over()
                if descriptor is None:  # the lock went away meanwhile
                    continue
                gone = self.holder() or {}
                _log.warning(
                    "%s: taking over from process %s on %s, which is gone",
                    self.store,
                    gone.get("pid"),
                    gone.get("host"),
                )
            record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "flock": True}
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, json.dumps(record).encode(), 0)
            self._descriptor, self.held = descriptor, True
            return
        raise FileExistsError(self.busy(self.holder()))

    def _take_over(self) -> int | None:
        """The lock file's descriptor, `flock`ed, when its writer is gone; None when the file
        went away; refused when it is held or cannot be told stale."""
        try:
            descriptor = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise FileExistsError(
                f"{self.path}: a folder where the lock file of {self.store} belongs (one run writes a store at a "
                "time, and marks it there); remove the folder"
            ) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(descriptor).st_ino != os.stat(self.path).st_ino:  # removed (and made anew) since
                os.close(descriptor)
                return None
        except FileNotFoundError:
            os.close(descriptor)
            return None
        except BlockingIOError:
            os.close(descriptor)
            raise FileExistsError(self.busy(self.holder())) from None
        holder = self.holder()
        if holder is None or lock_alive(holder, flocked=True):
            os.close(descriptor)
            raise FileExistsError(self.busy(holder))
        return descriptor

    def check_free(self) -> None:
        """Refuse in one line (`FileExistsError`) when another process holds the lock."""
        descriptor = self._take_over() if self.path.exists() or self.path.is_symlink() else None
        if descriptor is not None:
            os.close(descriptor)

    def holder(self) -> dict | None:
        """The lock's record, or None while it cannot be read (being written, damaged)."""
        try:
            record = json.loads(self.path.read_text())
            return record if {"pid", "host"} <= set(record) else None
        except (OSError, ValueError):
            return None

    def busy(self, holder: dict | None) -> str:
        who = "another process" if holder is None else f"process {holder['pid']} on {holder['host']}"
        return (
            f"{self.store} is being written by {who} (its lock {self.path}): one run writes a store at a "
            f"time; give output= another path, or wait for that run (remove {self.path.name} if no run writes there)"
        )

    def release(self) -> None:
        if self.held and self._descriptor is not None:
            self.held = False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # before the flock goes: a process waiting on it then finds it removed
            os.close(self._descriptor)
            self._descriptor = None


def lock_alive(holder: dict, flocked: bool) -> bool:
    """Whether the lock's process may still run: on another host it cannot be told, so yes; on
    this one, a lock its writer `flock`ed and that was just `flock`ed (`flocked`) is free (the
    system releases a process's locks when it ends, whatever became of its id), else it lives
    while its process id does."""
    if holder["host"] != socket.gethostname():
        return True
    if holder.get("flock") and flocked:
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True
