"""Tests against the dockerized cluster (marker ``docker``): skipped unless ``ELASTIC_DOCKER=1``.

``ELASTIC_DOCKER_RELEASE`` (default 22.05) picks the release, ``ELASTIC_DOCKER_EXPANSION=0`` a cluster
without permit_job_expansion, ``ELASTIC_DOCKER_SELECT=cons_tres`` a site's (4-CPU nodes, cons_tres),
``ELASTIC_DOCKER_NODES`` its node count (default 4).
A cluster already up with that release is used as it is
(``scripts/docker-ci.sh`` starts it, to time the start separately); otherwise the session brings one
up and takes it down at the end. The adapter runs here on the host and reaches the Slurm commands
through ``docker exec`` into the login container.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.slurm import SlurmCluster

ENABLED = os.environ.get("ELASTIC_DOCKER") == "1"
RELEASE = os.environ.get("ELASTIC_DOCKER_RELEASE", "22.05")
# ELASTIC_DOCKER_EXPANSION=0: the cluster runs as Slurm ships it, without permit_job_expansion
EXPANSION = os.environ.get("ELASTIC_DOCKER_EXPANSION", "1") != "0"
# ELASTIC_DOCKER_SELECT=cons_tres: a site's cluster, 4-CPU nodes shared by small jobs (test_site.py)
SELECT = os.environ.get("ELASTIC_DOCKER_SELECT", "linear")
CPUS = 4 if SELECT == "cons_tres" else 2
NODES = int(os.environ.get("ELASTIC_DOCKER_NODES", "4"))  # 7 for the site's demos at the same time
SHARED = "/shared"
# the 7-node site cluster is the site at work: its service and EJB manager run as elastic (--start-units)
UNITS = SELECT == "cons_tres" and NODES == 7


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="dockerized cluster tests: set ELASTIC_DOCKER=1")
    for item in items:
        if item.get_closest_marker("docker") is not None and not ENABLED:
            item.add_marker(skip)


def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


@pytest.fixture(scope="session")
def docker_cluster() -> Iterator[DockerCluster]:
    cluster = DockerCluster()
    started = cluster.running_release() != RELEASE
    if started:
        if cluster.running_release() is not None:
            cluster.down()
        cluster.up(RELEASE, NODES, expansion=EXPANSION, select=SELECT, cpus_per_node=CPUS, start_units=UNITS)
    yield cluster
    if started:
        cluster.down()


@pytest.fixture(scope="session")
def slurm(docker_cluster: DockerCluster) -> SlurmCluster:
    return SlurmCluster(command_prefix=docker_cluster.exec_prefix())


class Jobs:
    """Submits jobs for one test (working directory: the shared volume) and cancels them afterwards."""

    def __init__(self, slurm: SlurmCluster) -> None:
        self.slurm = slurm
        self.ids: list[int] = []

    def submit(
        self, nodes: int, command: str = "sleep 600", time_limit: float | None = 600, **kw: str
    ) -> int:
        extra = ("--chdir", SHARED, *(f"--{k.replace('_', '-')}={v}" for k, v in kw.items()))
        job_id = self.slurm.submit(
            JobRequest(nodes=nodes, name="test", time_limit=time_limit, command=command, extra_args=extra)
        )
        self.ids.append(job_id)
        return job_id

    def wait_running(self, job_id: int, timeout: float = 60) -> None:
        wait(lambda: self.slurm.job(job_id).is_running, timeout, f"job {job_id} to run")

    def wait_gone(self, job_id: int, timeout: float = 120) -> None:
        wait(lambda: self.slurm.snapshot().job(job_id) is None, timeout, f"job {job_id} to end")

    def cleanup(self) -> None:
        for job_id in self.ids:
            self.slurm.cancel_quietly(job_id)


@pytest.fixture
def jobs(slurm: SlurmCluster) -> Iterator[Jobs]:
    wait(lambda: slurm.snapshot().free == NODES, 60, "all nodes idle")
    tracker = Jobs(slurm)
    yield tracker
    tracker.cleanup()
