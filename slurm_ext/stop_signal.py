"""Stopping a long-running command (the service, the EJB manager) on SIGTERM or SIGINT."""

from __future__ import annotations

import signal
import threading


def on_stop_signal() -> threading.Event:
    """An event that SIGTERM and SIGINT set from now on (the process no longer dies of them)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def wait_for(stop: threading.Event, poll: float = 0.5) -> None:
    """Block the main thread until ``stop`` is set, waking every ``poll`` seconds.

    Python runs a signal's handler only in the main thread, between bytecodes, and the kernel may
    hand a process's signal to any of its threads. When another thread takes it, an untimed
    ``stop.wait()`` never wakes to run the handler, and the process ignores ``kill`` (seen: a
    service left running after a test's SIGTERM).
    """
    while not stop.wait(poll):
        pass
