"""The local cluster's epilog: it removes the MPICH segments a killed job left in the shared
/dev/shm, and nothing a running job maps, a job is setting up, or another user owns."""

from __future__ import annotations

import mmap
import os
import pwd
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_ext.config import load_config
from slurm_ext.local.render import in_containers, render, write_configs

SHM = Path("/dev/shm")


def test_on_host_slurm_conf_runs_the_epilog_and_containers_do_not(tmp_path: Path) -> None:
    cfg = replace(load_config().cluster, state_dir=tmp_path)
    etc = write_configs(cfg)
    assert f"Epilog={etc / 'epilog.sh'}" in render("slurm.conf", cfg).splitlines()
    assert os.access(etc / "epilog.sh", os.X_OK)
    assert "Epilog=" not in render("slurm.conf", cfg, addressing=in_containers(3))


@pytest.mark.skipif(not SHM.is_dir() or os.geteuid() != 0, reason="needs /dev/shm and root (chown)")
def test_the_epilog_removes_only_stale_segments_of_the_jobs_owner(tmp_path: Path) -> None:
    cfg = replace(load_config().cluster, state_dir=tmp_path)
    epilog = write_configs(cfg) / "epilog.sh"
    tag = uuid.uuid4().hex[:8]
    old, new, other, used = (SHM / f"mpich_shm_{tag}{kind}_0" for kind in ("old", "new", "oth", "use"))
    an_hour_ago = time.time() - 3600
    for path in (old, new, other, used):
        path.write_bytes(b"\0" * 4096)
    for path in (old, other, used):
        os.utime(path, (an_hour_ago, an_hour_ago))
    os.chown(other, pwd.getpwnam("nobody").pw_uid, -1)
    try:
        with used.open("r+b") as f, mmap.mmap(f.fileno(), 4096):
            env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_UID": "0"}
            subprocess.run([str(epilog)], check=True, env=env, timeout=30)
            assert not old.exists()
            assert new.exists() and other.exists() and used.exists()
    finally:
        for path in (old, new, other, used):
            path.unlink(missing_ok=True)
