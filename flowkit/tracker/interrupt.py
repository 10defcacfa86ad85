"""Ctrl-C during a run: noted, raised, and reported by where the run stopped."""

import contextlib
import signal
import sys
import threading

_NOTES: list[bool] | None = None
"""The notes of the outermost `ctrl_c_noted` now open, which the ones inside it share."""


@contextlib.contextmanager
def ctrl_c_noted():
    """Ctrl-C during a run is noted as well as raised (yields the list of notes): an interrupt
    that lands in a callback Python cannot raise from (JAX's garbage-collection callback during
    compilation or reading) is swallowed there, and the run raises it at its next chunk;
    Python's report of the swallowed one is left out. Nested, they share the outermost's notes
    (an app's, around its reading, and its run's). Only in the main thread, and only where
    Ctrl-C has Python's own handler."""
    global _NOTES
    if _NOTES is not None:
        yield _NOTES
        return
    noted: list[bool] = []
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield noted
        return

    def handler(signum, frame):
        noted.append(True)
        raise KeyboardInterrupt

    unraisable = sys.unraisablehook

    def quiet(report):  # a noted interrupt is raised again later: not reported as lost here
        if not issubclass(report.exc_type, KeyboardInterrupt):
            unraisable(report)

    signal.signal(signal.SIGINT, handler)
    sys.unraisablehook = quiet
    _NOTES = noted
    try:
        yield noted
    finally:
        _NOTES = None
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = unraisable


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT) between or inside chunks: its message says where it
    stopped and how to go on."""
