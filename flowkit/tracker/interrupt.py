"""Ctrl-C during a run: noted, raised, and reported by where the run stopped."""

import contextlib
import signal
import threading


@contextlib.contextmanager
def ctrl_c_noted():
    """Ctrl-C during a run is noted as well as raised (yields the list of notes): an interrupt
    arriving inside a call that XLA's compiler makes back into Python can be swallowed there,
    and the run then raises it at its next chunk. Only in the main thread, and only where
    Ctrl-C has Python's own handler."""
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

    signal.signal(signal.SIGINT, handler)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT) between or inside chunks: its message says where it
    stopped and how to go on."""
