"""End-to-end on the local Slurm cluster (`slurm-ext cluster up`): real jobs, real resizes.

Each test runs its own control service in-process (real SlurmCluster adapter, DMR policy,
a free TCP port), submits Flexible Sleep with ``srun --mpi=pmi2``, and cancels whatever it
submitted. After every test: no resizer job is left behind.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from dmr_apps import script
from slurm_ext.config import load_config
from slurm_ext.local.cluster import LocalCluster
from slurm_ext.policies.base import Policy
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.slurm.adapter import EXPANDER_PREFIX, RESIZER_PREFIX, SlurmCluster

REPO = Path(__file__).resolve().parents[2]
FS = script("fs")


def slurm_env(conf: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    conf = conf or load_config().cluster.slurm_conf
    if conf.exists():
        env["SLURM_CONF"] = str(conf)
    for var in ("SLURM_JOB_ID", "SLURM_JOBID"):
        env.pop(var, None)
    return env


def sh(*args: str, check: bool = True, conf: Path | None = None) -> str:
    res = subprocess.run(args, capture_output=True, text=True, env=slurm_env(conf), timeout=60)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def idle_nodes(conf: Path | None = None) -> int:
    # `sinfo -t idle` also lists nodes still completing a cancelled job (state "completing"):
    # they are not free yet, and a test started on them sees a smaller cluster. A node in two
    # partitions is listed twice: counted once.
    out = sh("sinfo", "-h", "-N", "-t", "idle", "-o", "%N %T", conf=conf)
    return len({n for n, state in (ln.split() for ln in out.splitlines()) if state == "idle"})


@dataclass
class Slurm:
    """Submits and tracks this test's jobs; cancels them at the end."""

    tmp: Path
    jobs: list[int] = field(default_factory=list)
    conf: Path | None = None  # the cluster's slurm.conf (None: the default local cluster)

    def sbatch(
        self,
        nodes: int,
        script: str,
        name: str,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> int:
        path = self.tmp / f"{name}.sh"
        path.write_text("#!/bin/bash\n" + script + "\n")
        out = self.tmp / f"{name}-%j.out"
        full_env = {**slurm_env(self.conf), **(env or {})}
        cmd = ["sbatch", "--parsable", "-N", str(nodes), "-t", "10", "-J", name, "-o", str(out), *args]
        res = subprocess.run(
            [*cmd, str(path)], capture_output=True, text=True, env=full_env, check=True, timeout=60
        )
        job_id = int(res.stdout.strip().split(";")[0])
        self.jobs.append(job_id)
        return job_id

    def fs(self, service: tuple[str, int], args: str, name: str = "fs", env: dict | None = None) -> int:
        script = f"srun --mpi=pmi2 -n 1 {sys.executable} {FS} {args}\necho srun-exit $?"
        return self.sbatch(1, script, name, {"DMR_SERVICE": f"{service[0]}:{service[1]}", **(env or {})})

    def dmr_fs(
        self, service: tuple[str, int], launch: int, args: str, name: str = "fs", ppn: int = 2,
        env: dict[str, str] | None = None, sbatch_args: tuple[str, ...] = (), run_args: str = "",
    ) -> int:  # fmt: skip
        """FS under ``dmr-run [run_args]`` (a group of ``ppn`` ranks per node) started on ``launch`` nodes."""
        run = f"{sys.executable} -m dmr --ppn {ppn} {run_args}".rstrip()
        script = f"{run} -- {sys.executable} {FS} {args}\necho dmr-run-exit $?"
        env = {"DMR_SERVICE": f"{service[0]}:{service[1]}", **(env or {})}
        return self.sbatch(launch, script, name, env, args=(f"--ntasks-per-node={ppn}", *sbatch_args))

    def squeue(self) -> list[tuple[int, str, str]]:
        """(id, name, state) of every job on the cluster."""
        out = sh("squeue", "-h", "-o", "%i|%j|%T", conf=self.conf)
        return [(int(i), n, st) for i, n, st in (ln.split("|") for ln in out.splitlines())]

    def job(self, job_id: int) -> dict | None:
        out = sh("squeue", "-h", "-j", str(job_id), "-o", "%T|%D|%N|%l", check=False, conf=self.conf).strip()
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
            sh("scancel", str(job_id), check=False, conf=self.conf)


def resizer_jobs() -> list[str]:
    out = sh("squeue", "-h", "-o", "%i %j %T")
    return [ln for ln in out.splitlines() if RESIZER_PREFIX in ln]


@pytest.fixture
def slurm(tmp_path: Path, local_cluster: object) -> Iterator[Slurm]:
    # local_cluster (tests/conftest.py) brings the cluster up, or skips locally / fails under CI.
    # Every node idle: a node still completing the previous test's job would change the policy's
    # answer (e.g. no expansion at the first check).
    total = len(set(sh("sinfo", "-h", "-N", "-o", "%N").split()))
    deadline = time.monotonic() + 120
    while idle_nodes() < total:
        if time.monotonic() > deadline:
            pytest.fail(f"needs {total} idle nodes, the cluster has {idle_nodes()} (busy with other work?)")
        time.sleep(0.5)
    s = Slurm(tmp_path)
    yield s
    s.cleanup()


def start_service(
    conf: Path, strategy: str = "auto", expand_timeout: float = 5, policy: Policy | None = None,
    plan_interval: float = 0.0,
) -> Server:  # fmt: skip
    backend = SlurmCluster(slurm_conf=conf)
    options = ServiceOptions(expand_timeout=expand_timeout, snapshot_interval=0.5, expand_strategy=strategy,
                             plan_interval=plan_interval)  # fmt: skip
    server = Server(Controller(backend, policy or DMRPolicy(), options), host="127.0.0.1", port=0)
    server.start()
    return server


def stop_service(server: Server, conf: Path | None = None) -> None:
    server.stop()
    server.controller.background.shutdown(wait=True)
    # A helper job that is ending (COMPLETING, or its agent's watch just closed) gets Slurm's time to
    # go; one still there after 30 s is left behind (nothing cancels it once the service is stopped).
    deadline = time.monotonic() + 30
    while True:
        left = [ln for ln in sh("squeue", "-h", "-o", "%i %j %T", conf=conf).splitlines()
                if RESIZER_PREFIX in ln or EXPANDER_PREFIX in ln]  # fmt: skip
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert left == [], f"resizer or expander jobs left behind: {left}"


@pytest.fixture
def service() -> Iterator[Server]:
    server = start_service(load_config().cluster.slurm_conf)
    yield server
    stop_service(server)


@pytest.fixture
def make_service() -> Iterator[Callable[..., Server]]:
    """``make_service(strategy, conf=None, policy=None, plan_interval=0)``: a service with that
    expansion strategy and policy (DMR by default; the whole-cluster pass off unless given), stopped
    after the test."""
    started: list[tuple[Server, Path]] = []

    def make(
        strategy: str = "auto", conf: Path | None = None, expand_timeout: float = 5,
        policy: Policy | None = None, plan_interval: float = 0.0,
    ) -> Server:  # fmt: skip
        conf = conf or load_config().cluster.slurm_conf
        server = start_service(conf, strategy, expand_timeout, policy, plan_interval)
        started.append((server, conf))
        return server

    yield make
    for server, conf in started:
        stop_service(server, conf)


STOCK_PORTS = {"slurmctld": 7817, "slurmdbd": 7819, "mariadb": 4307, "slurmd_base": 18001}


@pytest.fixture(scope="session")
def stock_cluster(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A second, 4-node cluster as Slurm ships it: `cluster up --no-expansion` (own state and ports)."""
    base = load_config().cluster
    cfg = replace(
        base, name="stock", nodes=4, expansion=False, state_dir=Path(str(base.state_dir) + "-stock"),
        slurmctld_port=STOCK_PORTS["slurmctld"], slurmdbd_port=STOCK_PORTS["slurmdbd"],
        mariadb_port=STOCK_PORTS["mariadb"], slurmd_base_port=STOCK_PORTS["slurmd_base"],
    )  # fmt: skip
    cluster = LocalCluster(cfg)
    cluster.up(expansion=False)
    yield cluster
    cluster.down()


@pytest.fixture
def stock(tmp_path: Path, stock_cluster: LocalCluster) -> Iterator[Slurm]:
    s = Slurm(tmp_path, conf=stock_cluster.cfg.slurm_conf)
    deadline = time.monotonic() + 60
    while idle_nodes(s.conf) < 4:
        if time.monotonic() > deadline:
            pytest.fail("the stock cluster's 4 nodes are not idle")
        time.sleep(0.5)
    yield s
    s.cleanup()


def serve_process(port: int, log: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`slurm-ext serve` as its own process on 127.0.0.1:``port`` (output appended to ``log``)."""
    full_env = {k: v for k, v in os.environ.items() if k != "ELASTIC_CRASH_AT"} | (env or {})
    cmd = [sys.executable, "-m", "slurm_ext", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    proc = subprocess.Popen(cmd, env=full_env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the service did not start:\n{log.read_text()}")


def stop_process(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM, as an admin stops the service; killed if it has not exited by ``timeout`` (then the
    test fails: a service that ignores SIGTERM is a bug), so that no test leaves it running."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise
