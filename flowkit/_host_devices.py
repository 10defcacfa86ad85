"""Split the CPU into one XLA device per core before JAX starts.

XLA's CPU runtime runs one program's kernels across its threads with a barrier per kernel; for
the many small kernels of a tracking step that is slower than one thread. One host device per
core, with particles sharded across them (`flowkit.tracker`), measured ~1.8× faster on 2 cores
(benchmarks/RESULTS.md). This only takes effect when flowkit is imported before JAX; set
`FLOWKIT_HOST_DEVICES=1` to opt out or to any number to choose the count. An explicit
`--xla_force_host_platform_device_count` in `XLA_FLAGS` always wins.
"""

import os
import sys

_FLAG = "--xla_force_host_platform_device_count"


def _configure() -> None:
    if "jax" in sys.modules:
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if _FLAG in flags:
        return
    requested = os.environ.get("FLOWKIT_HOST_DEVICES")
    if requested is not None:
        count = int(requested)
    else:
        try:
            count = len(os.sched_getaffinity(0))
        except AttributeError:  # macOS
            count = os.cpu_count() or 1
        count = min(count, 8)
    if count > 1:
        os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={count}".strip()


_configure()
