"""The job table's vocabulary, shared by the engine and the modules that read its columns.

Job states are small ints in the per-job ``state`` column (names for results); a
:class:`Rejected` records a policy decision the simulated cluster could not carry out. Kept
apart from :mod:`slurm_ext.sim.engine` so that the result, snapshot and checkpoint modules need
not import the engine (which imports them).
"""

from __future__ import annotations

from dataclasses import dataclass

from slurm_ext.decisions import Decision

FUTURE, PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, CLAIMED = range(7)
STATE_NAMES = ("FUTURE", "PENDING", "RUNNING", "COMPLETED", "TIMEOUT", "CANCELLED", "CLAIMED")


@dataclass(frozen=True, slots=True)
class Rejected:
    time: float
    decision: Decision
    reason: str
