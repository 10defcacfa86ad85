"""JAX's CPU devices for flowkit's runs (`fk.configure`), and no noise about absent backends.

XLA's CPU runtime runs one program's kernels across its threads with a barrier per kernel; for
the many small kernels of a tracking step that is slower than one thread. One host device per
core, with particles sharded across them (`flowkit.tracker`), is faster (the figures are in
benchmarks/RESULTS.md). `import flowkit` changes none of JAX's configuration: `fk.configure()`
does, where a program asks for it (the apps and benchmarks call it first); a run on one CPU
device of a machine with more cores says so in the log, once.

JAX logs `Unable to initialize backend 'tpu'` (at INFO) on every machine without a TPU, which
reaches every user whose logging shows INFO (Hydra apps do); flowkit filters out those lines
for backends nobody asked for (`JAX_PLATFORMS` unset or not naming them).
"""

import logging
import os
import sys

_FLAG = "--xla_force_host_platform_device_count"


def _cores() -> int:
    try:
        return min(len(os.sched_getaffinity(0)), 8)
    except AttributeError:  # macOS
        return min(os.cpu_count() or 1, 8)


def _count() -> int:
    cores = _cores()
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


def configure(host_devices: int | None = None) -> None:
    """Split the CPU into `host_devices` XLA devices, over which flowkit shards each run's
    particles (about 1.8× the throughput of one device on two cores). Default: one per core (at
    most 8), or `$FLOWKIT_HOST_DEVICES`; 1 leaves JAX as it is.

    Call it before JAX's first operation (before or after `import jax`): it sets `XLA_FLAGS`
    while JAX is not imported, else `jax_num_cpu_devices`; after JAX has started it warns, with
    the fix. An explicit `--xla_force_host_platform_device_count` in `XLA_FLAGS`, or
    `jax_num_cpu_devices` set by the user, always wins."""
    global _configured
    _configured = True
    flags = os.environ.get("XLA_FLAGS", "")
    count = _count() if host_devices is None else int(host_devices)
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
            "flowkit was configured after JAX had started, so it runs on 1 CPU device instead of "
            f"{count} (about half the throughput on {count} cores): "
            "call flowkit.configure() before the first JAX operation, or set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=N",
            stacklevel=2,
        )


_configured = False
"""Whether the device count is settled for this process: `configure` called, or the one-device
note given (said once)."""


def note_devices(devices: list) -> None:
    """Say once in the log where a run on CPU takes one device of a machine with more cores and
    nobody chose (`configure` not called)."""
    global _configured
    cores = _cores()
    chosen = _configured or "FLOWKIT_HOST_DEVICES" in os.environ or _FLAG in os.environ.get("XLA_FLAGS", "")
    if chosen or len(devices) != 1 or devices[0].platform != "cpu" or cores <= 1:
        return
    _configured = True
    logging.getLogger("flowkit").info(
        "flowkit runs on 1 CPU device of %d cores: flowkit.configure() before JAX's first operation shards "
        "runs over %d (about 1.8x on 2 cores)",
        cores,
        cores,
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


_quiet()
