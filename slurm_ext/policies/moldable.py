"""The moldable schedulers of ``001_*`` ("Job Scheduler" section): FCFS, Backfilling and
Easy-Backfilling, each extended to moldable jobs the same way.

A job with a range (malleable or moldable: ``min_nodes..max_nodes``) starts on "the maximum
possible number of nodes, taking into account both the specified maximum of the job and the
currently idle nodes", at least its minimum; a rigid job on its own size. Jobs are never resized
once started (001's Malleable-Algorithm, which does, is :mod:`~slurm_ext.policies.minagree`).

- ``fcfs``: the queue in order; the first job that cannot start stops the pass.
- ``backfill``: the queue in order; a job that cannot start is passed over and later jobs
  that fit now start (001's "Backfilling": no reservation, no fairness).
- ``easy``: as ``backfill``, but the first job that cannot start gets a reservation at its
  minimum size, and a later job starts only if that reservation keeps its time: on the largest
  size up to the idle nodes that fits until its end (work is conserved: fewer nodes, a longer
  run), else on as many nodes as stay free past the reservation, else on its minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import ViewPolicy
from slurm_ext.policies.entries import Queued
from slurm_ext.policies.profile import INF, SnapshotProfile
from slurm_ext.policies.working_view import WorkingView, scaled_duration


class Moldable(ViewPolicy):
    """One of 001's three, by ``mode``; the subclasses below are the policies one names."""

    schedules_jobs: ClassVar[bool] = True
    mode: ClassVar[str]

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        cl.serve_evolving(list, f"moldable {self.mode}")  # evolving asks get idle nodes only
        prof: SnapshotProfile | None = cl.profile() if self.mode == "easy" else None
        reserved = False
        for job in list(cl.pending):
            if cl.free == 0:
                break  # nothing more can start (a reservation would serve no later start)
            lo = job.min_nodes
            if lo > cl.total:
                continue  # can never start here
            if not reserved and lo <= cl.free:  # no reservation to keep: as many nodes as idle
                self._start(cl, prof, job, min(job.max_nodes, cl.free), "at the head of the queue")
                continue
            if self.mode == "fcfs":
                break
            if prof is None:  # backfill: no reservation, anything that fits now starts
                if lo <= cl.free:
                    self._start(cl, None, job, min(job.max_nodes, cl.free), "backfilled")
                continue
            if not reserved:
                start = prof.earliest_start(lo, scaled_duration(job, lo))
                if start == INF:
                    continue
                prof.reserve(start, scaled_duration(job, lo), lo)
                reserved = True
                continue
            size = _fitting_size(prof, cl.now, job, cl.free)
            if size:
                self._start(cl, prof, job, size, "backfilled behind the reservation")
        return cl.decisions

    def _start(
        self, cl: WorkingView, prof: SnapshotProfile | None, job: Queued, nodes: int, why: str
    ) -> None:
        cl.start(job, nodes, f"moldable {self.mode}: {why} on {nodes} of {job.min_nodes}-{job.max_nodes}")
        if prof is not None:
            prof.reserve(cl.now, scaled_duration(job, nodes), nodes)


def _fitting_size(prof: SnapshotProfile, now: float, job: Queued, free: int) -> int:
    """The largest of three sizes that runs from ``now`` to its end within the free nodes of
    ``prof``: as many as are idle (up to the job's maximum), as many as stay free for good (the
    nodes the reservation leaves), the job's minimum; 0 if none does."""
    cap = min(job.max_nodes, free)
    forever = min(cap, prof.min_free(now, INF))
    for n in (cap, forever, job.min_nodes):
        if job.min_nodes <= n <= free and prof.min_free(now, now + scaled_duration(job, n)) >= n:
            return n
    return 0


class MoldableFCFS(Moldable):
    name: ClassVar[str] = "moldable-fcfs"
    mode: ClassVar[str] = "fcfs"


class MoldableBackfill(Moldable):
    name: ClassVar[str] = "moldable-backfill"
    mode: ClassVar[str] = "backfill"


class MoldableEASY(Moldable):
    name: ClassVar[str] = "moldable-easy"
    mode: ClassVar[str] = "easy"
