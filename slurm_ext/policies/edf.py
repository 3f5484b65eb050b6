"""EDF: earliest deadline first (``000_*`` §II, §V.B).

A running job's deadline is its expected end (start + time limit at its current size). Idle
nodes go to the job with the earliest deadline first, each up to its maximum; shrinking takes
from the latest deadline first.
"""

from __future__ import annotations

from typing import ClassVar

from slurm_ext.policies.classic import ClassicMalleable
from slurm_ext.policies.working_view import Running, WorkingView


class EDF(ClassicMalleable):
    name: ClassVar[str] = "edf"

    def shrink_order(self, jobs: list[Running]) -> list[Running]:
        return sorted(jobs, key=lambda r: (-r.end, -r.job_id))

    def expand(self, cl: WorkingView, jobs: list[Running]) -> None:
        cl.fill_in_order(sorted(jobs, key=lambda r: (r.end, r.job_id)), "EDF: earliest deadline first")
