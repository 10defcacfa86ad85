"""What the apps set up around a run before building it: JAX's persistent compilation cache
and its hit counts, the processes of a multi-host run, and the run's PRNG key from `seed`."""

import logging
import tempfile
from collections import Counter
from pathlib import Path

import jax

_log = logging.getLogger("flowkit")


def run_key(seed) -> jax.Array:
    """The run's PRNG key from the app's `seed`, an integer JAX's keys hold (64 bits)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise ValueError(f"seed={seed!r}: give a whole number from -2**63 to 2**63 - 1")
    return jax.random.key(seed)


_CACHE_EVENTS = {"/jax/compilation_cache/cache_hits": "hits", "/jax/compilation_cache/cache_misses": "misses"}
_cache_events: Counter = Counter()
_listening = False


def cache_counts() -> Counter:
    """Persistent-cache hits and misses so far in this process (a JAX monitoring listener,
    registered once): a rerun of an unchanged job reports misses 0."""
    global _listening
    if not _listening:
        jax.monitoring.register_event_listener(
            lambda event, **_: _cache_events.update([_CACHE_EVENTS[event]]) if event in _CACHE_EVENTS else None
        )
        _listening = True
    return Counter(_cache_events)


def enable_compilation_cache(directory) -> None:
    """Keep compiled programs on disk (JAX's persistent cache) so a rerun skips compilation."""
    if not directory:
        return
    path = Path(directory).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as err:
        _log.warning(
            "compilation_cache=%s cannot be written (%s): the run compiles without it; give "
            "compilation_cache= a folder you can write, or null",
            directory,
            err.strerror or err,
        )
        return
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def join_processes(distributed) -> None:
    """Join a multi-host run (`jax.distributed.initialize`) when `distributed.enabled`; unset
    keys (None) are detected by JAX from the cluster's environment (SLURM, Open MPI, ...).
    Must come before anything touches a JAX device."""
    if not distributed or not distributed.get("enabled"):
        return
    keys = ("coordinator_address", "num_processes", "process_id")
    jax.distributed.initialize(**{key: distributed[key] for key in keys if distributed.get(key) is not None})
