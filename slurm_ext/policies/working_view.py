"""A mutable working copy of a snapshot that policies plan on.

A policy applies its own decisions to this copy as it makes them (start, expand, shrink),
so that later steps of the same iteration see the effect of earlier ones (e.g. DBES
backfills with the nodes left after its first expansion step). The decisions are recorded in
order, which is the order the caller must carry them out in (see ``base.py``).

Time model (shared with the simulator's default): linear speed-up and conserved work, so a
job of remaining time ``r`` on ``n`` nodes has remaining time ``r * n / m`` on ``m`` nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from heapq import heapify, heappop, heappush

from slurm_ext.decisions import Decision, Expand, Shrink, StartJob
from slurm_ext.model import Job, Snapshot
from slurm_ext.policies.entries import Queued, Running
from slurm_ext.policies.profile import INF, SnapshotProfile, first_free


def check_depth(reservation_depth: int) -> int:
    """Maui's ``ReservationDepth`` for the policies' backfill: at least one reservation."""
    if reservation_depth < 1:
        raise ValueError(f"reservation_depth must be >= 1, got {reservation_depth}")
    return reservation_depth


def scaled_duration(job: Queued, nodes: int) -> float:
    """Requested time of a pending ``job`` if started on ``nodes`` nodes (work conserved)."""
    if job.time_limit is None:
        return INF
    return job.time_limit * job.node_count / nodes


def min_size(job: Queued) -> int:
    return job.min_nodes


def max_size(job: Queued) -> int:
    return job.max_nodes


# What a caller that keeps no snapshot (the simulator) hands WorkingView: time, total nodes, idle
# nodes, its own Running entries of the running jobs (in the order of ``Snapshot.running``) and a
# fresh list of the pending jobs in queue order.
ViewState = tuple[float, int, int, dict[int, Running], list[Queued]]


def running_of(job: Job) -> Running:
    """The working copy's entry for a running ``job`` of a snapshot."""
    return Running(
        job.job_id,
        job.node_count,
        job.end_time if job.end_time is not None else expected_end(job),
        job.malleable,
        job.start_time if job.start_time is not None else 0.0,
        job.submit_time,
        job.time_limit,
        job.evolving,
    )


def queued_of(job: Job) -> Queued:
    """The working copy's entry for a pending ``job`` of a snapshot."""
    return Queued(job.job_id, job.node_count, job.submit_time, job.start_time, job.time_limit, job.malleable)


def ends_at(end: float, t: float, eps: float = 1e-6) -> bool:
    """Whether an expected ``end`` is time ``t`` up to rounding (relative ``eps``, at least ``eps``)."""
    return abs(end - t) <= eps * max(1.0, abs(t))


def expected_end(job: Job) -> float:
    if job.end_time is not None:
        return job.end_time
    if job.start_time is not None and job.time_limit is not None:
        return job.start_time + job.time_limit
    return INF


class WorkingView:
    """Free nodes, running jobs and the pending queue, updated as decisions are made."""

    def __init__(
        self,
        snap: Snapshot | None = None,
        *,
        state: ViewState | None = None,
        malleable: list[Running] | None = None,
    ) -> None:
        """The copy of ``snap``, or one on ``state``: the caller's Running entries, which this copy
        changes in place and records, and :meth:`restore` changes back (a simulator keeps one
        entry per running job instead of building a snapshot and a copy of it at every call).
        ``malleable``: what :meth:`malleable_running` gives before any change, if the caller
        has it (the simulator lists it as it lists the entries)."""
        # the (entry, size, end, ask) of every change to a caller's entry, in order; None: no caller's
        self._undo: list[tuple[Running, int, float, int | None]] | None = None
        if snap is not None:
            self.now, self.total, self.free = snap.time, snap.total_nodes, snap.free
            self.running: dict[int, Running] = {j.job_id: running_of(j) for j in snap.running}
            self.pending: list[Queued] = [queued_of(j) for j in snap.pending]
        elif state is not None:
            self.now, self.total, self.free, running, self.pending = state
            self.running = running.copy()
            self._undo = []
        else:
            raise TypeError("WorkingView needs a snapshot or a state")
        self.decisions: list[Decision] = []
        # Every change to this copy records a decision, so the decision count versions it: the
        # malleable jobs, asked for several times per call, are listed once per version.
        self._malleable: tuple[int, list[Running]] | None = None if malleable is None else (0, malleable)

    # --- queries -----------------------------------------------------------------------
    def profile(self) -> SnapshotProfile:
        """Free nodes over time from the copy as it is now (a fresh profile the caller may change).
        Built at every request, not kept per version and copied: in DBES's and SD's runs fewer
        than one request in ten came twice at a version, and a copy costs a third of a build."""
        return SnapshotProfile(self.now, self.free, list(self.running.values()))

    def malleable_running(self) -> list[Running]:
        """Running malleable jobs, in running order (shared until the next change: do not modify)."""
        version = len(self.decisions)
        cached = self._malleable
        if cached is None or cached[0] != version:
            cached = (version, [r for r in self.running.values() if r.malleable])
            self._malleable = cached
        return cached[1]

    # --- actions (recorded in order) ------------------------------------------------------
    def start(self, job: Queued, nodes: int, reason: str) -> None:
        if nodes > self.free:
            raise RuntimeError(f"start job {job.job_id} on {nodes} nodes with {self.free} free")
        self.free -= nodes
        _remove_same(self.pending, job)
        # as running_of(job) would show the pending job (no start time, its requested limit)
        self.running[job.job_id] = Running(
            job.job_id,
            nodes,
            self.now + scaled_duration(job, nodes),
            job.malleable,
            job.start_time if job.start_time is not None else 0.0,
            job.submit_time,
            job.time_limit,
        )
        self.decisions.append(StartJob(job.job_id, nodes, reason))

    def resize(self, r: Running, new_size: int, reason: str, for_job: int | None = None) -> None:
        if new_size == r.size:
            return
        if not r.min <= new_size <= r.max:
            raise RuntimeError(f"resize job {r.job_id} to {new_size} outside [{r.min}, {r.max}]")
        grow = new_size - r.size
        if grow > self.free:
            raise RuntimeError(f"expand job {r.job_id} by {grow} with {self.free} free")
        if self._undo is not None:
            self._undo.append((r, r.size, r.end, r.ask))
        if r.end != INF:
            r.end = self.now + max(r.end - self.now, 0.0) * r.size / new_size
        self.free -= grow
        cls = Expand if grow > 0 else Shrink
        self.decisions.append(cls(r.job_id, new_size, reason, for_job))
        r.size = new_size

    def evolving_asks(self) -> list[Running]:
        return [r for r in self.running.values() if r.ask is not None and r.ask > r.size]

    def serve_evolving(self, donors: Callable[[], list[Running]], reason: str) -> None:
        """Grant each open evolving ask from idle nodes, shrinking ``donors()`` (in order) if
        idle nodes are short; refuse it (no decision) if even that is not enough."""
        for r in self.evolving_asks():
            assert r.ask is not None
            need = r.ask - r.size
            if need > self.free and not self.reclaim(
                need, donors(), f"{reason}: shrink for evolving job {r.job_id}", r.job_id
            ):
                continue
            if self._undo is not None:
                self._undo.append((r, r.size, r.end, r.ask))
            if r.end != INF:
                r.end = self.now + max(r.end - self.now, 0.0) * r.size / r.ask
            self.free -= need
            self.decisions.append(Expand(r.job_id, r.ask, f"{reason}: evolving request granted"))
            r.size, r.ask = r.ask, None

    def restore(self) -> None:
        """Change the caller's entries (``state``) back to what they were before this copy
        changed them: called once the decisions are taken, the copy is of no use after."""
        undo = self._undo
        if undo:
            for r, size, end, ask in reversed(undo):
                r.size, r.end, r.ask = size, end, ask
            undo.clear()

    # --- shared building blocks -------------------------------------------------------------
    def reclaim(
        self,
        need: int,
        donors: Iterable[Running],
        reason: str,
        for_job: int | None,
        *,
        largest_first: bool = False,
    ) -> bool:
        """Shrink ``donors`` (each down to its min) until ``need`` more nodes are free: in the
        given order, or with ``largest_first`` one node at a time from the donor then holding the
        most. Does nothing and returns False if they cannot free enough together."""
        donors = [d for d in donors if d.size > d.min]
        short = need - self.free
        if short <= 0:
            return True
        if sum(d.size - d.min for d in donors) < short:
            return False
        target = [d.size for d in donors]  # new sizes by position (not a dict keyed by job id)
        if largest_first:
            # one node at a time from the donor then holding the most (ties: higher job id; ids
            # are unique, so the position is never compared)
            heap = [(-d.size, -d.job_id, d.min, k) for k, d in enumerate(donors)]
            heapify(heap)
            for _ in range(short):
                size, neg_id, low, k = heappop(heap)
                target[k] = -size - 1
                if -size - 1 > low:
                    heappush(heap, (size + 1, neg_id, low, k))
        else:
            for k, d in enumerate(donors):
                take = min(d.size - d.min, short)
                target[k] -= take
                short -= take
        # by index: zip(strict=True) is a generic call in the compiled build (its keyword)
        for k in range(len(donors)):
            self.resize(donors[k], target[k], reason, for_job)  # no-op where the target is the size
        return True

    def equipartition(self, jobs: list[Running], nodes: int, reason: str, for_job: int | None = None) -> None:
        """Give ``nodes`` idle nodes one at a time to the job holding the fewest (capped by max),
        so sizes are equalised (``000_*`` §II, equipartitioning)."""
        grow = [r for r in jobs if r.size < r.max]
        budget = min(nodes, self.free)
        if grow and budget > 0:
            # in the order of ``jobs``; the others keep their size (no decision)
            sizes = water_fill(grow, budget)
            for k in range(len(grow)):  # (by index, as in reclaim)
                self.resize(grow[k], sizes[k], reason, for_job)

    def fill_in_order(self, jobs: list[Running], reason: str) -> None:
        """Give idle nodes to ``jobs`` in the given order, each up to its max (ESF/EDF/LDF)."""
        for r in jobs:
            if self.free <= 0:
                break
            self.resize(r, min(r.max, r.size + self.free), reason)

    def backfill(
        self,
        depth: int,
        start_size: Callable[[Queued], int],
        reason: str,
        profile: SnapshotProfile | None = None,
        resume: tuple[int, list[tuple[Queued, float]]] | None = None,
    ) -> list[tuple[Queued, float]]:
        """Priority-order pass with ``depth`` reservations (Maui ``ReservationDepth``; EASY is 1).

        Each pending job starts now if it fits without delaying an earlier reservation;
        otherwise, while fewer than ``depth`` reservations exist, it gets one at its earliest
        start. Returns the reservations made, in priority order.

        ``resume=(k, reserved)``: the pass over ``pending[:k]`` is known to have started nothing
        and made ``reserved`` (already in ``profile``); it goes on from ``pending[k]``.

        With one reservation and neither ``profile`` nor ``resume``, :meth:`_easy` does the same.
        """
        if depth == 1 and profile is None and resume is None:
            return self._easy(start_size, reason)
        prof = profile or self.profile()
        reserved: list[tuple[Queued, float]] = []
        jobs = self.pending
        if resume is not None:
            k, done = resume
            reserved = list(done)
            jobs = jobs[k:]
        by_min = start_size is min_size  # min_size and scaled_duration inline below
        total, now = self.total, self.now
        for job in list(jobs):
            full = len(reserved) >= depth
            if full and self.free == 0:
                break  # nothing can start, nor be reserved, any more
            n = job.min_nodes if by_min else start_size(job)
            if n > total or (full and n > self.free):
                continue
            limit = job.time_limit
            dur = INF if limit is None else limit * job.node_count / n  # scaled_duration(job, n)
            if n <= self.free and prof.min_free(now, now + dur) >= n:
                self.start(job, n, reason)
                prof.reserve(self.now, dur, n)
            elif len(reserved) < depth:
                t = prof.earliest_start(n, dur)
                if t == INF:
                    continue
                prof.reserve(t, dur, n)
                reserved.append((job, t))
        return reserved

    def _easy(self, start_size: Callable[[Queued], int], reason: str) -> list[tuple[Queued, float]]:
        """:meth:`backfill` with one reservation (EASY): the same starts and reservation, with
        no profile (EASY's shadow time and extra nodes).

        Before the reservation, the pass changes the copy only by starts over ``[now, end)``, so
        free nodes never fall later in time: a job fits for its whole duration iff it fits now,
        and the first that does not gets the reservation, at ``t``. After it, the fewest free
        nodes over a job's window are the idle nodes and, if the window reaches past ``t``, the
        nodes free at ``t`` less the reservation's (``extra``) and less each started job's that
        reaches past ``t`` too.
        """
        by_min = start_size is min_size
        total, now, free0 = self.total, self.now, self.free
        reserved: list[tuple[Queued, float]] = []
        shadow = INF
        extra = 0
        early: list[tuple[int, float, int]] = []  # starts before the reservation: (job id, duration, nodes)
        passed = 0  # jobs before the reservation that neither started nor got it
        unheld = False  # an early start too short to show at now's precision
        for job in list(self.pending):
            n = job.min_nodes if by_min else start_size(job)
            if reserved:
                if n > self.free:  # most jobs once the reservation is made
                    if self.free == 0:
                        break  # nothing can start any more
                    continue
                limit = job.time_limit
                dur = INF if limit is None else limit * job.node_count / n  # scaled_duration(job, n)
                if now + dur <= shadow:
                    self.start(job, n, reason)
                elif n <= extra:
                    extra -= n
                    self.start(job, n, reason)
                continue
            if n > total:
                passed += 1
                continue
            limit = job.time_limit
            dur = INF if limit is None else limit * job.node_count / n
            if n <= self.free:
                early.append((job.job_id, dur, n))
                unheld = unheld or not now + dur > now
                self.start(job, n, reason)
                continue
            if unheld:
                # A start too short to show at now's precision, which the general pass's profile
                # does not hold: go on as that pass does, from the profile it would have.
                return self.backfill(1, start_size, reason, self._profile_before(free0, early), (passed, []))
            t, at = first_free(now, self.free, list(self.running.values()), n)
            if t == INF:
                passed += 1
                continue
            reserved.append((job, t))
            shadow = t
            # a reservation too short to show at t's precision holds nothing (as reserve())
            extra = at - n if dur > 0 and t + dur > t else at
        return reserved

    def _profile_before(self, free0: int, early: list[tuple[int, float, int]]) -> SnapshotProfile:
        """The profile a pass that began with ``free0`` idle nodes and then made the ``early``
        starts holds: built before those starts, each reserved from now."""
        started = {jid for jid, _, _ in early}
        before = [r for jid, r in self.running.items() if jid not in started]
        prof = SnapshotProfile(self.now, free0, before)
        for _, dur, n in early:
            prof.reserve(self.now, dur, n)
        return prof


def water_fill(jobs: list[Running], nodes: int) -> list[int]:
    """New sizes of ``jobs`` (in their order, each below its max) when ``nodes`` nodes are given
    one at a time to the job then holding the fewest (ties: earlier start, lower id), each up to
    its max. Computed by level, not node by node (up to hundreds of idle nodes per call): that
    giving raises every job below some level ``L`` to ``L`` (or its max), then gives one more
    node to each of the first jobs, in (start, id) order, that are then at ``L`` below their max.
    Sizes by position, not a dict by job id: one call per equipartition, at most events."""

    # the sizes, maxima, fewest held and highest max in one loop (min() and max() of a list are
    # calls into the builtins in the compiled build, a third of this function's cost)
    held: list[int] = []
    tops: list[int] = []
    low, high = jobs[0].size, jobs[0].max
    for r in jobs:
        size, top = r.size, r.max
        held.append(size)
        tops.append(top)
        if size < low:
            low = size
        if top > high:
            high = top
    if _fill_cost(held, tops, high) <= nodes:  # enough for every job's max
        return tops
    while high - low > 1:  # the highest level the nodes reach: cost(low) <= nodes < cost(high)
        mid = (low + high) // 2
        if _fill_cost(held, tops, mid) <= nodes:
            low = mid
        else:
            high = mid
    left = nodes - _fill_cost(held, tops, low)
    sizes: list[int] = []
    at_level: list[int] = []  # positions of the jobs at ``low`` that may grow
    for k, size in enumerate(held):
        top = tops[k]
        new = (low if low < top else top) if size < low else size
        sizes.append(new)
        if new == low < top:
            at_level.append(k)
    if left:
        ties = sorted([(jobs[k].start, jobs[k].job_id, k) for k in at_level])
        for _, _, k in ties[:left]:
            sizes[k] += 1
    return sizes


def _fill_cost(sizes: list[int], tops: list[int], level: int) -> int:
    """Nodes that raise every job of :func:`water_fill` (its ``sizes`` and maxima ``tops``) to
    ``level`` (or its max)."""
    cost = 0
    for k, size in enumerate(sizes):
        if size < level:
            top = tops[k]
            cost += (level if level < top else top) - size
    return cost


def _remove_same(jobs: list[Queued], job: Queued) -> None:
    """``jobs.remove(job)`` by identity: list.remove would call the dataclass ``__eq__`` (a
    comparison of every field) on each job before it; job ids are unique, so the result is the same."""
    for k, other in enumerate(jobs):
        if other is job:
            del jobs[k]
            return
    raise ValueError(f"job {job.job_id} is not pending")


def leading_starts(cl: WorkingView, start_size: Callable[[Queued], int], reason: str) -> None:
    """Start pending jobs in priority order while they fit (Maui's StartNow jobs)."""
    by_min = start_size is min_size  # inline below: a call through a function object costs more
    pending = cl.pending
    while pending:  # each start removes the head: no copy of the queue (most calls start none)
        job = pending[0]
        n = job.min_nodes if by_min else start_size(job)
        if n > cl.free:
            break
        cl.start(job, n, reason)


__all__ = [
    "INF",
    "Queued",
    "Running",
    "ViewState",
    "WorkingView",
    "ends_at",
    "expected_end",
    "leading_starts",
    "max_size",
    "min_size",
    "queued_of",
    "scaled_duration",
]
