"""End-to-end on the local Slurm cluster (`slurm-ext cluster up`): real jobs, real resizes.

Each test runs its own control service in-process (real SlurmCluster adapter, DMR policy,
a free TCP port), submits Flexible Sleep with ``srun --mpi=pmi2``, and cancels whatever it
submitted. After every test: no resizer job is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurm_ext.config import load_config
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.slurm.adapter import RESIZER_PREFIX, SlurmCluster

REPO = Path(__file__).resolve().parents[2]
FS = REPO / "apps" / "fs.py"


def slurm_env() -> dict[str, str]:
    env = dict(os.environ)
    conf = load_config().cluster.slurm_conf
    if conf.exists():
        env["SLURM_CONF"] = str(conf)
    for var in ("SLURM_JOB_ID", "SLURM_JOBID"):
        env.pop(var, None)
    return env


def sh(*args: str, check: bool = True) -> str:
    res = subprocess.run(args, capture_output=True, text=True, env=slurm_env(), timeout=60)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def idle_nodes() -> int:
    return int(sh("sinfo", "-h", "-t", "idle", "-o", "%D").strip() or 0)


@dataclass
class Slurm:
    """Submits and tracks this test's jobs; cancels them at the end."""

    tmp: Path
    jobs: list[int] = field(default_factory=list)

    def sbatch(self, nodes: int, script: str, name: str, env: dict[str, str] | None = None) -> int:
        path = self.tmp / f"{name}.sh"
        path.write_text("#!/bin/bash\n" + script + "\n")
        out = self.tmp / f"{name}-%j.out"
        full_env = {**slurm_env(), **(env or {})}
        res = subprocess.run(
            ["sbatch", "--parsable", "-N", str(nodes), "-t", "10", "-J", name, "-o", str(out), str(path)],
            capture_output=True, text=True, env=full_env, check=True, timeout=60,
        )  # fmt: skip
        job_id = int(res.stdout.strip().split(";")[0])
        self.jobs.append(job_id)
        return job_id

    def fs(self, service: tuple[str, int], args: str, name: str = "fs", env: dict | None = None) -> int:
        script = f"srun --mpi=pmi2 -n 1 {sys.executable} {FS} {args}\necho srun-exit $?"
        return self.sbatch(1, script, name, {"DMR_SERVICE": f"{service[0]}:{service[1]}", **(env or {})})

    def job(self, job_id: int) -> dict | None:
        out = sh("squeue", "-h", "-j", str(job_id), "-o", "%T|%D|%N|%l", check=False).strip()
        if not out:
            return None
        state, count, nodes, limit = out.split("|")
        return {"state": state, "nodes": int(count), "nodelist": nodes, "limit": limit}

    def wait(self, cond, timeout: float = 120, every: float = 0.3):  # noqa: ANN001, ANN201
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = cond()
            if value:
                return value
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout} s waiting for {cond}")

    def wait_gone(self, job_id: int, timeout: float = 180) -> None:
        self.wait(lambda: self.job(job_id) is None, timeout)

    def output(self, name: str, job_id: int) -> str:
        path = self.tmp / f"{name}-{job_id}.out"
        return path.read_text() if path.exists() else ""

    def fs_result(self, name: str, job_id: int) -> dict:
        text = self.output(name, job_id)
        line = next((ln for ln in text.splitlines() if ln.startswith("FS_RESULT ")), None)
        assert line is not None, f"no FS_RESULT in the output of job {job_id}:\n{text}"
        return json.loads(line.removeprefix("FS_RESULT "))

    def cleanup(self) -> None:
        for job_id in self.jobs:
            sh("scancel", str(job_id), check=False)


def resizer_jobs() -> list[str]:
    out = sh("squeue", "-h", "-o", "%i %j %T")
    return [ln for ln in out.splitlines() if RESIZER_PREFIX in ln]


@pytest.fixture
def slurm(tmp_path: Path, local_cluster: object) -> Iterator[Slurm]:
    # local_cluster (tests/conftest.py) brings the cluster up, or skips locally / fails under CI.
    deadline = time.monotonic() + 60
    while idle_nodes() < 4:
        if time.monotonic() > deadline:
            pytest.fail(f"needs 4 idle nodes, the cluster has {idle_nodes()} (busy with other work?)")
        time.sleep(0.5)
    s = Slurm(tmp_path)
    yield s
    s.cleanup()


@pytest.fixture
def service() -> Iterator[Server]:
    backend = SlurmCluster(slurm_conf=load_config().cluster.slurm_conf)
    ctl = Controller(backend, DMRPolicy(), ServiceOptions(expand_timeout=5, snapshot_interval=0.5))
    server = Server(ctl, host="127.0.0.1", port=0)
    server.start()
    yield server
    server.stop()
    ctl.background.shutdown(wait=True)
    assert resizer_jobs() == [], "a resizer job was left behind"
