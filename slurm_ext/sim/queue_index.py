"""The queued jobs grouped by size, for a backfill scan over a long queue.

EASY's pass (:func:`slurm_ext.sim.schedulers.easy`) looks, after the head, for queued jobs that
fit in the free nodes, in queue order. With DMR the queue holds about 200 jobs and a few nodes
are free, so the scan walked ~200 jobs to find the few small enough to try (12 M steps in a
250K-job run; the pass takes about 0.1 s less of that run's 5 s without them).
:meth:`QueueBySize.fitting` lists just those: the jobs of each size up to the free nodes, put
back in queue order by their key (``JobTable.qkey``, which orders the queue). The engine keeps it
for policy runs with EASY's pass (``Simulator.queue_by_size``; ``None`` otherwise: a rigid run's
queue is short), adding a job where it is queued and discarding it where it leaves the queue, as
it does ``qsizes``.
"""

from __future__ import annotations


class QueueBySize:
    """``sets[s]``: the indices of the queued jobs of ``s`` nodes (``s`` from 1 to the machine)."""

    __slots__ = ("sets",)

    def __init__(self, total_nodes: int) -> None:
        self.sets: list[set[int]] = [set() for _ in range(total_nodes + 1)]

    def fitting(self, free: int, qkey: list[int]) -> list[int]:
        """The queued jobs of at most ``free`` nodes, in queue order."""
        found: list[int] = []
        sets = self.sets
        for s in range(1, free + 1):
            jobs = sets[s]
            if jobs:
                found.extend(jobs)
        if len(found) > 1:
            found.sort(key=qkey.__getitem__)
        return found

    def copy(self) -> QueueBySize:
        new = object.__new__(QueueBySize)
        new.sets = [jobs.copy() for jobs in self.sets]
        return new
