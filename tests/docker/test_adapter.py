"""The Slurm adapter against the dockerized cluster of one release (ELASTIC_DOCKER_RELEASE)."""

from __future__ import annotations

import time

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.errors import InvalidRequest, JobNotFound, SlurmError
from slurm_ext.model import NodeState
from slurm_ext.slurm import SlurmCluster

from .conftest import EXPANSION, NODES, RELEASE, SHARED, Jobs, wait

pytestmark = pytest.mark.docker


def test_release_is_the_one_asked_for(slurm: SlurmCluster) -> None:
    assert slurm.release.name == RELEASE


def test_snapshot_of_an_idle_cluster(slurm: SlurmCluster) -> None:
    wait(lambda: slurm.snapshot().free == NODES, 60, "all nodes idle")
    snap = slurm.snapshot()
    assert [n.name for n in snap.nodes] == [f"n{i}" for i in range(1, NODES + 1)]
    assert {n.state for n in snap.nodes} == {NodeState.IDLE} and {n.cpus for n in snap.nodes} == {2}


def test_submit_snapshot_and_cancel(slurm: SlurmCluster, jobs: Jobs) -> None:
    job_id = jobs.submit(2, time_limit=600)
    jobs.wait_running(job_id)
    job = slurm.job(job_id)
    assert job.node_count == 2 and len(job.nodes) == 2 and set(job.nodes) <= {f"n{i}" for i in range(1, 5)}
    assert job.time_limit == 600.0 and job.start_time is not None and job.start_time >= job.submit_time > 0
    assert job.user == "root" and job.partition == "debug"
    unlimited = jobs.submit(1, time_limit=None)
    jobs.wait_running(unlimited)
    assert slurm.job(unlimited).time_limit is None  # the partition's INFINITE: no limit
    slurm.cancel(job_id)
    jobs.wait_gone(job_id, 30)
    with pytest.raises(JobNotFound):
        slurm.cancel(job_id)


def test_would_start_now(slurm: SlurmCluster, jobs: Jobs) -> None:
    assert slurm.would_start_now(NODES)
    jobs.wait_running(jobs.submit(NODES))
    assert not slurm.would_start_now(1, time_limit=60)
    with pytest.raises(InvalidRequest):
        slurm.would_start_now(NODES + 10)


def test_merge_grows_the_job_by_node_count(slurm: SlurmCluster, jobs: Jobs) -> None:
    if not slurm.expansion_permitted():
        pytest.skip("the cluster runs without permit_job_expansion")
    job_id = jobs.submit(1)
    jobs.wait_running(job_id)
    slurm.expand(job_id, 3, timeout=20)  # checks the node count after the merge itself
    assert slurm.job(job_id).node_count == 3
    slurm.shrink(job_id, 2)
    assert slurm.job(job_id).node_count == 2
    slurm.expand(job_id, 4, timeout=20)  # a second resize of the same job
    assert len(slurm.job(job_id).nodes) == 4


def test_expansion_switch(slurm: SlurmCluster, jobs: Jobs) -> None:
    assert slurm.expansion_permitted() is EXPANSION
    if EXPANSION:
        return
    job_id = jobs.submit(1)
    jobs.wait_running(job_id)
    with pytest.raises(SlurmError, match="not supported"):  # as Slurm ships: no in-place growth
        slurm.expand(job_id, 2, timeout=5)
    assert slurm.job(job_id).node_count == 1
    assert not [j for j in slurm.snapshot().jobs if j.name.startswith("resizer-for-")]


def test_mpi_two_containers_two_ranks_each(docker_cluster: DockerCluster, jobs: Jobs) -> None:
    prog = (
        "from mpi4py import MPI; import socket; c = MPI.COMM_WORLD; "
        "s = c.allreduce(c.rank + 1); "
        "print(c.rank, c.size, socket.gethostname(), s, flush=True)"
    )
    out = "/shared/mpi-%j.out"
    job_id = jobs.submit(
        2,
        command=f'srun --mpi=pmi2 -N 2 --ntasks-per-node=2 python3 -c "{prog}"',
        time_limit=120,
        ntasks_per_node="2",
        output=out,
    )
    jobs.wait_gone(job_id, 120)
    res = docker_cluster.run("cat", out.replace("%j", str(job_id)))
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines() if line.strip()]
    assert sorted(int(r[0]) for r in rows) == [0, 1, 2, 3], res.stdout
    assert {r[1] for r in rows} == {"4"} and {r[3] for r in rows} == {"10"}  # 1+2+3+4
    hosts = [r[2] for r in rows]
    assert len(set(hosts)) == 2 and all(hosts.count(h) == 2 for h in hosts), hosts


def test_shrink_by_node_list_time_limit_and_priority(slurm: SlurmCluster, jobs: Jobs) -> None:
    # the updates every resize makes, on this release's scontrol and JSON
    job_id = jobs.submit(3)
    jobs.wait_running(job_id)
    nodes = slurm.job(job_id).nodes
    slurm.shrink(job_id, 2, keep=[nodes[0], nodes[2]])
    assert slurm.job(job_id).nodes == (nodes[0], nodes[2])
    slurm.set_time_limit(job_id, 1250)  # rounded up to whole minutes
    assert slurm.job(job_id).time_limit == 21 * 60
    filler = jobs.submit(slurm.snapshot().free)
    jobs.wait_running(filler)
    first, second = jobs.submit(2), jobs.submit(2)
    wait(lambda: [j.job_id for j in slurm.snapshot().pending] == [first, second], 20, "FIFO queue")
    slurm.raise_priority(second)
    assert [j.job_id for j in slurm.snapshot().pending] == [second, first]


def test_expander_job_shape_and_the_orphan_sweep(slurm: SlurmCluster, jobs: Jobs) -> None:
    live, gone = jobs.submit(1), jobs.submit(1)
    jobs.wait_running(live)
    jobs.wait_running(gone)
    keep = slurm.submit_expander(slurm.job(live), 1, "sleep 600", time_limit=299)
    orphan = slurm.submit_expander(slurm.job(gone), 1, "sleep 600", time_limit=299)
    jobs.ids += [keep, orphan]
    jobs.wait_running(keep)
    job = slurm.job(keep)
    assert job.name == f"expander-for-{live}" and job.partition == "debug" and job.time_limit == 240
    slurm.cancel(gone)
    jobs.wait_gone(gone, 30)
    assert slurm.cancel_orphan_expanders() == [orphan]
    jobs.wait_gone(orphan, 30)
    assert slurm.job(keep).is_running  # its application runs: kept


def test_a_held_job_reshaped_renamed_released_and_held_again(slurm: SlurmCluster, jobs: Jobs) -> None:
    """What an EJB manager that is not root does with a spare: reshape, rename and release it; hold
    it again (renamed back) if it did not start; a job that started cannot be held."""
    blocker = jobs.submit(NODES, time_limit=600)  # every node busy: a released job stays pending
    jobs.wait_running(blocker)
    spare = slurm.submit(JobRequest(nodes=1, name="ejb9.spare0", time_limit=300, command="sleep 600",
                                    extra_args=("--chdir", SHARED, "--hold")))  # fmt: skip
    jobs.ids.append(spare)
    assert slurm.show_job(spare)["Reason"].startswith("JobHeld")
    slurm.release_held(spare, 2, 900, "ejb9.1")
    shown = slurm.show_job(spare)
    assert (shown["JobName"], shown["NumNodes"], shown["TimeLimit"]) == ("ejb9.1", "2-2", "00:15:00"), shown
    assert shown["JobState"] == "PENDING" and not shown["Reason"].startswith("JobHeld"), shown
    slurm.hold_again(spare, "ejb9.spare0")
    shown = slurm.show_job(spare)
    assert shown["JobName"] == "ejb9.spare0" and shown["Reason"].startswith("JobHeld"), shown
    slurm.cancel(blocker)
    jobs.wait_gone(blocker, 30)
    time.sleep(3)  # nodes idle: a held job still does not start
    assert slurm.show_job(spare)["JobState"] == "PENDING"
    slurm.release_held(spare, 1, 60, "ejb9.2")
    jobs.wait_running(spare)
    with pytest.raises(SlurmError):
        slurm.hold_again(spare, "ejb9.spare0")
    assert slurm.show_job(spare)["JobName"] == "ejb9.2"
