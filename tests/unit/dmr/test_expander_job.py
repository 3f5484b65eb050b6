"""An agent submits its job's expander job on the service's word (a service that may not submit as
the job's owner): only an expander job's options, named after its own job, its own command, and
none of the batch script's Slurm or MPI variables; a refusal or sbatch's failure comes back as an
error. ``sbatch`` is a script on PATH here that records what it was given (the real submission is
tested on the site's docker cluster: ``tests/docker/test_site.py``)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from dmr.agent import Agent, AgentClient, serve
from dmr.expander_job import check_options, job_environment
from dmr.launch import LaunchSpec
from slurm_ext.backend import expander_name
from slurm_ext.errors import SlurmError
from slurm_ext.model import Job, JobState
from tests.unit.slurm_ext.slurm.fakes import cluster

OPTIONS = ["-N", "2", "--exclusive", "-J", expander_name(41), "-p", "left", "-A", "users", "-t", "9",
           "--chdir=/shared/alice", "--output=/shared/alice/fs-41.out", "--open-mode=append"]  # fmt: skip


@pytest.fixture
def sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``sbatch`` first on PATH: writes its argv and environment to ``calls.json``, prints an id."""
    script = tmp_path / "sbatch"
    record = tmp_path / "calls.json"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ)}}, open({str(record)!r}, 'w'))\n"
        "if os.environ.get('FAIL_SBATCH'):\n"
        "    sys.exit('sbatch: error: Batch job submission failed: Invalid account')\n"
        "print('77;cluster')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return record


@pytest.fixture
def agent():
    a = Agent(LaunchSpec(argv=["true"], cwd="/"), job_id=41)
    server = serve(a)
    yield a
    server.shutdown()
    server.server_close()


def test_the_agent_submits_the_expander_job_with_its_own_command_and_a_clean_environment(
    agent: Agent, sbatch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_env = {"SLURM_NTASKS": "8", "PMI_RANK": "0", "DMR_TOKEN": "t", "SLURM_CONF": "/x.conf", "HOME": "/h"}
    for name, value in job_env.items():
        monkeypatch.setenv(name, value)
    reply = AgentClient(agent.address_text).request("submit_expander", token="tok1", options=OPTIONS)
    assert reply == {"ok": True, "job_id": 77}
    call = json.loads(sbatch.read_text())
    assert call["argv"][:-2] == ["--parsable", *OPTIONS] and call["argv"][-2] == "--wrap"
    command = call["argv"][-1]
    assert f"-m dmr join --agent {agent.address_text} --token tok1" in command
    assert command.startswith(f"exec {sys.executable} ")
    env = call["env"]
    assert "SLURM_NTASKS" not in env and "PMI_RANK" not in env and "DMR_TOKEN" not in env
    assert env["SLURM_CONF"] == "/x.conf" and env["HOME"] == "/h"


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (["-N", "1", "-J", expander_name(42)], "must be named expander-for-41"),
        (["-N", "1"], "not named"),
        (["-N", "1", "-J", expander_name(41), "--wrap", "rm -rf ~"], "option '--wrap' is not"),
        (["-J", expander_name(41), "--uid=0"], "option '--uid=0' is not"),
        (["-J", expander_name(41), "-N"], "-N needs a value"),
    ],
)
def test_anything_but_an_expander_job_of_its_own_job_is_refused(
    agent: Agent, sbatch: Path, options: list[str], why: str
) -> None:
    with pytest.raises(RuntimeError, match=why):
        AgentClient(agent.address_text).request("submit_expander", token="t", options=options)
    assert not sbatch.exists()  # nothing was run


def test_sbatchs_refusal_comes_back_as_the_error(
    agent: Agent, sbatch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL_SBATCH", "1")
    with pytest.raises(RuntimeError, match="Invalid account"):
        AgentClient(agent.address_text).request("submit_expander", token="t", options=OPTIONS)


def test_outside_a_job_and_with_a_strangers_key_nothing_is_submitted(sbatch: Path) -> None:
    assert check_options(OPTIONS, None) == "this agent is not in a Slurm job"
    a = Agent(LaunchSpec(argv=["true"], cwd="/"), job_id=41)
    server = serve(a)
    try:
        stranger = a.address_text.rsplit(":", 1)[0] + ":wrong"
        with pytest.raises(RuntimeError, match="wrong or missing agent key"):
            AgentClient(stranger).request("submit_expander", token="t", options=OPTIONS)
    finally:
        server.shutdown()
        server.server_close()
    assert not sbatch.exists()


def test_the_job_environment_keeps_the_users_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    env = job_environment()
    assert "SLURM_JOB_ID" not in env and env["OMP_NUM_THREADS"] == "4"


@pytest.mark.parametrize(
    ("shown", "kept"),
    [
        ("UserId=alice(1001) JobName=expander-for-41", True),
        ("UserId=bob(1002) JobName=expander-for-41", False),
        ("", False),
    ],
)
def test_the_service_keeps_only_the_owners_expander_job_its_agent_submitted(
    agent: Agent, sbatch: Path, shown: str, kept: bool
) -> None:
    """The adapter's side (a service that is not root): the agent's job must be the owner's and so
    named; another user's (an agent not run by the owner) or one it cannot read is cancelled by name."""
    slurm, ran = cluster({"scontrol show job -o 77": (0, f"JobId=77 {shown}\n", "")})
    app = Job(41, JobState.RUNNING, 1, name="fs", user="alice", nodes=("n1",))
    if kept:
        assert slurm._submit_by_agent(app, OPTIONS, agent.address_text, "tok") == 77
        assert not any(cmd[0] == "scancel" for cmd in ran.ran)
    else:
        with pytest.raises(SlurmError, match="not alice's expander job"):
            slurm._submit_by_agent(app, OPTIONS, agent.address_text, "tok")
        assert ["scancel", f"--name={expander_name(41)}", "77"] in ran.ran
    assert json.loads(sbatch.read_text())["argv"][1:3] == ["-N", "2"]  # the agent did submit it
