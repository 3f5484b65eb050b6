"""Fault injection: ``crash_point(step)`` at a named step of a resize ends the process when
``ELASTIC_CRASH_AT`` names the step (the crash tests), or runs what :func:`at_step` registered for
it in this process (``slurm-ext bench faults``: slurmctld killed at that step); nothing otherwise.

A module of its own so that every layer (the Slurm adapter, the service, the EJB manager) can
name its steps without importing the layers above it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CRASH_ENV = "ELASTIC_CRASH_AT"
CRASH_EXIT = 86

_actions: dict[str, Callable[[], None]] = {}


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os._exit(CRASH_EXIT)
    action = _actions.pop(step, None)  # once: the fault happens at the first time the step comes
    if action is not None:
        action()


@contextmanager
def at_step(step: str, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` (once) when a resize reaches ``step`` in this process, within the block."""
    _actions[step] = action
    try:
        yield
    finally:
        _actions.pop(step, None)
