"""The external-controller (EJB) extension point: callbacks, submit/cancel, timers, copy."""

from __future__ import annotations

import math

import numpy as np

from slurm_ext.model import Job, JobState, Node, NodeState, Snapshot
from slurm_ext.sim import SimController, Simulator, Workload, baseline_at, easy_view, rigid_job
from slurm_ext.sim.schedulers import EasyView
from tests.unit.slurm_ext.sim.simworkloads import random_workload


def small() -> Workload:
    return Workload(
        [
            rigid_job(1, 0, 3, 100),
            rigid_job(2, 1, 2, 100),  # head at t=1: shadow 100, extra 2
            rigid_job(3, 5, 4, 300),  # the target
            rigid_job(4, 6, 1, 50),
        ],
        nodes=4,
    )


class Bundler(SimController):
    """Claims job 3 and runs it as a 1-node subjob in the type-I slot, cancelled by a timer."""

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self.views: list[EasyView] = []

    def on_submit(self, sim, job_id):
        self.log.append(("submit", sim.now, job_id))
        if job_id != 3:
            return False
        view = sim.easy_view()
        self.views.append(view)
        self.sub = sim.submit(min(view.free, view.extra), time_limit=10_000, name="sub")
        sim.set_timer(sim.now + 20, "stop-sub")
        return True

    def on_start(self, sim, job_id):
        self.log.append(("start", sim.now, job_id))

    def on_end(self, sim, job_id):
        self.log.append(("end", sim.now, job_id))

    def on_timer(self, sim, key):
        self.log.append(("timer", sim.now, key))
        sim.cancel(self.sub)


def test_controller_callbacks_submit_cancel_and_timer() -> None:
    ctrl = Bundler()
    sim = Simulator(small(), "easy", controller=ctrl)
    r = sim.run()
    # At t=5 (job 3 arrives): job 1 holds 3 nodes, job 2 waits for 2 -> shadow 100, extra 2.
    assert ctrl.views == [EasyView(5.0, 1, 100.0, 2, 2, 2)]
    assert ("start", 5.0, ctrl.sub) in ctrl.log  # the subjob started at the same instant
    assert ("timer", 25.0, "stop-sub") in ctrl.log
    assert ("end", 25.0, ctrl.sub) in ctrl.log
    assert sim.job_state(3) == "CLAIMED"
    assert sim.job_state(ctrl.sub) == "CANCELLED"
    assert sim.job_times(ctrl.sub) == (5.0, 5.0, 25.0)
    assert len(r) == 5


def test_cancelled_timer_does_not_fire() -> None:
    fired = []

    class T(SimController):
        def on_timer(self, sim, key):
            fired.append(key)

    sim = Simulator(small(), "easy", controller=T())
    h = sim.set_timer(10, "a")
    sim.set_timer(11, "b")
    sim.cancel_timer(h)
    sim.run()
    assert fired == ["b"]


def test_copy_at_time_t_continues_exactly_like_the_baseline() -> None:
    wl = random_workload(5, n=300)
    full = Simulator(wl, "easy").run()
    base = Simulator(wl, "easy")
    t = float(wl.jobs[150].submit)
    clone = baseline_at(base, t)
    assert clone.now < t
    a = clone.run()
    b = base.run()  # the baseline itself is unaffected by the clone
    for res in (a, b):
        np.testing.assert_array_equal(res.start, full.start)
        np.testing.assert_array_equal(res.end, full.end)


def test_easy_view_from_a_snapshot_matches_the_simulator() -> None:
    sim = Simulator(small(), "easy")
    sim.advance(until=5.5)
    assert easy_view(sim.snapshot()) == sim.easy_view()


def test_easy_view_of_a_live_like_snapshot() -> None:
    nodes = tuple(Node(f"n{k}", NodeState.IDLE if k < 2 else NodeState.ALLOCATED) for k in range(8))
    jobs = (
        Job(10, JobState.RUNNING, 4, end_time=500.0),
        Job(11, JobState.RUNNING, 2, end_time=None),  # unlimited: never frees its nodes
        Job(12, JobState.PENDING, 5, submit_time=1.0),
    )
    v = easy_view(Snapshot(100.0, nodes, jobs))
    assert (v.shadow, v.extra, v.free, v.head) == (500.0, 1, 2, 12)
    v2 = easy_view(Snapshot(100.0, nodes, jobs[:2]))
    assert v2.head is None and math.isinf(v2.shadow)
