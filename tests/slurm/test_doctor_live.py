"""`slurm-ext doctor` against a real slurmctld: the toolkit's own cluster passes; a missing right
of the service's user fails it with the line to run; an unreachable slurmctld fails it at once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slurm


def doctor(*args: str, conf: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"SLURM_CONF": conf} if conf else {})}
    cmd = [sys.executable, "-m", "slurm_ext", "doctor", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def findings(res: subprocess.CompletedProcess) -> dict[str, dict]:
    return {f["feature"]: f for f in json.loads(res.stdout)["findings"]}


def test_the_local_cluster_has_every_feature(local_cluster) -> None:
    res = doctor("--json", conf=str(local_cluster.cfg.slurm_conf))
    assert res.returncode == 0, res.stderr
    found = findings(res)
    assert {f["status"] for f in found.values()} == {"ok"}, found
    assert found["release"]["detail"].startswith("Slurm 22.05")
    table = doctor(conf=str(local_cluster.cfg.slurm_conf))
    assert table.returncode == 0 and "doctor: the service can work here" in table.stdout


def test_a_service_user_without_operator_rights_fails_with_the_line_to_run(local_cluster) -> None:
    res = doctor("--json", "--service-user", "nobody", conf=str(local_cluster.cfg.slurm_conf))
    assert res.returncode == 1
    rights = findings(res)["service rights"]
    assert rights["status"] == "fail"
    assert rights["fix"].startswith("sacctmgr modify user nobody set AdminLevel=Operator")
    assert doctor("--service-user", "no-such-user-here").returncode == 2


def test_an_unreachable_slurmctld_fails_and_nothing_else_is_claimed(local_cluster, tmp_path) -> None:
    bad = tmp_path / "slurm.conf"
    bad.write_text(
        re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", local_cluster.cfg.slurm_conf.read_text())
    )
    res = doctor("--json", conf=str(bad))
    assert res.returncode == 1
    assert list(findings(res)) == ["slurmctld"] and findings(res)["slurmctld"]["status"] == "fail"
