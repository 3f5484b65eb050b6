"""The DMR reconfiguration policy (paper 002, §4): three modes, as a pure function of a snapshot.

For each running malleable job that asks (or every running malleable job when ``asking``
is ``None``, as in the simulator), the first mode that applies decides:

1. **Request an action** (§4.1): ``min_nodes`` above the current size asks for an
   expansion (to the smallest reachable size >= min), ``max_nodes`` below it asks for a
   shrink (to the largest reachable size <= max). An expansion is granted only if enough
   nodes are idle; a requested shrink is always granted.
2. **Preferred size** (§4.2): with no eligible job pending, expand as far as the free nodes
   and ``max_nodes`` allow; otherwise move to ``preferred`` (shrink always, expand if free
   nodes allow); at the preferred size: no action.
3. **Wide optimization** (§4.3): shrink (by the least that suffices) when that lets a
   pending job start, and give that job top priority (:class:`RaisePriority`) so it takes
   the freed nodes; otherwise expand when nodes are free and no pending job fits in them.

Sizes are always those reachable from the current size by the job's factor
(:meth:`MalleableSpec.sizes`). Every decision carries its reason.

``dmr-reserve`` (``DMRPolicy(keep_reservation=True)``) is DMR with EASY's rule for backfilled
jobs applied to what it starts out of order: the first pending job that does not fit in the idle
nodes keeps its reservation. A shrink that starts another pending job with raised priority (mode
3, and the boost after a shrink of mode 1 or 2) is made only if that job ends by the reservation
or the nodes the reservation loses fit in the nodes left over then (EASY's *extra* nodes; a shrunk
job is taken to end later); a job grows (modes 2 and 3) into nodes the reservation counts on only
if it ends by then. On the whole Curie log wide jobs wait up to 27 days under ``dmr`` (3 under
EASY): its shrinks start smaller jobs ahead of them. A requested expansion (mode 1: the
application asks for its minimum) and a requested shrink are made as before.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from operator import attrgetter

from slurm_ext.decisions import Decision, Expand, NoAction, RaisePriority, Shrink
from slurm_ext.model import Job, MalleableSpec, Snapshot
from slurm_ext.policies.base import Policy, QueueCounts
from slurm_ext.policies.entries import Running
from slurm_ext.policies.profile import INF, first_free

_BLOCKED_REASONS = ("dependency", "held", "begintime", "reservation", "partitiondown")


def eligible_pending(snap: Snapshot) -> list[Job]:
    """Pending jobs that could start if nodes were free (not resizers, held, or waiting on dependencies)."""
    pending = snap.pending
    total = snap.total_nodes
    # Simulated jobs have no dependency, no reason and fit the machine: checked at C speed.
    plain = not any(map(_dependency, pending)) and not any(map(_reason, pending))
    if plain and (not pending or max(map(_node_count, pending)) <= total):
        return list(pending)
    return [job for job in pending if _eligible(job, total)]


_SIZES: dict[tuple[int, int, int, int | None, int], tuple[int, ...]] = {}


def reachable_sizes(spec: MalleableSpec, cur: int) -> tuple[int, ...]:
    """``spec.sizes(cur)`` (ascending, with ``cur``), memoised: asked for every running job at every
    event. Keyed by the spec's fields, not the spec: a tuple of ints hashes and compares at C speed,
    the dataclass through Python calls."""
    key = (spec.min_nodes, spec.max_nodes, spec.factor, spec.preferred, cur)
    sizes = _SIZES.get(key)
    if sizes is None:
        if len(_SIZES) > 4096:
            _SIZES.clear()
        sizes = _SIZES[key] = tuple(spec.sizes(cur))
    return sizes


class _QueueIndex:
    """The eligible pending jobs of the last snapshot and, per size, the position of the first.

    Kept between calls and extended when the queue only grew at its end (an arrival), instead of
    rebuilt: the snapshot's pending tuple is compared with the last one (identical Job objects
    compare at C speed) and only the new jobs are looked at. Rebuilt whenever anything else
    changed, so the answer is always that of :func:`eligible_pending` on this snapshot.
    """

    def __init__(self) -> None:
        self.pending: tuple[Job, ...] = ()
        self.total = -1
        self.eligible: list[Job] = []
        self.sizes: list[int] = []  # node counts of ``eligible``
        self.keys: list[int] = []  # distinct sizes, ascending
        self.firsts: list[int] = []  # position in ``eligible`` of the first job of each key
        # bumped whenever ``keys``/``firsts`` change: a job of an already queued size appended
        # at the end changes no answer of :meth:`_Cluster.first_sized` (nor whether any is queued)
        self.version = 0

    def update(self, snap: Snapshot) -> None:
        pending = snap.pending
        total = snap.total_nodes
        if pending is self.pending and total == self.total:
            return
        k = len(self.pending)
        if total == self.total and k and len(pending) > k and pending[:k] == self.pending:
            new = list(pending[k:])
            self.pending = pending
            if any(map(_dependency, new)) or any(map(_reason, new)) or max(map(_node_count, new)) > total:
                new = [j for j in new if _eligible(j, total)]
            for job in new:
                self._add(job)
            return
        # anything else changed: the eligible jobs found again, then the sizes' first positions
        self.version += 1
        if total == self.total and k:
            eligible, sizes = self._carried(pending)
        else:
            eligible = eligible_pending(snap)
            sizes = list(map(_node_count, eligible))
        self.pending, self.total = pending, total
        self.eligible, self.sizes = eligible, sizes
        # a queue holds few distinct sizes (4 on average in a 250K-job run's long queues, at most
        # the machine's): one set and a search for each size's first job, all in C
        self.keys = sorted(set(sizes))
        self.firsts = list(map(sizes.index, self.keys))

    def _carried(self, pending: tuple[Job, ...]) -> tuple[list[Job], list[int]]:
        """``eligible_pending`` of ``pending`` and their sizes, on the same machine as the last
        snapshot: a job of that snapshot (the same object, so the same fields) keeps its answer,
        only the others are tested. Most changes are jobs leaving the queue (started), whose
        rest is then matched in one walk; with a long queue (DMR's) testing every job again at
        every start was the larger part of a call."""
        old, old_eligible, old_sizes = self.pending, self.eligible, self.sizes
        eligible: list[Job] = []
        sizes: list[int] = []
        n, j, e = len(pending), 0, 0
        ne = len(old_eligible)
        for job in old:  # pending's jobs of the old queue, in the old order, are matched
            was = e < ne and old_eligible[e] is job
            if j < n and pending[j] is job:
                j += 1
                if was:
                    eligible.append(job)
                    sizes.append(old_sizes[e])
            if was:
                e += 1
        total = self.total
        for job in pending[j:]:  # new, or moved ahead of an old job: tested
            if _eligible(job, total):
                eligible.append(job)
                sizes.append(job.node_count)
        return eligible, sizes

    def _add(self, job: Job) -> None:
        size = job.node_count
        pos = len(self.eligible)
        self.eligible.append(job)
        self.sizes.append(size)
        at = bisect_left(self.keys, size)
        if at == len(self.keys) or self.keys[at] != size:
            self.keys.insert(at, size)
            self.firsts.insert(at, pos)
            self.version += 1


class _Cluster:
    """Free nodes and pending jobs, updated as decisions in one call consume them.

    Every question asked of the queue is "the first pending job, in order, whose size is in
    ``(lo, hi]``": answered from the first position of each distinct size (kept by
    :class:`_QueueIndex`) instead of a scan of the queue per running job. The index's lists are
    shared until a job is taken, then copied (taking is rare: a shrink for a pending job).
    """

    def __init__(self, free: int, index: _QueueIndex, reserving: Snapshot | None = None) -> None:
        self.free = free
        self.n_pending = len(index.eligible)
        self._pending = index.eligible
        self._sizes = index.sizes
        self._keys = index.keys
        self._firsts = index.firsts
        self._own = False
        # dmr-reserve: the snapshot the reservation is worked out from (when first asked), the
        # head's start and the nodes left over then (-INF: not worked out yet)
        self._snap = reserving
        self._shadow = -INF
        self._extra = 0
        self._head = 0
        self.kept = False  # a decision was held back for the reservation since the last reset

    def room(self, job: Job) -> int:
        """How many of the free nodes ``job`` may grow into: all of them, or with the reservation
        kept (dmr-reserve) only the head's extra nodes, unless ``job`` ends by the head's start."""
        if self._snap is None:
            return self.free
        if self._shadow == -INF:
            self._reserve(self._snap)
        if self._shadow == INF or self._back_by_start(job):
            return self.free  # no head that can start, or the job's nodes are back by its start
        if self._extra < self.free:
            self.kept = True
        return min(self.free, self._extra)

    def grow(self, job: Job, nodes: int) -> None:
        """``job`` takes ``nodes`` free nodes (within :meth:`room`)."""
        self.free -= nodes
        if self._snap is not None and not self._back_by_start(job):
            self._extra -= nodes

    def may_jump(self, pend: Job, from_free: int, shrunk: Job | None = None, target: int = 0) -> bool:
        """Whether ``pend`` may start now ahead of the reservation's job (dmr-reserve) on
        ``from_free`` idle nodes and the rest freed by shrinking ``shrunk`` to ``target`` (None: a
        shrink made anyway, its nodes idle now). EASY's rule: the nodes the reservation counts on
        and does not get back by its start (``pend``'s if it runs past it; a shrunk job's if it
        would have ended by then: a shrink makes a job end later) come out of the extra nodes."""
        if self._snap is None:
            return True
        if self._shadow == -INF:
            self._reserve(self._snap)
        if self._shadow == INF or pend.job_id == self._head:
            return True
        counted = shrunk is None or self._back_by_start(shrunk)
        lost = target if shrunk is not None and counted else 0
        limit = pend.time_limit
        if limit is None or self._snap.time + limit > self._shadow:
            lost += pend.node_count if counted else from_free
        if lost > self._extra:
            self.kept = True
            return False
        self._extra -= lost
        return True

    def _back_by_start(self, job: Job) -> bool:
        """Whether ``job`` ends (its nodes are back) by the reservation's start."""
        return job.end_time is not None and job.end_time <= self._shadow

    def held_for(self) -> str:
        return f"keeps job {self._head}'s reservation at {self._shadow:.0f}"

    def _reserve(self, snap: Snapshot) -> None:
        """EASY's reservation, as at the call's start, of the first pending job that does not fit
        in the idle nodes: when it starts as the running jobs end, and the nodes left over then."""
        free = snap.free
        head = next((j for j in self._pending if j.node_count > free), None)
        if head is None:
            self._shadow = INF
            return
        ends = [Running(j.job_id, j.node_count, INF if j.end_time is None else j.end_time,
                        None, 0.0, 0.0, None) for j in snap.running]  # fmt: skip
        self._shadow, avail = first_free(snap.time, free, ends, head.node_count)
        self._extra, self._head = avail - head.node_count, head.job_id

    @property
    def taken(self) -> bool:
        """Whether a job was taken: the queue's answers are no longer the index's."""
        return self._own

    def first_sized(self, lo: int, hi: int) -> Job | None:
        """The first pending job in queue order with ``lo < node_count <= hi``."""
        if hi <= lo:
            return None
        keys = self._keys
        a = bisect_right(keys, lo)
        b = bisect_right(keys, hi)
        if a == b:
            return None
        return self._pending[min(self._firsts[a:b])]

    def take(self, job: Job) -> None:
        """Remove ``job``, the first pending job of its size (as :meth:`first_sized` gives)."""
        if not self._own:
            self._keys, self._firsts, self._own = list(self._keys), list(self._firsts), True
        size = job.node_count
        at = bisect_left(self._keys, size)
        try:
            self._firsts[at] = self._sizes.index(size, self._firsts[at] + 1)
        except ValueError:
            del self._keys[at]
            del self._firsts[at]
        self.n_pending -= 1


_SHAPES: dict[tuple[int, int, int, int | None, int], tuple[int, int]] = {}


def _reach_and_step(running: list[tuple[int, MalleableSpec]]) -> tuple[int, int]:
    """The most nodes a shrink of one of ``running`` can free, and the fewest an expand of one
    needs (0: none can grow); ``(-1, 0)`` when a job is in mode 1 or 2."""
    reach, step = 0, 0
    for cur, spec in running:
        key = (spec.min_nodes, spec.max_nodes, spec.factor, spec.preferred, cur)
        shape = _SHAPES.get(key)
        if shape is None:
            shape = _SHAPES[key] = _shape(spec, cur)
        if shape[0] < 0:
            return -1, 0
        if shape[0] > reach:
            reach = shape[0]
        if shape[1] and (step == 0 or shape[1] < step):
            step = shape[1]
    return reach, step


def _any_queued(qsizes: Sequence[int], lo: int, hi: int) -> bool:
    """``any(qsizes[lo:hi])``: a job of ``lo`` to ``hi - 1`` nodes is queued. On the simulator's
    list, a loop over it (compiled, no slice, no call: ~40 sizes at most calls)."""
    if not isinstance(qsizes, list):
        return any(qsizes[lo:hi])
    counts: list[int] = qsizes
    n = len(counts)
    return any(counts[k] for k in range(lo, hi if hi < n else n))  # (a loop, compiled)


def _shape(spec: MalleableSpec, cur: int) -> tuple[int, int]:
    """One job's part of :func:`_reach_and_step`."""
    if spec.preferred is not None or spec.min_nodes > cur or spec.max_nodes < cur:
        return -1, 0
    if len(_SHAPES) > 4096:
        _SHAPES.clear()
    sizes = reachable_sizes(spec, cur)
    up = bisect_right(sizes, cur)
    return cur - sizes[0], sizes[up] - cur if up < len(sizes) else 0


def _eligible(job: Job, total: int) -> bool:
    """One job's test in :func:`eligible_pending`."""
    if job.dependency and "expand" in job.dependency.lower():
        return False  # a resizer job: it belongs to a running job's expansion
    if job.reason:
        reason = job.reason.lower()
        if any(r in reason for r in _BLOCKED_REASONS):
            return False
    return job.node_count <= total  # a larger job can never start here: nothing we free helps it


_node_count = attrgetter("node_count")
_malleable = attrgetter("malleable")  # a MalleableSpec is always true, None false
_QUIET = {NoAction}
_dependency = attrgetter("dependency")
_reason = attrgetter("reason")


class DMRPolicy(Policy):
    """DMR's three-mode reconfiguration policy (request / preferred / wide optimization)."""

    name = "dmr"

    def __init__(self, keep_reservation: bool = False) -> None:
        self.keep_reservation = keep_reservation  # dmr-reserve: the first waiting job is never delayed
        self._queue = _QueueIndex()  # a cache of the queue between calls, not policy state
        self._memo: tuple[tuple[Job, ...], int, int, list[Decision]] | None = None
        # Mode 3's NoAction answers by job id, size, free nodes and range, for one queue version:
        # such an answer reads only those and the queue's first job of each size (see decide_job).
        self._quiet: dict[tuple[int, ...], list[Decision]] = {}
        self._quiet_version = -1
        # may_act's last running malleable jobs and their largest reach and smallest step up
        self._counted: tuple[list[tuple[int, MalleableSpec]], tuple[int, int]] = ([], (0, 0))

    def __deepcopy__(self, memo: dict[int, object]) -> DMRPolicy:
        """A policy with empty caches (DMR keeps nothing else between calls). The caches match
        the last snapshot's Job objects by identity; a deep copy of them would hold copies
        beside the originals that ``Simulator.copy`` keeps sharing (its snapshot cache), and
        the queue index, matching some jobs and not others, dropped pending jobs."""
        return type(self)(self.keep_reservation)

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        self._queue.update(snap)
        free = snap.free
        version = self._queue.version
        if self._quiet_version != version or len(self._quiet) > 4096:
            self._quiet = {}
            self._quiet_version = version
        # A call that only said NoAction changed neither the free nodes nor the queue while it
        # ran, so it depended on nothing but the running jobs, the free nodes and the queue's
        # first job of each size: with all three the same (the running tuple the very same
        # object, as a simulator passes it while no job started, ended or was resized), the
        # answer is the same again. Saves the per-job pass at most events of a long queue.
        memo = self._memo
        if asking is None and memo is not None and memo[0] is snap.running and memo[1:3] == (free, version):
            return list(memo[3])
        state = _Cluster(free, self._queue, snap if self.keep_reservation else None)
        if asking is not None:
            targets = []
            out: list[Decision] = []
            for job_id in asking:
                job = snap.job(job_id)
                if job is None or not job.is_running or job.malleable is None:
                    out.append(NoAction(job_id, "not a running malleable job in the snapshot"))
                else:
                    targets.append(job)
            if out and not targets:
                return out
            return self._decide_all(targets, state)
        decisions = self._decide_all(list(filter(_malleable, snap.running)), state)
        if set(map(type, decisions)) <= _QUIET:  # only NoActions: kept (a copy goes out)
            self._memo = (snap.running, state.free, version, decisions)
            return list(decisions)
        self._memo = None
        return decisions

    def may_act(self, state: QueueCounts) -> bool:
        """Whether ``decide(snap, None)`` could return more than NoActions, read from counters.

        With no job asking for a size (mode 1) or keeping a preferred one (mode 2), every job is
        in mode 3 and a NoAction leaves the free nodes and the queue as they were, so each job
        sees the same state: mode 3 acts for a job exactly when a pending job's size lies in
        ``(free, free + reach]`` (a shrink starts it; ``reach`` the most the job can give), or
        when nodes are free, no pending job fits in them and the job's next size up is at most
        ``free`` nodes away (an expand). Over all jobs: the largest reach, the smallest step up.
        """
        running = state.malleable_sizes()
        last = self._counted[0]
        if running is not last and running != last:  # element-wise at C speed: same specs, same sizes
            self._counted = (running, _reach_and_step(running))
        reach, step = self._counted[1]
        if reach < 0:
            return True  # a job in mode 1 or 2: decide_job answers
        free = state.free
        qsizes = state.qsizes
        if reach and _any_queued(qsizes, free + 1, free + reach + 1):
            return True
        return 0 < step <= free and not _any_queued(qsizes, 1, free + 1)

    def _decide_all(self, targets: list[Job], state: _Cluster) -> list[Decision]:
        decisions: list[Decision] = []
        for job in targets:
            decisions.extend(self.decide_job(job, state))
        return decisions

    def decide_job(self, job: Job, state: _Cluster) -> list[Decision]:
        spec = job.malleable
        assert spec is not None
        cur = job.node_count
        if spec.min_nodes > cur or spec.max_nodes < cur:
            return self._requested(job, spec, cur, state)
        if spec.preferred is not None:
            return self._preferred(job, spec, cur, state)
        if state.taken:
            return self._wide(job, spec, cur, state)
        # A NoAction of mode 3 changed nothing and read only the job's id, range and size, the
        # free nodes and the index's first pending job of each size (the same while its version
        # is): the same give the same answer (the same immutable NoAction, in a list never changed).
        key = (job.job_id, cur, state.free, spec.min_nodes, spec.max_nodes, spec.factor)
        out = self._quiet.get(key)
        if out is None:
            state.kept = False
            out = self._wide(job, spec, cur, state)
            # an answer the reservation shaped reads the running jobs' ends too: not kept
            if len(out) == 1 and type(out[0]) is NoAction and not state.kept:
                self._quiet[key] = out
        return out

    # -- mode 1 -------------------------------------------------------------------------
    def _requested(self, job: Job, spec: MalleableSpec, cur: int, state: _Cluster) -> list[Decision]:
        sizes = reachable_sizes(spec, cur)
        if spec.min_nodes > cur:
            up = [s for s in sizes if s >= spec.min_nodes and s != cur]
            if not up:
                return [NoAction(job.job_id, f"requested min {spec.min_nodes} unreachable from {cur}")]
            target = up[0]
            need = target - cur
            if need > state.free:
                return [
                    NoAction(
                        job.job_id,
                        f"requested expand {cur}->{target} refused: needs {need} nodes, {state.free} free",
                    )
                ]
            state.free -= need
            return [Expand(job.job_id, target, f"requested: min {spec.min_nodes} above current {cur}")]
        down = [s for s in sizes if s <= spec.max_nodes and s != cur]
        if not down:
            return [NoAction(job.job_id, f"requested max {spec.max_nodes} unreachable from {cur}")]
        target = down[-1]
        shrink: list[Decision] = [
            Shrink(job.job_id, target, f"requested: max {spec.max_nodes} below current {cur}")
        ]
        return shrink + self._boost_for(job, cur, target, state)

    # -- mode 2 -------------------------------------------------------------------------
    def _preferred(self, job: Job, spec: MalleableSpec, cur: int, state: _Cluster) -> list[Decision]:
        pref = spec.preferred
        assert pref is not None
        sizes = reachable_sizes(spec, cur)
        if not state.n_pending:
            up = [s for s in sizes if s > cur and s - cur <= state.free]
            if up:
                target = up[-1]
                state.free -= target - cur
                return [
                    Expand(
                        job.job_id,
                        target,
                        f"preferred: queue empty, {cur}->{target} (max {spec.max_nodes})",
                    )
                ]
            return [NoAction(job.job_id, f"preferred: queue empty, no free nodes to grow from {cur}")]
        if cur == pref:
            return [NoAction(job.job_id, f"preferred: at preferred size {pref}")]
        if pref not in sizes:
            return [NoAction(job.job_id, f"preferred {pref} unreachable from {cur} by factor {spec.factor}")]
        if pref < cur:
            decisions: list[Decision] = [
                Shrink(
                    job.job_id,
                    pref,
                    f"preferred: {state.n_pending} pending, shrink to {pref}",
                )
            ]
            return decisions + self._boost_for(job, cur, pref, state)
        need = pref - cur
        if need > state.free:
            return [
                NoAction(job.job_id, f"preferred: expand to {pref} needs {need} nodes, {state.free} free")
            ]
        if need > state.room(job):
            return [NoAction(job.job_id, f"preferred: expand to {pref} {state.held_for()}")]
        state.grow(job, need)
        return [Expand(job.job_id, pref, f"preferred: expand to preferred {pref}")]

    # -- mode 3 -------------------------------------------------------------------------
    def _wide(self, job: Job, spec: MalleableSpec, cur: int, state: _Cluster) -> list[Decision]:
        sizes = reachable_sizes(spec, cur)
        free = state.free
        # A shrink frees at most ``cur - sizes[0]`` nodes: the first pending job that does not fit
        # now but fits with that many more is the one a shrink lets start.
        reach = cur - sizes[0]
        if reach > 0:
            pend = state.first_sized(free, free + reach)
            if pend is not None:
                need = pend.node_count - free
                target = sizes[bisect_right(sizes, cur - need) - 1]  # the largest that frees enough
                if not state.may_jump(pend, free, job, target):
                    why = f"wide: a shrink to start pending job {pend.job_id} {state.held_for()}"
                    return [NoAction(job.job_id, why)]
                state.free += cur - target - pend.node_count
                state.take(pend)
                reason = f"wide: shrink {cur}->{target} lets pending job {pend.job_id} start"
                return [
                    Shrink(job.job_id, target, reason, for_job=pend.job_id),
                    RaisePriority(pend.job_id, f"takes the nodes freed by job {job.job_id}"),
                ]
        if free == 0:
            return [NoAction(job.job_id, "wide: no free nodes and no pending job a shrink would start")]
        pend = state.first_sized(0, free)
        if pend is not None:
            return [NoAction(job.job_id, f"wide: pending job {pend.job_id} fits in the {free} free nodes")]
        room = state.room(job)
        target = sizes[bisect_right(sizes, cur + room) - 1]  # the largest the free nodes allow
        if target == cur:
            if room < free and sizes[bisect_right(sizes, cur + free) - 1] > cur:
                return [NoAction(job.job_id, f"wide: growing {cur} into the {free} free {state.held_for()}")]
            return [NoAction(job.job_id, f"wide: {free} free cannot grow {cur} by factor {spec.factor}")]
        state.grow(job, target - cur)
        why = "queue empty" if not state.n_pending else "no pending job fits"
        return [Expand(job.job_id, target, f"wide: {why}, {cur}->{target}")]

    # -- helpers --------------------------------------------------------------------------
    def _boost_for(self, job: Job, cur: int, target: int, state: _Cluster) -> list[Decision]:
        """After a shrink chosen for other reasons: boost the first pending job the freed nodes start."""
        freed = cur - target
        pend = state.first_sized(state.free, state.free + freed)
        if pend is not None and state.may_jump(pend, state.free):
            state.free += freed - pend.node_count
            state.take(pend)
            return [RaisePriority(pend.job_id, f"takes the nodes freed by job {job.job_id}")]
        state.free += freed
        return []


class DMRReserve(DMRPolicy):
    """``dmr-reserve``: DMR whose out-of-order starts and growths keep the first waiting job's
    reservation (see the module's docstring)."""

    name = "dmr-reserve"

    def __init__(self, keep_reservation: bool = True) -> None:
        super().__init__(keep_reservation)
