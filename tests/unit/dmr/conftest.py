"""Hand-built snapshots for the DMR policy and service tests."""

from __future__ import annotations

from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot


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
