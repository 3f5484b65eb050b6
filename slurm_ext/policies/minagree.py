"""minAgree, the Malleable-Algorithm of ``001_*`` ("Job Scheduler" section), in three steps:

1. waiting jobs are started with EASY backfilling; malleable jobs always start at their
   minimum number of nodes;
2. if jobs are waiting but the idle nodes are not enough to start them, nodes are extracted
   from running malleable jobs so that a waiting job can start, reducing the jobs running
   with the largest number of nodes first (one node at a time from the currently largest);
   repeated for the next waiting job while it succeeds;
3. remaining idle nodes go to running malleable jobs, preferring those running with the
   smallest number of nodes (one node at a time to the currently smallest).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import QueueCounts, ViewPolicy
from slurm_ext.policies.working_view import WorkingView, min_size


class MinAgree(ViewPolicy):
    name: ClassVar[str] = "minagree"
    schedules_jobs: ClassVar[bool] = True

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        cl.serve_evolving(list, "minAgree")  # no evolving jobs in 001_*: asks get idle nodes only
        if cl.free > 0:  # with no idle node the backfill starts nothing (it would only reserve)
            cl.backfill(1, min_size, "minAgree step 1: EASY backfilling")
        for job in list(cl.pending):
            n = min_size(job)
            if n > cl.total:
                continue
            donors = [r for r in cl.malleable_running() if r.size > r.min]
            short = n - cl.free
            if short > 0 and sum(r.size - r.min for r in donors) < short:
                break  # reclaim would refuse: all donors together cannot free enough (most calls)
            why = f"minAgree step 2: shrink largest jobs to start job {job.job_id}"
            if not cl.reclaim(n, donors, why, job.job_id, largest_first=True):
                break
            cl.start(job, n, "minAgree step 2: started on nodes extracted from malleable jobs")
        jobs = [r for r in cl.malleable_running() if r.size < r.max]
        if jobs and cl.free > 0:
            cl.equipartition(jobs, cl.free, "minAgree step 3: idle nodes to the smallest jobs")
        return cl.decisions

    def may_act(self, state: QueueCounts) -> bool:
        """False when the three steps would do nothing: no idle node (step 1 starts nothing,
        step 3 has nothing to give) and the malleable jobs cannot together give the first
        pending job the nodes it needs (step 2 stops at it); or idle nodes, nothing pending and
        every malleable job at its max. Anything else may act: ``decide`` answers."""
        # The running jobs are asked for only when the answer needs them (a call into the caller).
        head = state.head_min_size()
        if state.free > 0:
            return head is not None or any(cur < spec.max_nodes for cur, spec in state.malleable_sizes())
        if head is None:
            return False
        if head > state.total_nodes:
            return True  # step 2 skips a job that can never start: the next one may
        running = state.malleable_sizes()
        return sum(cur - spec.min_nodes for cur, spec in running if cur > spec.min_nodes) >= head
