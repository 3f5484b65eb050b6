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
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from operator import attrgetter

from slurm_ext.decisions import Decision, Expand, NoAction, RaisePriority, Shrink
from slurm_ext.model import Job, MalleableSpec, Snapshot
from slurm_ext.policies.base import Policy

_BLOCKED_REASONS = ("dependency", "held", "begintime", "reservation", "partitiondown")


def eligible_pending(snap: Snapshot) -> list[Job]:
    """Pending jobs that could start if nodes were free (not resizers, held, or waiting on dependencies)."""
    pending = snap.pending
    total = snap.total_nodes
    # Simulated jobs have no dependency, no reason and fit the machine: checked at C speed.
    plain = not any(map(_dependency, pending)) and not any(map(_reason, pending))
    if plain and (not pending or max(map(_node_count, pending)) <= total):
        return list(pending)
    out = []
    for job in pending:
        # empty dependency and reason (every simulated job) need no string search
        if job.dependency and "expand" in job.dependency.lower():
            continue  # a resizer job: it belongs to a running job's expansion
        if job.reason:
            reason = job.reason.lower()
            if any(r in reason for r in _BLOCKED_REASONS):
                continue
        if job.node_count > total:
            continue  # can never start here: nothing we free helps it
        out.append(job)
    return out


@lru_cache(maxsize=4096)
def reachable_sizes(spec: MalleableSpec, cur: int) -> tuple[int, ...]:
    """``spec.sizes(cur)`` (ascending, with ``cur``), memoised: asked for every running job at every event."""
    return tuple(spec.sizes(cur))


class _Cluster:
    """Free nodes and pending jobs, updated as decisions in one call consume them.

    Every question asked of the queue is "the first pending job, in order, whose size is in
    ``(lo, hi]``": answered from the first position of each size (a few distinct sizes, found
    at C speed once per call) instead of a scan of the queue per running job.
    """

    def __init__(self, free: int, pending: list[Job]) -> None:
        self.free = free
        self.n_pending = len(pending)
        self._pending = pending
        self._sizes: list[int] = []
        self._first: dict[int, int] | None = None  # size -> position of its first pending job

    def _firsts(self) -> dict[int, int]:
        if self._first is None:
            self._sizes = sizes = list(map(_node_count, self._pending))
            n = len(sizes)
            # reversed, so that the earliest position of a size is the one that stays
            self._first = dict(zip(reversed(sizes), range(n - 1, -1, -1), strict=True))
        return self._first

    def first_sized(self, lo: int, hi: int) -> Job | None:
        """The first pending job in queue order with ``lo < node_count <= hi``."""
        if hi <= lo:
            return None
        best = -1
        for size, pos in self._firsts().items():
            if lo < size <= hi and (best < 0 or pos < best):
                best = pos
        return None if best < 0 else self._pending[best]

    def take(self, job: Job) -> None:
        """Remove ``job``, the first pending job of its size (as :meth:`first_sized` gives)."""
        first = self._firsts()
        size = job.node_count
        try:
            first[size] = self._sizes.index(size, first[size] + 1)
        except ValueError:
            del first[size]
        self.n_pending -= 1


_node_count = attrgetter("node_count")
_dependency = attrgetter("dependency")
_reason = attrgetter("reason")


class DMRPolicy(Policy):
    """DMR's three-mode reconfiguration policy (request / preferred / wide optimization)."""

    name = "dmr"

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        state = _Cluster(free=snap.free, pending=eligible_pending(snap))
        if asking is None:
            targets = [j for j in snap.running if j.malleable is not None]
        else:
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
        return self._wide(job, spec, cur, state)

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
        state.free -= need
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
                target = max(s for s in sizes if cur - s >= need)
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
        target = max(s for s in sizes if s - cur <= free)
        if target == cur:
            return [NoAction(job.job_id, f"wide: {free} free cannot grow {cur} by factor {spec.factor}")]
        state.free -= target - cur
        why = "queue empty" if not state.n_pending else "no pending job fits"
        return [Expand(job.job_id, target, f"wide: {why}, {cur}->{target}")]

    # -- helpers --------------------------------------------------------------------------
    def _boost_for(self, job: Job, cur: int, target: int, state: _Cluster) -> list[Decision]:
        """After a shrink chosen for other reasons: boost the first pending job the freed nodes start."""
        freed = cur - target
        pend = state.first_sized(state.free, state.free + freed)
        if pend is not None:
            state.free += freed - pend.node_count
            state.take(pend)
            return [RaisePriority(pend.job_id, f"takes the nodes freed by job {job.job_id}")]
        state.free += freed
        return []
