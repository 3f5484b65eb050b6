"""ejb-submit on the real cluster: sbatch's output and errors, and never a lost job."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading

import pytest

from slurm_ext.errors import JobNotFound

pytestmark = pytest.mark.slurm


def ejb_submit(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    return subprocess.run(["ejb-submit", *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def queue(slurm) -> set[int]:  # noqa: ANN001
    return {j.job_id for j in slurm.snapshot().jobs}


def test_scripts_directives_and_wrap_are_submitted_as_sbatch_would(slurm, jobs, tmp_path):
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH -J from-directive\n#SBATCH -o /dev/null\nsleep 30\n")
    res = ejb_submit("-t", "2", str(path), env=slurm.cmd.env)
    assert res.returncode == 0, res.stderr
    job_id = int(re.fullmatch(r"Submitted batch job (\d+)\n", res.stdout).group(1))
    jobs.ids.append(job_id)
    job = slurm.job(job_id)
    assert job.name == "from-directive" and job.time_limit == 120
    assert "submitted with plain sbatch: 1 processor(s)" in res.stderr
    res = ejb_submit("--parsable", "-N", "1", "-o", "/dev/null", "--ejb-o-max", "2", "--wrap", "sleep 30",
                     env=slurm.cmd.env)  # fmt: skip
    assert res.returncode == 0 and re.fullmatch(r"\d+\n", res.stdout), res
    jobs.ids.append(int(res.stdout))


def test_what_slurm_rejects_gets_sbatchs_error_and_nothing_is_submitted(slurm, jobs):
    before = queue(slurm)
    res = ejb_submit("-p", "no-such-partition", "--wrap", "true", env=slurm.cmd.env)
    assert res.returncode != 0 and "invalid partition" in res.stderr.lower()
    res = ejb_submit("-N", "1", env=slurm.cmd.env)  # no script: sbatch reads standard input, empty here
    assert res.returncode != 0 and "Batch script is empty" in res.stderr, res.stderr
    assert queue(slurm) == before


def test_a_waiting_dmr_job_with_the_manager_down_still_goes_to_sbatch(slurm, jobs, tmp_path, local_cluster):
    filler = jobs.submit(local_cluster.cfg.nodes, name="filler")
    jobs.wait_running(filler)
    path = tmp_path / "dmr.sh"
    path.write_text("#!/bin/bash\n#SBATCH -o /dev/null\ndmr-run -- python -m dmr_apps.fs --steps 1\n")
    res = ejb_submit("-N", "4", "--ntasks-per-node", "2", "--ejb-manager", "127.0.0.1:1", str(path),
                     env=slurm.cmd.env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    job_id = int(res.stdout.split()[-1])
    jobs.ids.append(job_id)
    assert "warning: the EJB manager at 127.0.0.1:1 is not running" in res.stderr
    assert not slurm.job(job_id).is_running  # queued behind the filler, as sbatch would


def test_with_ejb_require_a_job_ejb_would_not_bundle_is_not_submitted(slurm, jobs, tmp_path, local_cluster):
    filler = jobs.submit(local_cluster.cfg.nodes, name="filler")
    jobs.wait_running(filler)
    path = tmp_path / "dmr.sh"
    path.write_text("#!/bin/bash\n#SBATCH -o /dev/null\n#EJB --require\ndmr-run -- python -m dmr_apps.fs\n")
    before = queue(slurm)
    # the manager down: sbatch would queue the job; EJB or nothing says why and submits nothing
    res = ejb_submit("-N", "4", "--ntasks-per-node", "2", "--ejb-manager", "127.0.0.1:1", str(path),
                     env=slurm.cmd.env)  # fmt: skip
    assert res.returncode == 1 and res.stdout == "", res
    assert res.stderr == (
        "ejb-submit: error: not submitted (--ejb-require): the EJB manager at 127.0.0.1:1 is not running\n"
    )
    # too small to bundle, the flag on the command line (and --ejb-require takes no value)
    res = ejb_submit("--parsable", "--ejb-require", "-N", "1", "--wrap", "sleep 30", env=slurm.cmd.env)
    assert res.returncode == 1 and "1 processor(s), fewer than --ejb-min-procs 8" in res.stderr, res
    assert queue(slurm) == before


class RefusingManager:
    """Answers ping as a running EJB manager does, refuses every registration, records cancels."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.cancelled: list[int] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                msg = json.loads(conn.makefile("rb").readline())
                if msg["op"] == "cancel":
                    self.cancelled.append(msg["eid"])
                reply = {"ok": False, "error": "no room"} if msg["op"] == "register" else {"ok": True}
                conn.sendall((json.dumps(reply) + "\n").encode())


def test_with_ejb_require_a_job_the_manager_refuses_is_taken_back(slurm, jobs, tmp_path, local_cluster):
    filler = jobs.submit(local_cluster.cfg.nodes, name="filler")
    jobs.wait_running(filler)
    path = tmp_path / "dmr.sh"
    path.write_text("#!/bin/bash\n#SBATCH -o /dev/null\ndmr-run -- python -m dmr_apps.fs\n")
    manager = RefusingManager()
    try:
        args = ["-N", "4", "--ntasks-per-node", "2", "--ejb-require", "--ejb-manager", manager.address]
        res = ejb_submit(*args, str(path), env=slurm.cmd.env)
    finally:
        manager.server.close()
    assert res.returncode == 1 and res.stdout == "", res
    assert "not submitted (--ejb-require): the EJB manager did not take the job (no room)" in res.stderr
    # J0 was in the queue for a moment: cancelled in Slurm, and at the manager in case it took it
    assert len(manager.cancelled) == 1
    with pytest.raises(JobNotFound):  # neither pending nor running
        slurm.job(manager.cancelled[0])
