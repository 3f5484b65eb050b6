"""The DMR policy's three modes on hand-built snapshots."""

from __future__ import annotations

from slurm_ext.decisions import Expand, NoAction, RaisePriority, Shrink
from slurm_ext.model import MalleableSpec
from slurm_ext.policies.dmr import DMRPolicy
from tests.unit.slurm_ext.policies.helpers import make_snapshot

POLICY = DMRPolicy()


def decide(snap, job_id=1):
    return POLICY.decide(snap, [job_id])


# -- mode 1: request an action -----------------------------------------------------------
def test_request_expand_granted_when_nodes_free():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(2, 4, 2))])
    (d,) = decide(snap)
    assert isinstance(d, Expand) and d.new_size == 2 and "requested" in d.reason


def test_request_expand_refused_when_cluster_full():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(2, 4, 2)), (2, 3, None)])
    (d,) = decide(snap)
    assert isinstance(d, NoAction) and "refused" in d.reason


def test_request_shrink_always_granted_and_boosts_a_job_it_lets_start():
    snap = make_snapshot(4, [(1, 4, MalleableSpec(1, 2, 2))], pending=[(9, 2)])
    decisions = decide(snap)
    assert isinstance(decisions[0], Shrink) and decisions[0].new_size == 2
    assert decisions[1:] == [RaisePriority(9, decisions[1].reason)]


# -- mode 2: preferred size -----------------------------------------------------------------
def test_preferred_with_empty_queue_expands_to_max():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2, preferred=1))])
    (d,) = decide(snap)
    assert isinstance(d, Expand) and d.new_size == 4 and "queue empty" in d.reason


def test_preferred_with_queue_shrinks_back_to_preferred():
    snap = make_snapshot(4, [(1, 4, MalleableSpec(1, 4, 2, preferred=1))], pending=[(9, 4)])
    d = decide(snap)[0]
    assert isinstance(d, Shrink) and d.new_size == 1


def test_preferred_at_preferred_with_queue_is_no_action():
    snap = make_snapshot(4, [(1, 2, MalleableSpec(1, 4, 2, preferred=2)), (2, 2, None)], pending=[(9, 3)])
    (d,) = decide(snap)
    assert isinstance(d, NoAction) and "preferred size" in d.reason


def test_preferred_expand_limited_by_free_nodes():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2, preferred=1)), (2, 3, None)])
    (d,) = decide(snap)
    assert isinstance(d, NoAction) and "no free nodes" in d.reason


def test_preferred_expand_to_largest_that_fits():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2, preferred=1)), (2, 1, None)])
    (d,) = decide(snap)
    assert isinstance(d, Expand) and d.new_size == 2  # 2 free: 1->2 fits, 1->4 does not


# -- mode 3: wide optimization -----------------------------------------------------------------
def test_wide_expands_when_queue_empty():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2))])
    (d,) = decide(snap)
    assert isinstance(d, Expand) and d.new_size == 4


def test_wide_expands_when_no_pending_job_fits_free_nodes():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2)), (2, 1, None)], pending=[(9, 4)])
    (d,) = decide(snap)
    assert isinstance(d, Expand) and d.new_size == 2 and "no pending job fits" in d.reason


def test_wide_no_expand_when_pending_job_fits_free_nodes():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2)), (2, 1, None)], pending=[(9, 2)])
    (d,) = decide(snap)
    assert isinstance(d, NoAction) and "fits" in d.reason


def test_wide_shrinks_to_let_pending_job_start_and_raises_its_priority():
    snap = make_snapshot(4, [(1, 4, MalleableSpec(1, 4, 2))], pending=[(9, 2)])
    shrink, boost = decide(snap)
    assert isinstance(shrink, Shrink) and shrink.new_size == 2 and shrink.for_job == 9
    assert isinstance(boost, RaisePriority) and boost.job_id == 9


def test_wide_shrinks_by_the_least_that_suffices():
    snap = make_snapshot(8, [(1, 8, MalleableSpec(1, 8, 2))], pending=[(9, 3)])
    shrink, _ = decide(snap)
    assert shrink.new_size == 4


def test_wide_no_shrink_below_min():
    snap = make_snapshot(4, [(1, 4, MalleableSpec(4, 4, 2))], pending=[(9, 2)])
    (d,) = decide(snap)
    assert isinstance(d, NoAction)


def test_wide_ignores_resizer_and_dependent_jobs():
    from dataclasses import replace

    snap = make_snapshot(4, [(1, 4, MalleableSpec(1, 4, 2))], pending=[(9, 2)])
    jobs = tuple(replace(j, dependency="expand:1") if j.job_id == 9 else j for j in snap.jobs)
    snap2 = replace(snap, jobs=jobs)
    (d,) = decide(snap2)
    assert isinstance(d, NoAction)


# -- general -----------------------------------------------------------------------------------
def test_unknown_or_rigid_job_is_no_action():
    snap = make_snapshot(4, [(1, 2, None)])
    assert isinstance(decide(snap, 1)[0], NoAction)
    assert isinstance(decide(snap, 77)[0], NoAction)


def test_scheduler_mode_does_not_hand_out_the_same_free_nodes_twice():
    snap = make_snapshot(4, [(1, 1, MalleableSpec(1, 4, 2)), (2, 1, MalleableSpec(1, 4, 2))])
    decisions = POLICY.decide(snap, None)
    grown = sum(d.new_size - 1 for d in decisions if isinstance(d, Expand))
    assert grown <= 2


def test_every_decision_has_a_reason():
    snap = make_snapshot(4, [(1, 4, MalleableSpec(1, 4, 2))], pending=[(9, 2)])
    assert all(d.reason for d in decide(snap))
