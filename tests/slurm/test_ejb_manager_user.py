"""A root EJB manager submits a user's subjob as that user, with the user's environment."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from ejb.actions import SubmitSubjob
from ejb.live.manager import Manager
from ejb.live.records import AppRecord
from ejb.params import EJBParams
from slurm_ext.config import load_config
from slurm_ext.slurm.adapter import SlurmCluster

pytestmark = pytest.mark.slurm


def test_a_subjob_is_the_users_job_and_gets_the_users_environment_not_roots(local_cluster, other_user):
    conf = load_config().cluster.slurm_conf
    backend = SlurmCluster(slurm_conf=conf)
    work = Path(tempfile.mkdtemp(prefix="ejb-user-", dir="/tmp"))  # the other user may write here
    work.chmod(0o777)
    state = Path(tempfile.mkdtemp(prefix="ejb-state-"))
    try:
        manager = Manager(backend, state, EJBParams(min_procs=2), "127.0.0.1:1", "127.0.0.1:2")
        env = {"PATH": os.environ["PATH"], "EJB_MARK": "from-the-user", "LD_PRELOAD": "/no/such/lib.so"}
        out = work / "out.txt"
        script = ["--wrap", "echo mark=$EJB_MARK user=$(id -un) pilot=${DMR_PILOT:+set}"]
        app = AppRecord(eid=1, owner=other_user, uid=-1, options=[], script=script, cwd=str(work), env=env,
                        ppn=1, output=str(out))  # fmt: skip
        job = manager._sbatch(app, SubmitSubjob(1, 1, 1, 60.0), 60.0, time.time())
        assert job is not None and backend.job(job).user == other_user
        deadline = time.monotonic() + 60
        while not (out.exists() and "mark=" in out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
        text = out.read_text()
        # the pilot reaches the job through sbatch's environment, --export=ALL as the user typed it
        assert "mark=from-the-user" in text and f"user={other_user}" in text and "pilot=set" in text, text
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
