"""The main demo (`slurm-ext demo --docker`) in the dockerized cluster: the Slurm adapter resizes a job,
then Flexible Sleep under the DMR control service grows across containers, shrinks for a rigid job and
finishes with its state intact. With permit_job_expansion FS grows by merge, without it by expander jobs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from slurm_ext.containers.cluster import DockerCluster

from .conftest import EXPANSION

pytestmark = pytest.mark.docker


def test_main_demo_in_the_login_container(docker_cluster: DockerCluster) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "slurm_ext", "demo", "--docker"],
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    if EXPANSION:
        assert "expand 2 -> 4 nodes" in out and "expand strategy merge" in out  # part 1: the adapter
    else:
        assert "shrinking only" in out and "expand strategy expander" in out
    assert "FS job" in out and "RUNNING on 2 node(s)" in out  # part 2: FS grew to a second container
    assert "state checksum intact" in out and "left behind: none" in out
