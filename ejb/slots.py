"""Immediately backfillable job slots under EASY backfilling (paper section 2.3, Table 1).

EASY reserves processors for the first queued job at the *shadow time* (when enough
running jobs will have ended, by their requested times); the processors left over at
that time beyond the head job's request are the *extra* processors. A new job starts
at once if it fits in the *free* processors and either uses no more than the extra
processors (it cannot delay the head job, whatever its length) or ends by the shadow time:

* type-I slot: ``P_max = min(extra, free)``, no run-time bound;
* type-II slot: ``P_max = free`` (only if ``free > extra``), ``R_max = T_shadow - T_now``.

With an empty queue every free processor is a type-I slot. :func:`easy_slots` computes
this from the bare EASY view (free processors, running jobs' expected ends, the head
job's size); :func:`slots_from_snapshot` reads that view from a :class:`Snapshot`, so
the simulator and live Slurm (showbf-style probe) give EJB the same numbers;
:func:`slots_from_view` takes free/shadow/extra directly (e.g. the simulator's EasyView).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from slurm_ext.model import Snapshot


class SlotKind(StrEnum):
    TYPE_I = "I"
    TYPE_II = "II"


@dataclass(frozen=True, slots=True)
class Slot:
    kind: SlotKind
    procs: int  # P_max
    duration: float  # R_max; inf for a type-I slot


@dataclass(frozen=True, slots=True)
class Slots:
    """The immediately backfillable slots ``S_1`` (type I) and ``S_2`` (type II) at ``now``."""

    now: float
    free: int
    extra: int
    shadow: float  # inf when the queue is empty or the head job can never start
    type1: Slot | None
    type2: Slot | None

    @property
    def empty(self) -> bool:
        return self.type1 is None and self.type2 is None


def slots_from_view(now: float, free: int, shadow: float, extra: int, queued: bool) -> Slots:
    """Slots from EASY's numbers: free processors, shadow time and extra processors.

    ``queued`` says whether a job is waiting (else every free processor is type I).
    A shadow time of ``inf`` (the head job can never start) bounds nothing either.
    """
    free = max(0, free)
    if not queued or math.isinf(shadow):
        s1 = Slot(SlotKind.TYPE_I, free, math.inf) if free > 0 else None
        return Slots(now, free, free, math.inf, s1, None)
    shadow = max(shadow, now)
    p1 = max(0, min(extra, free))
    s1 = Slot(SlotKind.TYPE_I, p1, math.inf) if p1 > 0 else None
    s2 = Slot(SlotKind.TYPE_II, free, shadow - now) if free > p1 and shadow > now else None
    return Slots(now, free, extra, shadow, s1, s2)


def easy_slots(
    now: float,
    free: int,
    running: Iterable[tuple[int, float]],
    head_procs: int | None,
) -> Slots:
    """Slots from the EASY view: ``running`` holds ``(procs, expected_end)`` of running jobs.

    ``head_procs`` is the size of the first queued job (``None`` if the queue is empty).
    Jobs ending exactly at the shadow time all count towards ``extra``.
    """
    if head_procs is None:
        return slots_from_view(now, free, math.inf, free, False)
    avail = free
    shadow = now
    if avail < head_procs:
        shadow = math.inf
        ends = sorted(running, key=lambda r: r[1])
        k = 0
        while k < len(ends):
            t = ends[k][1]
            while k < len(ends) and ends[k][1] == t:  # everything ending at t frees at once
                avail += ends[k][0]
                k += 1
            if avail >= head_procs:
                shadow = t
                break
    return slots_from_view(now, free, shadow, avail - head_procs, True)


def slots_from_snapshot(snap: Snapshot) -> Slots:
    """The slots of a cluster snapshot (simulated or live): nodes are the processors."""
    running = []
    for j in snap.running:
        if j.end_time is not None:
            end = j.end_time
        elif j.start_time is not None and j.time_limit is not None:
            end = j.start_time + j.time_limit
        else:
            end = math.inf
        running.append((j.node_count, end))
    pending = snap.pending
    head = pending[0].node_count if pending else None
    return easy_slots(snap.time, snap.free, running, head)
