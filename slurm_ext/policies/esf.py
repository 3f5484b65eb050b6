"""ESF: earliest started first (``000_*`` §II, Utrera et al.'s FCFS-malleable).

Idle nodes go to running malleable jobs in earliest-start order, each up to its maximum;
shrinking takes from the latest-started job first (the reverse order).
"""

from __future__ import annotations

from typing import ClassVar

from slurm_ext.policies.classic import ClassicMalleable
from slurm_ext.policies.working_view import Running, WorkingView


class ESF(ClassicMalleable):
    name: ClassVar[str] = "esf"

    def shrink_order(self, jobs: list[Running]) -> list[Running]:
        return sorted(jobs, key=lambda r: (-r.start, -r.job_id))

    def expand(self, cl: WorkingView, jobs: list[Running]) -> None:
        cl.fill_in_order(sorted(jobs, key=lambda r: (r.start, r.job_id)), "ESF: earliest started first")
