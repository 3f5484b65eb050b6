"""The "standard approach" of earlier malleable schedulers that DBES is compared with.

``000_*`` §II and §IV.C: when the next queued job cannot start for lack of nodes, the
scheduler shrinks already-expanded malleable jobs to find nodes for it; when the next queued
job cannot start even by shrinking, an expand phase distributes the idle nodes among the
running malleable jobs; as a final step, backfilling runs with the nodes left after the
expansion. Only the order in which jobs are shrunk and expanded differs between the
strategies (EP, ESF, EDF, LDF), so each is a subclass that gives that order.

As in DBES, malleable jobs start at their minimum size and are shrunk at most back to it,
and backfilling keeps Maui's ``ReservationDepth`` reservations (5 in all of ``000_*``'s runs).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import ViewPolicy
from slurm_ext.policies.working_view import Running, WorkingView, check_depth, min_size


class ClassicMalleable(ViewPolicy):
    schedules_jobs: ClassVar[bool] = True

    def __init__(self, reservation_depth: int = 5) -> None:
        self.depth = check_depth(reservation_depth)

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        # evolving requests: idle nodes, else shrink expanded jobs in this strategy's order
        cl.serve_evolving(
            lambda: self.shrink_order([r for r in cl.malleable_running() if r.size > r.min]), self.name
        )
        # priority phase: start queued jobs in order, shrinking expanded jobs when needed
        for job in list(cl.pending):
            n = min_size(job)
            if n > cl.total:
                continue
            if n > cl.free:
                donors = self.shrink_order([r for r in cl.malleable_running() if r.size > r.min])
                if not self.reclaim(cl, n, donors, job.job_id):
                    break
            cl.start(job, n, f"{self.name}: start in priority order")
        # expand phase, then backfill with what is left
        jobs = [r for r in cl.malleable_running() if r.size < r.max]
        if jobs and cl.free > 0:
            self.expand(cl, jobs)
        cl.backfill(self.depth, min_size, f"{self.name}: backfill")
        return cl.decisions

    def reclaim(self, cl: WorkingView, need: int, donors: list[Running], for_job: int) -> bool:
        return cl.reclaim(need, donors, f"{self.name}: shrink to start job {for_job}", for_job)

    @abstractmethod
    def shrink_order(self, jobs: list[Running]) -> list[Running]:
        """Expanded malleable jobs in the order they give nodes back."""

    @abstractmethod
    def expand(self, cl: WorkingView, jobs: list[Running]) -> None:
        """Distribute ``cl.free`` idle nodes among ``jobs`` (running, below their max)."""
