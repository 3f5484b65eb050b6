"""Faults on every release: a rank killed in one container (out of memory, a node failing) ends its
job within seconds (srun's --kill-on-bad-exit takes its group down, dmr-run's agent stops the rest);
slurmctld stopped, or killed inside a merge, under a service that is growing a job."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from slurm_ext import protocol as p
from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX
from slurm_ext.bench.faults import RUN_BEFORE_KILL
from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.errors import SlurmError
from slurm_ext.faults import at_step
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, ServiceOptions
from slurm_ext.slurm import SlurmCluster
from slurm_ext.slurm.adapter import MERGE_HANDED_OVER

from .conftest import NODES, SHARED, Jobs, wait

pytestmark = pytest.mark.docker

FS = "dmr-run --ppn 1 -- python -m dmr_apps.fs --steps 300 --step-seconds 1"


def test_a_rank_killed_in_another_container_ends_the_job_within_seconds(
    docker_cluster: DockerCluster, jobs: Jobs
) -> None:
    out = f"{SHARED}/killed-%j.out"
    job = jobs.submit(2, command=f"DMR_DISABLE=1 {FS}; echo dmr-run-exit $?", output=out)
    jobs.wait_running(job)
    second = jobs.slurm.job(job).nodes[1]

    def ranks_on_second() -> bool:
        return docker_cluster.run("pgrep", "-f", "dmr_apps.fs", service=second).returncode == 0

    wait(ranks_on_second, 60, f"a rank on {second}")
    time.sleep(3)  # computing, past MPI_Init
    assert docker_cluster.run("pkill", "-9", "-f", "python -m dmr_apps.fs", service=second).returncode == 0
    t0 = time.monotonic()
    jobs.wait_gone(job, timeout=60)
    assert time.monotonic() - t0 < 20
    text = docker_cluster.run("cat", out.replace("%j", str(job))).stdout
    # the dead rank's group, or its peer's if MPICH crashed it within the same tenth of a second
    assert re.search(rf"dmr: the group on n\d+ of job {job} .*: its peers cannot go on", text), text
    assert "dmr-run-exit" in text and "dmr-run-exit 0" not in text, text


def _slurmctld(docker_cluster: DockerCluster, *verb: str) -> None:
    res = subprocess.run(["docker", *verb, docker_cluster.container("slurmctld")], capture_output=True,
                         text=True, timeout=60, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr


def _answers(slurm: SlurmCluster) -> bool:
    try:
        slurm.snapshot()
    except SlurmError:
        return False
    return True


def test_slurmctld_stopped_under_the_service_answers_at_once_and_loses_nothing(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs
) -> None:
    """slurmctld away (its container stopped: SIGTERM, state saved) while a growth waits for its
    commit: checks are answered 'Slurm unavailable' without waiting on Slurm, the resize is kept,
    and once slurmctld is back the job holds its nodes and the commit goes through."""
    job, other = jobs.submit(1), jobs.submit(1)
    jobs.wait_running(job)
    jobs.wait_running(other)
    node, other_node = slurm.job(job).nodes[0], slurm.job(other).nodes[0]
    ctl = Controller(slurm, DMRPolicy(), ServiceOptions(snapshot_interval=0.2, expand_strategy="merge"))
    ctl.cache.start()  # the watcher, as the service runs it: it opens the circuit
    grown = ctl.check(p.Check(job_id=job, current=1, min=1, max=2, nodes=[node], agent="127.0.0.1:1:k",
                              python="python3"))  # fmt: skip
    assert grown.action == "expand", grown
    _slurmctld(docker_cluster, "stop", "-t", "20")
    try:
        time.sleep(0.5)  # older than the cache: the next read goes to Slurm and fails
        ctl.check(p.Check(job_id=other, current=1, min=1, max=1, nodes=[other_node]))
        wait(lambda: ctl.cache.outage is not None, 60, "the circuit to open")
        t0 = time.monotonic()
        answer = ctl.check(p.Check(job_id=other, current=1, min=1, max=1, nodes=[other_node]))
        assert time.monotonic() - t0 < 0.5, "an outage's answer waited on Slurm"
        assert answer.action == "none" and "Slurm unavailable" in answer.reason, answer
        ctl.housekeeping()
        assert ctl.inflight.get(job) is not None  # not dropped as "job gone"
    finally:
        _slurmctld(docker_cluster, "start")
    wait(lambda: _answers(slurm), 60, "slurmctld to answer again")
    assert slurm.job(job).is_running and slurm.job(job).node_count == 2
    assert ctl.commit(p.Commit(job_id=job, token=grown.token, ok=True)).ok
    ctl.cache.stop()
    ctl.background.shutdown(wait=True)


def test_slurmctld_killed_inside_a_merge_leaves_no_helper_and_no_lost_node(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs
) -> None:
    """SIGKILL (no state saved) when the resizer has handed its nodes over; the container started
    again. The service settles the resize (the application never heard of it: its commit says the
    new ranks did not start), no resizer is left, the job holds one node and the others are idle."""
    job = jobs.submit(1)
    jobs.wait_running(job)
    node = slurm.job(job).nodes[0]
    # slurmctld saves its state a moment after each change: a kill loses the last seconds (an
    # earlier test's cancels with them, and those jobs come back). What came before is saved by now.
    time.sleep(RUN_BEFORE_KILL)
    ctl = Controller(slurm, DMRPolicy(), ServiceOptions(snapshot_interval=0.2, expand_strategy="merge"))

    def kill_and_start() -> None:
        _slurmctld(docker_cluster, "kill", "-s", "KILL")
        _slurmctld(docker_cluster, "start")
        wait(lambda: _answers(slurm), 60, "slurmctld to answer again")

    with at_step(MERGE_HANDED_OVER, kill_and_start):
        grown = ctl.check(p.Check(job_id=job, current=1, min=1, max=3, nodes=[node],
                                  agent="127.0.0.1:1:k", python="python3"))  # fmt: skip
    if grown.action == "expand":  # the merge went through: the application says its ranks failed
        assert ctl.commit(p.Commit(job_id=job, token=grown.token, ok=False)).ok is False
    wait(lambda: ctl.inflight.get(job) is None, 60, "the resize to settle")

    def whole() -> bool:
        snap = slurm.snapshot()
        helpers = [j for j in snap.jobs if j.name.startswith((RESIZER_PREFIX, EXPANDER_PREFIX))]
        held = snap.job(job)
        on = list(held.nodes) if held is not None and held.is_running else []
        return not helpers and len(on) <= 1 and snap.free == NODES - len(on)

    try:  # the job on one node (Slurm may have lost its start and run it again elsewhere), others idle
        wait(whole, 90, "no helper, the job on one node, every other node idle")
    except AssertionError:
        snap = slurm.snapshot()
        raise AssertionError(
            f"{grown}; jobs {[(j.job_id, j.name, j.state, j.nodes) for j in snap.jobs]}; "
            f"nodes {[(n.name, n.state) for n in snap.nodes]}"
        ) from None
    ctl.background.shutdown(wait=True)
