"""Time series bigger than the device: read slice by slice from disk, tracked in time windows.

Here, below the readers and the tracker, sits what both hold of such a series; the readers of
`flowkit.io` supply each format's `SliceSource`, the tracker plans and loads the windows.

A `StreamedField` is the host's handle on a time series: a `template` field built from its first
two slices (mesh, locator, axes: everything that does not change in time), the times of all
slices, and a `SliceSource` that reads one slice. `fk.track` keeps on the device only a window
of the slices that bracket the current chunk. Every window has the same number of slices, so
swapping one in replaces the template's time-dependent leaves (`values`, `times`, ...) with
arrays of the same shapes, and the compiled chunk runs on without recompiling. The tracker plans
the windows and a background thread reads and uploads the next one while the device computes
the current chunk (`flowkit.tracker.windows`).

Inside a window the field is evaluated with the same slices, times and arithmetic as the whole
series (`time_weights` finds the same bracketing pair), so streamed and in-memory runs agree
bit for bit.
"""

import abc
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .base import AbstractField

_log = logging.getLogger("flowkit")


class SliceSource(abc.ABC):
    """Reads one time slice of a series from disk, on the host.

    `times` are the strictly increasing times of all slices; `read(k)` returns the arrays of
    slice `k` keyed by the name of the field leaf they fill (`"values"`, and for meshes with
    sampled arrays `"sample_values"`), in that leaf's layout without the time axis.
    """

    description: str
    times: np.ndarray
    files: Sequence[Any]
    """What it reads from: files, folders, or a solver's time steps (`flowkit.io.solvers.Step`)."""

    @abc.abstractmethod
    def read(self, k: int) -> dict[str, np.ndarray]:
        """The arrays of slice `k`."""

    def stamps(self) -> list[tuple[str, int, int, str]]:
        """What identifies the slices on disk without reading them whole: `(path, size,
        modification time in ns, hash of sampled blocks)` of each file, and of every file under
        a folder (a solver's case; a time step of one counts as its case's folder). The blocks
        (`sampled_hash`) find a file replaced by another of the same size and time."""
        stamps = []
        for item in self.files:
            path = Path(str(getattr(getattr(item, "case", None), "path", item)))
            for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
                try:
                    stat = os.stat(file)
                    stamps.append((str(file), stat.st_size, stat.st_mtime_ns, sampled_hash(file, stat.st_size)))
                except OSError:
                    stamps.append((str(file), -1, -1, ""))
        return stamps


SAMPLED_BLOCKS, BLOCK_BYTES = 4, 1 << 16
"""`sampled_hash` reads this many blocks of this size (first, last, evenly between)."""


def sampled_hash(path: Path, size: int) -> str:
    """A hash of `SAMPLED_BLOCKS` blocks of the file at `path` (its first, its last and evenly
    between; a file of no more than that, whole)."""
    import xxhash

    digest = xxhash.xxh3_64()
    with open(path, "rb") as file:
        if size <= SAMPLED_BLOCKS * BLOCK_BYTES:
            digest.update(file.read())
        else:
            for start in np.linspace(0, size - BLOCK_BYTES, SAMPLED_BLOCKS).astype(np.int64):
                file.seek(int(start))
                digest.update(file.read(BLOCK_BYTES))
    return digest.hexdigest()


def device_budget() -> int:
    """Default `max_device_bytes`: half the first device's memory where the backend reports it
    (GPUs), else a quarter of the host's physical memory (the CPU devices share it)."""
    stats = jax.local_devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"]) // 2
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4


def _copies() -> int:
    """Copies of a replicated field in memory: one per CPU device (they share the host's memory)."""
    devices = jax.local_devices()
    return len(devices) if devices[0].platform == "cpu" else 1


class StreamedField:
    """A time series tracked window by window (see the module docstring); give it to `fk.track`.

    Made by the readers (`fk.io.read_vtk`, `fk.io.load_grid_npz`, `fk.io.from_xarray`) with
    `stream=True`, or by default when the whole series would exceed `max_device_bytes`. It is
    not itself an `AbstractField`: it cannot be evaluated or differentiated through, only tracked.

    **Arguments:**

    - `template`: the field built from slices 0 and 1 (its time-dependent leaves get replaced).
    - `source`: the `SliceSource` of all slices.
    - `max_device_bytes`: the device memory the field may use (all copies, two windows: the one
      in use and the one being loaded); default `device_budget()`.
    """

    def __init__(self, template: AbstractField, source: SliceSource, max_device_bytes: int | None = None):
        times = np.asarray(source.times, dtype=np.float64)
        if times.ndim != 1 or len(times) < 2 or not np.all(np.diff(times) > 0):
            raise ValueError(f"{source.description}: a streamed series needs at least 2 strictly increasing times")
        self.template = template
        self.source = source
        self.times = times
        self.leaves = tuple(template.time_leaves())
        self.max_device_bytes = device_budget() if max_device_bytes is None else int(max_device_bytes)
        if self.max_device_bytes <= 0:
            raise ValueError(f"max_device_bytes must be positive, got {max_device_bytes}")

    @property
    def time_range(self) -> tuple[float, float]:
        return float(self.times[0]), float(self.times[-1])

    @property
    def n_slices(self) -> int:
        return len(self.times)

    def __getattr__(self, name):
        # what does not change in time is the template's, as its class declares
        # (`time_invariant`): forwarded, since a StreamedField is not itself a field (it cannot
        # be evaluated or traced)
        if "template" in self.__dict__ and name in type(self.template).time_invariant:
            return getattr(self.template, name)
        raise AttributeError(
            f"StreamedField has no {name!r}: its time series stays on disk (the geometry is in "
            ".template; .near(t) gives the field around time t)"
        )

    def slice_nbytes(self, itemsize: int) -> int:
        """Bytes of one slice of every time-dependent leaf at `itemsize` bytes per number."""
        return sum(math.prod(leaf.shape[1:]) for leaf in self.template.time_leaves().values()) * itemsize

    def static_nbytes(self, itemsize: int) -> int:
        """Bytes of the arrays that do not change in time (mesh, locator, axes), one copy, with
        floating-point numbers of `itemsize` bytes."""
        moving = {id(leaf) for leaf in self.template.time_leaves().values()} | {id(self.template.times)}
        fixed = [
            leaf for leaf in jax.tree.leaves(self.template) if isinstance(leaf, jax.Array) and id(leaf) not in moving
        ]
        return sum(
            leaf.size * (itemsize if np.issubdtype(leaf.dtype, np.floating) else leaf.dtype.itemsize) for leaf in fixed
        )

    def max_window(self, itemsize: int, copies: int) -> int:
        """The most slices a window may hold within `max_device_bytes`, with two windows
        resident and the field replicated `copies` times in that memory."""
        free = self.max_device_bytes / copies - self.static_nbytes(itemsize)
        return max(0, int(free // (2 * (self.slice_nbytes(itemsize) + itemsize))))

    def near(self, t: float) -> AbstractField:
        """The field over the two slices bracketing time `t`, read now: exact at `t` (for
        probing and plotting a streamed series; clamped to the series outside its range)."""
        k = int(np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self.n_slices - 2))
        pair = [self.source.read(k), self.source.read(k + 1)]
        leaves = {
            name: jnp.asarray(np.stack([p[name] for p in pair]), leaf.dtype)
            for name, leaf in self.template.time_leaves().items()
        }
        return swap_window(self.template, leaves, jnp.asarray(self.times[k : k + 2], self.template.times.dtype))

    def window_field(self, width: int) -> AbstractField:
        """The template holding a window of `width` slices (zeros, at times 0..width-1): a
        field of the shapes every window has, to compile against."""
        zeros = {
            name: np.zeros((width,) + leaf.shape[1:], leaf.dtype) for name, leaf in self.template.time_leaves().items()
        }
        return swap_window(self.template, zeros, np.arange(width, dtype=self.template.times.dtype))

    def __repr__(self) -> str:
        return (
            f"StreamedField({type(self.template).__name__}, {self.n_slices} slices from "
            f"{self.source.description}, max_device_bytes={self.max_device_bytes})"
        )


def refuse_streamed(field: AbstractField | StreamedField, what: str, instead: str) -> None:
    """A clear error where a `StreamedField` cannot go (traced programs need the whole series)."""
    if isinstance(field, StreamedField):
        raise TypeError(
            f"field: {what} needs the whole time series on the device, but this StreamedField is read "
            f"window by window; {instead}"
        )


def swap_window(field: AbstractField, leaves: dict, times) -> AbstractField:
    """`field` with its time-dependent leaves (and `times`) replaced by a window's arrays."""
    names = tuple(leaves)
    for name, new in leaves.items():
        old = field.time_leaves()[name]
        if tuple(new.shape[1:]) != tuple(old.shape[1:]):
            raise ValueError(
                f"streamed field: a window's {name!r} has shape {tuple(new.shape[1:])} per slice, the "
                f"field {tuple(old.shape[1:])} (a periodic grid given with its end node repeated: drop "
                "that node from the files, or read with stream=False)"
            )
    return eqx.tree_at(
        lambda f: tuple(f.time_leaves()[n] for n in names) + (f.times,), field, tuple(leaves.values()) + (times,)
    )


def choose_streaming(
    stream: bool | None, n_slices: int, slice_bytes: int, max_device_bytes: int | None, description: str
) -> bool:
    """Whether a reader returns a `StreamedField`: `stream` if given, else whether all slices
    (one copy per CPU device) exceed `max_device_bytes` (default `device_budget()`)."""
    if stream is not None:
        return bool(stream)
    budget = device_budget() if max_device_bytes is None else int(max_device_bytes)
    total = n_slices * slice_bytes * _copies()
    if total > budget:
        _log.info(
            "%s: %d time slices need %.1f MiB on the device, over the budget of %.1f MiB: streaming in time windows",
            description,
            n_slices,
            total / 2**20,
            budget / 2**20,
        )
        return True
    return False
