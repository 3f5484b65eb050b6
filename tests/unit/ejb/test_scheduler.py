"""EJB-sched driven by plain snapshots, as a live-Slurm driver would: no simulator involved."""

from __future__ import annotations

import pytest

from ejb.actions import CancelSubjob, Migrate, SubmitSubjob
from ejb.model import ElasticState, Target
from ejb.params import EJBParams
from ejb.scheduler import J0_KEY, EJBScheduler
from ejb.slots import slots_from_snapshot
from slurm_ext.model import Job, JobState, Node, NodeState, Snapshot


def snap(
    now: float, busy: int, running: list[tuple[int, int, float]], pending: list[tuple[int, int]]
) -> Snapshot:
    """10 nodes; ``running`` = (id, nodes, expected end), ``pending`` = (id, nodes) in queue order."""
    nodes = tuple(Node(f"n{k}", NodeState.ALLOCATED if k < busy else NodeState.IDLE) for k in range(10))
    jobs = [Job(j, JobState.RUNNING, n, start_time=0.0, end_time=e) for j, n, e in running]
    jobs += [Job(j, JobState.PENDING, n, submit_time=float(k)) for k, (j, n) in enumerate(pending)]
    return Snapshot(now, nodes, tuple(jobs))


def test_full_life_cycle_from_snapshots():
    ejb = EJBScheduler(EJBParams(migration=20.0))
    # arrival: J0 submitted with the original shape
    (sub,) = ejb.arrive(7, Target(8, 100.0), now=1.0)
    assert isinstance(sub, SubmitSubjob) and sub.placeholder and (sub.procs, sub.limit) == (8, 100.0)
    ejb.bound(7, sub.key, 1001, 1.0)
    # the batch system shows 8 busy nodes until 1000 and J0 queued: a type-I slot of 2
    s = slots_from_snapshot(snap(1.0, 8, [(1, 8, 1000.0)], [(1001, 8)]))
    (j1,) = ejb.slots_available(7, s)
    assert isinstance(j1, SubmitSubjob) and (j1.procs, j1.limit) == (2, 400.0)
    ejb.bound(7, j1.key, 1002, 1.0)
    assert ejb.started(1002, 1.0) == []  # launch: no migration
    assert ejb.jobs[7].state is ElasticState.RUNNING
    # at 100 two more nodes are idle (type I: extra 2 at shadow 1000): expand by 2
    s = slots_from_snapshot(snap(100.0, 6, [(1, 6, 1000.0), (1002, 2, 401.0)], [(1001, 8)]))
    (j2,) = ejb.slots_available(7, s)
    assert isinstance(j2, SubmitSubjob) and j2.procs == 2 and j2.limit == pytest.approx(170.5)
    ejb.bound(7, j2.key, 1003, 100.0)
    (mig,) = ejb.started(1003, 100.0)
    assert isinstance(mig, Migrate) and (mig.start, mig.end) == (100.0, 120.0)
    assert ejb.jobs[7].estimated_completion == pytest.approx(270.5)
    # the worker reports completion: both subjobs and the queued J0 are cancelled
    done = ejb.completed(7, 270.5)
    assert {a.job_id for a in done if isinstance(a, CancelSubjob)} == {1001, 1002, 1003}
    assert ejb.jobs[7].subjobs[J0_KEY].stop == 270.5


def test_subjob_that_did_not_start_is_withdrawn():
    ejb = EJBScheduler(EJBParams(migration=20.0))
    (sub,) = ejb.arrive(7, Target(8, 100.0), now=1.0)
    ejb.bound(7, sub.key, 1001, 1.0)
    s = slots_from_snapshot(snap(1.0, 8, [(1, 8, 1000.0)], [(1001, 8)]))
    (j1,) = ejb.slots_available(7, s)
    ejb.bound(7, j1.key, 1002, 1.0)
    # on live Slurm another job may have taken the slot first: next round, j1 is still pending
    s = slots_from_snapshot(snap(5.0, 10, [(1, 8, 1000.0), (9, 2, 50.0)], [(1001, 8), (1002, 2)]))
    actions = ejb.slots_available(7, s)
    assert [a.job_id for a in actions if isinstance(a, CancelSubjob)] == [1002]
    assert ejb.jobs[7].state is ElasticState.WAIT


def test_a_live_driver_can_give_the_batch_system_time_to_start_subjobs():
    ejb = EJBScheduler(EJBParams(migration=20.0), stale_after=30.0)
    (sub,) = ejb.arrive(7, Target(8, 100.0), now=1.0)
    ejb.bound(7, sub.key, 1001, 1.0)
    (j1,) = ejb.slots_available(7, slots_from_snapshot(snap(1.0, 8, [(1, 8, 1000.0)], [(1001, 8)])))
    ejb.bound(7, j1.key, 1002, 1.0)
    busy = slots_from_snapshot(snap(5.0, 10, [(1, 8, 1000.0), (9, 2, 50.0)], [(1001, 8), (1002, 2)]))
    assert ejb.slots_available(7, busy) == []  # within the grace period: kept
    free = slots_from_snapshot(snap(6.0, 8, [(1, 8, 1000.0)], [(1001, 8), (1002, 2)]))
    assert ejb.slots_available(7, free) == []  # and no second subjob while it is pending
    later = slots_from_snapshot(snap(40.0, 10, [(1, 8, 1000.0), (9, 2, 50.0)], [(1001, 8), (1002, 2)]))
    assert [a.job_id for a in ejb.slots_available(7, later) if isinstance(a, CancelSubjob)] == [1002]


def test_unknown_jobs_are_ignored():
    ejb = EJBScheduler()
    assert ejb.started(42, 0.0) == [] and ejb.ended(42, 0.0) == []
    with pytest.raises(ValueError):
        ejb.arrive(1, Target(8, 10.0), 0.0)
        ejb.arrive(1, Target(8, 10.0), 0.0)


def test_a_withdrawn_subjob_that_starts_anyway_is_cancelled_again_and_changes_nothing():
    # live Slurm may start a subjob while its cancellation is on its way: not a launch
    ejb = EJBScheduler(EJBParams(migration=20.0))
    (sub,) = ejb.arrive(7, Target(8, 100.0), now=1.0)
    ejb.bound(7, sub.key, 1001, 1.0)
    (j1,) = ejb.slots_available(7, slots_from_snapshot(snap(1.0, 8, [(1, 8, 1000.0)], [(1001, 8)])))
    ejb.bound(7, j1.key, 1002, 1.0)
    later = slots_from_snapshot(snap(5.0, 10, [(1, 8, 1000.0), (9, 2, 50.0)], [(1001, 8), (1002, 2)]))
    assert [a.job_id for a in ejb.slots_available(7, later) if isinstance(a, CancelSubjob)] == [1002]
    (again,) = ejb.started(1002, 6.0)
    assert isinstance(again, CancelSubjob) and again.job_id == 1002
    assert ejb.jobs[7].state is ElasticState.WAIT and ejb.jobs[7].subjobs[j1.key].start is None


@pytest.mark.parametrize(
    ("reported", "choice"),
    [(0.9, "cancel-j0"), (0.5, "migrate-all"), (0.05, "restart")],
)
def test_j0s_choice_weighs_the_progress_the_application_reports(reported, choice):
    # R = 100 s, λ = 20 s, J0 starts at 50; the model says 20 % done and completion at 250.
    # Keeping the subjobs takes the model's 200 s scaled by the work really left; moving to J0
    # takes λ + (1 - f)·R; restarting R.
    from ejb.cases import j0_options

    opt = j0_options(Target(8, 100.0), EJBParams(migration=20.0), 0.0, [], J0_KEY, 50.0, 250.0,
                     progress=reported, modelled=0.2)  # fmt: skip
    assert opt.action == choice
    expected = {"cancel-j0": 50 + 200 * (1 - reported) / 0.8, "migrate-all": 70 + (1 - reported) * 100}
    assert opt.completion == pytest.approx(expected.get(choice, 150.0))


def _running_on_a_subjob() -> EJBScheduler:
    ejb = EJBScheduler(EJBParams(migration=20.0))
    (sub,) = ejb.arrive(7, Target(8, 100.0), now=1.0)
    ejb.bound(7, sub.key, 1001, 1.0)
    (j1,) = ejb.slots_available(7, slots_from_snapshot(snap(1.0, 8, [(1, 8, 1000.0)], [(1001, 8)])))
    ejb.bound(7, j1.key, 1002, 1.0)
    ejb.started(1002, 1.0)
    return ejb


def test_reported_progress_reaches_j0s_choice_and_a_restart_forgets_it():
    ejb = _running_on_a_subjob()  # 2 of 8 nodes: by the model, little is done when J0 starts at 30
    ejb.started(1001, 30.0)
    assert ejb.jobs[7].restarts == 1 and ejb.jobs[7].reported is None
    ejb = _running_on_a_subjob()
    ejb.report_progress(7, 0.97)  # but the application says it is nearly done: J0 goes
    actions = ejb.started(1001, 30.0)
    assert ejb.jobs[7].restarts == 0 and ejb.jobs[7].log[-1][1] == "j0-cancel-j0"
    assert [a.job_id for a in actions if isinstance(a, CancelSubjob)] == [1001]
