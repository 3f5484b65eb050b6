"""Base (rigid) schedulers: one pass over the queue at one instant.

A scheduler is a function ``pass_(sim) -> None`` that starts pending jobs through
``sim.start_queued(i)`` (``i`` an internal job index) and leaves ``sim.queue`` holding the jobs
it did not start, in order (editing that list in place). It reads only requested times: a pending
job's wall limit is ``sim.table.lim[i]`` (at its submitted size ``sim.table.size[i]``; the job
table, :class:`slurm_ext.sim.jobtable.JobTable`), a running job's
expected end is its entry in ``sim.ends`` (a sorted list of ``(expected_end, i)``). A pass only
starts jobs: code that must act after every pass is a controller's ``after_pass``
(:mod:`slurm_ext.sim.controller`).

- :func:`fcfs` starts jobs in queue order and stops at the first that does not fit.
- :func:`easy` is textbook EASY (Mu'alem & Feitelson; pyss ``EasyBackfillScheduler``): a
  reservation for the head job only; a later job may start now if it fits in the free nodes and
  either ends by the head's shadow time or uses no more than the ``extra`` nodes.
- :func:`make_backfill` builds Maui/Slurm-like backfill with reservations for the first ``depth``
  jobs that cannot start (Maui ``ReservationDepth``); any other job starts only if it fits the
  availability profile without touching a reservation. ``depth=1`` gives EASY's schedule,
  a very large depth gives conservative backfilling, ``depth=0`` greedy first-fit.

These are plain loops over lists; the simulator calls them at every event time, so they avoid
allocating objects per job.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from slurm_ext.policies.profile import SnapshotProfile

if TYPE_CHECKING:
    from slurm_ext.sim.jobtable import SimView

SchedulerPass = Callable[["SimView"], None]
INF = math.inf


class EasyView(NamedTuple):
    """What EASY knows about the queue head at ``now`` (EJB paper ``004_*`` Fig. 3, Table 1).

    ``shadow`` is the time the head job is guaranteed to start (``now`` if it fits now,
    ``inf`` if no head); ``extra`` the nodes left over at the shadow time once the head has
    its nodes. Immediately backfillable slots are: type I, ``extra`` nodes with no time bound;
    type II, ``free`` nodes until ``shadow`` (when ``free > extra``).
    """

    now: float
    free: int
    shadow: float
    extra: int
    head: int | None  # job id of the queue head, None when the queue is empty
    head_nodes: int


def shadow_and_extra(
    free: int, need: int, ends: list[tuple[float, int]], sizes: list[int]
) -> tuple[float, int]:
    """Shadow time and extra nodes for a head job needing ``need`` nodes.

    ``ends`` are the running jobs' ``(expected_end, key)`` in ascending order and ``sizes[key]``
    their node counts. All jobs ending exactly at the shadow time count towards ``extra``
    (as in a profile-based EASY such as pyss).
    """
    if need <= free:
        return -INF, free - need  # fits now: caller treats the shadow as "now"
    avail = free
    n = len(ends)
    k = 0
    while k < n:
        t, key = ends[k]
        avail += sizes[key]
        k += 1
        if avail >= need:
            while k < n and ends[k][0] == t:
                avail += sizes[ends[k][1]]
                k += 1
            return t, avail - need
    return INF, 0  # the head can never start: larger than the machine


def start_in_order(sim: SimView) -> int:
    """Start queued jobs in order until one does not fit; returns how many are still queued."""
    q = sim.queue
    size = sim.table.size
    start = sim.start_queued
    k = 0
    n = len(q)
    while k < n and size[q[k]] <= sim.free:
        start(q[k])
        k += 1
    if k:
        del q[:k]
    return n - k


def fcfs(sim: SimView) -> None:
    start_in_order(sim)


def easy(sim: SimView) -> None:
    q = sim.queue
    if not q:
        return
    first = sim.stable_prefix  # jobs before this position were already refused in this same state
    if first == 0:
        start_in_order(sim)
        first = 1
    n = len(q)
    free = sim.free
    if n <= first or free == 0:
        return
    if not any(sim.qsizes[1 : free + 1]):
        return  # no queued job fits in the free nodes: the scan below would start none
    size = sim.table.size
    start = sim.start_queued
    shadow, extra = shadow_and_extra(free, size[q[0]], sim.ends, size)
    now = sim.now
    lim = sim.table.lim
    by_size = sim.queue_by_size
    if first == 1 and by_size is not None and free < n:
        # A policy run's long queue: only the jobs that fit in the free nodes, in queue order
        # (the head, which did not fit, is not one of them), the same jobs the scan tries.
        jobs = by_size.fitting(free, sim.table.qkey)
    else:
        jobs = q[first:]
    started: list[int] = []
    for i in jobs:
        s = size[i]
        if s > free:
            continue
        if now + lim[i] <= shadow:
            pass  # ends before the head needs the nodes
        elif s <= extra:
            extra -= s
        else:
            continue
        start(i)
        free -= s
        started.append(i)
        if free == 0:
            break
    # Usually one or two: cheaper than rebuilding a long queue. Looked for from the first position
    # tried, not the head: a job that starts on arrival is at the end of a long queue.
    for i in started:
        del q[q.index(i, first)]


def _profile(sim: SimView) -> SnapshotProfile:
    """Free nodes over time from now, built straight from the simulator's ``ends`` column (already
    sorted and never overdue: a job ends at its limit) at every backfill pass."""
    times = [sim.now]
    frees = [sim.free]
    sizes = sim.table.size
    for t, key in sim.ends:
        if t == times[-1]:
            frees[-1] += sizes[key]
        else:
            times.append(t)
            frees.append(frees[-1] + sizes[key])
    return SnapshotProfile(sim.now, sim.free, steps=(times, frees))


def make_backfill(depth: int) -> SchedulerPass:
    """Backfill with reservations for the first ``depth`` jobs that cannot start now."""
    if depth < 0:
        raise ValueError(f"reservation depth must be >= 0, got {depth}")

    def backfill(sim: SimView) -> None:
        # The in-order prefix that fits starts as under FCFS; no profile is needed for it.
        n = start_in_order(sim)
        if n == 0:
            return
        q = sim.queue
        size = sim.table.size
        start = sim.start_queued
        now = sim.now
        lim = sim.table.lim
        prof = _profile(sim)
        reserved = 0
        started = False
        for pos in range(n):
            i = q[pos]
            s = size[i]
            if reserved < depth:
                if s > prof.free[0]:  # cannot start now: placed when the profile is next read, if ever
                    prof.reserve_earliest(s, lim[i])
                    reserved += 1
                    continue
                t0 = prof.earliest_start(s, lim[i])  # one scan says whether now, and if not when
                if t0 != now:
                    prof.reserve(t0, lim[i], s)
                    reserved += 1
                    continue
            elif s > prof.free[0]:
                if prof.free[0] == 0:
                    break
                continue
            elif not prof.fits_now(s, lim[i]):  # no reservation left: when it could start is not needed
                continue
            start(i)
            prof.reserve(now, lim[i], s)
            q[pos] = -1
            started = True
        if started:
            q[:] = [i for i in q if i >= 0]

    backfill.__name__ = f"backfill_d{depth}"
    return backfill


def no_scheduler(sim: SimView) -> None:
    """Start nothing: the policy starts every job itself (``StartJob`` decisions)."""


BASE_SCHEDULERS: dict[str, SchedulerPass] = {
    "fcfs": fcfs,
    "easy": easy,
    "backfill": make_backfill(5),  # Maui ReservationDepth as in 000_*'s experiments
    "conservative": make_backfill(1 << 30),
    "none": no_scheduler,
}


def base_scheduler(name: str) -> SchedulerPass:
    """``fcfs``, ``easy``, ``backfill`` (depth 5), ``backfill:D`` (depth D), ``conservative`` or ``none``."""
    key = name.strip().lower()
    if key.startswith("backfill:"):
        try:
            return make_backfill(int(key.split(":", 1)[1]))
        except ValueError:
            raise ValueError(f"bad reservation depth in {name!r}; use e.g. backfill:5") from None
    try:
        return BASE_SCHEDULERS[key]
    except KeyError:
        valid = ", ".join([*BASE_SCHEDULERS, "backfill:D"])
        raise ValueError(f"unknown base scheduler {name!r}; valid: {valid}") from None
