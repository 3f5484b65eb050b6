"""Fault injection for the crash tests: ``crash_point(step)`` ends the process at a named step
when ``ELASTIC_CRASH_AT`` names it, and does nothing otherwise.

A module of its own so that every layer (the Slurm adapter, the service, the EJB manager) can
name its steps without importing the layers above it.
"""

from __future__ import annotations

import os

CRASH_ENV = "ELASTIC_CRASH_AT"
CRASH_EXIT = 86


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os._exit(CRASH_EXIT)
