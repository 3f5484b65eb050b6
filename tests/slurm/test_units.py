"""`slurm-ext install-units`: the units' own commands, run as systemd would run them, start the
service (or refuse to, naming the missing right) against the local cluster."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_ext import protocol as p

pytestmark = pytest.mark.slurm


def install(tmp: Path, user: str, port: int, slurm_conf: Path) -> subprocess.CompletedProcess:
    config = tmp / "etc" / "elastic.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"paths: {{state_dir: {tmp / 'state'}}}\n"
                      f"service: {{port: {port}, slurm_conf: {slurm_conf}}}\n")  # fmt: skip
    cmd = [sys.executable, "-m", "slurm_ext", "install-units", "--user", user,
           "--unit-dir", str(tmp / "units"), "--config", str(config), "--host", "127.0.0.1"]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def unit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(settings, environment) of a unit file, as systemd reads the few keys used here."""
    keys, env = {}, {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key == "Environment":
            name, _, val = value.partition("=")
            env[name] = val
        else:
            keys[key] = value
    return keys, env


def run(command: str, env: dict[str, str], **kw) -> subprocess.Popen | subprocess.CompletedProcess:  # noqa: ANN003
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "ELASTIC_"))} | env
    if kw.pop("background", False):
        return subprocess.Popen(
            shlex.split(command), env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    return subprocess.run(shlex.split(command), env=full, capture_output=True, text=True, timeout=120)


def test_the_service_unit_starts_the_service_its_user_has_the_rights_for(local_cluster, tmp_path) -> None:
    port = p.free_port()
    res = install(tmp_path, "root", port, local_cluster.cfg.slurm_conf)
    assert res.returncode == 0, res.stderr
    assert "wrote" in res.stdout and "systemctl daemon-reload" in res.stdout
    keys, env = unit(tmp_path / "units" / "elastic-slurm.service")
    assert keys["User"] == "root" and env["ELASTIC_SLURM_CONF"] == str(tmp_path / "etc" / "elastic.yaml")
    assert keys["ReadWritePaths"] == str(tmp_path / "state")
    assert (tmp_path / "units" / "ejb-manager.service").exists()
    pre = run(keys["ExecStartPre"], env)
    assert pre.returncode == 0, pre.stdout + pre.stderr  # doctor: the service can work here
    service = run(keys["ExecStart"], env, background=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = p.Connection.connect(("127.0.0.1", port))
                break
            except OSError:
                assert service.poll() is None and time.monotonic() < deadline, service.stdout.read()
                time.sleep(0.2)
        assert isinstance(conn.request(p.Ping()), p.Pong)
        conn.close()
    finally:
        service.terminate()
        service.wait(30)
    assert (tmp_path / "state" / "service" / "journal").is_dir()  # where its config said


def test_a_unit_for_a_user_without_operator_rights_refuses_to_start_and_says_why(
    local_cluster, tmp_path
) -> None:
    res = install(tmp_path, "nobody", p.free_port(), local_cluster.cfg.slurm_conf)
    assert res.returncode == 0, res.stderr
    assert all((tmp_path / "state" / d).stat().st_uid == 65534 for d in ("service", "ejb"))
    keys, env = unit(tmp_path / "units" / "elastic-slurm.service")
    pre = run(keys["ExecStartPre"], env)
    assert pre.returncode == 1 and "sacctmgr modify user nobody set AdminLevel=Operator" in pre.stderr, pre


def test_an_unknown_user_is_a_usage_error(local_cluster, tmp_path) -> None:
    res = install(tmp_path, "no-such-user-here", p.free_port(), local_cluster.cfg.slurm_conf)
    assert res.returncode == 2 and "useradd --system no-such-user-here" in res.stderr
    assert not (tmp_path / "units").exists()
