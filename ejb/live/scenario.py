"""The live EJB scenario of ``ejb demo``, ``ejb bench live`` and the end-to-end tests.

A rigid background job holds most of the cluster; a malleable job (FS under ``dmr-run``) that
needs more nodes than are free is submitted once with ``sbatch`` (it waits for the background
job) and once with ``ejb-submit`` (it starts at once in a subjob on the free nodes, over-subscribed,
and moves to its own job ``J0`` when that starts). Times come from Slurm's accounting (``sacct``).
The scenario types ``sbatch`` and ``ejb-submit`` as a user would; what it reads of Slurm and its
background job go through the adapter (:class:`~slurm_ext.slurm.SlurmCluster`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from dmr.launch import is_spare_of, is_subjob_of
from dmr_apps import script
from slurm_ext.backend import JobRequest
from slurm_ext.model import Node, NodeState
from slurm_ext.slurm import SlurmCluster
from slurm_ext.workloads.sacct import parse_json, sacct_record

FS = script("fs")


@dataclass(frozen=True)
class Shape:
    """Sizes of the scenario (defaults fit the 8-node local cluster: 6 busy, 2 free)."""

    background_nodes: int = 6
    background_seconds: int = 60
    nodes: int = 4
    ppn: int = 2
    steps: int = 40
    step_seconds: float = 1.0  # one step at full size
    state_mb: float = 16
    minutes: int = 5
    ejb: str = ""  # an #EJB directive line's options, e.g. "--migration 100"
    pin_background: bool = False  # the background job on the first nodes (see WIDE)
    partition: str = ""  # where the jobs go ("": Slurm's default partition)
    whole: bool = False  # --exclusive: whole nodes also where Slurm shares them (cons_tres)

    def script(self) -> str:
        ranks = self.nodes * self.ppn
        fs = (
            f"{sys.executable} {FS} --steps {self.steps} --step-seconds {self.step_seconds * ranks} "
            f"--state-mb {self.state_mb} --min 1 --max {ranks * 16}"
        )
        ejb = f"#EJB {self.ejb}\n" if self.ejb else ""
        where = "".join(f"#SBATCH {opt}\n" for opt in self.placement())
        return (
            f"#!/bin/bash\n#SBATCH -N {self.nodes}\n#SBATCH --ntasks-per-node={self.ppn}\n"
            f"#SBATCH -t {self.minutes}\n{where}{ejb}{sys.executable} -m dmr -- {fs}\n"
        )

    def placement(self) -> list[str]:
        """sbatch options of every job of the scenario: its partition, whole nodes."""
        where = [f"--partition={self.partition}"] if self.partition else []
        return where + (["--exclusive"] if self.whole else [])

    def fitted(self, idle: int, partition: str = "", whole: bool = False) -> Shape:
        """This scenario where ``idle`` nodes of ``partition`` are idle (whole nodes if ``whole``): as
        it is where 8 or more are, else its small form (:func:`small_form`)."""
        if idle >= 8:
            return replace(self, partition=partition, whole=whole)
        background, nodes = small_form(idle)
        # below ejb-submit's default smallest job (8 processors): the job says EJB may take it
        ranks = nodes * self.ppn
        ejb = " ".join(filter(None, [self.ejb, f"--min-procs {ranks}" if ranks < 8 else ""]))
        return replace(self, background_nodes=background, nodes=nodes, pin_background=True,
                       partition=partition, whole=whole, ejb=ejb)  # fmt: skip


def small_form(idle: int) -> tuple[int, int]:
    """(background nodes, job nodes) of the scenario on ``idle`` idle nodes, 3 to 7: as WIDE on 8, the
    job waits for the background job (pinned to the first nodes), Slurm plans it on those and some
    idle ones, and the rest stay free for good: a subjob there runs every rank until J0 starts, at
    most 4 per CPU on nodes of 2 CPUs (one node free for good per 4 job nodes)."""
    if idle < 3:
        raise ValueError(f"the scenario needs 3 idle nodes or more (the partition has {idle})")
    free_for_good = (idle + 4) // 5
    return free_for_good + 1, idle - free_for_good


# The demo's and the end-to-end test's job: 6 nodes while 4 of the 8 are busy. Backfill plans J0
# on the 4 busy nodes and 2 idle ones, which leaves 2 idle nodes free for good: a subjob there runs
# the 12 ranks three to a CPU (the manager's o_max is 4) until J0 starts; then all move to J0.
# Slurm plans J0 on the first 6 nodes, but places the background job wherever select/linear likes
# (after other work, often on the last nodes: then J0's plan takes 3 or 4 idle nodes and leaves
# too few free). The background job is pinned to the first nodes, so the scenario is the same
# every time.
WIDE = Shape(background_nodes=4, nodes=6, pin_background=True)


@dataclass
class Outcome:
    mode: str
    job: int
    submitted: float
    first_start: float
    end: float
    jobs: list[dict[str, Any]] = field(default_factory=list)  # every Slurm job of the run (sacct)
    result: dict[str, Any] | None = None  # FS_RESULT
    status: dict[str, Any] | None = None  # the EJB manager's record

    @property
    def turnaround(self) -> float:
        return self.end - self.submitted

    @property
    def wait(self) -> float:
        return self.first_start - self.submitted


def env_for(conf: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    if conf is not None:
        env["SLURM_CONF"] = str(conf)
    return env


def slurm_of(conf: Path | None) -> SlurmCluster:
    """The cluster the scenario runs on: ``conf``'s, else the environment's."""
    return SlurmCluster(slurm_conf=conf, timeout=120)


def accounted(slurm: SlurmCluster, job_ids: list[int], since: float) -> list[dict[str, Any]]:
    """Submit/start/end (epoch seconds) and state of each job submitted after ``since``, from
    Slurm's accounting (one record per job, or several for a resized one)."""
    start = (datetime.fromtimestamp(since) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    wanted = set(job_ids)
    rows = []
    for raw in parse_json(slurm.accounting(start, "now"), "sacct's output")["jobs"]:
        r = sacct_record(raw)
        if r.job_id in wanted:
            end = r.start + r.elapsed if r.start is not None and r.elapsed is not None else None
            rows.append({"job": r.job_id, "name": r.name, "submit": r.submit, "start": r.start, "end": end,
                         "state": r.state})  # fmt: skip
    return rows


def fs_result(text: str) -> dict[str, Any] | None:
    line = next((ln for ln in text.splitlines() if ln.startswith("FS_RESULT ")), None)
    return None if line is None else json.loads(line.removeprefix("FS_RESULT "))


def queue(slurm: SlurmCluster) -> list[tuple[int, str, str]]:
    """(id, name, state) of each job in the queue."""
    return [(j.job_id, j.name, str(j.state)) for j in slurm.snapshot().jobs]


class NotBundled(RuntimeError):
    """A job submitted with ``ejb-submit`` in a scenario that EJB did not take."""


def wait_for(cond: Callable[[], Any], timeout: float, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f} s")


def first_nodes(count: int, slurm: SlurmCluster, partition: str = "") -> list[str]:
    """The first ``count`` idle nodes of ``partition`` (the default one if ""), in Slurm's order."""
    names = [node.name for node in idle_nodes(slurm, partition)]
    if len(names) < count:
        where = partition or "(default)"
        raise RuntimeError(f"partition {where} has {len(names)} idle nodes, the scenario needs {count}")
    return names[:count]


def idle_nodes(slurm: SlurmCluster, partition: str = "") -> list[Node]:
    """The nodes of ``partition`` no job holds any part of or is planned on, in Slurm's order."""
    return [n for n in partition_nodes(slurm, partition) if n.state is NodeState.IDLE and not n.planned]


def partition_nodes(slurm: SlurmCluster, partition: str = "") -> list[Node]:
    """The nodes of ``partition``: of the default one if "", of the cluster if there is none."""
    name = partition or slurm.default_partition()
    return [node for node in slurm.nodes() if not name or name in node.partitions]


def background(shape: Shape, slurm: SlurmCluster) -> int:
    """The rigid job the scenario's job queues behind, submitted through ``slurm`` (as its user)."""
    pinned = first_nodes(shape.background_nodes, slurm, shape.partition) if shape.pin_background else []
    where = ("-w", ",".join(pinned)) if pinned else ()
    minutes = max(2, shape.background_seconds // 60 + 2)
    request = JobRequest(
        nodes=shape.background_nodes,
        time_limit=minutes * 60,
        name="rigid-background",
        command=f"sleep {shape.background_seconds}",
        extra_args=("-o", "/dev/null", *where, *shape.placement()),
    )
    return slurm.submit(request)


def run_once(
    mode: str,
    shape: Shape,
    workdir: Path,
    conf: Path | None = None,
    manager: str | None = None,
    with_background: bool = True,
    during: Callable[[int], None] | None = None,
    progress: Callable[[str], None] | None = None,
    user: str | None = None,
) -> Outcome:
    """Submit the job with ``sbatch`` or ``ejb-submit`` (behind the background job) and wait for its end.
    ``user``: who submits both (through ``runuser``: this process is root) [default: this process's]."""
    say = progress or (lambda _msg: None)
    workdir.mkdir(parents=True, exist_ok=True)
    env = env_for(conf)
    slurm = slurm_of(conf)
    since = time.time()
    if manager is not None:
        env["EJB_MANAGER"] = manager
    script = workdir / f"job-{mode}.sh"
    script.write_text(shape.script())
    if user is not None:
        shutil.chown(workdir, user)  # the job writes its output there
    bg = background(shape, slurm if user is None else slurm.as_user(user)) if with_background else None
    if bg is not None:
        wait_for(lambda: slurm.job_state(bg)[0] == "RUNNING", 60, 0.3)
        say(f"background job {bg} holds {shape.background_nodes} nodes for {shape.background_seconds} s")
    # A run through EJB that EJB would not take shows nothing of EJB: --ejb-require then submits
    # nothing and says why, and the background job is stopped here.
    submit = ["sbatch", "--parsable"] if mode == "sbatch" else ["ejb-submit", "--parsable", "--ejb-require"]
    argv = [*submit, "-o", str(workdir / f"{mode}-%j.out"), str(script)]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=workdir, check=False, timeout=120)
    if res.returncode != 0:
        if bg is not None:
            slurm.cancel(bg)
        said = res.stderr.strip().splitlines()[-1:] or [f"exit code {res.returncode}"]
        if mode == "ejb":  # ejb-submit --ejb-require submitted nothing, and said why
            raise NotBundled(f"EJB did not take the job, so nothing was submitted ({said[0]})")
        raise RuntimeError(f"sbatch: {said[0]}")
    out = res.stdout + res.stderr
    job = int(next(ln for ln in out.splitlines() if ln.strip().isdigit()).strip())
    say(f"{mode}: job {job} submitted ({shape.nodes} nodes x {shape.ppn} ranks, {shape.steps} steps)")
    if during is not None:
        during(job)
    wait_for(lambda: not leftover(slurm, job), 900)
    if bg is not None:
        wait_for(lambda: not any(j == bg for j, _, _ in queue(slurm)), 300)
    time.sleep(1.0)  # accounting catches up with the last job's end
    status = None
    if mode == "ejb":
        from ejb.live.client import manager_address, request

        apps = request(manager_address(manager), {"op": "status", "eid": job})["apps"]
        if not apps:
            raise NotBundled(f"the EJB manager does not know job {job} (ejb-submit said: {out.strip()})")
        status = apps[0]
    ids = [job] + ([int(s["job_id"]) for s in status["subjobs"].values() if s["job_id"]] if status else [])
    rows = accounted(slurm, sorted(set(ids)), since)
    starts = [r["start"] for r in rows if r["start"] is not None]
    ends = [r["end"] for r in rows if r["end"] is not None]
    submitted = next(r["submit"] for r in rows if r["job"] == job)
    text = (workdir / f"{mode}-{job}.out").read_text() if (workdir / f"{mode}-{job}.out").exists() else ""
    return Outcome(mode, job, submitted, min(starts), max(ends), rows, fs_result(text), status)


def leftover(slurm: SlurmCluster, job: int) -> list[int]:
    """Jobs of a bundled job still in the queue (J0, any subjob or spare)."""
    return [j for j, n, _ in queue(slurm) if j == job or is_subjob_of(n, job) or is_spare_of(n, job)]


def start_manager(
    state_dir: Path, log: Path, port: int, service_port: int, conf: Path | None = None, *args: str,
    crash_at: str | None = None, host: str = "127.0.0.1",
) -> subprocess.Popen[bytes]:  # fmt: skip
    """``ejb manager`` as a process listening on ``host`` (output appended to ``log``); returns once it
    answers on 127.0.0.1."""
    from ejb.live.client import request

    env = {k: v for k, v in env_for(conf).items() if k != "ELASTIC_CRASH_AT"}
    if crash_at:
        env["ELASTIC_CRASH_AT"] = crash_at
    cmd = [sys.executable, "-m", "ejb", "manager", "--port", str(port), "--service-port", str(service_port),
           "--state-dir", str(state_dir), "--host", host, *args]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            request(f"127.0.0.1:{port}", {"op": "ping"}, timeout=1.0)
            return proc
        except (OSError, ValueError):
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the EJB manager did not start:\n{log.read_text()[-2000:]}")


def stop_manager(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
