"""DBES decisions on hand-built cases whose right answer follows from 000_* §IV.C."""

from slurm_ext.decisions import Expand, Shrink, StartJob
from slurm_ext.policies.dbes import DBES
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot


def test_expands_the_malleable_job_a_startlater_job_depends_on() -> None:
    # Paper's example: 4 nodes, A (1 node, ends 3600) and B (1 node, ends 1800); C needs 4
    # nodes, so it depends on A. A is malleable (max 3): it gets the 2 idle nodes for C.
    a = running(1, 1, 3600.0, mall=(1, 3))
    b = running(2, 1, 1800.0, mall=(1, 3))
    c = pending(3, 4, 600.0)
    d = DBES().decide(snapshot(4, [a, b, c]))
    assert d == [Expand(1, 3, d[0].reason, for_job=3)]


def test_expands_the_job_that_ends_first_when_that_is_enough() -> None:
    # Same machine, C needs 3 nodes: it can start when B ends, so B is its dependency.
    a = running(1, 1, 3600.0, mall=(1, 3))
    b = running(2, 1, 1800.0, mall=(1, 3))
    c = pending(3, 3, 600.0)
    d = DBES().decide(snapshot(4, [a, b, c]))
    exp = by_type(d, Expand)
    assert [(e.job_id, e.new_size, e.for_job) for e in exp] == [(2, 3, 3)]


def test_rigid_dependency_is_not_expanded_and_idle_nodes_backfill_first() -> None:
    # C depends on rigid A; a short job fits before A's end: DBES backfills it, then the
    # second step gives what is left to B (nobody depends on B).
    a = running(1, 2, 7200.0)
    b = running(2, 1, 3600.0, mall=(1, 4))
    c = pending(3, 6, 600.0, submit=0.0)
    short = pending(4, 1, 100.0, submit=1.0)
    d = DBES().decide(snapshot(6, [a, b, c, short]))
    assert d[0] == StartJob(4, 1, d[0].reason)
    assert [(x.job_id, x.new_size) for x in by_type(d, Expand)] == [(2, 3)]
    assert all(x.job_id != 1 for x in by_type(d, Expand))


def test_equipartitions_between_dependencies_ending_together() -> None:
    a = running(1, 1, 1000.0, mall=(1, 8))
    b = running(2, 1, 1000.0, mall=(1, 8))
    c = pending(3, 6, 600.0)
    d = DBES().decide(snapshot(6, [a, b, c]))
    assert sorted((x.job_id, x.new_size) for x in by_type(d, Expand)) == [(1, 3), (2, 3)]


def test_malleable_startnow_jobs_start_at_their_minimum() -> None:
    job = pending(1, 2, 100.0, mall=(2, 8))
    d = DBES().decide(snapshot(8, [job]))
    assert d[0] == StartJob(1, 2, d[0].reason)
    # nobody waits: the rest goes to the job through the second (equipartition) step
    assert [(x.job_id, x.new_size) for x in by_type(d, Expand)] == [(1, 8)]


def _shrink_scene(policy: DBES, need: int) -> list:
    """Three expanded jobs (min 1, size 3): X for J (head), Y for nobody, Z for K (lower
    priority; K waits for Z, which ends last), and a rigid job. J needs ``need`` nodes, none idle."""
    x = running(1, 3, 5000.0, mall=(1, 3))
    y = running(2, 3, 6000.0, mall=(1, 3))
    z = running(3, 3, 40000.0, mall=(1, 3))
    r = running(4, 3, 5000.0)  # rigid, never shrunk
    j = pending(10, need, 100.0, submit=0.0)
    k = pending(11, 12, 100.0, submit=1.0)
    policy.expanded_for = {1: 10, 2: None, 3: 11}
    return policy.decide(snapshot(12, [x, y, z, r, j, k]))


def test_shrink_order_own_dependency_first() -> None:
    d = _shrink_scene(DBES(), 2)
    assert [(s.job_id, s.new_size) for s in by_type(d, Shrink)] == [(1, 1)]
    assert StartJob(10, 2, "") in [StartJob(s.job_id, s.nodes, "") for s in by_type(d, StartJob)]


def test_shrink_order_then_unowned_then_lower_priority() -> None:
    d = _shrink_scene(DBES(), 5)
    shr = by_type(d, Shrink)
    assert [(s.job_id, s.new_size) for s in shr[:3]] == [(1, 1), (2, 1), (3, 2)]
    start = by_type(d, StartJob)[0]
    assert (start.job_id, start.nodes) == (10, 5)
    assert d.index(shr[2]) < d.index(start)  # nodes are freed before the start


def test_no_shrink_when_expanded_jobs_cannot_free_enough() -> None:
    d = _shrink_scene(DBES(), 7)  # only 6 expanded nodes exist
    assert by_type(d, StartJob) == []
    assert by_type(d, Shrink) == []
    assert not any(isinstance(x, StartJob) and x.job_id == 10 for x in d)


def _priority_scene(x_for: int | None) -> list:
    """H (head, all 10 nodes) waits for X, which was expanded for ``x_for``; L (second) waits
    for malleable M. L's first-step expansion may take X's nodes only if X is not H's."""
    x = running(1, 4, 5000.0, mall=(1, 4))
    r = running(2, 4, 3000.0)
    m = running(3, 2, 4000.0, mall=(2, 6))
    h = pending(10, 10, 100.0, submit=0.0)
    low = pending(11, 6, 100.0, submit=1.0)
    pol = DBES()
    pol.expanded_for = {1: x_for}
    return pol.decide(snapshot(10, [x, r, m, h, low]))


def test_never_takes_nodes_from_jobs_expanded_for_a_higher_priority_job() -> None:
    assert _priority_scene(10) == []
    # control: the same nodes expanded for nobody do move to L's dependency M
    d = _priority_scene(None)
    assert [(x.job_id, x.new_size) for x in by_type(d, Shrink)] == [(1, 1)]
    assert [(x.job_id, x.new_size, x.for_job) for x in by_type(d, Expand)] == [(3, 5, 11)]


def test_first_step_steals_from_second_step_expansions() -> None:
    # Y was expanded for nobody; A is what head job C waits for: Y's extra nodes move to A.
    a = running(1, 1, 3000.0, mall=(1, 5))
    y = running(2, 3, 2000.0, mall=(1, 3))
    c = pending(3, 5, 100.0)
    pol = DBES()
    pol.expanded_for = {2: None}
    d = pol.decide(snapshot(5, [a, y, c]))
    assert [(x.job_id, x.new_size) for x in by_type(d, Shrink)] == [(2, 1)]
    assert [(x.job_id, x.new_size, x.for_job) for x in by_type(d, Expand)] == [(1, 4, 3)]
    assert pol.expanded_for[1] == 3


def _evolving(jid: int, size: int, target: int, end: float):
    from dataclasses import replace

    from slurm_ext.model import MalleableSpec

    job = running(jid, size, end)
    return replace(job, evolving=target, malleable=MalleableSpec(size, target))


def test_evolving_request_shrinks_second_step_jobs_before_first_step_ones() -> None:
    # 000_* §IV.C: "the malleable jobs expanded in the second expansion step are considered first"
    e = _evolving(1, 4, 8, 5000.0)
    s1 = running(2, 4, 6000.0, mall=(2, 4))  # expanded for pending job 10 (step one)
    s2 = running(3, 4, 7000.0, mall=(2, 4))  # expanded for nobody (step two)
    head = pending(10, 12, 100.0)
    pol = DBES()
    pol.expanded_for = {2: 10, 3: None}
    d = pol.decide(snapshot(12, [e, s1, s2, head]))
    assert d[:2] == [Shrink(3, 2, d[0].reason, for_job=1), Shrink(2, 2, d[1].reason, for_job=1)]
    assert d[2] == Expand(1, 8, d[2].reason)


def test_evolving_request_refused_when_nodes_cannot_be_found() -> None:
    e = _evolving(1, 4, 8, 5000.0)
    other = running(2, 4, 6000.0, mall=(3, 4))
    pol = DBES()
    pol.expanded_for = {2: None}
    d = pol.decide(snapshot(9, [e, other]))
    assert not any(isinstance(x, Expand) and x.job_id == 1 for x in d)
    assert by_type(d, Shrink) == []
