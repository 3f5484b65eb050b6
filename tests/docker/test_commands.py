"""The toolkit's commands in the login container, as users type them there."""

from __future__ import annotations

import pytest

from slurm_ext.containers.cluster import DockerCluster

from .conftest import SHARED

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("command", ["slurm-ext", "ejb", "ejb-submit", "dmr-run", "dmr-config"])
def test_each_command_is_on_the_path(docker_cluster: DockerCluster, command: str) -> None:
    res = docker_cluster.run(command, "--help")
    assert res.returncode == 0 and "usage" in (res.stdout + res.stderr).lower(), res


def test_ejb_submit_without_a_manager_submits_with_sbatch_and_says_why(docker_cluster: DockerCluster) -> None:
    args = ("-N", "1", "-o", "/dev/null", f"--chdir={SHARED}", "--wrap", "true")
    res = docker_cluster.run("ejb-submit", *args)
    assert res.returncode == 0 and res.stdout.startswith("Submitted batch job "), res
    assert "plain sbatch" in res.stderr, res.stderr  # one line saying why it is not bundled
