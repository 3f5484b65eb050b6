"""``dmr-reserve``: what DMR starts out of order (a shrink for a smaller pending job) and grows keep
the first waiting job's reservation (EASY's rule for backfilled jobs), on hand-built snapshots.
``machine``: 10 nodes at t=100, malleable job 1 on 2 nodes, rigid job 2 on 6 nodes ending at 200,
2 idle; the pending job that does not fit starts at 200."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurm_ext.decisions import Expand, NoAction, Shrink
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.policies import make_policy
from slurm_ext.policies.dmr import DMRPolicy
from tests.unit.slurm_ext.policies.helpers import make_snapshot


def machine(waiting: int, mall_end: float, spec: MalleableSpec | None = None) -> Snapshot:
    snap = make_snapshot(10, [(1, 2, spec or MalleableSpec(1, 8, 2)), (2, 6, None)], pending=[(9, waiting)])
    ends = {1: mall_end, 2: 200.0}
    jobs = tuple(replace(j, end_time=ends[j.job_id]) if j.job_id in ends else j for j in snap.jobs)
    return Snapshot(time=snap.time, nodes=snap.nodes, jobs=jobs)


def decide(policy: DMRPolicy, snap: Snapshot):
    (d,) = policy.decide(snap, None)
    return d


def test_paper_dmr_grows_into_the_nodes_a_wide_job_waits_for_and_dmr_reserve_does_not() -> None:
    snap = machine(waiting=8, mall_end=1000.0)  # job 9 starts at 200 on all 8 nodes: no extra
    grown = decide(DMRPolicy(), snap)
    assert isinstance(grown, Expand) and grown.new_size == 4
    kept = decide(make_policy("dmr-reserve"), snap)
    assert isinstance(kept, NoAction) and "keeps job 9's reservation at 200" in kept.reason, kept


def test_a_job_that_ends_by_the_reservation_grows_as_before() -> None:
    d = decide(DMRPolicy(keep_reservation=True), machine(waiting=8, mall_end=150.0))
    assert isinstance(d, Expand) and d.new_size == 4


@pytest.mark.parametrize(("waiting", "size"), [(6, 4), (7, 2)])
def test_a_job_that_ends_after_it_grows_into_the_extra_nodes_only(waiting: int, size: int) -> None:
    """Job 9 of 6 nodes leaves 2 extra nodes at 200 (job 1 may take them: 2 -> 4); of 7, one (too
    few for job 1's next size, 4)."""
    d = decide(DMRPolicy(keep_reservation=True), machine(waiting, mall_end=1000.0))
    assert (isinstance(d, Expand) and d.new_size == size) or (isinstance(d, NoAction) and size == 2), d


def test_a_preferred_size_is_reached_only_without_delaying_the_reservation() -> None:
    spec = MalleableSpec(1, 8, 2, preferred=4)
    assert isinstance(decide(DMRPolicy(), machine(8, 1000.0, spec)), Expand)
    d = decide(DMRPolicy(keep_reservation=True), machine(8, 1000.0, spec))
    assert isinstance(d, NoAction) and "reservation" in d.reason, d


def test_a_held_back_answer_is_not_reused_once_the_reservation_moves() -> None:
    """The same job, size and idle nodes, a queue that only grew by a job of a queued size (the
    policy's answers for it are kept between calls), but the rigid job's end now after job 1's:
    the reservation moved, and job 1 (ending first) grows."""
    policy = DMRPolicy(keep_reservation=True)
    first = machine(8, 1000.0)
    assert isinstance(decide(policy, first), NoAction)
    waiting = next(j for j in first.jobs if j.job_id == 9)
    jobs = tuple(replace(j, end_time=2000.0) if j.job_id == 2 else j for j in first.jobs)
    later = Snapshot(time=first.time, nodes=first.nodes, jobs=(*jobs, replace(waiting, job_id=10)))
    d = decide(policy, later)
    assert isinstance(d, Expand) and d.new_size == 4, d


def queue_behind_a_wide_job(small_limit: float) -> Snapshot:
    """10 nodes, none idle: malleable job 1 on 4 (ends at 1000), rigid job 2 on 6 (ends at 200);
    job 9 (8 nodes) waits for job 1's end (its reservation: 1000, 2 nodes left over then), and
    behind it job 10 (2 nodes, ``small_limit`` s) that shrinking job 1 to 2 would start now."""
    snap = make_snapshot(10, [(1, 4, MalleableSpec(1, 8, 2)), (2, 6, None)], pending=[(9, 8), (10, 2)])
    ends = {1: 1000.0, 2: 200.0}
    jobs = tuple(
        replace(j, end_time=ends[j.job_id]) if j.job_id in ends
        else replace(j, time_limit=small_limit) if j.job_id == 10 else j
        for j in snap.jobs
    )  # fmt: skip
    return Snapshot(time=snap.time, nodes=snap.nodes, jobs=jobs)


def test_a_shrink_that_starts_a_small_job_ahead_of_the_wide_one_is_held_if_it_delays_it() -> None:
    """Job 10 running past 1000 would keep 2 nodes, and job 1 shrunk to 2 ends later than 1000
    with 2 more: 4 nodes the reservation counts on, 2 left over. paper DMR shrinks anyway."""
    snap = queue_behind_a_wide_job(3600.0)
    shrink, boost = DMRPolicy().decide(snap, None)
    assert (shrink.job_id, shrink.new_size, boost.job_id) == (1, 2, 10), (shrink, boost)
    (held,) = make_policy("dmr-reserve").decide(snap, None)
    assert isinstance(held, NoAction) and "start pending job 10 keeps job 9's reservation" in held.reason, (
        held
    )


def test_a_shrink_whose_small_job_ends_by_the_reservation_is_made() -> None:
    """Job 10 ends by 600: only job 1's 2 remaining nodes may come back late, and 2 are left over."""
    shrink, boost = make_policy("dmr-reserve").decide(queue_behind_a_wide_job(500.0), None)
    assert isinstance(shrink, Shrink) and shrink.new_size == 2 and boost.job_id == 10
