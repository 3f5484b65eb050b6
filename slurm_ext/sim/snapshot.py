"""Building the policy's :class:`~slurm_ext.model.Snapshot` from the simulator's columns.

Only called when a policy (or a controller) asks: rigid baselines never build snapshots. A
view policy gets :func:`build_view` instead: the working copy it plans on, built from the same
cache without a snapshot (a Running entry per running job is a fraction of a Job). The
encoding is described in :mod:`slurm_ext.sim.engine`; :func:`easy_view` gives EJB's view of
EASY from any snapshot, live or simulated. What one snapshot keeps for the next is a
:class:`SnapshotCache` (``Simulator.snapshot_cache``): the engine tells it which jobs changed,
:func:`build_snapshot` and :func:`build_view` read and refill it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from operator import itemgetter
from typing import Any, Final, Protocol, TypeVar

from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.policies.working_view import Queued, Running, WorkingView
from slurm_ext.sim.jobtable import SimView
from slurm_ext.sim.schedulers import EasyView, shadow_and_extra

_new_snapshot = object.__new__
_V = TypeVar("_V")
_second = itemgetter(1)
_SHORT: Final = 16  # _all_cached: keys up to which a loop costs less than an itemgetter

# Job objects are built from a list of their field values (``Job(*values)``): a copy of the
# defaults with the few fields a simulated job sets (``Job`` has a fast ``__init__``, see
# ``slurm_ext.frozen``; one Job per queued job and one per start or resize).
_JOB_FIELDS = tuple(f.name for f in fields(Job))
_JOB_DEFAULTS: list[Any] = [f.default for f in fields(Job)]
_AT = {name: k for k, name in enumerate(_JOB_FIELDS)}
_SUBMIT, _START, _END, _LIMIT = _AT["submit_time"], _AT["start_time"], _AT["end_time"], _AT["time_limit"]
_PRIORITY, _MALLEABLE, _EVOLVING = _AT["priority"], _AT["malleable"], _AT["evolving"]
assert _JOB_FIELDS[:3] == ("job_id", "state", "node_count") and MISSING not in _JOB_DEFAULTS[3:]


@dataclass(slots=True)
class SnapshotCache:
    """Job objects and tuples of the last snapshot, reused while the jobs they show are unchanged.

    The engine reports what changed (:meth:`running_changed`, :meth:`ended`, :meth:`raised`,
    :meth:`dequeued`); :func:`build_snapshot` reads and refills the rest. Tuples are replaced,
    never mutated, so :meth:`copy` shares them and copies only the per-job dicts.
    """

    # Running jobs' Job objects by job index; dropped when the job starts, is resized or ends.
    running_jobs: dict[int, Job] = field(default_factory=dict)
    # Queued jobs' Job objects by job index; dropped when the job is raised, cancelled or ends.
    pending_jobs: dict[int, Job] = field(default_factory=dict)
    # Bumped whenever a job starts, ends or is resized: the running part of the last snapshot
    # (``running_tuple``, built at that count) is reused until then; also its ``jobs`` tuple.
    run_ver: int = 0
    running_tuple: tuple[int, tuple[Job, ...]] = (-1, ())
    # The same for working copies built without a snapshot (build_view): the entry per running
    # job by job index, and the entries by job id in running order at ``run_ver``.
    running_entries: dict[int, Running] = field(default_factory=dict)
    # Jobs whose Job was dropped (started or resized) and that still run: build_snapshot builds
    # those before it looks every Job up (a miss there costs an exception and a set of all).
    jobs_unbuilt: set[int] = field(default_factory=set)
    view_running: tuple[int, dict[int, Running], list[Running]] = (-1, {}, [])
    # The queue and its Job tuple at the last snapshot.
    pending_tuple: tuple[list[int], tuple[Job, ...]] = ([], ())
    # The same for working copies: queued jobs' entries by job index (dropped as their Job is)
    # and the queue with its entries at the last working copy.
    queued_entries: dict[int, Queued] = field(default_factory=dict)
    view_pending: tuple[list[int], tuple[Queued, ...]] = ([], ())
    jobs_tuple: tuple[tuple[Job, ...], tuple[Job, ...], tuple[Job, ...]] = ((), (), ())

    # The engine tells these of every start, resize and end (about three calls per job). ``i`` is
    # read as an object and each entry dropped by ``in`` and ``del``: a typed int is unboxed and
    # boxed again for every lookup (a new int object past 256), and ``pop`` is a method call.
    def running_changed(self, i: Any) -> None:
        """Job ``i`` started or was resized."""
        _drop(self.running_jobs, i)
        _drop(self.running_entries, i)
        self.jobs_unbuilt.add(i)
        self.run_ver += 1

    def ended(self, i: Any) -> None:
        """Running job ``i`` ended (completed, killed or cancelled)."""
        _drop(self.running_jobs, i)
        _drop(self.running_entries, i)
        self.jobs_unbuilt.discard(i)
        _drop(self.pending_jobs, i)
        _drop(self.queued_entries, i)
        self.run_ver += 1

    def raised(self, i: Any) -> None:
        """Queued job ``i`` moved to the queue head: its Job shows the old priority, and the queue
        may read the same as before (a raised head)."""
        _drop(self.pending_jobs, i)
        self.pending_tuple = ([], ())
        _drop(self.queued_entries, i)
        self.view_pending = ([], ())

    def dequeued(self, i: Any) -> None:
        """Queued job ``i`` left the queue without starting (cancelled)."""
        _drop(self.pending_jobs, i)
        _drop(self.queued_entries, i)

    def copy(self) -> SnapshotCache:
        return SnapshotCache(
            self.running_jobs.copy(),
            self.pending_jobs.copy(),
            self.run_ver,
            self.running_tuple,
            {},  # entries are changed in place during a call: a copy builds its own
            self.jobs_unbuilt.copy(),
            (-1, {}, []),
            self.pending_tuple,
            self.queued_entries.copy(),
            self.view_pending,
            self.jobs_tuple,
        )


def _drop(cache: dict[Any, Any], i: Any) -> None:
    """``cache.pop(i, None)``, without the method call."""
    if i in cache:
        del cache[i]


@lru_cache(maxsize=8)
def _node_objects(total: int) -> tuple[tuple[Node, ...], tuple[Node, ...], tuple[str, ...]]:
    names = tuple(f"sim{k:05d}" for k in range(total))
    idle = tuple(Node(n, NodeState.IDLE) for n in names)
    busy = tuple(Node(n, NodeState.ALLOCATED) for n in names)
    return idle, busy, names


@lru_cache(maxsize=512)  # bounded: each entry holds ``total`` references
def _nodes(total: int, free: int) -> tuple[tuple[Node, ...], tuple[str, ...]]:
    """The node tuple and idle names with ``free`` of ``total`` nodes idle (one per free count)."""
    idle, busy, names = _node_objects(total)
    return idle[:free] + busy[free:], names[:free]


class CachedView(SimView, Protocol):
    """A simulator that keeps the cache its snapshots and views are built from."""

    snapshot_cache: SnapshotCache | None  # None until the first snapshot (which creates it)


def build_snapshot(sim: CachedView) -> Snapshot:
    """The snapshot now. Job objects are cached per job and rebuilt only when the job changed
    (started, resized, asked to evolve, raised), so a snapshot costs little more than a list."""
    free = sim.free
    nodes, idle_names = _nodes(sim.total_nodes, free)
    cache = sim.snapshot_cache
    if cache is None:
        cache = sim.snapshot_cache = SnapshotCache()
    # The running jobs' tuple is reused until a job starts, ends or is resized (``run_ver``) and
    # while no evolving ask is open (an ask changes its job's Job without touching the others).
    asking = sim.evolve_asking
    ver_key, run_t = cache.running_tuple
    if ver_key != cache.run_ver or asking:
        run_t = _running_tuple(sim, cache)
        cache.running_tuple = (-1 if asking else cache.run_ver, run_t)
    pend_t = _queue_tuple(sim, cache)
    last_run, last_pend, jobs = cache.jobs_tuple
    if run_t is not last_run or pend_t is not last_pend:
        jobs = run_t + pend_t
        cache.jobs_tuple = (run_t, pend_t, jobs)
    # Snapshot's fields and the views it derives by scanning every node and job (cached
    # properties, kept in the instance dict) set in one go: the simulator knows the views
    # already, and the frozen dataclass's __init__ sets fields one by one through
    # object.__setattr__. ``pending`` is in queue order, the order its priority encoding sorts to.
    snap = _new_snapshot(Snapshot)
    snap.__dict__.update(
        time=sim.now,
        nodes=nodes,
        jobs=jobs,
        total_nodes=sim.total_nodes,
        idle_nodes=idle_names,
        running=run_t,
        pending=pend_t,
    )
    return snap


def build_view(sim: CachedView) -> WorkingView:
    """The working copy a :class:`~slurm_ext.policies.base.ViewPolicy` plans on, the same as
    ``WorkingView(build_snapshot(sim))`` without the snapshot: on the cache's Running entries
    (one per running job, kept until the job is resized or ends; the caller must ``restore()``
    the copy after the call) and a list of the queued jobs' entries (shared, kept until the job
    leaves the queue)."""
    cache = sim.snapshot_cache
    if cache is None:
        cache = sim.snapshot_cache = SnapshotCache()
    asking = sim.evolve_asking
    ver_key, entries, malleable = cache.view_running
    if ver_key != cache.run_ver or asking:
        entries, malleable = _running_entries(sim, cache)
        cache.view_running = (-1 if asking else cache.run_ver, entries, malleable)
    queued = _in_queue_order(sim, cache.view_pending, cache.queued_entries, _queued_entry)
    cache.view_pending = queued
    state = (sim.now, sim.total_nodes, sim.free, entries, list(queued[1]))
    return WorkingView(state=state, malleable=malleable)


def _running_entries(sim: SimView, cached: SnapshotCache) -> tuple[dict[int, Running], list[Running]]:
    """Running jobs' entries by expected end, each cached until its job is resized or ends; a job
    asking to evolve gets an entry of its own (never cached) that shows its ask. With them, the
    malleable ones in that order (``WorkingView.malleable_running`` before any change: listed
    here in the same loop, where the copy would loop over them again)."""
    # One loop over the (expected end, index) list, not a map, a lookup of all keys and a dict
    # comprehension: compiled, each step is a few C calls (rebuilt at every start, end and resize).
    cache = cached.running_entries
    asking = sim.evolve_asking
    entries: dict[int, Running] = {}
    malleable: list[Running] = []
    # Indices read as objects (``Any``), here and in _all_cached: a typed int is unboxed and
    # boxed again for a lookup, a new object for every index past 256, which the dict must then
    # compare by value; the engine's own int object, kept as the key, is found by identity.
    ends: list[Any] = sim.ends
    if asking:
        for pair in ends:
            i = pair[1]
            r = _running_entry(sim, i) if i in asking else _cached_entry(sim, cache, i)
            entries[r.job_id] = r
            if r.malleable:
                malleable.append(r)
        return entries, malleable
    for pair in ends:
        i = pair[1]
        got = cache.get(i)
        if got is None:
            got = _running_entry(sim, i)
            cache[i] = got
        entries[got.job_id] = got
        if got.spec is not None:  # (``malleable``: no entry cached here has an ask)
            malleable.append(got)
    return entries, malleable


def _cached_entry(sim: SimView, cache: dict[int, Running], i: int) -> Running:
    entry = cache.get(i)
    if entry is None:
        entry = cache[i] = _running_entry(sim, i)
    return entry


def _all_cached(
    sim: SimView, cache: dict[int, _V], keys: list[int], build: Callable[[SimView, int], _V]
) -> tuple[_V, ...]:
    """``cache[k]`` for every key in order, the missing ones built and kept first. A long list
    is looked up in C by an itemgetter, where ``map(cache.__getitem__, keys)`` makes a call per
    key (the queue is looked up again whenever it lost a job: ~200 jobs at every start in DMR's
    runs); a short one in a loop."""
    objs: list[Any] = keys  # the caller's int objects as keys (see _running_entries)
    if len(objs) <= _SHORT:
        # A loop for a short list (DBES's: 3 keys on average): an itemgetter's fixed cost (made
        # from a tuple of the keys, then called) is that of about ten steps here, and it saves
        # about 150 instructions a key. (It needs a key and gives a tuple only for two or more.)
        found: list[Any] = []
        for k in objs:
            got = cache.get(k)
            if got is None:
                got = cache[k] = build(sim, k)
            found.append(got)
        return tuple(found)
    get = itemgetter(*objs)
    try:
        return get(cache)
    except KeyError:
        missing: list[Any] = sorted(set(objs).difference(cache))  # found at C speed
        for k in missing:
            cache[k] = build(sim, k)
        return get(cache)


def _running_entry(sim: SimView, i: int) -> Running:
    """What ``running_of`` makes of :func:`_running_job`'s Job, without the Job."""
    table = sim.table
    size = table.size[i]
    exp = sim.exp_end[i]
    target = sim.evolve_asking.get(i)
    spec = table.spec.get(i)
    if target is not None:
        spec = MalleableSpec(size, target, preferred=target)
    st = table.start_t[i]
    return Running(
        table.jid[i], size, exp, spec, st, table.sub[i], None if math.isinf(exp) else exp - st, target
    )


def _queue_tuple(sim: SimView, cache: SnapshotCache) -> tuple[Job, ...]:
    """The queued jobs' Job objects in queue order."""
    cache.pending_tuple = found = _in_queue_order(sim, cache.pending_tuple, cache.pending_jobs, _pending_job)
    return found[1]


def _in_queue_order(
    sim: SimView,
    last: tuple[list[int], tuple[_V, ...]],
    built: dict[int, _V],
    build: Callable[[SimView, int], _V],
) -> tuple[list[int], tuple[_V, ...]]:
    """The queue and what ``build`` makes of each queued job (kept in ``built``), in queue order,
    from ``last``: the queue and items of the last call."""
    # Queued jobs change only when raised (the engine then drops what was built of them). The
    # items of the last call are reused while the queue is the same list, and extended when
    # jobs were only appended (an arrival): comparing int lists runs at C speed, building the
    # whole queue's items at every event cost O(queue) Python calls (DMR keeps ~200).
    q = sim.queue
    last_q, items = last
    if q == last_q:
        return last
    k = len(last_q)
    if k and len(q) > k and q[k - 1] == last_q[-1] and q[:k] == last_q:
        items = items + _all_cached(sim, built, q[k:], build)
    else:
        items = _all_cached(sim, built, q, build)
    return (q.copy(), items)


def _running_tuple(sim: SimView, cached: SnapshotCache) -> tuple[Job, ...]:
    """Running jobs by expected end. Each Job is cached until its job is resized or ends (the
    engine drops it then), so the tuple is one map at C speed; a job asking to evolve gets a
    Job of its own, never cached, that shows its ask."""
    cache = cached.running_jobs
    asking = sim.evolve_asking
    if asking:
        exp_end = sim.exp_end
        return tuple(
            _running_job(sim, i, exp_end[i]) if i in asking else _cached_running(sim, cache, i)
            for i in map(_second, sim.ends)
        )
    if cached.jobs_unbuilt:  # started or resized since: built first, so that the map never misses
        exp_end = sim.exp_end
        for i in cached.jobs_unbuilt:
            if i in exp_end and i not in cache:  # (one built since, for an evolving ask, is current)
                cache[i] = _running_job(sim, i, exp_end[i])
        cached.jobs_unbuilt.clear()
    try:
        return tuple(map(cache.__getitem__, map(_second, sim.ends)))
    except KeyError:  # jobs running before the cache existed (its first snapshot): built now
        order = list(map(_second, sim.ends))
        for i in set(order).difference(cache):
            cache[i] = _running_job(sim, i, sim.exp_end[i])
        return tuple(map(cache.__getitem__, order))


def _cached_running(sim: SimView, cache: dict[int, Job], i: int) -> Job:
    job = cache.get(i)
    if job is None:
        job = cache[i] = _running_job(sim, i, sim.exp_end[i])
    return job


def _running_job(sim: SimView, i: int, exp: float) -> Job:
    size = sim.table.size[i]
    target = sim.evolve_asking.get(i)
    spec = sim.table.spec.get(i)
    if target is not None:
        spec = MalleableSpec(size, target, preferred=target)
    st = sim.table.start_t[i]
    values = _JOB_DEFAULTS.copy()
    values[0], values[1], values[2] = sim.table.jid[i], JobState.RUNNING, size
    values[_SUBMIT] = sim.table.sub[i]
    values[_START] = st
    values[_END] = exp
    values[_LIMIT] = None if math.isinf(exp) else exp - st
    values[_MALLEABLE] = spec
    values[_EVOLVING] = target
    return Job(*values)


def _pending_job(sim: SimView, i: int) -> Job:
    table = sim.table
    limit = table.lim[i]
    values = _JOB_DEFAULTS.copy()
    values[0], values[1], values[2] = table.jid[i], JobState.PENDING, table.size[i]
    values[_SUBMIT] = table.sub[i]
    values[_LIMIT] = None if math.isinf(limit) else limit
    values[_PRIORITY] = -table.qkey[i]  # encodes the queue order; Snapshot.pending sorts by it
    values[_MALLEABLE] = table.spec.get(i)
    return Job(*values)


def _queued_entry(sim: SimView, i: int) -> Queued:
    """What ``queued_of`` makes of :func:`_pending_job`'s Job, without the Job."""
    table = sim.table
    limit = table.lim[i]
    return Queued(
        table.jid[i],
        table.size[i],
        table.sub[i],
        None,
        None if math.isinf(limit) else limit,
        table.spec.get(i),
    )


def easy_view(snap: Snapshot) -> EasyView:
    """EASY's view of ``snap``: shadow time of the head job, ``extra`` and ``free`` nodes.

    Works on any snapshot (simulated or live): running jobs' ``end_time`` is their expected
    end; jobs without one (unlimited) never end. The head is ``snap.pending[0]``.
    """
    free = snap.free
    pending = snap.pending
    if not pending:
        return EasyView(snap.time, free, math.inf, free, None, 0)
    head = pending[0]
    running = sorted((math.inf if j.end_time is None else j.end_time, j.node_count) for j in snap.running)
    ends = [(t, k) for k, (t, _) in enumerate(running)]
    sizes = [n for _, n in running]
    shadow, extra = shadow_and_extra(free, head.node_count, ends, sizes)
    if shadow == -math.inf:
        shadow = snap.time
    return EasyView(snap.time, free, shadow, extra, head.job_id, head.node_count)
