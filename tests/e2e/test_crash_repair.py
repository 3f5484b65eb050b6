"""The service killed at each step of a resize, then restarted: job and application agree again.

The service runs as its own process (`slurm-ext serve`), with ``ELASTIC_CRASH_AT`` naming the step
where it dies (after writing that step to its journal). FS runs under ``dmr-run`` with one rank per
node and a plan that makes it ask for one resize. After the restart, within 10 s, the nodes Slurm
gives the application (its job and its expander jobs) must be exactly the nodes its ranks run on,
and no resizer or expander job may be left once FS is gone.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX, served_job
from slurm_ext.faults import CRASH_ENV, CRASH_EXIT
from slurm_ext.protocol import free_port
from slurm_ext.service import journal as jr
from slurm_ext.slurm.adapter import MERGE_HANDED_OVER, MERGE_RESIZER_GONE, MERGE_RESIZER_RUNNING
from slurm_ext.slurm.parse import expand_nodes

from .conftest import idle_nodes, serve_process, sh, stop_process

pytestmark = pytest.mark.slurm

# (strategy, where the service dies, FS's plan, whether the application heard the answer: then its
# resize of that kind happened by step 2; else not then: its client waits 30 s before asking again)
CASES = [
    ("merge", jr.EXPAND_DECIDED, "1:4", False),
    ("merge", MERGE_RESIZER_RUNNING, "1:4", False),  # the resizer holds the nodes, not handed over
    ("merge", MERGE_HANDED_OVER, "1:4", False),  # inside the merge: the resizer gave its nodes up
    ("merge", MERGE_RESIZER_GONE, "1:4", False),  # ... and is cancelled; the job has not taken them
    ("merge", jr.EXPAND_MERGED, "1:4", False),
    ("merge", jr.EXPAND_ANSWERED, "1:4", False),  # dies just before the answer goes out
    ("merge", jr.COMMIT_RECEIVED, "1:4", True),
    ("expander", jr.EXPAND_DECIDED, "1:4", False),
    ("expander", jr.EXPANDER_SUBMITTED, "1:4", False),
    ("expander", jr.EXPAND_ANSWERED, "1:4", False),
    ("expander", jr.COMMIT_RECEIVED, "1:4", True),
    ("merge", jr.SHRINK_DECIDED, "1:1", False),
    ("merge", jr.READY_RECEIVED, "1:1", True),
    ("merge", jr.SHRINK_ACKED, "1:1", True),
]


def _serve(port: int, journal: Path, strategy: str, log: Path, crash_at: str | None) -> subprocess.Popen:
    env = {CRASH_ENV: crash_at} if crash_at else {}
    args = ("--journal-dir", str(journal), "--expand-strategy", strategy, "--expand-timeout", "10")
    return serve_process(port, log, *args, env=env)


def held_and_used(app: int) -> tuple[set[str], set[str]]:
    """Nodes Slurm gives the application (its job + running expanders) and nodes its ranks run on."""
    jobs = {app}
    held: set[str] = set()
    for line in sh("squeue", "-h", "-o", "%i|%j|%T|%N").splitlines():
        job_id, name, state, nodes = line.split("|")
        if int(job_id) == app or (served_job(name, EXPANDER_PREFIX) == app and state == "RUNNING"):
            jobs.add(int(job_id))
            held |= set(expand_nodes(nodes))
    used: set[str] = set()
    for job_id in jobs:
        for line in sh("squeue", "-h", "-s", "-j", str(job_id), "-o", "%i %N", check=False).splitlines():
            step, _, nodes = line.strip().partition(" ")
            if not step.endswith((".batch", ".extern")):
                used |= set(expand_nodes(nodes))
    return held, used


@pytest.mark.parametrize(("strategy", "step", "plan", "heard"), CASES, ids=[f"{s}-{c}" for s, c, *_ in CASES])
def test_restart_after_a_crash_repairs_the_job(slurm, tmp_path, strategy, step, plan, heard):
    port, journal, log = free_port(), tmp_path / "journal", tmp_path / "service.log"
    proc = _serve(port, journal, strategy, log, crash_at=step)  # dies at that step
    try:
        # long enough that the application still runs when the repair looks (16 s at 4 ranks)
        fs_args = f"--steps 16 --step-seconds 4 --state-mb 16 --max 4 --plan {plan}"
        app = slurm.dmr_fs(("127.0.0.1", port), 2, fs_args, ppn=1)
        try:
            assert proc.wait(120) == CRASH_EXIT, log.read_text()
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the service never reached {step}:\n{log.read_text()}") from None
        proc = _serve(port, journal, strategy, log, crash_at=None)
        deadline, agreed = time.monotonic() + 10, 0
        while agreed < 3:
            held, used = held_and_used(app)
            agreed = agreed + 1 if held == used and held else 0
            assert time.monotonic() < deadline, (
                f"after 10 s: Slurm gives {held}, ranks on {used}\n{log.read_text()}"
            )
            time.sleep(0.3)
        slurm.wait_gone(app, timeout=180)
        res = slurm.fs_result("fs", app)
        assert res["checksum_ok"], res
        kind = "expand" if step.startswith("expand") else "shrink"  # the resize the crash hit
        assert any(r[0] <= 2 and r[1] == kind for r in res["resizes"]) == heard, res["resizes"]
        slurm.wait(lambda: not list(journal.glob("*.json")), timeout=15)  # nothing left to repair
    finally:
        stop_process(proc)
    left = [
        ln
        for ln in sh("squeue", "-h", "-o", "%i %j").splitlines()
        if RESIZER_PREFIX in ln or EXPANDER_PREFIX in ln
    ]
    assert left == [], left
    total = sum(int(n) for n in sh("sinfo", "-h", "-o", "%D").split())
    slurm.wait(lambda: idle_nodes() == total, timeout=15)  # no node lost: every one back in Slurm's hands
