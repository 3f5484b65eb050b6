"""What a policy sees: the simulator's Snapshot encoding."""

from __future__ import annotations

from slurm_ext.decisions import RaisePriority
from slurm_ext.model import JobState, MalleableSpec, NodeState
from slurm_ext.sim import SimJob, Simulator, Workload, rigid_job


def test_snapshot_running_pending_nodes_and_queue_order() -> None:
    jobs = [
        SimJob(1, 0, 3, 100, 50, malleable=MalleableSpec(1, 4)),
        rigid_job(2, 1, 4, 200),
        rigid_job(3, 2, 2, 300),
        rigid_job(4, 3, 4, 400),
    ]
    sim = Simulator(Workload(jobs, 4), "fcfs")
    sim.advance(until=5)
    snap = sim.snapshot()
    assert snap.time == 3 and snap.free == 1 and snap.total_nodes == 4
    assert [n.state for n in snap.nodes].count(NodeState.IDLE) == 1
    (run,) = snap.running
    assert (run.job_id, run.state, run.node_count, run.start_time, run.end_time) == (
        1,
        JobState.RUNNING,
        3,
        0,
        100,
    )
    assert run.time_limit == 100 and run.malleable == MalleableSpec(1, 4)
    assert [j.job_id for j in snap.pending] == [2, 3, 4]
    assert snap.job(3).time_limit == 300 and snap.job(3).end_time is None
    # RaisePriority moves a job to the head, in the simulator and in the next snapshot.
    sim.apply([RaisePriority(4)])
    assert [j.job_id for j in sim.snapshot().pending] == [4, 2, 3]
    assert [sim.jid[i] for i in sim.queue] == [4, 2, 3]
    # A snapshot is a value: later changes do not alter an earlier one.
    assert [j.job_id for j in snap.pending] == [2, 3, 4]


def test_snapshot_jobs_equal_those_the_dataclass_builds_and_views_match_a_scan() -> None:
    """The snapshot builds Job objects and its views without the dataclass machinery (speed):
    they must equal what ``Job(...)`` and ``Snapshot(...)`` derive themselves."""
    from slurm_ext.model import Job, Snapshot

    jobs = [SimJob(1, 0, 3, 100, 50, malleable=MalleableSpec(1, 4)), rigid_job(2, 1, 4, 200)]
    sim = Simulator(Workload(jobs, 4), "fcfs")
    sim.advance(until=5)
    snap = sim.snapshot()
    run, pend = snap.running[0], snap.pending[0]
    assert run == Job(1, JobState.RUNNING, 3, submit_time=0.0, start_time=0.0, end_time=100.0,
                      time_limit=100.0, malleable=MalleableSpec(1, 4))  # fmt: skip
    assert pend == Job(2, JobState.PENDING, 4, submit_time=1.0, time_limit=200.0, priority=pend.priority)
    plain = Snapshot(snap.time, snap.nodes, snap.jobs)
    assert (plain.running, plain.pending, plain.free, plain.total_nodes) == (
        snap.running,
        snap.pending,
        snap.free,
        snap.total_nodes,
    )
    # unchanged state: the same tuples again
    again = sim.snapshot()
    assert again.running is snap.running and again.pending is snap.pending
