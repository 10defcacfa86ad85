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
    and host, made with `O_EXCL` so that of two processes one wins. A lock whose process is gone
    (same host, no such process) is taken over; any other is refused in one line."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self.path = self.store.with_name(f".{self.store.name}.lock")
        self.held = False

    def acquire(self) -> None:
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        self.store.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.holder()
                if holder is None or lock_alive(holder):
                    raise FileExistsError(self.busy(holder)) from None
                _log.warning(
                    "%s: taking over from process %s on %s, which is gone", self.store, holder["pid"], holder["host"]
                )
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                continue
            with os.fdopen(descriptor, "w") as lock:
                lock.write(record)
            self.held = True
            return
        raise FileExistsError(self.busy(self.holder()))

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
        if self.held:
            self.held = False
            holder = self.holder()
            if holder is not None and holder["pid"] == os.getpid() and holder["host"] == socket.gethostname():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)


def lock_alive(holder: dict) -> bool:
    """Whether the lock's process may still run: on another host it cannot be told, so yes."""
    if holder["host"] != socket.gethostname():
        return True
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True
