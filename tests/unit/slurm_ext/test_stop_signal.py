"""A long-running command stops on SIGTERM even when a thread other than the main one takes it."""

from __future__ import annotations

import subprocess
import sys

import pytest

# The signal goes to a helper thread (as the kernel may choose for a process-directed one); the
# handler can run only in the main thread, which must wake up to run it.
SCRIPT = """
import signal, threading, time
from slurm_ext.stop_signal import on_stop_signal, wait_for
stop = on_stop_signal()
def other():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
threading.Thread(target=other).start()
{wait}
print("stopped", flush=True)
"""


def _run(wait: str, timeout: float) -> subprocess.CompletedProcess[str]:
    code = SCRIPT.format(wait=wait)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


def test_sigterm_taken_by_another_thread_stops_the_wait() -> None:
    done = _run("wait_for(stop)", timeout=20)
    assert done.returncode == 0 and done.stdout == "stopped\n", done.stderr


def test_an_untimed_wait_would_miss_it() -> None:
    # what wait_for is for: the plain Event.wait() the service used never returns here
    with pytest.raises(subprocess.TimeoutExpired):
        _run("stop.wait()", timeout=3)
