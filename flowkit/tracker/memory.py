"""What a run needs of host and device memory, checked before anything is allocated."""

import functools
import os
import time
from pathlib import Path

import numpy as np

from .plan import MAX_STEPS


def available_memory() -> int:
    """Host memory available now to this process, in bytes: the least of the system's
    (`MemAvailable` of /proc/meminfo; else all of it), what its control group may still take
    (cgroup v2 `memory.max` less `memory.current`, or v1's) and what its address-space limit
    leaves (`RLIMIT_AS`, as `prlimit --as` or `ulimit -v` set it, less its `VmSize`). Read at
    most once a second: a run's checks read it twice, about 0.1 ms each."""
    now = time.monotonic()
    if now - _read[0] >= 1.0:
        _read[:] = [now, min([_meminfo(), *_limits()])]
    return _read[1]


_read: list = [-float("inf"), 0]  # when the memory was read, and what it said


def _meminfo() -> int:
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _limits() -> list[int]:
    """What the process's limits leave of the host memory (none: an empty list)."""
    import resource

    left = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        left.append(max(soft - _status_bytes("VmSize"), 0))
    for limit, usage in (("memory.max", "memory.current"), ("memory.limit_in_bytes", "memory.usage_in_bytes")):
        folder = Path("/sys/fs/cgroup") if limit == "memory.max" else Path("/sys/fs/cgroup/memory")
        try:
            most = (folder / limit).read_text().strip()
            if most != "max" and int(most) < 2**60:  # v1 writes "no limit" as a huge number
                left.append(max(int(most) - int((folder / usage).read_text()), 0))
        except (OSError, ValueError):
            continue
    return left


def _status_bytes(key: str) -> int:
    """A size of /proc/self/status (`VmSize`, ...) in bytes; 0 where it cannot be read."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def check_memory(host: int, device: int, per_particle: int, budget: int, batch: int) -> None:
    """Refuse, before anything is allocated, a run whose frames (`host` bytes) exceed 80 % of
    the host memory available, naming the store that takes it to completion; or whose batch
    (`device` bytes, `per_particle` of them per particle) exceeds the device `budget`, naming
    the `batch_size` that fits."""
    available = available_memory()
    if host > 0.8 * available:  # (a store needs only a chunk of frames at a time)
        raise MemoryError(_frames_message(host, available))
    if device > budget:
        fits = int(
            0.9 * (budget - (device - batch * per_particle)) // max(per_particle, 1)
        )  # 0.9: room for the padding of blocks
        if fits < 1:
            raise MemoryError(
                f"the field needs {_size(device - batch * per_particle)} of the device's {_size(budget)}: "
                "read it with stream=True (time windows on the device)"
            )
        fits = int(float(f"{fits:.2g}")) if fits >= 100 else fits
        raise MemoryError(
            f"a batch of {batch} particles needs {_size(device)} of device memory and {_size(budget)} "
            f"may be used: give batch_size={fits} (or less)"
        )


PREPARE_BYTES = 24
"""Host bytes per particle and coordinate that a run holds before tracking, whatever its batch
size: the seeds in float64 as drawn and as checked and kept, with room to spare; with 32 bytes a
particle for its release time, origin hints and status. Measured (tracemalloc over `prepare` and
`TrackRun.from_plan`, 10⁶ seeds, session 41): 14 bytes a particle at the peak for 2-D seeds on a
grid, 28 for 3-D seeds on a layered model, beside the seeds' own float64 array."""


def check_seed_memory(
    n: int, dim: int, frames: int, itemsize: int, with_velocity: bool, streamed: bool, tracks: bool = True
) -> None:
    """Refuse, before anything that scales with the seed count is allocated (seeding included),
    a run of `n` particles whose preparation or whose `frames` saved frames (held in memory
    unless `streamed` to a store; the first and the last alone without `tracks`) would exceed
    80 % of the host memory available, naming what bounds it: fewer seeds per run, or a store
    (`output=`) tracked in batches (`batch_size=`)."""
    prepare = n * (PREPARE_BYTES * dim + 32)
    kept = frames if tracks else 2
    held = 0 if streamed else n * kept * (dim * itemsize * (2 if with_velocity else 1) + 1)
    available = available_memory()
    if prepare > 0.8 * available:
        raise MemoryError(
            f"{n} particles need about {_size(prepare)} of host memory before tracking begins (their "
            f"seeds, release times, origins and cells) and {_size(available)} are available: track them "
            "in several runs of fewer seeds, each with its own output= (batch_size= bounds the particles "
            "tracked at once, not the seeds a run holds)"
        )
    if prepare + held > 0.8 * available:
        raise MemoryError(_frames_message(prepare + held, available))


def _frames_message(host: int, available: int) -> str:
    return (
        f"the run's frames need {_size(host)} of host memory and {_size(available)} are available: "
        "stream them to a store (output='tracks.zarr'; output.store=true in the app), which finishes "
        "the run in bounded memory batch by batch (batch_size=), or save fewer frames (a larger save_every)"
    )


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


@functools.cache
def _prepare_signature():
    """`prepare`'s signature, read once (`inspect.signature` takes a tenth of a millisecond)."""
    import inspect

    from .plan import prepare

    return inspect.signature(prepare)


def check_seeds_fit(inputs: tuple, named: dict, streamed: bool, tracks: bool = True) -> None:
    """The host memory a run's seeds and frames take, checked before `prepare` copies the seeds
    (`check_seed_memory`); frames counted where the times are numbers of seconds."""
    given = _prepare_signature().bind_partial(*inputs, **named).arguments
    shape = np.shape(given.get("seeds", ()))
    if len(shape) != 2:
        return  # prepare names what is wrong with them
    times = [given.get(k) for k in ("t0", "t1", "dt")]
    every = given.get("save_every", 1)
    frames = 0
    if all(isinstance(v, (int, float)) for v in times) and times[2] and isinstance(every, int) and every > 0:
        steps = abs((times[1] - times[0]) / times[2])
        if steps > MAX_STEPS:
            return  # more steps than a run counts: prepare says so
        frames = int(steps / every + 2)
    check_seed_memory(
        shape[0],
        shape[1],
        frames,
        np.dtype(given.get("dtype", "float32")).itemsize,
        bool(given.get("record_velocity", False)),
        streamed,
        tracks,
    )
