"""001_*'s moldable FCFS, Backfilling and Easy-Backfilling on hand-built cases."""

from __future__ import annotations

import pytest

from slurm_ext.decisions import Expand, Shrink, StartJob
from slurm_ext.policies import make_policy
from slurm_ext.policies.moldable import MoldableBackfill, MoldableEASY, MoldableFCFS
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot


def starts(policy, jobs, total: int) -> list[tuple[int, int]]:
    d = policy.decide(snapshot(total, jobs))
    assert not by_type(d, Expand) and not by_type(d, Shrink)  # moldable: never a resize
    return [(s.job_id, s.nodes) for s in by_type(d, StartJob)]


@pytest.mark.parametrize("policy", [MoldableFCFS(), MoldableBackfill(), MoldableEASY()])
def test_a_moldable_job_takes_as_many_idle_nodes_as_its_maximum_allows(policy) -> None:
    jobs = [running(1, 2, 100.0), pending(2, 4, 400.0, mall=(2, 8)), pending(3, 4, 100.0, mall=(1, 4))]
    # 10 idle: job 2 takes 8 (its max), job 3 the 2 left (within 1-4)
    assert starts(policy, jobs, 12) == [(2, 8), (3, 2)]


@pytest.mark.parametrize("policy", [MoldableFCFS(), MoldableBackfill(), MoldableEASY()])
def test_a_rigid_job_starts_on_its_own_size(policy) -> None:
    assert starts(policy, [pending(1, 3, 100.0), pending(2, 2, 100.0)], 8) == [(1, 3), (2, 2)]


def test_fcfs_stops_at_the_first_job_that_cannot_start() -> None:
    jobs = [running(1, 6, 100.0), pending(2, 4, 100.0, mall=(3, 4)), pending(3, 1, 10.0)]
    assert starts(MoldableFCFS(), jobs, 8) == []


def test_backfilling_starts_later_jobs_without_a_reservation() -> None:
    # 001's Backfilling keeps no reservation: the long job 3 starts and delays job 2
    jobs = [running(1, 6, 100.0), pending(2, 4, 100.0, mall=(3, 4)), pending(3, 2, 5000.0, mall=(1, 2))]
    assert starts(MoldableBackfill(), jobs, 8) == [(3, 2)]


def test_easy_keeps_the_heads_reservation_at_its_minimum() -> None:
    # head (min 3) reserved at t=100 on 3 of 8 nodes: 5 stay free for good, 2 are idle now
    jobs = [running(1, 6, 100.0), pending(2, 4, 100.0, mall=(3, 4)), pending(3, 2, 5000.0, mall=(1, 2))]
    assert starts(MoldableEASY(), jobs, 8) == [(3, 2)]  # 2 nodes past t=100: 8 - 3 reserved = 5 >= 2
    jobs = [running(1, 6, 100.0), pending(2, 8, 100.0, mall=(7, 8)), pending(3, 2, 5000.0, mall=(1, 2))]
    # head needs 7 at t=100: only 1 node stays free for good, so job 3 runs on 1 node (for 10000 s)
    assert starts(MoldableEASY(), jobs, 8) == [(3, 1)]


def test_easy_takes_the_largest_size_that_ends_before_the_reservation() -> None:
    # head reserved at t=100 on all 8; job 3 (1-2 nodes, 100 s at 2 nodes, 200 s at 1) fits on 2 only
    jobs = [running(1, 6, 100.0), pending(2, 8, 100.0), pending(3, 2, 90.0, mall=(1, 2))]
    assert starts(MoldableEASY(), jobs, 8) == [(3, 2)]
    jobs = [running(1, 6, 100.0), pending(2, 8, 100.0), pending(3, 2, 110.0, mall=(1, 2))]
    assert starts(MoldableEASY(), jobs, 8) == []  # 110 s on 2 nodes, 220 s on 1: both delay the head


def test_the_policies_are_named() -> None:
    for name in ("moldable-fcfs", "moldable-backfill", "moldable-easy"):
        assert make_policy(name).name == name
