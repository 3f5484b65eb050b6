"""Pilot mode of ``dmr-run``: a job that hosts groups of an application on a coordinator's orders.

Elastic Job Bundling runs one application across several Slurm jobs (its subjobs and the
placeholder ``J0``); each runs the user's own batch script, so ``dmr-run`` in it finds
``DMR_PILOT=host:port:secret:role`` in its environment and, instead of starting the
application by itself, becomes that subjob's *EJB worker* (paper 004, section 4, a pilot job):

1. it tells the coordinator (the EJB manager) which job it is, its nodes and CPUs (``hello``);
2. it starts groups of the application on its nodes when told (``launch``: the first groups
   of the application, or groups that join the running application with an expansion token,
   ``ppn`` ranks per node, over-subscribed with ``srun --overcommit`` when ``ppn`` exceeds the
   node's CPUs);
3. when all its groups have ended (the application completed, or its ranks moved to another
   subjob) it says so (``ended``) and waits for the next order; ``exit`` ends the job;
   ``spares``: it queues held subjobs for a manager that may not submit as this job's owner
   (the pilot runs as the owner), and says what became of each (``spare``);
4. when one of its groups fails (a rank killed: ``srun --kill-on-bad-exit`` ends the group) it
   says so at once (``failed``): the application cannot go on, and the coordinator ends it
   everywhere. Its own other groups get ``DMR_FAIL_GRACE`` seconds, then are stopped, whether
   the coordinator answers or not.

The coordinator may restart: the pilot reconnects and says again who it is; its groups run on
meanwhile. A job that starts while its coordinator is away (restarting) keeps trying for
``DMR_PILOT_FIRST_WAIT`` seconds (60): a subjob submitted just before a manager crash is adopted
by the restarted manager only if it is still there. After that, a subjob ends; a placeholder
first asks Slurm whether a subjob of its application runs (``squeue --me``, a job named
``ejb<J0>.<key>``). While one does, the application may be running there: the placeholder keeps
waiting for the manager instead of starting a second copy. Once none runs, it runs the
application as plain ``dmr-run`` would (never a lost job).
Messages are JSON lines; the pilot's first one carries the secret its job was submitted with.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dmr import launch
from dmr.launch import LAUNCH_TOKEN, LaunchSpec, is_subjob_of, start_group

PATIENCE = float(os.environ.get("DMR_PILOT_PATIENCE", "600"))  # seconds to wait for a lost coordinator
FIRST_WAIT = float(os.environ.get("DMR_PILOT_FIRST_WAIT", "60"))  # seconds to wait for the first contact
HOSTED_RECHECK = 10.0  # seconds between two looks at the queue while a subjob may host the application


class Pilot:
    def __init__(self, spec: LaunchSpec, job_id: int | None, nodes: list[str], address: str) -> None:
        host, port, self.secret, self.role = address.rsplit(":", 3)
        self.address = (host, int(port))
        self.spec = spec
        self.job_id = job_id
        self.nodes = nodes
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ended_at: dict[int, float] = {}  # pid -> when its group ended (monotonic)
        self.nodes_of: dict[int, str] = {}  # pid -> node of each group launched here
        self.stopping = False  # groups stopped on an order are no failure
        # a failed group's report, sent in every hello: a coordinator that was away hears it
        self.failure: dict[str, Any] | None = None
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.reported = True  # no groups yet: nothing to report
        self.worst = 0

    # -- connection -----------------------------------------------------------------------------
    def connect(self) -> bool:
        try:
            sock = socket.create_connection(self.address, timeout=10.0)
        except OSError:
            return False
        sock.settimeout(None)
        self.sock = sock
        cpus = os.environ.get("SLURM_CPUS_ON_NODE", "1")
        return self.send(
            {
                "op": "hello",
                "secret": self.secret,
                "role": self.role,
                "job": self.job_id,
                "nodes": self.nodes,
                "cpus": int(cpus) if cpus.isdigit() else 1,
                "running": self.running(),
                "failed": self.failure,
            }
        )

    def send(self, msg: dict[str, Any]) -> bool:
        with self.lock:
            if self.sock is None:
                return False
            try:
                self.sock.sendall((json.dumps(msg) + "\n").encode())
                return True
            except OSError:
                return False

    def orders(self) -> Any:
        """Orders as they come; ends when the connection drops."""
        assert self.sock is not None
        reader = self.sock.makefile("rb")
        while True:
            try:
                line = reader.readline()
            except OSError:  # reset by a coordinator that died
                return
            if not line:
                return
            try:
                yield json.loads(line)
            except ValueError:
                continue

    # -- groups ---------------------------------------------------------------------------------
    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def launch(self, order: dict[str, Any]) -> None:
        ppn = int(order.get("ppn") or self.spec.ppn)
        cpus = int(os.environ.get("SLURM_CPUS_ON_NODE", "0") or 0)
        spec = replace(self.spec, ppn=ppn, overcommit=bool(cpus) and ppn > cpus)
        env = {str(k): str(v) for k, v in (order.get("env") or {}).items()}
        token = str(order.get("token") or "")
        started = []
        for i, node in enumerate(self.nodes):
            extra = dict(env)
            if not token:  # the application's first groups: the first opens the port
                if i == 0:
                    extra["DMR_LAUNCH_GROUPS"] = str(len(self.nodes))
                else:
                    extra["DMR_TOKEN"] = LAUNCH_TOKEN
            else:
                extra["DMR_TOKEN"] = token
            started.append(start_group(spec, self.job_id, node, extra))
        self.adopt(started, self.nodes)

    def adopt(self, started: list[subprocess.Popen[bytes]], nodes: list[str]) -> None:
        """Watch started groups (``nodes[i]`` runs ``started[i]``): when each ends is noted at once."""
        with self.lock:
            self.procs += started
            self.nodes_of.update({p.pid: node for p, node in zip(started, nodes, strict=True)})
            self.reported = False
        for proc in started:
            launch.note_end(proc, self.ended_at, self.lock)

    def watch(self) -> None:
        """Report a failed group at once, and once every group launched so far has ended."""
        while True:
            time.sleep(0.2)
            self._watch_failure()
            with self.lock:
                due = not self.reported and bool(self.procs) and not self.running()
            if not due:
                continue
            for p in self.procs:
                self.worst = self.worst or (p.returncode or 0)
            if self.send({"op": "ended", "code": self.worst}):  # else: again after a reconnect
                with self.lock:
                    self.reported = True

    def _watch_failure(self) -> None:
        with self.lock:
            if self.failure is not None or self.stopping:
                return
            failed = [p for p in self.procs if p.poll()]
            if not failed:
                return
            bad = launch.first_ended(failed, self.ended_at)  # its peers may have crashed in MPI since
            why = launch.group_failed(self.nodes_of.get(bad.pid, "?"), self.job_id, bad.returncode)
            self.failure = {"op": "failed", "code": launch.exit_code(bad.returncode), "why": why}  # seen once
        _say(f"{why}: its peers cannot go on; stopping the application's groups in {launch.FAIL_GRACE:g} s")
        self.send(self.failure)
        end = time.monotonic() + launch.FAIL_GRACE
        while time.monotonic() < end and self.running():
            time.sleep(0.1)
        self.stop()

    def queue_spares(self, order: dict[str, Any]) -> None:
        """The held spares the manager asked for (each ``sbatch ... --hold`` with its index,
        environment and directory), queued as this job's owner; each one's job id or sbatch's
        error goes back (``spare``)."""
        for spare in order.get("spares") or []:
            index, argv = int(spare["index"]), [str(a) for a in spare["argv"]]
            if argv[:1] != ["sbatch"] or "--hold" not in argv:  # a pilot queues held jobs, nothing else
                self.send({"op": "spare", "index": index, "error": "not a held sbatch"})
                continue
            env = {str(k): str(v) for k, v in (spare.get("env") or {}).items()}
            try:
                res = subprocess.run(argv, env=env, cwd=str(spare.get("cwd") or "/"), capture_output=True,
                                     text=True, timeout=60, check=False)  # fmt: skip
            except (OSError, subprocess.SubprocessError) as err:
                self.send({"op": "spare", "index": index, "error": str(err)})
                continue
            job = res.stdout.strip().split(";")[0]
            if res.returncode != 0 or not job.isdigit():
                why = res.stderr.strip() or f"sbatch exited {res.returncode}"
                self.send({"op": "spare", "index": index, "error": why})
            else:
                self.send({"op": "spare", "index": index, "job": int(job)})

    def stop(self) -> None:
        self.stopping = True
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()

    # -- main loop ------------------------------------------------------------------------------
    def first_contact(self, wait: float) -> bool:
        """Connect, trying again for ``wait`` seconds: the coordinator may be restarting."""
        deadline = time.monotonic() + wait
        while not self.connect():
            if time.monotonic() >= deadline:
                return False
            time.sleep(1.0)
        return True

    def running_subjobs(self) -> list[str]:
        """Ids of this placeholder's subjobs that run now (any may host the application); none when
        the queue cannot be read (then nothing is known to run, and the job must not be lost)."""
        if self.job_id is None:
            return []
        try:
            out = subprocess.run(["squeue", "--me", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i %j"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout  # fmt: skip
        except (OSError, subprocess.SubprocessError) as err:
            _say(f"cannot read the queue ({err}); taking no subjob to run")
            return []
        rows = (ln.split() for ln in out.splitlines())
        return [row[0] for row in rows if len(row) == 2 and is_subjob_of(row[1], self.job_id)]

    def wait_while_hosted(self) -> bool:
        """A placeholder without its manager: while a subjob of its application runs, keep trying the
        manager (True once reached); False once no subjob runs."""
        said = False
        while hosts := self.running_subjobs():
            if not said:
                hosting = ", ".join(hosts)
                _say(f"the EJB manager is unreachable and subjob(s) {hosting} of this job run; "
                     "waiting for the manager instead of starting a second copy")  # fmt: skip
                said = True
            if self.first_contact(HOSTED_RECHECK):
                return True
        return False

    def run(self, plain: Callable[[], int]) -> int:
        if not self.first_contact(FIRST_WAIT):
            if self.role != "j0":
                _say("the EJB manager is unreachable; this subjob has nothing to do")
                return 0
            if not self.wait_while_hosted():
                _say("the EJB manager is unreachable; running the job by itself")
                return plain()
        threading.Thread(target=self.watch, name="pilot-watch", daemon=True).start()
        while True:
            for order in self.orders():
                what = order.get("do")
                if what == "launch":
                    self.launch(order)
                elif what == "plain":  # the manager does not know this job (any more)
                    if not self.procs:
                        return plain()
                    while self.running():  # never a second copy next to the groups already here
                        time.sleep(1.0)
                    return self.worst
                elif what == "spares":  # sbatch may take a while: the orders go on meanwhile
                    threading.Thread(target=self.queue_spares, args=(order,), daemon=True).start()
                elif what == "exit":
                    self.stop()
                    return self.worst
            # the coordinator went away: our groups run on; say who we are again when it is back
            with self.lock:  # nothing more goes into a connection nobody reads
                if self.sock is not None:
                    self.sock.close()
                self.sock = None
            deadline = time.monotonic() + PATIENCE
            while not self.connect():
                if time.monotonic() > deadline and not self.running():
                    print("dmr-run: lost the EJB manager; no groups left here, ending", file=sys.stderr)
                    return self.worst
                time.sleep(2.0)


def _say(message: str) -> None:
    print(f"dmr-run: {message}", file=sys.stderr)


def run(
    spec: LaunchSpec, job_id: int | None, nodes: list[str], address: str, plain: Callable[[], int]
) -> int:
    return Pilot(spec, job_id, nodes, address).run(plain)
