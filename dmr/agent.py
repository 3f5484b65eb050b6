"""The job agent: starts an application's groups and is their rendezvous.

Every Slurm job that hosts ranks of a malleable application runs one agent:

- the application's own job runs ``dmr-run [--ppn K] -- python app.py ...`` in its batch
  script (or, launched with plain ``srun``, rank 0 starts a private agent). The agent starts
  one group per node, keeps the application's MPI port (posted by rank 0), and starts groups
  on nodes merged into its job when rank 0 asks;
- an expander job (the service's second job that hosts new ranks) runs
  ``python -m dmr join --agent ADDR --token T``: it fetches the launch spec from the
  application's agent, starts one group per node of its own allocation, and ends when its
  groups end or when the application's agent goes away.

A new group's rank 0 says ``hello`` with the operation's token and waits; rank 0 of the
application says ``expect`` (token, how many groups, where to launch them): once that many
groups said hello the answer is "ready" with their tags (in launch order), and rank 0
``release``-s them one at a time, each just before the application accepts it: that group
gets the port (``go``) and connects. One connection at a time, because MPICH crashes now and
then when several separately launched worlds connect to one port at once (seen here about
every other launch of three groups). If the groups do not all arrive before the deadline,
those that did are told to exit, the ones this agent launched are stopped, and the answer is
"not ready". Requests are JSON lines; every request carries the agent's key
(``DMR_AGENT=host:port:key``).

A group that ends with an error while the application runs (a rank killed, out of memory, a
node lost) leaves its peers waiting in MPI for ranks that are gone, until the time limit. The
agent watches its groups: once a group that belongs to the application fails, the others get
``DMR_FAIL_GRACE`` seconds to end on their own, then are stopped, and ``dmr-run`` exits with the
failed group's code. An expander job's agent reports its failed groups to the application's.

With ``dmr-run --on-failure continue`` the application goes on instead (a shrink by failure): the
agent holds the last checkpoint :class:`dmr.Malleable` sends it (``checkpoint`` / ``restore``,
the state gathered on rank 0 every ``--checkpoint-every`` steps), stops every group, gives the
failed node back to Slurm (unless it is this batch host, which the agent shows alive) and starts
the application again on the job's other nodes, where ``Malleable`` resumes from that checkpoint.
Groups that expander jobs host are stopped (those jobs end, their nodes go back to Slurm).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dmr import expander_job, launch
from dmr.launch import LAUNCH_TOKEN, LaunchSpec, exit_code, first_ended, group_failed, note_end, start_group
from slurm_ext.agent_client import AgentClient

GRACE = 30.0  # seconds the other groups get to finish after the application's first group ended
# seconds a group of the launch waits past its own launch deadline for the first group to expect
# it (the groups of one launch start a moment apart, and the first group gives up at its deadline)
LAUNCH_SLACK = 10.0


@dataclass
class _Op:
    """Groups expected under one token: who said hello, what was launched, the outcome."""

    hellos: list[dict[str, Any]] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    outcome: bool | None = None  # True: taken (each group waits for its release); False: aborted
    released: set[str] = field(default_factory=set)


class Agent:
    """State shared by the connection threads (guarded by one condition)."""

    def __init__(self, spec: LaunchSpec, job_id: int | None, key: str | None = None) -> None:
        self.spec = spec
        self.job_id = job_id
        self.key = key or secrets.token_hex(8)
        self.cond = threading.Condition()
        self.port: str | None = None
        self.ops: dict[str, _Op] = {}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.launched_on: list[str] = []  # nodes in launch order (the order groups are admitted in)
        self.members: set[int] = set()  # pids of the groups that are part of the application's world
        self.failure: str | None = None  # why the application cannot go on (one of its groups failed)
        self.failure_code = 1  # the failed group's exit code (what dmr-run exits with)
        self.failure_node = ""  # where it ran
        self.leaving: set[str] = set()  # nodes whose groups a shrink removed (their end is no failure)
        self.excused: set[int] = set()  # pids of ended groups already looked at
        self.closing = False
        self.reports_to: str | None = None  # an expander job's agent: the token it serves
        self.fail_grace = launch.FAIL_GRACE  # seconds the other groups get after one failed
        self.checkpoint: tuple[int, bytes] | None = None  # (step, state) the application last sent
        self.joiners: list[socket.socket] = []  # connections of expander jobs' agents (they watch them)
        self.ended_at: dict[int, float] = {}  # pid -> when its group ended (monotonic)

    # -- launching ----------------------------------------------------------------------------
    def launch(self, token: str | None, node: str, extra: dict[str, str] | None = None) -> None:
        """Start one group on ``node`` (token None: the application's first group)."""
        env = {"DMR_AGENT": self.address_text, **(extra or {})}
        if token is not None:
            env["DMR_TOKEN"] = token
        self.adopt(start_group(self.spec, self.job_id, node, env), node, token)

    def adopt(self, proc: subprocess.Popen[bytes], node: str, token: str | None) -> None:
        """Watch a started group: when it ends is noted at once (a dead rank's peers may crash in
        MPI a moment later, and the group that ended first is the one that failed)."""
        with self.cond:
            self.procs.append(proc)
            self.launched_on.append(node)
            if token in (None, LAUNCH_TOKEN):  # the application's own launch
                self.members.add(proc.pid)
            if token is not None:
                self.ops.setdefault(token, _Op()).procs.append(proc)
        note_end(proc, self.ended_at, self.cond)

    address_text = ""  # set by serve(): "host:port:key"

    def restart(self) -> None:
        """Forget the stopped run's groups and operations (the checkpoint stays) and end the
        expander jobs' agents' watch, so that they stop their groups and their jobs end."""
        with self.cond:
            self.procs, self.launched_on, self.ops = [], [], {}
            self.members, self.leaving, self.excused, self.ended_at = set(), set(), set(), {}
            self.port, self.failure, self.closing = None, None, False
            joiners, self.joiners = self.joiners, []
        for sock in joiners:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    # -- requests -----------------------------------------------------------------------------
    def handle(self, req: dict[str, Any], data: bytes = b"") -> dict[str, Any]:
        """One request (``data``: the bytes that came with it); a reply's ``data`` goes back as bytes."""
        if req.get("key") != self.key:
            return {"ok": False, "error": "wrong or missing agent key"}
        op = req.get("op")
        if op == "checkpoint":  # rank 0 of a Malleable application: its whole state at a step
            step = int(req["step"])
            with self.cond:
                if self.checkpoint is None or step >= self.checkpoint[0]:
                    self.checkpoint = (step, data)
            return {"ok": True}
        if op == "restore":
            with self.cond:
                held = self.checkpoint
            if held is None:
                return {"ok": True, "step": None}
            return {"ok": True, "step": held[0], "data": held[1]}
        if op == "port":
            with self.cond:
                self.port = str(req["port"])
                self.cond.notify_all()
            return {"ok": True}
        if op == "hello":
            within = req.get("within")
            return self._hello(
                str(req["token"]), dict(req.get("group") or {}), None if within is None else float(within)
            )
        if op == "expect":
            return self._expect(
                str(req["token"]), int(req["count"]), [str(n) for n in req.get("launch", [])],
                float(req.get("timeout", 30.0)), dict(req.get("env") or {}),
            )  # fmt: skip
        if op == "release":
            with self.cond:
                self.ops.setdefault(str(req["token"]), _Op()).released.add(str(req["tag"]))
                self.cond.notify_all()
            return {"ok": True}
        if op == "spec":
            return {"ok": True, "spec": self.spec.to_dict(), "job_id": self.job_id}
        if op == "ping":
            return {"ok": True}
        if op == "leaving":  # groups a shrink removes: their end, however it comes, is no failure
            nodes = {str(n) for n in req.get("nodes") or []}
            with self.cond:
                self.leaving |= nodes
                self.members -= {
                    p.pid for p, node in zip(self.procs, self.launched_on, strict=True) if node in nodes
                }
            return {"ok": True}
        if op == "submit_expander":  # from a service that may not submit jobs as this job's owner
            return expander_job.submit(self.job_id, self.address_text, str(req["token"]),
                                       [str(o) for o in req.get("options") or []])  # fmt: skip
        if op == "failed":  # a group an expander job hosts ended with an error
            with self.cond:
                taken = self.ops.get(str(req["token"]), _Op()).outcome
                leaving = str(req.get("node")) in self.leaving
                counts = bool(taken) and not leaving  # a group never taken, or leaving, hangs nobody
                if counts and self.failure is None:
                    self.failure = str(req.get("why") or "a group of an expander job failed")
                    self.cond.notify_all()
            return {"ok": True, "counts": counts}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def _hello(self, token: str, group: dict[str, Any], within: float | None = None) -> dict[str, Any]:
        """A group waits to be taken: for the application's expect (at most ``within`` seconds,
        if given), then for its release. A group whose first group died before it expected the
        others (nobody ever will) must not wait until the job's time limit."""
        until = None if within is None else time.monotonic() + within
        with self.cond:
            op = self.ops.setdefault(token, _Op())
            if op.outcome is not None:
                return {"ok": True, "go": False, "reason": f"operation {token} is already over"}
            op.hellos.append(group)
            self.cond.notify_all()
            tag = str(group.get("tag"))
            while op.outcome is not False and tag not in op.released and not self.closing:
                if op.outcome is None and until is not None and time.monotonic() >= until:
                    op.hellos.remove(group)  # an expect from now on does not count this group
                    return {"ok": True, "go": False, "reason": f"nobody expected operation {token} in time"}
                self.cond.wait(1.0)
            if op.outcome and tag in op.released and self.port is not None:
                return {"ok": True, "go": True, "port": self.port}
            return {"ok": True, "go": False, "reason": "the application did not take this group"}

    def _expect(
        self, token: str, count: int, launch: list[str], timeout: float, env: dict[str, str]
    ) -> dict[str, Any]:
        for node in launch:
            self.launch(token, node, env)
        deadline = time.monotonic() + timeout
        dead: list[int] = []
        with self.cond:
            op = self.ops.setdefault(token, _Op())
            while len(op.hellos) < count and self.port is not None and not self.closing:
                left = deadline - time.monotonic()
                # a group launched here that ended before it was taken never joins (srun refused:
                # e.g. a node the allocation no longer has after slurmctld lost a merge): no wait
                dead = [code for p in op.procs if (code := p.poll()) is not None]
                if left <= 0 or dead:
                    break
                self.cond.wait(min(left, 0.2))
            ready = len(op.hellos) >= count and self.port is not None and op.outcome is None and not dead
            op.outcome = ready
            if ready:
                self.members.update(p.pid for p in op.procs)
            self.cond.notify_all()
            procs = list(op.procs)
            arrived = len(op.hellos)
            order = {node: i for i, node in enumerate(self.launched_on)}
            hellos = sorted(
                op.hellos[:count], key=lambda g: order.get((g.get("nodes") or [""])[0], len(order))
            )
        if not ready:
            self._stop(*procs)
            first = f"; a group ended before it joined (exit code {dead[0]})" if dead else ""
            why = f"{arrived} of {count} groups{first}"
            return {"ok": True, "ready": False, "arrived": arrived, "reason": why}
        return {"ok": True, "ready": True, "arrived": arrived, "tags": [str(g.get("tag")) for g in hellos]}

    # -- end ----------------------------------------------------------------------------------
    def wait(self, grace: float | None = None) -> int:
        """Block until every launched group has ended (or ``grace`` seconds); the worst exit code.

        A failed group of the application ends the wait: the others get ``fail_grace`` seconds,
        then are stopped."""
        deadline = None if grace is None else time.monotonic() + grace
        while deadline is None or time.monotonic() < deadline:
            with self.cond:
                procs = list(self.procs)
            ended = all(p.poll() is not None for p in procs)
            # asked also when every group has ended: a dead rank's peers may crash in MPI at once
            why = self._failed()
            if why is not None and not self._excused():
                self._fail(why)
                break
            if ended:
                break
            time.sleep(0.1)
        if self.failure is not None:
            return self.failure_code
        return next((exit_code(p.returncode) for p in procs if p.returncode), 0)

    def _failed(self) -> str | None:
        """Why the application cannot go on (a group of its world ended with an error), or None."""
        with self.cond:
            if self.failure is None and not self.closing:
                failed = [proc for proc in self.procs if proc.pid not in self.excused and proc.poll()
                          and (proc.pid in self.members or self.reports_to is not None)]  # fmt: skip
                if failed:  # the first to end: the others may be its peers crashing in MPI
                    bad = first_ended(failed, self.ended_at)
                    node, code = self.launched_on[self.procs.index(bad)], int(bad.returncode)
                    self.failure = group_failed(node, self.job_id, code)
                    self.failure_code, self.failure_node = exit_code(code), node
                    self.excused.add(bad.pid)  # looked at once
            return None if self.closing else self.failure

    def _excused(self) -> bool:
        """An expander job's agent asks the application's whether its failed group counts (a group a
        shrink removed does not: Slurm ends it as it releases the node); the application's own agent
        knows by itself."""
        if self.reports_to is None:
            return False
        counts = True
        with contextlib.suppress(OSError, RuntimeError, ValueError, ConnectionError):
            home = AgentClient(self.address_text, timeout=5.0)
            reply = home.request("failed", token=self.reports_to, why=self.failure, node=self.failure_node)
            home.close()
            counts = bool(reply.get("counts", True))
        if not counts:
            with self.cond:
                self.failure = None
        return not counts

    def _fail(self, why: str) -> None:
        """One group failed: give the others ``fail_grace`` seconds to end on their own, then
        stop them."""
        print(f"dmr: {why}: its peers cannot go on; stopping the application's groups in "
              f"{self.fail_grace:g} s", file=sys.stderr, flush=True)  # fmt: skip
        end = time.monotonic() + self.fail_grace
        while time.monotonic() < end and any(p.poll() is None for p in list(self.procs)):
            time.sleep(0.1)
        self.stop_all()

    def stop_all(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
            procs = list(self.procs)
        self._stop(*procs)

    def _stop(self, *procs: subprocess.Popen[bytes]) -> None:
        """Stop groups' launchers (srun cancels its step on SIGTERM, mpiexec kills its ranks), all at
        once: each gets the same 5 s, then is killed. A group stopped on purpose is no failure."""
        with self.cond:
            self.members.difference_update(p.pid for p in procs)
        running = [p for p in procs if p.poll() is None]
        for proc in running:
            proc.terminate()
        deadline = time.monotonic() + 5
        for proc in running:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()


# -- server -----------------------------------------------------------------------------------
class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        """JSON lines; a message with ``"bytes": n`` is followed by ``n`` bytes of data."""
        while True:
            try:
                line = self.rfile.readline(1 << 20)
                req = json.loads(line) if line else None
                size = int(req.get("bytes") or 0) if isinstance(req, dict) else 0
                if size and isinstance(req, dict) and req.get("key") != self.server.agent.key:
                    return  # bytes only from the application's own ranks: a stranger's are not read
                data = self.rfile.read(size) if size else b""
            except OSError:
                return
            except (ValueError, TypeError) as exc:
                req, data = {"op": f"unreadable ({exc})"}, b""
            if req is None:
                return
            try:
                reply = self.server.agent.handle(req, data)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                reply = {"ok": False, "error": f"bad request: {exc}"}
            if isinstance(req, dict) and req.get("op") == "spec" and reply.get("ok"):
                with self.server.agent.cond:  # an expander job's agent: it watches this connection
                    self.server.agent.joiners.append(self.connection)
            out = reply.pop("data", b"")
            if out:
                reply["bytes"] = len(out)
            try:
                self.wfile.write((json.dumps(reply) + "\n").encode() + out)
                self.wfile.flush()
            except OSError:
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, agent: Agent, host: str, port: int = 0) -> None:
        self.agent = agent
        super().__init__((host, port), _Handler)


def advertised_host() -> str:
    """The address other nodes reach this one at (``DMR_AGENT_HOST`` overrides)."""
    forced = os.environ.get("DMR_AGENT_HOST")
    if forced:
        return forced
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def serve(agent: Agent, port: int = 0) -> _Server:
    """Listen on all addresses (ranks on other nodes connect); the address goes to ``agent``.

    ``port`` 0 picks a free one; a restarted EJB manager asks for its agent's old port again.
    """
    try:
        server = _Server(agent, "0.0.0.0", port)
    except OSError:
        if not port:
            raise
        server = _Server(agent, "0.0.0.0", 0)  # taken meanwhile: the application reconnects to none
    agent.address_text = f"{advertised_host()}:{server.server_address[1]}:{agent.key}"
    threading.Thread(target=server.serve_forever, name="dmr-agent", daemon=True).start()
    return server


# -- commands ---------------------------------------------------------------------------------
def _job_nodes() -> list[str]:
    import hostlist

    return list(hostlist.expand_hostlist(os.environ.get("SLURM_JOB_NODELIST", "")))


def _job_id() -> int | None:
    raw = os.environ.get("SLURM_JOB_ID", "")
    return int(raw) if raw.isdigit() else None


def _ppn(given: int | None) -> int:
    if given is not None:
        return given
    raw = os.environ.get("SLURM_NTASKS_PER_NODE", "").split("(")[0]
    return int(raw) if raw.isdigit() else 1


def run_main(argv: list[str] | None = None) -> int:
    """``dmr-run``: the application job's agent (its batch script runs this instead of srun)."""
    ap = argparse.ArgumentParser(
        prog="dmr-run",
        description="Launch a malleable mpi4py application (one group of ranks per node) and serve "
        "its resizes. Use it in a batch script where you would write `srun --mpi=pmi2`.",
    )
    ap.add_argument(
        "--ppn", type=int, default=None, help="ranks per node [default: --ntasks-per-node, else 1]"
    )
    ap.add_argument("--mpi", default="pmi2", help="srun --mpi plugin (default pmi2)")
    ap.add_argument("--nodes", default=None, help="outside Slurm: comma-separated node names to fake")
    ap.add_argument("--launch-timeout", type=float, default=120.0, help="seconds for all groups to start")
    ap.add_argument(
        "--on-failure", choices=("stop", "continue"), default=os.environ.get("DMR_ON_FAILURE", "stop"),
        help="when a group fails (a rank killed, a node lost): stop the application (default), or "
        "continue on the job's other nodes from the last checkpoint (dmr.Malleable applications)",
    )  # fmt: skip
    ap.add_argument("--checkpoint-every", type=int, default=10, metavar="STEPS",
                    help="with --on-failure continue: steps between checkpoints (default 10)")  # fmt: skip
    ap.add_argument("--max-restarts", type=int, default=3,
                    help="with --on-failure continue: restarts before giving up (default 3)")  # fmt: skip
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command given (dmr-run [options] -- python app.py ...)")
    ppn = _ppn(args.ppn)
    if ppn < 1:
        ap.error(f"--ppn must be >= 1, got {ppn}")
    if args.checkpoint_every < 1 or args.max_restarts < 0:
        ap.error("--checkpoint-every must be >= 1 and --max-restarts >= 0")
    job_id = _job_id()
    nodes = args.nodes.split(",") if args.nodes else _job_nodes()
    if not nodes:
        ap.error("not inside a Slurm allocation (SLURM_JOB_NODELIST unset) and no --nodes given")
    env = dict(os.environ)
    if args.on_failure == "continue":  # every group, also an expansion's, must checkpoint at the same steps
        env["DMR_CHECKPOINT_EVERY"] = str(args.checkpoint_every)
    spec = LaunchSpec(argv=command, cwd=os.getcwd(), env=env, ppn=ppn, mpi=args.mpi)

    def plain() -> int:
        agent = Agent(spec, job_id)
        server = serve(agent)
        _forward_signals(agent)
        launch_env = {"DMR_LAUNCH_TIMEOUT": str(args.launch_timeout)}  # every group of the launch keeps it
        if args.on_failure == "continue":
            agent.fail_grace = 0.0  # the groups are started again at once: no need to wait for them
        code = _run(agent, nodes, launch_env, args.max_restarts if args.on_failure == "continue" else 0)
        agent.stop_all()
        server.shutdown()
        return code

    pilot = os.environ.get("DMR_PILOT")
    if pilot:  # a job of an application bundled by EJB: its manager says what to run here
        from dmr.pilot import run as run_pilot

        return run_pilot(spec, job_id, nodes, pilot, plain)
    return plain()


def _start(agent: Agent, nodes: list[str], env: dict[str, str]) -> None:
    """The application's launch: one group per node, the first one opens the world."""
    agent.launch(None, nodes[0], {"DMR_LAUNCH_GROUPS": str(len(nodes)), **env})
    for node in nodes[1:]:
        agent.launch(LAUNCH_TOKEN, node, env)


def _run(agent: Agent, nodes: list[str], env: dict[str, str], restarts: int) -> int:
    """Launch the application and wait for its end; after a failed group, up to ``restarts`` times,
    launch it again on the job's other nodes from the agent's checkpoint (a shrink by failure)."""
    restored: int | None = None
    for attempt in range(restarts + 1):
        _start(agent, nodes, env)
        code = agent.wait()
        if agent.failure is None:
            return code
        held = agent.checkpoint[0] if agent.checkpoint is not None else None
        if attempt == restarts:
            if restarts:
                _say(f"the application failed {restarts + 1} times; not starting it again (--max-restarts)")
            return code
        if attempt and held == restored:
            _say("the application failed again before its next checkpoint; not starting it again")
            return code
        nodes = _nodes_after_failure(agent.job_id, nodes, agent.failure_node)
        where = f"step {held}'s checkpoint" if held is not None else "its start (no checkpoint yet)"
        _say(f"continuing on {len(nodes)} node(s) ({','.join(nodes)}) from {where}")
        restored = held
        agent.restart()
        env = {**env, "DMR_RESTORE": "1"}
    return code


def _nodes_after_failure(job_id: int | None, nodes: list[str], failed: str) -> list[str]:
    """The nodes to go on with: the job's nodes (Slurm's list: the application may have grown or
    shrunk) but the failed one, which goes back to Slurm. The batch host stays: this agent runs
    there, so it works (a rank killed there was the process's fault, not the node's)."""
    if job_id is None:  # outside Slurm: the node names are only names
        return [n for n in nodes if n != failed] or nodes
    import hostlist

    batch_host = os.environ.get("SLURMD_NODENAME", "")
    try:
        out = subprocess.run(["squeue", "-h", "-j", str(job_id), "-o", "%N"], capture_output=True,
                             text=True, timeout=30, check=True).stdout.strip()  # fmt: skip
        held = list(hostlist.expand_hostlist(out)) if out else nodes
    except (OSError, subprocess.SubprocessError, hostlist.BadHostlist) as exc:
        _say(f"cannot read the job's nodes ({exc}); going on with those it was launched on")
        held = nodes
    keep = [n for n in held if n != failed or n == batch_host] or held
    if len(keep) < len(held):
        cmd = ["scontrol", "update", f"JobId={job_id}", f"NodeList={hostlist.collect_hostlist(keep)}"]
        try:
            subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            _say(f"could not give node {failed} back to Slurm ({exc}); it stays in the job, unused")
    return keep


def _say(text: str) -> None:
    print(f"dmr: {text}", file=sys.stderr, flush=True)


def join_main(argv: list[str]) -> int:
    """``python -m dmr join``: an expander job's agent (the service writes this command)."""
    ap = argparse.ArgumentParser(prog="python -m dmr join")
    ap.add_argument("--agent", required=True, help="the application's agent, host:port:key")
    ap.add_argument("--token", required=True, help="the expansion this job serves")
    args = ap.parse_args(argv)
    home = AgentClient(args.agent, timeout=None)
    reply = home.request("spec")
    spec = LaunchSpec.from_dict(reply["spec"])
    agent = Agent(spec, _job_id())
    agent.address_text = args.agent  # our groups talk to the application's agent
    agent.reports_to = args.token  # and it hears of a group of ours that fails
    _forward_signals(agent)
    for node in _job_nodes():
        agent.launch(args.token, node)
    # the application's agent closing its end means the application is gone: stop our groups
    threading.Thread(target=_watch, args=(home, agent), daemon=True).start()
    return agent.wait()


def _watch(home: AgentClient, agent: Agent) -> None:
    try:
        home.sock.settimeout(None)
        home.reader.readline()  # blocks until the application's agent goes away
    except OSError:
        pass
    agent.stop_all()


def serve_main(argv: list[str]) -> int:
    """``python -m dmr serve``: a private agent for an application launched by plain srun.

    Reads the launch spec (JSON) on stdin's first line, prints its address, and lives until
    stdin closes (its rank 0 is gone).
    """
    del argv
    spec = LaunchSpec.from_dict(json.loads(sys.stdin.readline()))
    agent = Agent(spec, _job_id())
    server = serve(agent)
    print(agent.address_text, flush=True)
    sys.stdin.read()
    agent.wait(grace=GRACE)  # the other groups end with the application, a moment later
    agent.stop_all()
    server.shutdown()
    return 0


def _forward_signals(agent: Agent) -> None:
    def stop(signum: int, _frame: object) -> None:
        agent.stop_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["join"]:
        return join_main(argv[1:])
    if argv[:1] == ["serve"]:
        return serve_main(argv[1:])
    return run_main(argv[1:] if argv[:1] == ["run"] else argv)
