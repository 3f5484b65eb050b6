"""The rigid baseline: no expand, no shrink (``000_*`` §V.B "rigid", ``001_*`` FCFS at 0%).

It leaves scheduling to the caller's base scheduler (FCFS, EASY or Maui-like backfill with a
reservation depth), which starts every job at its submitted size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.model import Snapshot
from slurm_ext.policies.base import Policy


class Rigid(Policy):
    name: ClassVar[str] = "rigid"
    schedules_jobs: ClassVar[bool] = False

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        return []
