"""Hand-built snapshots for the policy tests (make_snapshot: the DMR policy tests)."""

from __future__ import annotations

from slurm_ext.decisions import Decision
from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot


def pending(
    jid: int,
    nodes: int,
    limit: float,
    *,
    submit: float = 0.0,
    mall: tuple[int, int] | None = None,
    priority: int = 0,
) -> Job:
    spec = MalleableSpec(mall[0], mall[1]) if mall else None
    return Job(
        jid, JobState.PENDING, nodes, submit_time=submit, time_limit=limit, malleable=spec, priority=priority
    )


def running(
    jid: int,
    nodes: int,
    end: float,
    *,
    start: float = 0.0,
    submit: float | None = None,
    mall: tuple[int, int] | None = None,
    limit: float | None = None,
) -> Job:
    spec = MalleableSpec(mall[0], mall[1]) if mall else None
    return Job(
        jid,
        JobState.RUNNING,
        nodes,
        submit_time=start if submit is None else submit,
        start_time=start,
        end_time=end,
        time_limit=end - start if limit is None else limit,
        malleable=spec,
    )


def snapshot(total: int, jobs: list[Job], now: float = 0.0) -> Snapshot:
    busy = sum(j.node_count for j in jobs if j.is_running)
    assert busy <= total, "test snapshot over-allocated"
    nodes = tuple(Node(f"n{i}", NodeState.ALLOCATED if i < busy else NodeState.IDLE) for i in range(total))
    return Snapshot(now, nodes, tuple(jobs))


def by_type(decisions: list[Decision], cls: type) -> list:
    return [d for d in decisions if isinstance(d, cls)]


def make_snapshot(
    total: int,
    running: list[tuple[int, int, MalleableSpec | None]],
    pending: list[tuple[int, int]] = (),  # type: ignore[assignment]
) -> Snapshot:
    """``total`` nodes n1..nN; running jobs (id, nodes, spec) take nodes in order; pending (id, nodes)."""
    names = [f"n{i + 1}" for i in range(total)]
    jobs: list[Job] = []
    used = 0
    for job_id, count, spec in running:
        jobs.append(
            Job(
                job_id,
                JobState.RUNNING,
                count,
                nodes=tuple(names[used : used + count]),
                malleable=spec,
                start_time=0.0,
                time_limit=3600.0,
            )
        )
        used += count
    for i, (job_id, count) in enumerate(pending):
        jobs.append(Job(job_id, JobState.PENDING, count, submit_time=float(i), reason="Resources"))
    nodes = tuple(Node(n, NodeState.ALLOCATED if i < used else NodeState.IDLE) for i, n in enumerate(names))
    return Snapshot(time=100.0, nodes=nodes, jobs=tuple(jobs))
