"""``dmr-run --on-failure continue`` with real ranks (mpiexec groups, no Slurm): a rank killed
mid-run, the application resumes on the other groups from its agent's checkpoint and its
result is the one an undisturbed run gives (Jacobi checks its grid against a serial reference)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

import pytest

from slurm_ext.agent_client import AgentClient

from .conftest import finish, start_dmr

pytestmark = pytest.mark.mpi

APP = ["--n", "64", "--steps", "16", "--sweeps", "5", "--max", "8"]
JACOBI = [sys.executable, "-m", "dmr_apps.jacobi", *APP]


def descends(pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False


def environ(pid: int) -> dict[bytes, bytes]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)


def ranks_on(node: str, agent_pid: int) -> list[int]:
    """Pids of the ranks (PMI_RANK set) of the group on fake node ``node`` of one dmr-run."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            env = environ(int(d))
        except OSError:
            continue
        if b"PMI_RANK" in env and env.get(b"DMR_NODE") == node.encode() and descends(int(d), agent_pid):
            found.append(int(d))
    return found


def checkpointed_step(rank: int) -> int | None:
    """The step of the checkpoint the agent holds, asked of it as a rank asks (its ``restore``)."""
    agent = AgentClient(environ(rank)[b"DMR_AGENT"].decode(), timeout=10.0)
    try:
        return agent.request("restore")["step"]
    finally:
        agent.close()


def wait_for(what, timeout: float):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")


def result(out: str) -> dict:
    return json.loads(re.search(r"JACOBI_RESULT (\{.*\})", out).group(1))


def test_a_rank_killed_the_application_continues_on_the_other_groups_from_its_checkpoint():
    proc = start_dmr(["a", "b", "c"], 2, [*JACOBI, "--model-seconds", "6"],
                     ("--on-failure", "continue", "--checkpoint-every", "3"))  # fmt: skip
    victims = wait_for(lambda: len(r := ranks_on("b", proc.pid)) == 2 and r, timeout=30)
    # a checkpoint beyond step 0 is taken first (a loaded machine starts the ranks slowly)
    wait_for(lambda: (checkpointed_step(victims[0]) or 0) >= 3, timeout=60)
    os.kill(victims[0], signal.SIGKILL)
    done = finish(proc, timeout=90)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    said = re.search(r"dmr: continuing on 2 node\(s\) \(a,c\) from step (\d+)'s checkpoint", out)
    assert said, out
    step = int(said.group(1))
    assert 3 <= step < 16 and step % 3 == 0, out
    res = result(out)
    assert res["ok"] and res["max_diff"] == 0.0 and res["final_size"] == 4, out
    assert out.count("JACOBI_RESULT") == 1, out


def test_a_failure_that_comes_back_before_the_next_checkpoint_is_not_restarted_again():
    """An application that fails at once on every start (a bug, not a fault) is not started again
    and again: once, then dmr-run gives up with its code."""
    proc = start_dmr(["a", "b"], 1, [sys.executable, "-c", "import sys; sys.exit(3)"],
                     ("--on-failure", "continue"))  # fmt: skip
    done = finish(proc, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode == 3, out
    restarts = re.findall(r"continuing on 1 node\(s\) \([ab]\) from its start \(no checkpoint yet\)", out)
    assert len(restarts) == 1, out
    assert "failed again before its next checkpoint; not starting it again" in out, out
