"""A bare textbook EASY loop (Mu'alem & Feitelson), the reference the simulator's EASY is timed against.

Plain Python over plain lists, no incremental tricks: at each instant, jobs ending now free
their nodes, arrivals join the queue, queued jobs start in order while they fit, then the head
gets a reservation (its shadow time and the extra nodes left then) and every later job that
fits starts if it ends by the shadow time or uses only extra nodes. Scheduling reads requested
times; a job ends at min(run time, requested time). Returns each job's start time, in
workload order, so that the simulator's schedule can be checked against it.
"""

from __future__ import annotations

import heapq
import math

from slurm_ext.workloads.model import Workload


def easy_starts(workload: Workload) -> list[float]:
    jobs = workload.jobs
    n = len(jobs)
    size = [j.nodes for j in jobs]
    limit = [float(j.time_limit) for j in jobs]
    run = [min(float(j.run_time), limit[k]) for k, j in enumerate(jobs)]
    submit = [float(j.submit) for j in jobs]
    start = [-1.0] * n
    free = workload.nodes
    queue: list[int] = []
    running: list[tuple[float, int]] = []  # (expected end, job), unsorted
    ends: list[tuple[float, int]] = []  # heap of (actual end, job)
    nxt = 0

    def begin(k: int, now: float) -> None:
        nonlocal free
        free -= size[k]
        start[k] = now
        running.append((now + limit[k], k))
        heapq.heappush(ends, (now + run[k], k))

    while nxt < n or ends:
        now = min(submit[nxt] if nxt < n else math.inf, ends[0][0] if ends else math.inf)
        while ends and ends[0][0] == now:
            _, k = heapq.heappop(ends)
            free += size[k]
            running.remove((start[k] + limit[k], k))
        while nxt < n and submit[nxt] == now:
            queue.append(nxt)
            nxt += 1

        while queue and size[queue[0]] <= free:
            begin(queue.pop(0), now)
        if not queue:
            continue
        # the head's reservation: when enough running jobs have ended (all ending then count)
        avail, shadow, extra = free, math.inf, 0
        order = sorted(running)
        for pos, (t, k) in enumerate(order):
            avail += size[k]
            if avail >= size[queue[0]]:
                avail += sum(size[j] for t2, j in order[pos + 1 :] if t2 == t)
                shadow, extra = t, avail - size[queue[0]]
                break
        for k in list(queue[1:]):
            if size[k] > free:
                continue
            if now + limit[k] <= shadow:
                pass
            elif size[k] <= extra:
                extra -= size[k]
            else:
                continue
            begin(k, now)
            queue.remove(k)
    return start
