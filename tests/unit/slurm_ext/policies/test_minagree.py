"""minAgree (001_*, Malleable-Algorithm): its three steps on hand-built cases."""

from slurm_ext.decisions import Expand, Shrink, StartJob
from slurm_ext.policies.minagree import MinAgree
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot


def test_shrinks_the_largest_malleable_job_to_start_a_waiting_one() -> None:
    jobs = [
        running(1, 6, 900.0, mall=(2, 8)),
        running(2, 4, 900.0, mall=(2, 8)),
        running(3, 2, 900.0),
        pending(4, 3, 100.0),
    ]
    d = MinAgree().decide(snapshot(12, jobs))
    shr = by_type(d, Shrink)
    # one node at a time from the currently largest: job 1 6->5->4, then the 4/4 tie goes to
    # job 2 (ties: higher id); rigid job 3 is never touched
    assert [(s.job_id, s.new_size) for s in shr] == [(1, 4), (2, 3)]
    st = by_type(d, StartJob)
    assert [(s.job_id, s.nodes) for s in st] == [(4, 3)]
    assert d.index(shr[0]) < d.index(st[0])


def test_largest_first_spreads_over_jobs_of_equal_size() -> None:
    jobs = [running(1, 5, 900.0, mall=(1, 8)), running(2, 5, 900.0, mall=(1, 8)), pending(3, 4, 100.0)]
    d = MinAgree().decide(snapshot(10, jobs))
    assert sorted((s.job_id, s.new_size) for s in by_type(d, Shrink)) == [(1, 3), (2, 3)]


def test_does_not_shrink_when_that_cannot_start_the_job() -> None:
    jobs = [running(1, 6, 900.0, mall=(5, 8)), pending(2, 3, 100.0)]
    d = MinAgree().decide(snapshot(6, jobs))
    assert d == []


def test_malleable_jobs_start_at_minimum_then_idle_nodes_go_to_the_smallest() -> None:
    jobs = [running(1, 4, 900.0, mall=(4, 8)), pending(2, 6, 100.0, mall=(1, 6))]
    d = MinAgree().decide(snapshot(10, jobs))
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(2, 1)]
    # 5 idle after the start: job 2 (1 node) is raised to 4, then the two alternate
    assert sorted((e.job_id, e.new_size) for e in by_type(d, Expand)) == [(1, 5), (2, 5)]


def test_easy_step_backfills_without_delaying_the_head() -> None:
    # head needs all 4 nodes at t=100; a 2-node job of 50 s fits before, one of 500 s does not
    jobs = [
        running(1, 2, 100.0),
        pending(2, 4, 100.0, submit=0.0),
        pending(3, 2, 500.0, submit=1.0),
        pending(4, 2, 50.0, submit=2.0),
    ]
    d = MinAgree().decide(snapshot(4, jobs))
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(4, 2)]
