"""What a run needs of host and device memory, checked before anything is allocated."""

import os


def available_memory() -> int:
    """Host memory available now, in bytes (`MemAvailable` of /proc/meminfo; else all of it)."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(host: int, device: int, per_particle: int, budget: int, batch: int) -> None:
    """Refuse, before anything is allocated, a run whose frames (`host` bytes) exceed 80 % of
    the host memory available, naming the store that takes it to completion; or whose batch
    (`device` bytes, `per_particle` of them per particle) exceeds the device `budget`, naming
    the `batch_size` that fits."""
    available = available_memory()
    if host > 0.8 * available:  # (a store needs only a chunk of frames at a time)
        raise MemoryError(
            f"the run's frames need {_size(host)} of host memory and {_size(available)} are "
            "available: stream them to a store (output='tracks.zarr'; output.store=true in the app), "
            "which finishes the run in bounded memory, or save fewer frames (a larger save_every)"
        )
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


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
