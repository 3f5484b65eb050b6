"""Authentication against the real cluster: job owners from Slurm, credentials from the real munged."""

from __future__ import annotations

import subprocess

import pytest

from slurm_ext import protocol as p
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.service.auth import AuthError, peer_from_munge, user_uid
from tests.users import as_user

pytestmark = pytest.mark.slurm


def _check(job_id: int, node: str) -> p.Check:
    return p.Check(job_id=job_id, current=1, min=1, max=1, nodes=[node])


def test_only_the_owner_of_a_slurm_job_is_answered(slurm, jobs, other_user, local_cluster):
    mine = jobs.submit(1, name="root-job")
    res = subprocess.run(
        ["runuser", "-u", other_user, "--", "sbatch", "--parsable", "-N1", "-o", "/dev/null", "-D", "/tmp",
         "-J", "other-job", "--wrap", "sleep 600"],
        capture_output=True, text=True, check=True, env=slurm.cmd.env,
    )  # fmt: skip
    theirs = int(res.stdout.strip().split(";")[0])
    jobs.ids.append(theirs)
    jobs.wait_running(mine)
    jobs.wait_running(theirs)
    assert slurm.job(theirs).user == other_user
    server = Server(Controller(slurm, DMRPolicy(), ServiceOptions(snapshot_interval=0.5)), port=0)
    server.start()
    try:
        refused = as_user(other_user, server.address, _check(mine, slurm.job(mine).nodes[0]))
        assert isinstance(refused, p.Error) and f"job {mine} belongs to root" in refused.message
        answered = as_user(other_user, server.address, _check(theirs, slurm.job(theirs).nodes[0]))
        assert isinstance(answered, p.Decision) and answered.action == "none", answered
        assert server.controller.counters["refused"] == 1
    finally:
        server.stop()


def test_munge_credentials_name_their_user_once(other_user, local_cluster):
    cred = p.munge_credential()
    assert cred is not None
    assert peer_from_munge(cred).uid == 0
    with pytest.raises(AuthError, match="(?i)replay"):
        peer_from_munge(cred)
    theirs = subprocess.run(
        ["runuser", "-u", other_user, "--", "munge", "-n"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert peer_from_munge(theirs).uid == user_uid(other_user)
    with pytest.raises(AuthError):
        peer_from_munge("MUNGE:not-a-credential:")
