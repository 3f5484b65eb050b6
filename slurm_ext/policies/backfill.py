"""Rigid Maui-style backfilling as a policy: the rigid baseline of ``000_*`` §V.B run by the
same scheduling code as DBES/EP/ESF/EDF/LDF (priority order, ``ReservationDepth``
reservations, backfill that delays no reservation), so a comparison differs only in the
expand/shrink decisions. ``reservation_depth=1`` is EASY backfilling. Jobs start at their
submitted size; nothing is ever resized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import ViewPolicy
from slurm_ext.policies.working_view import Queued, WorkingView, check_depth


def _submitted(job: Queued) -> int:
    return job.node_count


class Backfill(ViewPolicy):
    name: ClassVar[str] = "backfill"
    schedules_jobs: ClassVar[bool] = True

    def __init__(self, reservation_depth: int = 5) -> None:
        self.depth = check_depth(reservation_depth)

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        cl.serve_evolving(list, "backfill")  # evolving asks get idle nodes, never others' nodes
        cl.backfill(self.depth, _submitted, f"backfill (depth {self.depth})")
        return cl.decisions
