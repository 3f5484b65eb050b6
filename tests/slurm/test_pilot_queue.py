"""A placeholder whose EJB manager is away looks in the real queue for its own running subjobs."""

from __future__ import annotations

import subprocess

import pytest

from dmr.launch import LaunchSpec
from dmr.pilot import Pilot

pytestmark = pytest.mark.slurm


def test_a_placeholder_finds_its_running_subjobs_and_no_other_job(slurm, jobs, other_user, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm.cmd.env["SLURM_CONF"])
    j0 = jobs.submit(1, name="j0-stand-in")
    mine = jobs.submit(1, name=f"ejb{j0}.1")
    longer = jobs.submit(1, name=f"ejb{j0}0.1")  # another application whose id starts with J0's
    res = subprocess.run(
        ["runuser", "-u", other_user, "--", "sbatch", "--parsable", "-N1", "-o", "/dev/null", "-D", "/tmp",
         "-J", f"ejb{j0}.2", "--wrap", "sleep 600"],
        capture_output=True, text=True, check=True, env=slurm.cmd.env,
    )  # fmt: skip
    theirs = int(res.stdout.strip().split(";")[0])  # the same name, another user's job
    jobs.ids.append(theirs)
    for job in (mine, longer, theirs):
        jobs.wait_running(job)
    pilot = Pilot(LaunchSpec(argv=["true"], cwd="/"), j0, ["n1"], "127.0.0.1:1:s3cret:j0")
    assert pilot.running_subjobs() == [str(mine)]
    slurm.cmd.run(["scancel", str(mine)])
    jobs.wait(lambda: mine not in {j.job_id for j in slurm.snapshot().jobs}, 30, f"job {mine} to end")
    assert pilot.running_subjobs() == []
    # nothing to wait for: without a manager, the placeholder goes on to run the job by itself
    assert pilot.wait_while_hosted() is False
