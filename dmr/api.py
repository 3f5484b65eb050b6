"""The DMR calls (paper 002, §5.1): ``check_status`` and its asynchronous form ``icheck_status``.

Both are collective over the application's communicator (:func:`comm`) and return
``(action, new_size, handle)``: ``action`` is :class:`Action` (``NONE``, ``EXPAND``,
``SHRINK``), ``new_size`` the number of ranks after it, ``handle`` a
:class:`Reconfiguration` (``None`` for no action). See :mod:`dmr.runtime` for what to do
with the handle, or use :class:`dmr.Malleable`, which does it for you.
"""

from __future__ import annotations

from mpi4py import MPI

from dmr.runtime import Action, Reconfiguration, Runtime

_runtime: Runtime | None = None


def runtime() -> Runtime:
    """The process's runtime, created on first use (a spawned rank joins its parents here)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
    return _runtime


def comm() -> MPI.Intracomm:
    """The application's communicator now (changes after every resize: do not cache it)."""
    return runtime().comm


def joining() -> Reconfiguration | None:
    """In a rank spawned by an expansion: the handle of that expansion (else ``None``)."""
    return runtime().joining


def check_status(
    min_procs: int, max_procs: int, factor: int = 2, preferred: int | None = None
) -> tuple[Action, int, Reconfiguration | None]:
    """Ask the control service for a resize now and carry out its answer (expand: spawn).

    Raises :class:`dmr.DMRArgumentError` on invalid arguments. Outside a Slurm job or with
    the service unreachable it returns ``(Action.NONE, size, None)`` after one warning.
    """
    return runtime().check(min_procs, max_procs, factor, preferred, asynchronous=False)


def icheck_status(
    min_procs: int, max_procs: int, factor: int = 2, preferred: int | None = None
) -> tuple[Action, int, Reconfiguration | None]:
    """Asynchronous form: returns the decision asked for at the previous call (carried out
    now), and asks for the next one while the coming step computes. The first call always
    returns no action.
    """
    return runtime().check(min_procs, max_procs, factor, preferred, asynchronous=True)


def request_growth(procs: int) -> None:
    """An evolving request (paper 000): ask the service for ``procs`` ranks at the next checks.

    The policy grants it (the next ``check_status`` expands) or not yet; the request stays open
    until the application has that many ranks. Collective arguments are not needed: only rank 0
    talks to the service.
    """
    if not isinstance(procs, int) or isinstance(procs, bool) or procs < 1:
        from dmr.config import DMRArgumentError

        raise DMRArgumentError(f"procs must be a positive int, got {procs!r}")
    runtime().evolving = procs


def finalize() -> None:
    """Drop an asynchronous answer nobody will act on and close the service connection."""
    if _runtime is not None:
        _runtime.close()
