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


def demo(*args: str) -> str:
    """``slurm-ext demo --docker ARGS`` from the host; its output (it must succeed)."""
    res = subprocess.run([sys.executable, "-m", "slurm_ext", "demo", "--docker", *args],
                         capture_output=True, text=True, timeout=420, check=False)  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return out


def test_main_demo_in_the_login_container(docker_cluster: DockerCluster) -> None:
    out = demo()
    if EXPANSION:
        assert "expand 2 -> 4 nodes" in out and "expand strategy merge" in out  # part 1: the adapter
    else:
        assert "shrinking only" in out and "expand strategy expander" in out
    assert "FS job" in out and "RUNNING on 2 node(s)" in out  # part 2: FS grew to a second container
    assert "state checksum intact" in out and "left behind: none" in out


def test_native_app_demo_in_the_login_container(docker_cluster: DockerCluster) -> None:
    """Jacobi on libdmr, built in the login container for its Python: C where Slurm merges the new
    nodes in, Fortran where expander jobs host them (both languages, both strategies, every release)."""
    app = "c" if EXPANSION else "fortran"
    out = demo("--app", app)
    assert f"built Jacobi in {app}" in out and "RUNNING on 2 node(s)" in out, out[-3000:]
    assert "grid equal to one rank's" in out and "left behind: none" in out, out[-3000:]
