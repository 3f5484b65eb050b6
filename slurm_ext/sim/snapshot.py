"""Building the policy's :class:`~slurm_ext.model.Snapshot` from the simulator's columns.

Only called when a policy (or a controller) asks: rigid baselines never build snapshots.
The encoding is described in :mod:`slurm_ext.sim.engine`; :func:`easy_view` gives EJB's view
of EASY from any snapshot, live or simulated.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.sim.schedulers import EasyView, shadow_and_extra

if TYPE_CHECKING:
    from slurm_ext.sim.engine import Simulator


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


def build_snapshot(sim: Simulator) -> Snapshot:
    """The snapshot now. Job objects are cached per job and rebuilt only when the job changed
    (started, resized, asked to evolve, raised), so a snapshot costs little more than a list."""
    free = sim.free
    nodes, idle_names = _nodes(sim.total_nodes, free)
    cache = sim._job_cache
    running: list[Job] = []
    append = running.append
    asking = sim.evolve_asking
    ver = sim.ver
    for exp, i in sim.ends:
        key = (ver[i], exp, asking.get(i) if asking else None)
        hit = cache.get(i)
        if hit is None or hit[0] != key:
            hit = (key, _running_job(sim, i, exp))
            cache[i] = hit
        append(hit[1])  # type: ignore[arg-type]
    # Queued jobs change only when raised (the engine then drops their Job): one map over the
    # queue at C speed, filling the few Jobs not built yet (new arrivals) when it misses.
    pcache = sim._pending_jobs
    try:
        pend_t = tuple(map(pcache.__getitem__, sim.queue))
    except KeyError:
        for i in sim.queue:
            if i not in pcache:
                pcache[i] = _pending_job(sim, i)
        pend_t = tuple(map(pcache.__getitem__, sim.queue))
    run_t = tuple(running)
    snap = Snapshot(sim.now, nodes, run_t + pend_t)
    # Snapshot derives these by scanning every node and job (cached_property, stored in the
    # instance dict); the simulator knows them already, and a policy reads them at every event.
    # ``pending`` is in queue order, which is the order its priority encoding sorts to.
    views = snap.__dict__
    views["total_nodes"] = sim.total_nodes
    views["idle_nodes"] = idle_names
    views["running"] = run_t
    views["pending"] = pend_t
    return snap


def _running_job(sim: Simulator, i: int, exp: float) -> Job:
    size = sim.size[i]
    target = sim.evolve_asking.get(i)
    spec = sim.spec.get(i)
    if target is not None:
        spec = MalleableSpec(size, target, preferred=target)
    st = sim.start_t[i]
    return Job(
        sim.jid[i],
        JobState.RUNNING,
        size,
        submit_time=sim.sub[i],
        start_time=st,
        end_time=exp,
        time_limit=None if math.isinf(exp) else exp - st,
        malleable=spec,
        evolving=target,
    )


def _pending_job(sim: Simulator, i: int) -> Job:
    limit = sim.lim[i]
    return Job(
        sim.jid[i],
        JobState.PENDING,
        sim.size[i],
        submit_time=sim.sub[i],
        time_limit=None if math.isinf(limit) else limit,
        priority=-sim.qkey[i],  # encodes the queue order; Snapshot.pending sorts by it
        malleable=sim.spec.get(i),
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
