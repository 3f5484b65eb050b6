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

EVOLVING_PREFIX = "evolving:"


@lru_cache(maxsize=8)
def _node_objects(total: int) -> tuple[tuple[Node, ...], tuple[Node, ...]]:
    names = [f"sim{k:05d}" for k in range(total)]
    idle = tuple(Node(n, NodeState.IDLE) for n in names)
    busy = tuple(Node(n, NodeState.ALLOCATED) for n in names)
    return idle, busy


def evolving_target(job: Job) -> int | None:
    """The size an evolving job asks for, if ``job`` is an open evolving ask; else ``None``."""
    if job.reason.startswith(EVOLVING_PREFIX):
        return int(job.reason[len(EVOLVING_PREFIX) :])
    return None


def build_snapshot(sim: Simulator) -> Snapshot:
    from slurm_ext.sim.engine import RUNNING

    idle, busy = _node_objects(sim.total_nodes)
    free = sim.free
    nodes = idle[:free] + busy[free:]
    jid, sub, size, start_t, spec = sim.jid, sim.sub, sim.size, sim.start_t, sim.spec
    jobs: list[Job] = []
    for exp, i in sim.ends:
        target = sim.evolve_asking.get(i)
        m = spec.get(i)
        reason = ""
        if target is not None:
            m = MalleableSpec(size[i], target, preferred=target)
            reason = f"{EVOLVING_PREFIX}{target}"
        st = start_t[i]
        jobs.append(
            Job(
                jid[i],
                JobState.RUNNING,
                size[i],
                submit_time=sub[i],
                start_time=st,
                end_time=exp,
                time_limit=None if math.isinf(exp) else exp - st,
                malleable=m,
                reason=reason,
            )
        )
    q = sim.queue
    n = len(q)
    lim = sim.lim
    for pos, i in enumerate(q):
        if sim.state[i] == RUNNING:
            continue
        limit = lim[i]
        jobs.append(
            Job(
                jid[i],
                JobState.PENDING,
                size[i],
                submit_time=sub[i],
                time_limit=None if math.isinf(limit) else limit,
                priority=n - pos,  # encodes the queue order; Snapshot.pending sorts by it
                malleable=spec.get(i),
            )
        )
    return Snapshot(sim.now, nodes, tuple(jobs))


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
