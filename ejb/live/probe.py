"""The manager's showbf: the immediately backfillable slots of the live queue (paper 004, §2.3).

Slurm has no ``showbf``. Its backfill pass leaves, for each pending job it planned, a start time
and the nodes it will start on (``squeue %S %Y``); with the idle nodes of the same moment these
give EJB's two slot types the way Slurm itself will honour them:

* type I: idle nodes no pending job is planned on -- a job there delays nobody, however long;
* type II: every idle node, until the earliest planned start on one of them.

Without any plan (empty queue, or backfill has not run yet) the slots follow from the snapshot
as EASY sees them, by the function the simulator uses (:func:`ejb.slots.slots_from_snapshot`).

``sbatch --test-only`` then has the last word on each subjob: Slurm 22.05 answers it for its main
scheduler, which places a new job behind every pending job of higher priority, so a job backfill
starts at once is often reported to start later; the manager accepts the answer "later, on nodes
that are idle now and planned for nobody before the subjob would end", which is what backfill
starts at once (:func:`backfill_agrees`). The question leaves out the idle nodes planned for
somebody (``-x``): asked plainly, Slurm may name those although other idle nodes are free for good.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterable, Mapping

from ejb.live.backend import EJBBackend
from ejb.slots import Slot, SlotKind, Slots, slots_from_snapshot
from slurm_ext.model import NodeState, Snapshot
from slurm_ext.partitions import partition_view
from slurm_ext.service.watcher import SnapshotCache

Plan = Mapping[int, tuple[float | None, tuple[str, ...]]]  # pending job -> (planned start, nodes)


def reservations(idle: Iterable[str], plan: Plan) -> dict[str, float]:
    """Idle node -> the earliest planned start of a pending job on it."""
    idle_set = set(idle)
    out: dict[str, float] = {}
    for start, nodes in plan.values():
        if start is None:
            continue
        for n in nodes:
            if n in idle_set:
                out[n] = min(out.get(n, math.inf), start)
    return out


def slots_from_plan(now: float, idle: Iterable[str], plan: Plan) -> Slots | None:
    """Slots from Slurm's backfill plan (None: no pending job has a plan)."""
    idle = list(idle)
    if not any(start is not None and nodes for start, nodes in plan.values()):
        return None
    held = reservations(idle, plan)
    free = len(idle)
    p1 = free - len(held)
    s1 = Slot(SlotKind.TYPE_I, p1, math.inf) if p1 > 0 else None
    shadow = min(held.values(), default=math.inf)
    s2 = Slot(SlotKind.TYPE_II, free, shadow - now) if held and shadow > now else None
    return Slots(now, free, p1, shadow, s1, s2)


def idle_or_planned(snap: Snapshot) -> list[str]:
    """Idle nodes, those a pending job is planned on among them (the plan says until when)."""
    return [n.name for n in snap.nodes if n.state is NodeState.IDLE or n.planned]


def planned_before(plan: Plan, until: float) -> list[str]:
    """Nodes a pending job is planned to start on before ``until``: a job put there would delay
    it, so backfill keeps them for it (Slurm flags them PLANNED; the snapshot counts them busy)."""
    return sorted({n for start, nodes in plan.values() if start is not None and start < until for n in nodes})


def backfill_agrees(
    now: float,
    idle: Iterable[str],
    plan: Plan,
    start: float,
    nodes: Iterable[str],
    limit: float,
    slack: float = 5,
) -> bool:
    """Whether ``sbatch --test-only``'s answer (``start`` on ``nodes``) means "starts now"."""
    if start <= now + slack:
        return True
    idle_set, nodes = set(idle), list(nodes)
    if not nodes or not set(nodes) <= idle_set:
        return False
    held = reservations(nodes, plan)
    return all(now + limit <= t for t in held.values())


class Probe:
    def __init__(self, cache: SnapshotCache, backend: EJBBackend) -> None:
        """``cache``: the snapshots of ``backend``."""
        self.cache = cache
        self.backend = backend
        self.plan: Plan = {}
        self.snap: Snapshot | None = None
        self.seconds: list[float] = []  # the last probes' durations: Slurm's reads and the slots

    def run(self) -> Snapshot:
        """A fresh snapshot and backfill plan, for :meth:`slots` and :meth:`starts_now`."""
        t0 = time.perf_counter()
        snap = self.snap = self.cache.fresh()
        self.plan = self.backend.planned_starts()
        self.seconds = [*self.seconds[-999:], time.perf_counter() - t0]
        return snap

    def slots(self, partition: str = "") -> Slots:
        """The slots a job of ``partition`` (Slurm's comma list; "" the whole cluster) can use now:
        its partitions' idle nodes, with Slurm's plan for them."""
        assert self.snap is not None, "run() first"
        view = partition_view(self.snap, partition)
        return slots_from_plan(view.time, idle_or_planned(view), self.plan) or slots_from_snapshot(view)

    def starts_now(self, nodes: int, limit: float, partition: str = "") -> bool:
        """``sbatch --test-only`` agrees that a job of this shape starts now (see the module's notes).

        Slurm's answer names the nodes its main scheduler would pick, often idle nodes planned
        for a pending job (J0 among them) while others are free for good: those planned nodes
        are excluded from the question, as backfill leaves them alone. The question is for whole
        nodes, as subjobs are (else Slurm names a node a small job shares, which is no slot).
        """
        now = time.time()
        view = partition_view(self.snap, partition) if self.snap is not None else None
        idle = idle_or_planned(view) if view is not None else []
        avoid = planned_before(self.plan, now + limit)
        if len(set(idle) - set(avoid)) < nodes:
            return False  # the idle nodes nobody waits for are too few
        planned = planned_before(self.plan, math.inf)
        if len(set(idle) - set(planned)) >= nodes:
            avoid = planned  # enough nodes free for good: Slurm must not name one planned later either
        start, where = self.backend.test_only(nodes, limit, exclude=avoid, partition=partition, whole=True)
        return backfill_agrees(now, idle, self.plan, start, where, limit)

    def summary(self) -> dict[str, float | int]:
        if not self.seconds:
            return {"n": 0}
        return {"n": len(self.seconds), "p50": statistics.median(self.seconds), "max": max(self.seconds)}
