from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.local.cluster import LocalCluster
from slurm_ext.slurm import SlurmCluster


class Jobs:
    """Submits jobs for one test and cancels every one of them afterwards."""

    def __init__(self, slurm: SlurmCluster) -> None:
        self.slurm = slurm
        self.ids: list[int] = []

    def submit(
        self, nodes: int, name: str = "test", time_limit: float | None = 600, command: str = "sleep 600"
    ) -> int:
        job_id = self.slurm.submit(
            JobRequest(
                nodes=nodes, name=name, time_limit=time_limit, command=command, extra_args=("-o", "/dev/null")
            )
        )
        self.ids.append(job_id)
        return job_id

    @staticmethod
    def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not check():
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.2)

    # 60 s: after a pending resizer is cancelled, Slurm 22.05 holds back a job that needs every node
    # for 20-40 s (docs/admin/slurm.md, known Slurm behaviour); tests that fill the cluster may follow one.
    def wait_running(self, job_id: int, timeout: float = 60) -> None:
        self.wait(lambda: self.slurm.job(job_id).is_running, timeout, f"job {job_id} to run")

    def cleanup(self) -> None:
        live = {j.job_id for j in self.slurm.snapshot().jobs}
        for job_id in self.ids:
            if job_id in live:
                self.slurm.cmd.run(["scancel", str(job_id)], check=False)


@pytest.fixture
def slurm(local_cluster: LocalCluster) -> SlurmCluster:
    return SlurmCluster(local_cluster.cfg.slurm_conf)


@pytest.fixture
def jobs(slurm: SlurmCluster, local_cluster: LocalCluster) -> Iterator[Jobs]:
    # Every test starts on a cluster whose nodes are all idle.
    Jobs.wait(lambda: slurm.snapshot().free == local_cluster.cfg.nodes, 30, "all nodes idle")
    tracker = Jobs(slurm)
    yield tracker
    tracker.cleanup()
