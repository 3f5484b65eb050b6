"""`slurm-ext cluster up/down/status` on this host.

The up/down cycle runs a second, 2-node cluster on other ports beside the session's cluster,
so it can be started and stopped without disturbing the other Slurm tests.
"""

from __future__ import annotations

import re
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_ext.config import ClusterConfig
from slurm_ext.local.cluster import SYSTEM_SLURM_CONF, ClusterError, LocalCluster
from slurm_ext.local.daemons import process_alive
from slurm_ext.local.prereqs import APT_LINE, PrerequisiteError, check_programs, check_root

pytestmark = pytest.mark.slurm


def second_cluster(base: ClusterConfig, tmp: Path) -> ClusterConfig:
    return replace(
        base,
        name="second",
        nodes=2,
        state_dir=tmp / "second",
        slurmctld_port=base.slurmctld_port + 100,
        slurmdbd_port=base.slurmdbd_port + 100,
        mariadb_port=base.mariadb_port + 100,
        slurmd_base_port=base.slurmd_base_port + 100,
    )


def test_up_is_idempotent(local_cluster: LocalCluster) -> None:
    report = LocalCluster(local_cluster.cfg).up()
    assert report.already_running and report.nodes == local_cluster.cfg.nodes
    assert report.seconds < 5


def test_up_resumes_a_drained_node_at_once_and_names_it(local_cluster: LocalCluster) -> None:
    node = local_cluster.cfg.node_names[-1]
    env = local_cluster.env
    drain = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=left by a crash"]
    subprocess.run(drain, env=env, check=True)
    said: list[str] = []
    report = LocalCluster(local_cluster.cfg).up(progress=said.append)
    assert report.already_running and report.seconds < 10, said
    assert f"resumed {node} (was drained: left by a crash)" in said, said
    assert local_cluster.node_states()[-1] in ("idle", "allocated", "mixed", "completing"), said


def test_up_with_another_size_while_running_is_refused(local_cluster: LocalCluster) -> None:
    with pytest.raises(ClusterError, match="cluster down"):
        LocalCluster(local_cluster.cfg).up(nodes=local_cluster.cfg.nodes + 1)


def test_status_lists_daemons_and_nodes(local_cluster: LocalCluster) -> None:
    text = local_cluster.status_text()
    assert text.startswith("local cluster: up")
    assert "slurmctld" in text
    serving = re.compile(r"n\d+ (idle|allocated|mixed|planned|completing) ")
    nodes = [line.split()[0] for line in text.splitlines() if serving.match(line)]
    assert nodes == local_cluster.cfg.node_names


def test_down_stops_everything_and_up_works_again(local_cluster: LocalCluster, tmp_path: Path) -> None:
    cluster = LocalCluster(second_cluster(local_cluster.cfg, tmp_path))
    env = {"SLURM_CONF": str(cluster.cfg.slurm_conf)}
    try:
        for attempt in range(2):  # the second `up` reuses the state left by the first `down`
            report = cluster.up()
            assert not report.already_running and report.nodes == 2
            sinfo = subprocess.run(["sinfo", "-h", "-o", "%D %T"], env=env, capture_output=True, text=True)
            assert sinfo.stdout.split() == ["2", "idle"], f"attempt {attempt}: {sinfo.stdout!r}"
            pids = [(d.pid(), d.comm) for d in cluster.running_daemons()]
            assert len(pids) >= 5  # MariaDB, slurmdbd, slurmctld, 2 x slurmd (munged is shared)
            if attempt == 1:  # a start killed before it registered its daemons: down finds them still
                cluster.registry.clear()
            cluster.down()
            assert not any(process_alive(pid, comm) for pid, comm in pids if pid)
            assert cluster.running_daemons() == []
    finally:
        cluster.down()
    assert local_cluster.is_up(), "the session's cluster must be untouched"
    assert SYSTEM_SLURM_CONF.resolve() == local_cluster.cfg.slurm_conf.resolve()


def test_port_in_use_is_reported_and_nothing_starts(local_cluster: LocalCluster, tmp_path: Path) -> None:
    cfg = second_cluster(local_cluster.cfg, tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", cfg.slurmdbd_port))
        squatter.listen()
        with pytest.raises(PrerequisiteError, match=f"{cfg.slurmdbd_port} \\(slurmdbd\\)"):
            LocalCluster(cfg).up()
    assert LocalCluster(cfg).running_daemons() == []
    assert not (cfg.state_dir / "run" / "started.json").exists()


def test_missing_packages_name_the_apt_line() -> None:
    with pytest.raises(PrerequisiteError) as err:
        check_programs(path="/nonexistent")
    assert APT_LINE in str(err.value) and "slurmctld (slurmctld)" in str(err.value)


def test_not_root_is_refused() -> None:
    with pytest.raises(PrerequisiteError, match="as root"):
        check_root(euid=1000)
