"""The Python side of libdmr (``dmr.h``): one function per C call, over :mod:`dmr.runtime`.

libdmr embeds this interpreter in a C, C++ or Fortran MPI program and calls these functions with
plain numbers. Communicators cross as Fortran handles (``MPI_Comm_c2f``/``f2c``: one MPI library
serves both sides of the process), a resize's handle as a small positive int. The protocol, the
world of rank groups and the redistribution are the Python runtime's: nothing here re-implements them.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from dmr import api
from dmr.runtime import Action, Reconfiguration, Runtime

CODES = {Action.NONE: 0, Action.EXPAND: 1, Action.SHRINK: 2}  # DMR_NO_ACTION, DMR_EXPAND, DMR_SHRINK


class HandleError(LookupError):
    """A handle that names no resize in progress (never given out, or finished)."""


_handles: dict[int, Reconfiguration] = {}
_joining = 0  # the handle dmr_joining gives out (the same one at every call)
_next = 1


def _keep(handle: Reconfiguration | None) -> int:
    global _next
    if handle is None:
        return 0
    number, _next = _next, _next + 1
    _handles[number] = handle
    return number


def _handle(number: int) -> Reconfiguration:
    try:
        return _handles[number]
    except KeyError:
        raise HandleError(f"handle {number} names no resize in progress") from None


def init(program: list[str]) -> None:
    """``dmr_init``: the runtime of this process (a rank started by an expansion joins here).

    ``program``: the command line that starts one more rank of this program (a private agent,
    under plain ``srun``, starts new groups with it).
    """
    global _joining
    # a C program's reader wants the message, not the Python line that raised it
    warnings.formatwarning = lambda message, category, *_, **__: f"{message}\n"
    if api._runtime is None:
        api._runtime = Runtime(program=program)
        _joining = _keep(api._runtime.joining)


def comm() -> int:
    return api.runtime().comm.py2f()


def size() -> int:
    return api.runtime().size


def joining() -> int:
    return _joining if _joining in _handles else 0


def check(
    min_procs: int, max_procs: int, factor: int, preferred: int, asynchronous: bool
) -> tuple[int, int, int]:
    """``dmr_check_status``/``dmr_icheck_status``: (action code, new size, handle or 0)."""
    action, new_size, handle = api.runtime().check(
        min_procs, max_procs, factor, preferred if preferred > 0 else None, asynchronous
    )
    return CODES[action], new_size, _keep(handle)


def handle_comm(number: int) -> int:
    return _handle(number).comm.py2f()


def handle_info(number: int) -> tuple[int, int, int]:
    """(action code, size before, size after) of a resize."""
    h = _handle(number)
    return CODES[h.action], h.old_size, h.new_size


def redistribute(number: int, local: memoryview, count: int, itemsize: int) -> np.ndarray:
    """This rank's rows of the new layout: ``count`` rows of ``itemsize`` bytes in, a
    C-contiguous uint8 array of (rows, itemsize) out. Joining ranks pass ``count`` 0."""
    rows = np.frombuffer(local, dtype=np.uint8, count=count * itemsize).reshape(count, itemsize)
    return np.ascontiguousarray(_handle(number).redistribute(rows))


def finish(number: int) -> bool:
    """``dmr_finish``: True where the rank continues. Leaving ranks acknowledge here (after the
    world let them go) and return False; the C program then finalizes MPI and exits itself."""
    handle = _handle(number)
    try:
        return handle.finish(exit=False)
    finally:
        del _handles[number]


def set_progress(fraction: float) -> None:
    api.runtime().progress = fraction


def request_growth(procs: int) -> None:
    api.request_growth(procs)


def finalize() -> None:
    api.finalize()
    _handles.clear()
    sys.stdout.flush()
    sys.stderr.flush()
