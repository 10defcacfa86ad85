"""The time windows of a streamed series (`flowkit.fields.streamed.StreamedField`) for a run's
chunks: which slices each chunk needs, the chunks' length that fits them, and a background
thread that reads and uploads the next window while the device computes the current chunk."""

import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np
from jax.typing import DTypeLike

from ..fields.streamed import StreamedField
from .plan import RunPlan

_log = logging.getLogger("flowkit")


def host_copies(devices) -> int:
    """How many copies of a field a run's `devices` hold in the host's memory: one each on CPU
    devices, none elsewhere (counted as one: the budget is then the device's)."""
    return len(devices) if devices[0].platform == "cpu" else 1


def chunk_windows(plan: RunPlan, devices, chunk_saves: int) -> tuple[int, int, np.ndarray]:
    """`(chunk_saves, width, starts)` for a streamed field: the longest chunks (at most
    `chunk_saves` saves) whose windows fit `max_device_bytes`, one width for all."""
    stream, itemsize = plan.stream, plan.dtype.itemsize
    assert stream is not None
    limit = min(stream.max_window(itemsize, host_copies(devices)), stream.n_slices)
    tol = 8 * float(np.finfo(plan.dtype).eps) * max(abs(plan.t0), abs(plan.t1), abs(plan.t1 - plan.t0))
    while True:
        n_chunks = math.ceil(plan.n_saves / chunk_saves)
        chunk_saves = math.ceil(plan.n_saves / n_chunks)
        edges = plan.saved_times[np.minimum(np.arange(n_chunks + 1) * chunk_saves, plan.n_saves)]  # at saved times
        width, starts = plan_windows(stream.times, np.sort(np.stack([edges[:-1], edges[1:]], axis=1), axis=1), tol)
        if width <= limit:
            return chunk_saves, width, starts
        if chunk_saves == 1:
            raise ValueError(
                f"max_device_bytes={stream.max_device_bytes}: besides the field's fixed arrays "
                f"({stream.static_nbytes(itemsize) / 2**20:.2f} MiB), it leaves room for windows of {limit} "
                f"time slices of {stream.slice_nbytes(itemsize) / 2**20:.2f} MiB (two windows resident, "
                "one copy per CPU device), but one save interval "
                f"(save_every={plan.save_every} steps of dt={plan.dt}) spans {width}; "
                "lower save_every or raise max_device_bytes"
            )
        chunk_saves = max(1, min(chunk_saves - 1, chunk_saves * max(limit - 2, 1) // width))


def plan_windows(times: np.ndarray, spans: np.ndarray, tol: float) -> tuple[int, np.ndarray]:
    """`(width, starts)`: the fixed number of slices per window and each chunk's first slice,
    such that the window of chunk `c` holds every slice its times `spans[c] = (a, b)` (widened
    by `tol` against rounding) interpolate between."""
    last = len(times) - 1
    lo = np.clip(np.searchsorted(times, spans[:, 0] - tol, side="right") - 1, 0, last - 1)
    hi = np.clip(np.searchsorted(times, spans[:, 1] + tol, side="right"), lo + 1, last)
    width = int(np.max(hi - lo + 1))
    return width, np.minimum(lo, last + 1 - width)


class WindowFeeder:
    """Reads, stacks and uploads windows in a background thread, one window ahead of use.

    `windows(starts)` yields, for each chunk in order, the window starting at that slice as
    `(leaves, times)` device arrays; equal consecutive starts reuse the arrays. Host copies of
    slices are kept only while the next window needs them. `load_s` sums the time spent
    reading and uploading, `first_s` is the wait for the first window (nothing runs yet to hide
    it), `wait_s` the time the caller waited for later windows that were not ready.
    """

    def __init__(self, streamed: StreamedField, width: int, dtype: DTypeLike, sharding):
        self.streamed = streamed
        self.width = width
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.load_s = 0.0
        self.first_s = 0.0
        self.wait_s = 0.0
        self.loaded = 0
        self._cache: dict[int, dict] = {}  # slices on the host, touched by the one worker thread only

    def _prepare(self, start: int):
        began = time.perf_counter()
        wanted = range(start, start + self.width)
        for k in list(self._cache):
            if k not in wanted:
                del self._cache[k]
        for k in wanted:
            if k not in self._cache:
                self._cache[k] = self.streamed.source.read(k)
                self.loaded += 1
        slices = [self._cache[k] for k in wanted]
        template = self.streamed.template

        def put(array, like):  # rounded to the field's own precision first, as a resident field is
            return jax.device_put(np.asarray(array, like.dtype).astype(self.dtype), self.sharding)

        leaves = {name: put(np.stack([s[name] for s in slices]), leaf) for name, leaf in template.time_leaves().items()}
        window = (leaves, put(self.streamed.times[start : start + self.width], template.times))
        jax.block_until_ready(window)
        self.load_s += time.perf_counter() - began
        return window

    def windows(self, starts):
        starts = [int(s) for s in starts]
        with ThreadPoolExecutor(1, thread_name_prefix="flowkit-window") as pool:
            ahead = pool.submit(self._prepare, starts[0])  # always the next distinct window
            current_start, current = None, None
            for i, start in enumerate(starts):
                if start != current_start:
                    began = time.perf_counter()
                    current, current_start = ahead.result(), start
                    if i:
                        self.wait_s += time.perf_counter() - began
                    else:
                        self.first_s = time.perf_counter() - began
                    following = next((s for s in starts[i + 1 :] if s != start), None)
                    ahead = pool.submit(self._prepare, following) if following is not None else None
                yield current
