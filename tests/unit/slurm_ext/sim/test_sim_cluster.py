"""SimCluster is a ClusterBackend and answers as the live adapter does (tests/slurm/test_adapter.py):
sizes, node sets, and the same errors for impossible requests."""

from __future__ import annotations

import pytest

from slurm_ext.backend import ClusterBackend, JobRequest
from slurm_ext.errors import InvalidRequest, JobNotFound, ResizeTimeout
from slurm_ext.model import JobState, MalleableSpec, NodeState
from slurm_ext.sim import SimCluster, Simulator, Workload, rigid_job


def busy(cluster: SimCluster) -> set[str]:
    return {n.name for n in cluster.snapshot().nodes if n.state is not NodeState.IDLE}


def test_it_is_a_cluster_backend() -> None:
    assert isinstance(SimCluster.empty(4), ClusterBackend)


def test_submit_starts_what_fits_and_cancel_frees_the_nodes() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(1, time_limit=600, name="hello"))
    job = cluster.job(job_id)
    assert job.name == "hello" and job.node_count == 1 and job.nodes == ("n1",) and job.is_running
    assert job.time_limit == 600
    waiting = cluster.submit(JobRequest(4))
    assert cluster.job(waiting).state is JobState.PENDING and cluster.job(waiting).nodes == ()
    cluster.cancel(job_id)
    assert cluster.snapshot().job(job_id) is None
    assert cluster.job(waiting).is_running and busy(cluster) == {"n1", "n2", "n3", "n4"}


def test_shrink_frees_nodes_at_once_and_keeps_the_named_ones() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(3))
    nodes = cluster.job(job_id).nodes
    cluster.shrink(job_id, 2, keep=[nodes[0], nodes[2]])
    assert cluster.job(job_id).nodes == (nodes[0], nodes[2])
    cluster.shrink(job_id, 1)
    assert cluster.job(job_id).nodes == (nodes[0],) and busy(cluster) == {nodes[0]}


def test_repeated_expand_and_shrink_lose_no_node() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(1))
    for size in (2, 4, 2, 1, 3):
        if size > cluster.job(job_id).node_count:
            cluster.expand(job_id, size, timeout=10)
        else:
            cluster.shrink(job_id, size)
        job = cluster.job(job_id)
        assert job.node_count == size and len(set(job.nodes)) == size and job.is_running
        assert busy(cluster) == set(job.nodes)


def test_an_expansion_without_free_nodes_times_out_and_leaves_the_job_as_it_was() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(1))
    cluster.submit(JobRequest(cluster.snapshot().free))
    with pytest.raises(ResizeTimeout, match="resizer cancelled"):
        cluster.expand(job_id, 2, timeout=2)
    assert cluster.job(job_id).node_count == 1


def test_raise_priority_reorders_the_queue_and_a_shrink_lets_the_raised_job_start() -> None:
    cluster = SimCluster.empty(4)
    blocker = cluster.submit(JobRequest(4))
    first, second = cluster.submit(JobRequest(2)), cluster.submit(JobRequest(2))
    assert [j.job_id for j in cluster.snapshot().pending] == [first, second]
    cluster.raise_priority(second)
    assert [j.job_id for j in cluster.snapshot().pending] == [second, first]
    with pytest.raises(InvalidRequest, match="only a pending job"):
        cluster.raise_priority(blocker)
    cluster.shrink(blocker, 2)
    assert cluster.job(second).nodes == ("n3", "n4") and cluster.job(first).state is JobState.PENDING


def test_clear_errors() -> None:
    cluster = SimCluster.empty(4)
    for call in (
        lambda: cluster.cancel(999999),
        lambda: cluster.shrink(999999, 1),
        lambda: cluster.expand(999999, 2),
        lambda: cluster.raise_priority(999999),
        lambda: cluster.job(-3),
    ):
        with pytest.raises(JobNotFound):
            call()
    running = cluster.submit(JobRequest(2))
    with pytest.raises(InvalidRequest, match="must be 1..1"):
        cluster.shrink(running, 0)
    with pytest.raises(InvalidRequest, match="cannot expand"):
        cluster.expand(running, 2)
    with pytest.raises(InvalidRequest, match="must be 1 of the job's nodes"):
        cluster.shrink(running, 1, keep=["n4"])
    cluster.submit(JobRequest(cluster.snapshot().free))
    pending = cluster.submit(JobRequest(1))
    with pytest.raises(InvalidRequest, match="PENDING, not RUNNING"):
        cluster.expand(pending, 2)
    for nodes in (0, 5):
        with pytest.raises(InvalidRequest):
            cluster.submit(JobRequest(nodes))
    cluster.cancel(running)
    with pytest.raises(JobNotFound):
        cluster.cancel(running)  # gone: as scancel through the adapter


def test_time_runs_only_when_asked_and_jobs_end_at_their_limit() -> None:
    cluster = SimCluster.empty(2)
    job_id = cluster.submit(JobRequest(2, time_limit=100))
    queued = cluster.submit(JobRequest(1))
    cluster.advance(until=99)
    assert cluster.job(job_id).is_running and cluster.snapshot().time == 0.0
    cluster.advance(until=101)
    assert cluster.snapshot().job(job_id) is None and cluster.job(queued).nodes == ("n1",)


def test_over_a_workload_the_simulators_own_jobs_hold_nodes_too() -> None:
    sim = Simulator(Workload([rigid_job(1, 0.0, 2, 100.0), rigid_job(2, 0.0, 1, 50.0)], 4), "easy")
    cluster = SimCluster(sim, node_names=["a", "b", "c", "d"])
    cluster.advance(until=1)
    assert {j.job_id: j.nodes for j in cluster.snapshot().running} == {1: ("a", "b"), 2: ("c",)}
    cluster.expand(1, 3)
    assert cluster.job(1).nodes == ("a", "b", "d")
    cluster.advance(until=60)  # job 2 ended; job 1, on 3 nodes, ends sooner than its limit
    assert busy(cluster) == {"a", "b", "d"}


def test_a_range_declared_in_the_comment_makes_the_job_malleable() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(2, extra_args=("--comment", "dmr:min=1,max=4")))
    other = cluster.submit(JobRequest(1, extra_args=("--comment=project x dmr:min=1,max=2,factor=2",)))
    assert cluster.job(job_id).malleable == MalleableSpec(1, 4)
    assert cluster.job(other).malleable == MalleableSpec(1, 2)
    assert cluster.job(cluster.submit(JobRequest(1))).malleable is None


def test_a_named_cancel_spares_a_job_of_another_name() -> None:
    cluster = SimCluster.empty(4)
    job_id = cluster.submit(JobRequest(1, time_limit=600, name="someone-elses"))
    cluster.cancel_quietly(job_id, "expander-for-1")
    assert cluster.job(job_id).is_running
    cluster.cancel_quietly(job_id, "someone-elses")
    assert cluster.snapshot().job(job_id) is None
