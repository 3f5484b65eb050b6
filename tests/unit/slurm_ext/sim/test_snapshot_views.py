"""The simulator fills a snapshot's derived views (free, running, pending...) itself; they must be
what :class:`~slurm_ext.model.Snapshot` would compute from its nodes and jobs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slurm_ext.decisions import Decision, RaisePriority
from slurm_ext.model import Snapshot
from slurm_ext.policies import make_policy
from slurm_ext.policies.base import Policy
from slurm_ext.sim import MalleableRule, Simulator
from slurm_ext.workloads import load_workload

VIEWS = ("total_nodes", "idle_nodes", "free", "running", "pending")


class Checking(Policy):
    """Delegates to ``inner`` after comparing every snapshot's views with freshly computed ones."""

    name = "checking"

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.schedules_jobs = inner.schedules_jobs  # type: ignore[misc]
        self.snapshots = 0
        self.raised = 0

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        fresh = Snapshot(snap.time, snap.nodes, snap.jobs)
        for view in VIEWS:
            assert getattr(snap, view) == getattr(fresh, view), view
        self.snapshots += 1
        out = self.inner.decide(snap, asking)
        self.raised += sum(isinstance(d, RaisePriority) for d in out)
        return out


@pytest.mark.parametrize("policy", ["dmr", "dbes"])
def test_filled_views_match_computed_ones(policy: str) -> None:
    wl = MalleableRule(fraction=0.5, seed=0).apply(load_workload("kth-small"))
    checking = Checking(make_policy(policy))
    Simulator(wl, "easy", checking).run()
    assert checking.snapshots > 500
    if policy == "dmr":
        assert checking.raised > 0  # raised jobs reorder the queue: the pending view must follow
