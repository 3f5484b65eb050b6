"""The agent ends an application one of whose groups died: real processes stand in for groups."""

from __future__ import annotations

import subprocess
import time

import pytest

from dmr import launch
from dmr.agent import Agent, _Op
from dmr.launch import LAUNCH_TOKEN, LaunchSpec


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "FAIL_GRACE", 0.5)


def group(agent: Agent, node: str, shell: str, member: bool = True) -> subprocess.Popen[bytes]:
    """A process standing in for one group's launcher on ``node``."""
    proc = subprocess.Popen(["sh", "-c", shell])
    agent.adopt(proc, node, None if member else "grow")
    return proc


def make_agent() -> Agent:
    return Agent(LaunchSpec(argv=["true"], cwd="/"), job_id=7)


def test_a_killed_group_stops_the_others_and_sets_the_exit_code(capfd: pytest.CaptureFixture[str]) -> None:
    agent = make_agent()
    waiting = group(agent, "n1", "sleep 60")  # a peer blocked in MPI on the dead ranks
    group(agent, "n2", "sleep 0.3; kill -9 $$")
    t0 = time.monotonic()
    code = agent.wait()
    assert time.monotonic() - t0 < 10
    assert code == 137 and waiting.poll() is not None  # a shell's code for a process killed by 9
    assert agent.failure == "the group on n2 of job 7 was killed by signal 9 (SIGKILL)"
    assert "stopping the application's groups" in capfd.readouterr().err


def test_the_group_that_ended_first_is_named_when_its_peers_have_crashed_too(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A dead rank's peers may crash in MPI a moment later (UCX segfaults), before the agent looks:
    the group that ended first is the failed one (its node leaves the job under --on-failure
    continue), not the first in launch order."""
    agent = make_agent()
    for proc in (group(agent, "n1", "sleep 0.3; kill -11 $$"), group(agent, "n2", "kill -9 $$")):
        proc.wait()
    assert agent.wait() == 137
    assert agent.failure == "the group on n2 of job 7 was killed by signal 9 (SIGKILL)"
    assert agent.failure_node == "n2"
    assert "stopping the application's groups" in capfd.readouterr().err


def test_a_group_that_ends_with_an_error_counts_as_failed() -> None:
    agent = make_agent()
    group(agent, "n1", "sleep 60")
    group(agent, "n2", "exit 3")
    assert agent.wait() == 3
    assert agent.failure is not None and "exit code 3" in agent.failure


def test_groups_ending_well_end_the_wait_without_failure() -> None:
    agent = make_agent()
    group(agent, "n1", "sleep 0.2")
    group(agent, "n2", "true")
    assert agent.wait() == 0 and agent.failure is None


def test_a_group_the_application_never_took_is_no_failure() -> None:
    """A group of an expansion that did not happen (srun refused, not taken) hangs nobody."""
    agent = make_agent()
    app = group(agent, "n1", "sleep 1")
    group(agent, "n2", "exit 1", member=False)
    assert agent.wait() == 1  # the worst code is still reported at the end
    assert agent.failure is None and app.returncode == 0


def test_groups_stopped_on_purpose_are_no_failure() -> None:
    agent = make_agent()
    app = group(agent, "n1", "sleep 1")
    aborted = group(agent, "n2", "sleep 60")
    agent._stop(aborted)  # e.g. an expansion abandoned at its deadline
    agent.wait()
    assert agent.failure is None and app.returncode == 0


def test_an_expander_jobs_failed_group_counts_once_its_operation_was_taken() -> None:
    agent = make_agent()
    agent.key = "k"
    agent.ops["t1"] = _Op(outcome=False)  # an expansion given up: its groups were never peers
    agent.handle({"op": "failed", "key": "k", "token": "t1", "why": "late"})
    assert agent.failure is None
    agent.ops["t2"] = _Op(outcome=True)
    agent.handle({"op": "failed", "key": "k", "token": "t2", "why": "the group on n5 of job 9 ended"})
    assert agent.failure == "the group on n5 of job 9 ended"
    group(agent, "n1", "sleep 60")
    assert agent.wait() == 1


def test_the_application_launch_is_watched_and_an_expansions_groups_once_taken() -> None:
    # mpiexec groups, no Slurm; alive a moment (a group ended before the expect is not taken)
    agent = Agent(LaunchSpec(argv=["sleep", "2"], cwd="/"), job_id=None)
    agent.launch(None, "n1")
    agent.launch(LAUNCH_TOKEN, "n2")
    agent.launch("grow", "n3")
    first, second, grown = agent.procs
    assert {first.pid, second.pid} <= agent.members and grown.pid not in agent.members
    agent.port = "port"
    agent.ops["grow"].hellos.append({"tag": "g3", "nodes": ["n3"]})
    expect = {"op": "expect", "key": agent.key, "token": "grow", "count": 1, "timeout": 1}
    assert agent.handle(expect)["ready"]
    assert grown.pid in agent.members
    assert agent.wait() == 0


def test_groups_a_shrink_removes_may_end_any_way() -> None:
    """Slurm ends the steps on nodes the service releases: rank 0 tells the agent which groups leave,
    and their end is no failure, here or in an expander job (whose agent asks the application's)."""
    agent = make_agent()
    agent.key = "k"
    app = group(agent, "n1", "sleep 1")
    group(agent, "n2", "kill -9 $$")
    assert agent.handle({"op": "leaving", "key": "k", "nodes": ["n2", "n3"]}) == {"ok": True}
    assert agent.wait() == 137 and agent.failure is None and app.returncode == 0
    agent.ops["t"] = _Op(outcome=True)
    reply = agent.handle({"op": "failed", "key": "k", "token": "t", "why": "x", "node": "n3"})
    assert reply == {"ok": True, "counts": False} and agent.failure is None


def test_an_expansion_whose_new_group_ends_before_joining_is_given_up_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """srun refusing a node (one the allocation no longer has: slurmctld lost the merge) must not
    hold the application for the whole join timeout."""
    import dmr.agent as agent_module

    def refused(*_: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sh", "-c", "sleep 0.2; exit 1"])

    monkeypatch.setattr(agent_module, "start_group", refused)
    agent = make_agent()
    agent.port = "tag#0$port"  # the application's port is open
    t0 = time.monotonic()
    reply = agent._expect("tok", 2, ["n2", "n3"], timeout=30.0, env={})
    assert time.monotonic() - t0 < 5
    assert reply["ready"] is False and "ended before it joined (exit code 1)" in reply["reason"], reply
