"""Resizing conserves work; the time limit follows a resize; evolving asks; decisions checked."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slurm_ext.decisions import Decision, Expand, RaisePriority, Shrink, StartJob
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.policies.base import Policy
from slurm_ext.sim import DecisionError, EvolvingSpec, SimJob, Simulator, Workload, rigid_job
from slurm_ext.sim.registry import policy_names, resolve
from slurm_ext.workloads.model import MalleableRule
from tests.unit.slurm_ext.sim.simworkloads import random_workload


class Scripted(Policy):
    """Returns the decisions scripted for a snapshot time, once."""

    name = "scripted"

    def __init__(self, script: dict[float, list[Decision]]) -> None:
        self.script = dict(script)
        self.seen: list[tuple[float, Sequence[int] | None]] = []

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        self.seen.append((snap.time, asking))
        return self.script.pop(snap.time, [])


def mjob(jid: int, submit: float, nodes: int, limit: float, run: float, lo: int, hi: int, sf: float = 0.0):
    return SimJob(jid, submit, nodes, limit, run, malleable=MalleableSpec(lo, hi), serial_fraction=sf)


def run(jobs, nodes, script, **kw):
    sim = Simulator(Workload(jobs, nodes), "easy", Scripted(script), strict=True, **kw)
    return sim, sim.run()


def end_of(result, jid: int) -> float:
    return float(result.end[list(result.job_id).index(jid)])


def test_expand_conserves_work_linear() -> None:
    # 50 s of work left at t=50 on 4 nodes; on 6 nodes it takes 50 * 4/6 s.
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8), rigid_job(2, 50, 2, 10)]
    _, r = run(jobs, 8, {50.0: [Expand(1, 6)]})
    assert end_of(r, 1) == pytest.approx(50 + 50 * 4 / 6)
    assert int(r.resizes[0]) == 1 and int(r.final_size[0]) == 6


def test_resize_overhead_delays_the_end() -> None:
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8), rigid_job(2, 50, 2, 10)]
    _, r = run(jobs, 8, {50.0: [Expand(1, 6)]}, resize_overhead=5.0)
    assert end_of(r, 1) == pytest.approx(55 + 50 * 4 / 6)


def test_amdahl_serial_fraction() -> None:
    sf = 0.2
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8, sf), rigid_job(2, 50, 2, 10)]
    _, r = run(jobs, 8, {50.0: [Expand(1, 6)]})
    speed = (1 / (sf + (1 - sf) / 6)) / (1 / (sf + (1 - sf) / 4))
    assert end_of(r, 1) == pytest.approx(50 + 50 / speed)


def test_shrink_stretches_run_and_limit_and_kills_at_the_adjusted_limit() -> None:
    # Limit 80 s at 8 nodes, actual work 100 s: after shrinking to 4 at t=50 the 30 s of
    # limit left become 60 s, so the job is killed at 110, not at 80.
    jobs = [mjob(1, 0, 8, 80, 100, 2, 8), rigid_job(2, 50, 1, 10)]
    sim = Simulator(Workload(jobs, 8), "easy", Scripted({50.0: [Shrink(1, 4)]}), strict=True)
    sim.advance(until=51)
    assert sim.expected_end(1) == pytest.approx(110)
    snap = sim.snapshot()
    assert snap.job(1).time_limit == pytest.approx(110)
    r = sim.run()
    assert end_of(r, 1) == pytest.approx(110)
    assert r.state[0] == "TIMEOUT"


def test_shrink_frees_nodes_that_the_next_job_gets_at_once() -> None:
    jobs = [mjob(1, 0, 8, 1000, 1000, 2, 8), rigid_job(2, 10, 4, 10)]
    _, r = run(jobs, 8, {10.0: [Shrink(1, 4, for_job=2), RaisePriority(2)]})
    assert float(r.start[1]) == 10


def test_policy_start_job_at_a_malleable_size() -> None:
    jobs = [mjob(1, 0, 8, 100, 100, 2, 8), rigid_job(2, 0, 4, 100)]
    sim = Simulator(Workload(jobs, 8), "none", Scripted({0.0: [StartJob(1, 4), StartJob(2, 4)]}), strict=True)
    r = sim.run()
    assert list(r.start) == [0, 0]
    assert end_of(r, 1) == pytest.approx(200)


def test_bad_decisions_are_rejected_with_reasons() -> None:
    jobs = [rigid_job(1, 0, 4, 100), rigid_job(2, 0, 8, 100)]
    sim = Simulator(Workload(jobs, 8), "easy", Scripted({0.0: [Expand(1, 8), StartJob(2, 8)]}))
    r = sim.run()
    reasons = [x.reason for x in r.rejected]
    assert reasons == ["job is not malleable", "needs 8 nodes, 4 free"]
    with pytest.raises(DecisionError):
        Simulator(Workload(jobs, 8), "easy", Scripted({0.0: [Expand(1, 8)]}), strict=True).run()


def test_evolving_job_granted_without_policy_when_nodes_are_idle() -> None:
    job = SimJob(1, 0, 4, 200, 100, evolving=EvolvingSpec((0.16, 0.25), 4))
    r = Simulator(Workload([job], 8), "easy").run()
    # 16 s on 4 nodes, then 84 s of work on 8 nodes.
    assert float(r.end[0]) == pytest.approx(16 + 84 / 2)


def test_evolving_ask_goes_to_the_policy_and_a_refusal_is_retried_once() -> None:
    job = SimJob(1, 0, 4, 200, 100, evolving=EvolvingSpec((0.16, 0.25), 4))

    class Refuse(Policy):
        name = "refuse"
        asks: list[int | None] = []

        def decide(self, snap, asking=None):
            if asking:
                self.asks.append(snap.job(asking[0]).evolving)
            return []

    pol = Refuse()
    r = Simulator(Workload([job], 8), "easy", pol).run()
    assert pol.asks == [8, 8]
    assert float(r.end[0]) == pytest.approx(100)


def test_check_period_calls_the_policy_with_asking() -> None:
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8)]
    pol = Scripted({})
    Simulator(Workload(jobs, 8), "easy", pol, check_period=30).run()
    assert [(t, a) for t, a in pol.seen if a] == [(30.0, [1]), (60.0, [1]), (90.0, [1])]


def test_stale_events_leave_no_instant_behind_and_resizes_are_logged() -> None:
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8), rigid_job(2, 50, 2, 10)]
    sim, r = run(jobs, 8, {50.0: [Expand(1, 6)]})
    assert r.t_last == pytest.approx(50 + 50 * 4 / 6)  # the old end at t=100 was dropped
    assert r.timeline["time"].max() == pytest.approx(r.t_last)
    assert r.resize_log == [(50.0, 1, 4, 6)]


@pytest.mark.parametrize("name", policy_names())
def test_a_copy_in_the_middle_of_a_run_ends_it_as_the_run_does(name: str) -> None:
    # DMR's deep-copied queue cache once mixed copied and shared Job objects and lost jobs.
    wl = MalleableRule(fraction=0.5, seed=6).apply(random_workload(6, n=400, nodes=32))
    whole = Simulator(wl, resolve(name).scheduler, resolve(name).policy).run()
    r = resolve(name)
    sim = Simulator(wl, r.scheduler, r.policy)
    sim.run(until=wl.jobs[200].submit)
    assert sim.queue and sim.ends  # mid-run: jobs queued and running
    copy = sim.copy()
    for result in (copy.run(), sim.run()):
        assert result.start.tolist() == whole.start.tolist()
        assert result.end.tolist() == whole.end.tolist()
        assert result.resize_log == whole.resize_log


def test_copy_with_a_stateful_policy_replays_identically() -> None:
    jobs = [mjob(1, 0, 4, 100, 100, 2, 8), rigid_job(2, 50, 2, 10), mjob(3, 60, 2, 100, 80, 1, 4)]
    script = {50.0: [Expand(1, 6)], 60.0: [Shrink(1, 4)]}
    base = Simulator(Workload(jobs, 8), "easy", Scripted(script), strict=True)
    base.advance(until=55)
    assert (base.arrived, base.trace_jobs) == (2, 3)
    clone = base.copy()
    assert clone.snapshot_cache == base.snapshot_cache  # the Job objects built so far, ...
    assert clone.snapshot_cache.running_jobs is not base.snapshot_cache.running_jobs  # ... not shared
    a, b = clone.run(), base.run()
    assert a.end.tolist() == b.end.tolist()
    assert a.resize_log == b.resize_log == [(50.0, 1, 4, 6), (60.0, 1, 6, 4)]
    assert base.arrived == base.trace_jobs == 3
