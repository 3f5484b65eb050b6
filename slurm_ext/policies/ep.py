"""EP: naive equipartitioning (``000_*`` §II, §V.B; Hungershöfer; Kalé et al.).

Expansion gives idle nodes one at a time to the running malleable job holding the fewest
nodes, so that sizes are equalised; shrinking takes nodes one at a time from the job holding
the most, which is the same equalisation run backwards.
"""

from __future__ import annotations

from typing import ClassVar

from slurm_ext.policies.classic import ClassicMalleable
from slurm_ext.policies.working_view import Running, WorkingView


class EP(ClassicMalleable):
    name: ClassVar[str] = "ep"

    def shrink_order(self, jobs: list[Running]) -> list[Running]:
        # reclaim() below takes from the currently largest job at every step; this order is
        # used where whole shrinks are made (evolving requests)
        return sorted(jobs, key=lambda r: (-r.size, r.job_id))

    def reclaim(self, cl: WorkingView, need: int, donors: list[Running], for_job: int) -> bool:
        why = f"EP: equal shrink to start job {for_job}"
        return cl.reclaim(need, donors, why, for_job, largest_first=True)

    def expand(self, cl: WorkingView, jobs: list[Running]) -> None:
        cl.equipartition(jobs, cl.free, "EP: equipartition idle nodes")
