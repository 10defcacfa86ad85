"""JAX's set-up at import: one XLA CPU device per core, and no noise about absent backends.

XLA's CPU runtime runs one program's kernels across its threads with a barrier per kernel; for
the many small kernels of a tracking step that is slower than one thread. One host device per
core, with particles sharded across them (`flowkit.tracker`), is faster (the figures are in
benchmarks/RESULTS.md). Imported before JAX, flowkit sets `XLA_FLAGS`; imported after
`import jax` (the usual order), it sets `jax_num_cpu_devices`, which works until JAX's first
operation starts a backend; after that it warns once, with the fix. Set `FLOWKIT_HOST_DEVICES=1`
to opt out or to any number to choose the count. An explicit
`--xla_force_host_platform_device_count` in `XLA_FLAGS`, or `jax_num_cpu_devices` set by the
user, always wins.

JAX logs `Unable to initialize backend 'tpu'` (at INFO) on every machine without a TPU, which
reaches every user whose logging shows INFO (Hydra apps do); flowkit filters out those lines
for backends nobody asked for (`JAX_PLATFORMS` unset or not naming them).
"""

import os
import sys

_FLAG = "--xla_force_host_platform_device_count"


def _count() -> int:
    try:
        cores = min(len(os.sched_getaffinity(0)), 8)
    except AttributeError:  # macOS
        cores = min(os.cpu_count() or 1, 8)
    requested = os.environ.get("FLOWKIT_HOST_DEVICES")
    if requested is None:
        return cores
    if requested.strip().isdigit() and int(requested) >= 1:
        return int(requested)
    import warnings

    warnings.warn(
        f"FLOWKIT_HOST_DEVICES={requested!r} is not a whole number of devices (1 or more); using {cores}, one per core",
        stacklevel=3,
    )
    return cores


def _configure() -> None:
    flags = os.environ.get("XLA_FLAGS", "")
    count = _count()
    if _FLAG in flags or count <= 1:
        return
    if "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={count}".strip()
        return
    import jax
    from jax._src import xla_bridge

    if jax.config.values.get("jax_num_cpu_devices", -1) != -1:  # the user chose
        return
    if not xla_bridge.backends_are_initialized():
        jax.config.update("jax_num_cpu_devices", count)
    elif jax.default_backend() == "cpu" and jax.device_count() == 1:
        import warnings

        warnings.warn(
            "flowkit was imported after JAX had started, so it runs on 1 CPU device instead of "
            f"{count} (about half the throughput on {count} cores): "
            "import flowkit before the first JAX operation, or set XLA_FLAGS=--xla_force_host_platform_device_count=N",
            stacklevel=3,
        )


class _AbsentBackends:
    """Drops JAX's "Unable to initialize backend 'X'" records unless `JAX_PLATFORMS` names X."""

    def filter(self, record) -> bool:
        message = record.getMessage()
        if not message.startswith("Unable to initialize backend"):
            return True
        requested = os.environ.get("JAX_PLATFORMS", "")
        return any(f"'{name.strip()}'" in message for name in requested.split(",") if name.strip())


def _quiet() -> None:
    import logging

    logger = logging.getLogger("jax._src.xla_bridge")
    if not any(isinstance(f, _AbsentBackends) for f in logger.filters):
        logger.addFilter(_AbsentBackends())


_configure()
_quiet()
