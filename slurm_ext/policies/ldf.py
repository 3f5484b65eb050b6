"""LDF: latest deadline first (``000_*`` §II, §V.B).

Idle nodes go to the running malleable job with the latest deadline (expected end) first,
each up to its maximum; shrinking takes from the earliest deadline first.
"""

from __future__ import annotations

from typing import ClassVar

from slurm_ext.policies.classic import ClassicMalleable
from slurm_ext.policies.working_view import Running, WorkingView


class LDF(ClassicMalleable):
    name: ClassVar[str] = "ldf"

    def shrink_order(self, jobs: list[Running]) -> list[Running]:
        return sorted(jobs, key=lambda r: (r.end, r.job_id))

    def expand(self, cl: WorkingView, jobs: list[Running]) -> None:
        cl.fill_in_order(sorted(jobs, key=lambda r: (-r.end, -r.job_id)), "LDF: latest deadline first")
