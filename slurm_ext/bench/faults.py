"""``slurm-ext bench faults``: the faults a production cluster has, on the local cluster.

A control service runs in-process (DMR policy, merge expansion), and a probe stands for the
other users: the rank 0 of another 1-node job, checking every 20 ms. Each scenario prints:

- ``detection``: from the fault until the toolkit acted on it (the application's agent ending
  its job; the service's circuit opening on a slurmctld that is away);
- ``repair``: from the fault (the outage: from slurmctld's return) until the cluster is whole
  again: the job gone or answered normally, nothing in flight, no helper job, the nodes back
  in service or given to the job they were freed for;
- ``others p99``: the probe's check latency, 99th percentile, over the scenario;
- ``nodes lost``: nodes not back in service within 60 s of the repair.

Scenarios: ``rank-killed`` (a rank of a job grown to 4 nodes killed with SIGKILL),
``rank-killed-continue`` (the same, the job run with ``dmr-run --on-failure continue``: it goes on
without the failed node),
``rank-killed-in-shrink`` (a leaving rank killed while the job shrinks for a waiting job),
``service-killed`` (the job's control service killed, then a rank, then the service restarted on
its journal),
``slurmctld-outage`` (slurmctld stopped for ``--outage-seconds``, then started again), ``flood``
(another user, ``nobody``, holding more idle connections than its share and flooding checks while
a job of ours grows), ``slurmctld-killed-in-merge`` / ``-in-expander`` (slurmctld killed with
SIGKILL as a job grows, when the resizer has handed its nodes over / the expander job is queued,
and started again: Slurm loses its last seconds of state; what the toolkit must keep is no helper
job left, nothing in flight, and a running job's allocation equal to its ranks' nodes);
``slurmctld-killed-in-STRATEGY@STEP`` at one step of ``KILL_STEPS`` and
``slurmctld-killed-at-each-step`` at every one, merge and expander.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from hostlist import expand_hostlist

from slurm_ext.bench.flood import CREDENTIAL
from slurm_ext.service import journal as jr
from slurm_ext.slurm.adapter import MERGE_HANDED_OVER, MERGE_RESIZER_GONE, MERGE_RESIZER_RUNNING

# The steps of a growth at which slurmctld is killed: around each of the service's Slurm calls.
KILL_STEPS = {
    "merge": (jr.EXPAND_DECIDED, MERGE_RESIZER_RUNNING, MERGE_HANDED_OVER, MERGE_RESIZER_GONE,
              jr.EXPAND_MERGED, jr.EXPAND_ANSWERED, jr.COMMIT_RECEIVED),
    "expander": (jr.EXPAND_DECIDED, jr.EXPANDER_SUBMITTED, jr.EXPAND_ANSWERED, jr.COMMIT_RECEIVED),
}  # fmt: skip
DEFAULT_KILL_STEP = {"merge": MERGE_HANDED_OVER, "expander": jr.EXPANDER_SUBMITTED}
SCENARIOS = ("rank-killed", "rank-killed-continue", "rank-killed-in-shrink", "service-killed",
             "slurmctld-outage", "flood", "slurmctld-killed-in-merge",
             "slurmctld-killed-in-expander")  # fmt: skip
EACH_STEP = "slurmctld-killed-at-each-step"
# one step: slurmctld-killed-in-STRATEGY@STEP
ONE_STEP = tuple(f"slurmctld-killed-in-{s}@{step}" for s, steps in KILL_STEPS.items() for step in steps)
EXTRA = (EACH_STEP, *ONE_STEP)
TARGETS = {"detection_s": 10.0, "repair_s": 30.0, "others_p99_ms": 20.0, "nodes_lost": 0}
FLOOD_SCRIPT = Path(__file__).with_name("flood.py")
SYSTEM_PYTHON = "/usr/bin/python3"  # readable by any user (a pyenv under /root is not)
PPN = 2
RUN_BEFORE_KILL = 10.0  # seconds a job runs before the growth in which slurmctld is killed


@dataclass
class Row:
    scenario: str
    detection_s: float | None
    repair_s: float | None
    others_p99_ms: float
    nodes_lost: int
    note: str


# -- what runs where ----------------------------------------------------------------------------
def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def app_ranks(job_id: int) -> dict[int, dict[str, str]]:
    """{pid: environment} of every MPI rank of the application whose own job is ``job_id``, its
    ranks in expander jobs included (they share its agent). The local cluster's nodes are this
    host's processes, so /proc shows them all."""
    envs = {int(d): _environ(int(d)) for d in os.listdir("/proc") if d.isdigit()}
    ranks = {pid: env for pid, env in envs.items() if "PMI_RANK" in env and "DMR_AGENT" in env}
    agents = {env["DMR_AGENT"] for env in ranks.values() if env.get("SLURM_JOB_ID") == str(job_id)}
    return {pid: env for pid, env in ranks.items() if env["DMR_AGENT"] in agents}


def flood_args(
    host: str, port: int, idle: int, flooders: int, seconds: float, lines: list[bytes], munge: bool = False
) -> list[str]:
    """The arguments of :mod:`slurm_ext.bench.flood` (after the script's path); ``munge``: each
    connection proves its user with a MUNGE credential first (a client on another host)."""
    from slurm_ext import protocol as p

    auth = ["--auth", p.Auth(credential=CREDENTIAL.decode()).encode().hex()] if munge else []
    return [host, str(port), str(idle), str(flooders), str(seconds), *auth, *(ln.hex() for ln in lines)]


def run_flood(host: str, port: int, idle: int, flooders: int, seconds: float, lines: list[bytes]) -> dict:
    """Run :mod:`slurm_ext.bench.flood` as user ``nobody``; its JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "flood.py"
        shutil.copy(FLOOD_SCRIPT, script)
        os.chmod(tmp, 0o755)
        script.chmod(0o644)
        cmd = [SYSTEM_PYTHON, str(script), *flood_args(host, port, idle, flooders, seconds, lines)]
        res = subprocess.run(cmd, user=65534, cwd="/", capture_output=True, text=True,
                             timeout=seconds + 120, check=True)  # fmt: skip
        return json.loads(res.stdout)


class Probe(threading.Thread):
    """Another job's rank 0: checks every ``every`` seconds, keeping (time, seconds, reason)."""

    def __init__(self, address: tuple[str, int], job_id: int, node: str, every: float = 0.02) -> None:
        super().__init__(name="probe", daemon=True)
        self.address, self.job_id, self.node, self.every = address, job_id, node, every
        self.samples: list[tuple[float, float, str]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        from dmr.client import ServiceClient
        from slurm_ext import protocol as p

        client = ServiceClient(self.address, timeout=30.0, retry=0.0)
        check = p.Check(job_id=self.job_id, current=1, min=1, max=1, nodes=[self.node])
        while not self.stopping.wait(self.every):
            t0 = time.perf_counter()
            answer = client.request(check)
            reason = getattr(answer, "reason", "no answer")
            self.samples.append((time.monotonic(), time.perf_counter() - t0, reason))

    def p99_ms(self, since: float, until: float | None = None) -> float:
        waits = [s for t, s, _ in self.samples if t >= since and (until is None or t <= until)]
        return statistics.quantiles(waits, n=100)[98] * 1e3 if len(waits) >= 2 else float("nan")


# -- the bench ----------------------------------------------------------------------------------
class Bench:
    def __init__(self, workdir: Path) -> None:
        from slurm_ext.config import load_config
        from slurm_ext.local.cluster import LocalCluster
        from slurm_ext.policies.dmr import DMRPolicy
        from slurm_ext.service import Controller, Server, ServiceOptions
        from slurm_ext.slurm.adapter import SlurmCluster

        self.cfg = load_config().cluster
        self.local = LocalCluster(self.cfg)
        self.workdir = workdir
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
        self.env["SLURM_CONF"] = str(self.cfg.slurm_conf)
        options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, expand_strategy="merge")
        self.ctl = Controller(SlurmCluster(slurm_conf=self.cfg.slurm_conf), DMRPolicy(), options)
        self.server = Server(self.ctl, port=0)
        self.jobs: list[int] = []

    # -- Slurm ----------------------------------------------------------------------------------
    def sh(self, *args: str, check: bool = True) -> str:
        res = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=60, check=False)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    def sbatch(self, nodes: int, name: str, script: str, *extra: str, env: dict | None = None) -> int:
        path = self.workdir / f"{name}.sh"
        path.write_text(f"#!/bin/bash\n{script}\n")
        cmd = ["sbatch", "--parsable", "-N", str(nodes), "-t", "10", "-J", name,
               "-o", str(self.workdir / f"{name}-%j.out"), *extra, str(path)]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, env={**self.env, **(env or {})}, check=True)
        job = int(res.stdout.strip().split(";")[0])
        self.jobs.append(job)
        return job

    def state(self, job: int) -> str:
        return self.sh("squeue", "-h", "-j", str(job), "-o", "%T", check=False).strip()

    def idle(self) -> int:
        out = self.sh("sinfo", "-h", "-N", "-o", "%T", check=False)
        return sum(1 for s in out.split() if s == "idle")

    def helpers(self) -> list[str]:
        """Helper jobs left behind: any resizer, and expander jobs whose application does not run
        (one that hosts a running application's ranks is part of it)."""
        from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX, served_job

        out = self.sh("squeue", "-h", "-o", "%i|%j|%T", check=False)
        rows = [ln.split("|") for ln in out.split()]
        running = {int(i) for i, _, st in rows if st == "RUNNING"}
        return [
            n for _, n, _ in rows
            if n.startswith(RESIZER_PREFIX)
            or (n.startswith(EXPANDER_PREFIX) and served_job(n, EXPANDER_PREFIX) not in running)
        ]  # fmt: skip

    def output(self, name: str, job: int) -> str:
        path = self.workdir / f"{name}-{job}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def cancel_all(self, keep: int | None = None) -> None:
        if ids := [str(j) for j in self.jobs if j != keep]:
            self.sh("scancel", *ids, check=False)

    def wait(self, cond: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> float:
        """Seconds until ``cond()`` is true; raises after ``timeout``."""
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(every)
        return time.monotonic() - t0

    def nodes_lost(self, free_before: int) -> int:
        """Nodes not back in service 60 s after a scenario (the probe's job keeps its own)."""
        with contextlib.suppress(TimeoutError):
            self.wait(lambda: self.idle() >= free_before, 60, "the nodes to come back", 0.5)
        return max(0, free_before - self.idle())

    # -- scenarios ------------------------------------------------------------------------------
    def start_app(self, name: str, service: tuple[str, int] | None = None, run_args: str = "") -> int:
        """FS under ``dmr-run [run_args]`` on 1 node, 2 ranks, malleable up to 4 nodes under the
        service (ours, or ``service``)."""
        from dmr_apps import script

        host, port = service or self.server.address
        fs = f"{sys.executable} -m dmr --ppn {PPN} {run_args} -- {sys.executable} {script('fs')}"
        return self.sbatch(1, name, f"{fs} --steps 600 --step-seconds 1 --state-mb 8 --max {4 * PPN}\n"
                           "echo dmr-run-exit $?", f"--ntasks-per-node={PPN}",
                           env={"DMR_SERVICE": f"{host}:{port}"})  # fmt: skip

    def grown_app(
        self, name: str, service: tuple[str, int] | None = None, run_args: str = ""
    ) -> tuple[int, dict[int, dict[str, str]]]:
        """:meth:`start_app`, grown to 4 nodes (8 ranks): the expansion done (FS says so), not only
        its ranks started (until they are taken into the world they are no part of it)."""
        job = self.start_app(name, service, run_args)
        done = f": expand {PPN}->{4 * PPN} in "
        self.wait(lambda: done in self.output(name, job), 120, f"{name} to grow to 4 nodes", 0.3)
        self.wait(lambda: len(app_ranks(job)) == 4 * PPN, 30, f"{name}'s 8 ranks", 0.3)
        return job, app_ranks(job)

    def rank_killed(self, probe: Probe) -> Row:
        free = self.idle()
        job, ranks = self.grown_app("killed")
        first = next(e["DMR_NODE"] for e in ranks.values() if e.get("SLURM_JOB_ID") == str(job))
        victim = next(pid for pid, e in ranks.items() if e["DMR_NODE"] != first)
        time.sleep(2)
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        detected = self.wait(lambda: "dmr: the group on" in self.output("killed", job), 60, "the agent")
        self.wait(lambda: not self.state(job) and not self.helpers() and self.idle() >= free, 90, "repair")
        repaired = time.monotonic() - t0
        what = f"rank {ranks[victim]['PMI_RANK']} on {ranks[victim]['DMR_NODE']} (of 8 on 4 nodes)"
        return Row("rank-killed", detected, repaired, probe.p99_ms(t0), self.nodes_lost(free), what)

    def rank_killed_continue(self, probe: Probe) -> Row:
        """As ``rank-killed``, the job run with ``dmr-run --on-failure continue``: detection is the
        agent's restart line, repair the application's ranks running again on the job's other
        nodes with the failed node out of the job."""
        free = self.idle()
        job, ranks = self.grown_app("continued", run_args="--on-failure continue --checkpoint-every 5")
        first = next(e["DMR_NODE"] for e in ranks.values() if e.get("SLURM_JOB_ID") == str(job))
        victim = next(pid for pid, e in ranks.items() if e["DMR_NODE"] != first)
        where = ranks[victim]["DMR_NODE"]
        time.sleep(6)  # a checkpoint past the growth
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        detected = self.wait(lambda: "dmr: continuing on" in self.output("continued", job), 60, "the agent")

        def resumed() -> bool:
            nodes = {e["DMR_NODE"] for e in app_ranks(job).values()}
            held = self.sh("squeue", "-h", "-j", str(job), "-o", "%N", check=False)
            return len(nodes) >= 3 and where not in nodes and where not in expand_hostlist(held.strip())

        self.wait(resumed, 90, "the application to run again without the failed node")
        repaired = time.monotonic() - t0
        p99 = probe.p99_ms(t0)
        said = next(ln for ln in self.output("continued", job).splitlines() if "dmr: continuing on" in ln)
        self.sh("scancel", str(job), check=False)
        self.wait(lambda: not self.state(job), 60, "the job to end")
        return Row("rank-killed-continue", detected, repaired, p99, self.nodes_lost(free),
                   f"rank on {where} killed; {said.removeprefix('dmr: ')}")  # fmt: skip

    def rank_killed_in_shrink(self, probe: Probe) -> Row:
        free = self.idle()
        job, _ = self.grown_app("shrinking")
        filler = self.sbatch(max(1, self.idle()), "filler", "sleep 600") if self.idle() else None
        if filler is not None:
            self.wait(lambda: self.state(filler) == "RUNNING", 60, "the filler job to start")
        rigid = self.sbatch(2, "rigid", "sleep 600")
        shrinking = lambda: (r := self.ctl.inflight.get(job)) is not None and r.kind == "shrink"  # noqa: E731
        self.wait(shrinking, 90, "a shrink")
        r = self.ctl.inflight.get(job)
        leaving = {n for n in (r.old_nodes if r else []) if r and n not in r.nodes}
        ranks = app_ranks(job)
        victim = next((pid for pid, e in ranks.items() if e["DMR_NODE"] in leaving), max(ranks, default=0))
        t0 = time.monotonic()
        if victim:
            os.kill(victim, signal.SIGKILL)
        detected = self.wait(
            lambda: not self.state(job) or "dmr: the group on" in self.output("shrinking", job), 60, "the end"
        )
        self.wait(
            lambda: not self.state(job) and self.ctl.inflight.get(job) is None and not self.helpers()
            and self.state(rigid) == "RUNNING", 120, "the repair",
        )  # fmt: skip
        repaired = time.monotonic() - t0
        p99 = probe.p99_ms(t0)
        self.sh("scancel", str(rigid), *([str(filler)] if filler else []), check=False)
        where = ranks.get(victim, {}).get("DMR_NODE", "?")
        return Row("rank-killed-in-shrink", detected, repaired, p99, self.nodes_lost(free),
                   f"a leaving rank on {where} killed mid-shrink; the waiting job ran")  # fmt: skip

    def serve(self, port: int) -> subprocess.Popen[bytes]:
        """A control service of its own (a process that can be killed), journal in the workdir."""
        from slurm_ext import protocol as p

        state = self.workdir / "service"
        cmd = [sys.executable, "-m", "slurm_ext", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--journal-dir", str(state / "journal"), "--events", str(state / "events.jsonl"),
               "--expand-strategy", "merge"]  # fmt: skip
        log = (self.workdir / "service.log").open("ab")
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT)

        def answers() -> bool:
            try:
                conn = p.Connection.connect(("127.0.0.1", port))
            except OSError:
                return False
            conn.close()
            return True

        self.wait(answers, 30, "the service to listen")
        return proc

    def in_flight(self, port: int) -> dict[str, str]:
        from slurm_ext import protocol as p

        conn = p.Connection.connect(("127.0.0.1", port))
        try:
            status = conn.request(p.StatusRequest())
        finally:
            conn.close()
        return dict(getattr(status, "in_flight", {}) or {})

    def service_killed(self, probe: Probe) -> Row:
        from slurm_ext import protocol as p

        free = self.idle()
        port = p.free_port()
        service = self.serve(port)
        job, ranks = self.grown_app("orphaned", ("127.0.0.1", port))
        first = next(e["DMR_NODE"] for e in ranks.values() if e.get("SLURM_JOB_ID") == str(job))
        victim = next(pid for pid, e in ranks.items() if e["DMR_NODE"] != first)
        service.kill()
        service.wait()
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        detected = self.wait(lambda: "dmr: the group on" in self.output("orphaned", job), 60, "the agent")
        service = self.serve(port)  # the same journal: it repairs what the killed one left
        try:
            self.wait(lambda: not self.state(job) and not self.helpers() and self.idle() >= free
                      and not self.in_flight(port), 90, "the repair")  # fmt: skip
        finally:
            service.terminate()
            service.wait(30)
        repaired = time.monotonic() - t0
        what = "service killed, then a rank: the agent ended the job; restarted, the service kept nothing"
        return Row("service-killed", detected, repaired, probe.p99_ms(t0), self.nodes_lost(free), what)

    def kill_slurmctld(self) -> None:
        """SIGKILL: no state saved on the way out (a crash, an OOM kill, a node lost)."""
        from slurm_ext.local.daemons import process_alive

        _, daemons = self.local.registry.load()
        (ctld,) = [d for d in daemons if d.name == "slurmctld"]
        pid = ctld.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            self.wait(lambda: not process_alive(pid, ctld.comm), 10, "slurmctld to die")

    def last_job_id(self) -> int:
        ids = self.sh("squeue", "-h", "-o", "%i", check=False).split()
        return max([int(i) for i in ids if i.isdigit()] + self.jobs, default=0)

    def skip_lost_ids(self, last: int) -> int:
        """A SIGKILLed slurmctld may have lost the ids it gave in its last seconds and give them again;
        a new job then collides with a lost one still running on its nodes ('Duplicate jobid': the
        node drained, MPI's setup failing on the shared job.step). Ids up to ``last`` are used up
        with held jobs cancelled at once, as a site would after such a crash; returns how many."""
        used = 0
        while True:
            out = self.sh("sbatch", "--parsable", "--hold", "-J", "skip-lost-id", "--wrap", "true")
            job = int(out.split(";")[0])
            self.jobs.append(job)  # cancelled again at the end, should this cancel be lost too
            self.sh("scancel", str(job), check=False)
            if job > last:
                return used
            used += 1

    def slurmctld_killed(self, probe: Probe, strategy: str, step: str) -> Row:
        from slurm_ext.faults import at_step
        from slurm_ext.policies.dmr import DMRPolicy
        from slurm_ext.service import Controller, Server, ServiceOptions
        from slurm_ext.service.controller import fold_expanders
        from slurm_ext.slurm.adapter import SlurmCluster

        self.local.up()  # a node an earlier kill drained late ('Duplicate jobid') is resumed first
        free = self.idle()
        options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, expand_strategy=strategy)
        ctl = Controller(SlurmCluster(slurm_conf=self.cfg.slurm_conf), DMRPolicy(), options)
        server = Server(ctl, port=0)
        server.start()
        killed: list[float] = []
        skipped: list[int] = []

        def kill_and_restart() -> None:  # in the service's thread, between two of its Slurm calls
            last = self.last_job_id()
            killed.append(time.monotonic())
            self.kill_slurmctld()
            time.sleep(1.0)
            self.local.up()
            skipped.append(self.skip_lost_ids(last))

        try:
            # The job runs a while first, held at 1 node by a filler job on every other free node:
            # slurmctld has saved it by then, as it has a job that did not start a moment ago.
            filler = self.sbatch(free - 1, "filler", "sleep 600")
            self.wait(lambda: self.state(filler) == "RUNNING", 60, "the filler to start")
            job = self.start_app(f"ctld-{strategy}", server.address)
            self.wait(lambda: self.state(job) == "RUNNING", 60, "the job to start")
            time.sleep(RUN_BEFORE_KILL)
            with at_step(step, kill_and_restart):
                self.sh("scancel", str(filler))  # the job grows onto its nodes at its next check
                self.wait(lambda: bool(killed), 120, f"a growth to reach {step}")
            t0 = killed[0]
            self.wait(lambda: ctl.inflight.get(job) is None, 120, "the resize to settle")
            detected = time.monotonic() - t0  # the service settled the resize Slurm lost

            def consistent() -> bool:
                if self.helpers() or ctl.inflight.get(job) is not None:
                    return False
                held = fold_expanders(ctl.cache.fresh()).job(job)
                ranks = {e["DMR_NODE"] for e in app_ranks(job).values()}
                if held is None or not held.is_running:
                    return not ranks  # gone, or Slurm lost its start (requeued): no rank left running
                return bool(ranks) and ranks == set(held.nodes)

            self.wait(consistent, 120, "the job's allocation to agree with its ranks", 0.5)
            repaired = time.monotonic() - t0
            held = fold_expanders(ctl.cache.fresh()).job(job)
            size = f" on {held.node_count} node(s)" if held is not None and held.is_running else ""
            state = (self.state(job) or "ended") + size
            reason = self.sh("squeue", "-h", "-j", str(job), "-o", "%r", check=False).strip()
        finally:
            server.stop()
            ctl.background.shutdown(wait=True)
        self.sh("scancel", str(job), check=False)
        self.local.up()  # resumes a node Slurm drained ('Duplicate jobid') after losing the job
        why = f" ({reason})" if reason and reason != "None" else ""
        lost_ids = f"; {skipped[0]} lost job id(s) used up" if skipped and skipped[0] else ""
        what = f"killed at {step}: job {state}{why} after slurmctld came back{lost_ids}"
        name = f"slurmctld-killed-in-{strategy}@{step}"
        return Row(name, detected, repaired, probe.p99_ms(t0), self.nodes_lost(free), what)

    def slurmctld_outage(self, probe: Probe, seconds: float) -> Row:
        from slurm_ext.local.daemons import stop

        free = self.idle()
        _, daemons = self.local.registry.load()
        (ctld,) = [d for d in daemons if d.name == "slurmctld"]
        t0 = time.monotonic()
        stop(ctld)
        try:
            detected = self.wait(lambda: self.ctl.cache.outage is not None, 120, "the circuit to open")
            time.sleep(max(0.0, seconds - (time.monotonic() - t0)))
        finally:
            back = time.monotonic()
            self.local.up()
        p99 = probe.p99_ms(t0, back)
        self.wait(lambda: self.ctl.cache.outage is None, 120, "the circuit to close")
        self.wait(lambda: probe.samples and "unavailable" not in probe.samples[-1][2], 30, "a normal answer")
        repaired = time.monotonic() - back
        answered = [s for t, s, why in probe.samples if t0 <= t <= back and "unavailable" in why]
        what = f"slurmctld away {back - t0:.0f} s; {len(answered)} checks answered 'Slurm unavailable'"
        return Row("slurmctld-outage", detected, repaired, p99, self.nodes_lost(free), what)

    def flood(self, probe: Probe, seconds: float) -> Row:
        """Another user floods while a job of ours grows: the growth's time is reported beside it."""
        from concurrent.futures import ThreadPoolExecutor

        from slurm_ext import protocol as p

        free = self.idle()
        host, port = self.server.address
        share = self.server.limits.user_connections
        lines = [p.Check(job_id=j, current=1, min=1, max=4, nodes=["n1"]).encode() for j in (1, 10**6)]
        t0 = time.monotonic()
        with ThreadPoolExecutor(1) as pool:
            flooding = pool.submit(run_flood, host, port, share + 100, 16, seconds, lines)
            time.sleep(min(2.0, seconds / 2))  # its connections held, its flood under way
            grew = len(self.ctl.timings["expand"])
            job, _ = self.grown_app("flooded")
            expand = self.ctl.timings["expand"][grew:]
            got = flooding.result()
        p99 = probe.p99_ms(t0)
        self.sh("scancel", str(job), check=False)
        what = (f"nobody held {got['held']} idle connections ({got['refused']} refused past its share of "
                f"{share}); 16 flooders got {got['answered']} answers in {seconds:g} s; meanwhile a job "
                f"grew 1 -> 4 nodes, the expansion taking {sum(expand):.2f} s")  # fmt: skip
        return Row("flood", None, None, p99, self.nodes_lost(free), what)

    def run(self, only: list[str], outage: float, flood_seconds: float) -> list[Row]:
        self.server.start()
        probe_job = self.sbatch(1, "probe", "sleep 3600")
        self.wait(lambda: self.state(probe_job) == "RUNNING", 60, "the probe's job to start")
        node = self.sh("squeue", "-h", "-j", str(probe_job), "-o", "%N").strip()
        probe = Probe(self.server.address, probe_job, node)
        probe.start()
        rows = []
        try:
            for name in [n for o in only for n in (ONE_STEP if o == EACH_STEP else (o,))]:
                typer.echo(f"  {name} ...", err=True)
                try:
                    rows.append(self.scenario(name, probe, outage, flood_seconds))
                except TimeoutError as exc:  # reported, and the next scenario runs
                    rows.append(Row(name, None, None, float("nan"), 0, f"NOT MEASURED: {exc}"))
                    self.cancel_all(keep=probe_job)
        finally:
            probe.stopping.set()
            probe.join(5)
            self.cancel_all()
            self.server.stop()
            self.ctl.background.shutdown(wait=True)
        return rows

    def scenario(self, name: str, probe: Probe, outage: float, flood_seconds: float) -> Row:
        if name == "rank-killed":
            return self.rank_killed(probe)
        if name == "rank-killed-continue":
            return self.rank_killed_continue(probe)
        if name == "rank-killed-in-shrink":
            return self.rank_killed_in_shrink(probe)
        if name == "service-killed":
            return self.service_killed(probe)
        if name == "slurmctld-outage":
            return self.slurmctld_outage(probe, outage)
        if name == "flood":
            return self.flood(probe, flood_seconds)
        strategy, _, step = name.removeprefix("slurmctld-killed-in-").partition("@")
        return self.slurmctld_killed(probe, strategy, step or DEFAULT_KILL_STEP[strategy])


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def faults_cmd(
    only: Annotated[
        list[str] | None,
        typer.Option(
            help=f"Scenarios to run (repeat) [default: {', '.join(SCENARIOS)}; also: {EACH_STEP} and "
            f"slurmctld-killed-in-STRATEGY@STEP, one of: {', '.join(ONE_STEP)}]"
        ),
    ] = None,
    outage_seconds: Annotated[float, typer.Option(help="How long slurmctld stays away")] = 30.0,
    flood_seconds: Annotated[float, typer.Option(help="How long the other user floods")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object")] = False,
) -> None:
    """Faults on the local cluster: detection, repair, other users' check latency, nodes lost."""
    chosen = list(only or SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS + EXTRA]
    if unknown or outage_seconds <= 0 or flood_seconds <= 0:
        names = ", ".join((*SCENARIOS, EACH_STEP, "slurmctld-killed-in-STRATEGY@STEP"))
        typer.echo(f"error: scenarios are {names} (see --help); --outage-seconds and --flood-seconds > 0"
                   + (f" (unknown: {', '.join(unknown)})" if unknown else ""), err=True)  # fmt: skip
        raise typer.Exit(2)
    if "flood" in chosen and (os.geteuid() != 0 or not Path(SYSTEM_PYTHON).exists()):
        typer.echo(f"error: the flood runs a client as user nobody: needs root and {SYSTEM_PYTHON}", err=True)
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
        rows = Bench(Path(tmp)).run(chosen, outage_seconds, flood_seconds)
    result = {"scenarios": [asdict(r) for r in rows], "targets": TARGETS, "load": os.getloadavg()[0]}
    if as_json:
        typer.echo(json.dumps(result))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("scenario", "detection s", "repair s", "others p99 ms", "nodes lost", "what happened")
    for r in rows:
        table.add_row(r.scenario, _cell(r.detection_s), _cell(r.repair_s), _cell(r.others_p99_ms),
                      str(r.nodes_lost), r.note)  # fmt: skip
    Console().print(table)
    typer.echo(
        f"targets: detection <= {TARGETS['detection_s']:g} s, repair <= {TARGETS['repair_s']:g} s, "
        f"others' p99 <= {TARGETS['others_p99_ms']:g} ms, no node lost; load {result['load']:.2f}"
    )
