"""Nodes freed or queue entries removed by a controller during a scheduling step are used at once."""

from __future__ import annotations

from slurm_ext.sim import SimController, Simulator, Workload, rigid_job


def three_jobs() -> Workload:
    """Under EASY jobs 1 and 2 start at 0 and job 3 waits for one of them (until t=1000)."""
    return Workload(
        [rigid_job(1, 0, 2, 1000), rigid_job(2, 0, 2, 1000), rigid_job(3, 0, 2, 100)],
        nodes=4,
    )


class CancelOnStart(SimController):
    """When ``trigger`` starts, cancels ``victim``; logs every callback."""

    def __init__(self, trigger: int, victim: int) -> None:
        self.trigger, self.victim = trigger, victim
        self.log: list[tuple[str, float, int]] = []

    def on_start(self, sim, job_id):
        self.log.append(("start", sim.now, job_id))
        if job_id == self.trigger:
            sim.cancel(self.victim)

    def on_end(self, sim, job_id):
        self.log.append(("end", sim.now, job_id))


def test_cancel_of_a_running_job_in_on_start_starts_the_waiting_job_at_once() -> None:
    ctrl = CancelOnStart(trigger=2, victim=1)
    sim = Simulator(three_jobs(), "easy", controller=ctrl)
    sim.run()
    assert sim.job_state(1) == "CANCELLED"
    assert sim.job_times(3) == (0.0, 0.0, 100.0)
    assert ("start", 0.0, 3) in ctrl.log


def test_no_on_start_for_a_job_an_earlier_on_start_cancelled() -> None:
    ctrl = CancelOnStart(trigger=1, victim=2)
    sim = Simulator(three_jobs(), "easy", controller=ctrl)
    sim.run()
    assert ("end", 0.0, 2) in ctrl.log
    assert ("start", 0.0, 2) not in ctrl.log
    assert sim.job_times(3)[1] == 0.0


def test_cancel_of_the_queue_head_in_on_start_lets_the_next_job_start() -> None:
    # Job 2 (4 nodes) heads the queue with its reservation at 100; job 3 cannot backfill.
    wl = Workload([rigid_job(1, 0, 3, 100), rigid_job(2, 0, 4, 100), rigid_job(3, 0, 1, 200)], nodes=4)
    sim = Simulator(wl, "easy", controller=CancelOnStart(trigger=1, victim=2))
    sim.run()
    assert sim.job_times(3)[1] == 0.0


class CancelAfterPass(SimController):
    """Cancels ``victim`` in the first ``after_pass``; records what every call saw."""

    def __init__(self, victim: int) -> None:
        self.victim = victim
        self.seen: list[tuple[float, int, int]] = []  # (now, free, queued)

    def after_pass(self, sim):
        self.seen.append((sim.now, sim.free, len(sim.queue)))
        if len(self.seen) == 1:
            sim.cancel(self.victim)


def test_cancel_in_after_pass_leads_to_another_pass_and_after_pass() -> None:
    ctrl = CancelAfterPass(victim=1)
    sim = Simulator(three_jobs(), "easy", controller=ctrl)
    sim.run()
    assert sim.job_times(3)[1] == 0.0
    assert ctrl.seen[:2] == [(0.0, 0, 1), (0.0, 0, 0)]


def test_cancel_of_the_queue_head_in_after_pass_is_not_cached_as_refused() -> None:
    # Without another pass, EASY's "already refused" cache would skip job 3 at t=50 too.
    wl = Workload(
        [rigid_job(1, 0, 3, 100), rigid_job(2, 0, 4, 100), rigid_job(3, 0, 1, 200), rigid_job(4, 50, 4, 10)],
        nodes=4,
    )
    sim = Simulator(wl, "easy", controller=CancelAfterPass(victim=2))
    sim.run()
    assert sim.job_times(3)[1] == 0.0
