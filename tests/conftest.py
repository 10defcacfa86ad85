"""Test setup: float64 available (accuracy tests ask for it explicitly), keys by fixture, JAX's
compilation cache in `helpers.TEST_CACHE`."""

import os
import signal

os.environ.setdefault("FLOWKIT_HOST_DEVICES", "2")  # sharding is exercised even on a 1-core machine
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # a suite started in the background (`bash .ci/run &`) inherits Ctrl-C ignored, and so would
    # the apps it starts: the Ctrl-C tests need Python's own handler, as a user's terminal gives
    signal.signal(signal.SIGINT, signal.default_int_handler)

import jax
import pytest
from helpers import TEST_CACHE  # noqa: E402

import flowkit

flowkit.configure()  # two CPU devices (FLOWKIT_HOST_DEVICES above) before JAX starts: sharding is exercised

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", str(TEST_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


@pytest.fixture
def getkey():
    keys = iter(jax.random.split(jax.random.key(1234), 1000))
    return lambda: next(keys)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Each test module starts without the compiled programs of the others: one process
    compiling every test's programs grew until XLA's CPU compiler crashed (segfault) late in
    the suite."""
    flowkit.clear_caches()
    yield
