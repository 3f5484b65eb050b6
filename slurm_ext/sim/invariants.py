"""Whole-trace correctness checks of the simulator (used by tests and benchmarks).

- :func:`capacity_violations`: instants where more nodes were busy than exist (must be none).
- :func:`head_reservation_violations`: with run times equal to requested times, EASY promises
  each queue head a start no later than its shadow time; list the heads that started later.
"""

from __future__ import annotations

import numpy as np

from slurm_ext.sim.engine import Simulator
from slurm_ext.sim.result import SimResult
from slurm_ext.workloads.model import Workload


def capacity_violations(result: SimResult) -> np.ndarray:
    """Times at which allocated nodes exceeded the machine or went negative."""
    tl = result.timeline
    bad = (tl["busy"] > result.nodes) | (tl["busy"] < 0)
    return tl["time"][bad]


class _HeadWatch(Simulator):
    """Remembers, for every job that becomes the queue head, the shadow time EASY gave it."""

    reservations: dict[int, float]

    def _schedule(self) -> None:
        super()._schedule()
        q = self.queue
        if q and self.jid[q[0]] not in self.reservations:
            view = self.easy_view()
            if view.head is not None and view.shadow < float("inf"):
                self.reservations[view.head] = view.shadow


def exact_estimates(workload: Workload) -> Workload:
    """The same jobs with run time = requested time (so that reservations are exact)."""
    jobs = [j._replace(run_time=j.time_limit) for j in workload.jobs]
    return Workload(
        jobs, workload.nodes, workload.name + "+exact", list(workload.skipped), slots=workload.slots
    )


def head_reservation_violations(
    workload: Workload, scheduler: str = "easy", tolerance: float = 1e-6
) -> tuple[int, list[tuple[int, float, float]]]:
    """Run ``workload`` with exact estimates; return (heads checked, [(job, start, reservation)])."""
    sim = _HeadWatch(exact_estimates(workload), scheduler)
    sim.reservations = {}
    result = sim.run()
    start = dict(zip(result.job_id.tolist(), result.start.tolist(), strict=True))
    late = [(j, start[j], t) for j, t in sim.reservations.items() if start[j] > t + tolerance]
    return len(sim.reservations), late
