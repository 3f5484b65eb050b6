"""The per-process DMR runtime: asks the service (rank 0), shares the decision, carries it out.

Collective over the application's current communicator. ``check`` returns
``(action, new_size, handle)``; on an action the handle (:class:`Reconfiguration`) is
what the application uses to move its data, as the paper's opaque handler:

- expand: the new groups of ranks (started by the application's agent on nodes merged into
  its job, or by an expander job's agent) have connected and been merged in; the handle's
  communicator is the new world. New ranks get their own handle from
  :attr:`Runtime.joining`, and both sides call the same handle methods in the same order.
- shrink: the handle's communicator is still the old world; the application moves its
  data to the staying ranks (:meth:`Reconfiguration.redistribute`), then
  :meth:`Reconfiguration.finish` disconnects the leaving groups, whose ranks acknowledge
  to the service and exit; rank 0 tells the service, which releases their nodes after all acks.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec
import numpy as np
from mpi4py import MPI

from dmr import redistribute as rd
from dmr.agent import LAUNCH_SLACK, AgentClient
from dmr.client import ServiceClient, send_ack, warn_once
from dmr.config import Settings, validate
from dmr.inhibitor import Inhibitor
from dmr.launch import LAUNCH_TOKEN, LaunchSpec, clean_env
from dmr.world import Group, World
from slurm_ext import protocol as p


class Action(StrEnum):
    NONE = "none"
    EXPAND = "expand"
    SHRINK = "shrink"


def node_name() -> str:
    """The node this rank runs on: set by the launcher, else Slurm's name, else the host name."""
    return os.environ.get("DMR_NODE") or os.environ.get("SLURMD_NODENAME") or socket.gethostname()


@dataclass
class Reconfiguration:
    """The handle of one resize, on every rank of the old and new world."""

    action: Action
    old_size: int
    new_size: int
    runtime: Runtime
    token: str = ""
    finished: bool = False
    leaving_groups: set[str] = field(default_factory=set)  # shrink: tags of the groups that leave
    staying_ranks: list[int] = field(default_factory=list)  # shrink: their ranks in the old world

    @property
    def comm(self) -> MPI.Intracomm:
        return self.runtime.world.comm

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    @property
    def leaving(self) -> bool:
        """True on the ranks a shrink removes."""
        return self.action is Action.SHRINK and self.runtime.world.tag in self.leaving_groups

    def redistribute(self, local: np.ndarray | None) -> np.ndarray:
        """Move a block-distributed array from the old to the new layout (new ranks pass None)."""
        new = self.staying_ranks if self.action is Action.SHRINK else self.new_size
        return rd.redistribute(self.comm, local, self.old_size, new)

    def bcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank of the resize (replicated state: step counter, parameters)."""
        return self.comm.bcast(obj, root=0)

    def finish(self, exit: bool = True) -> bool:
        """Complete the resize; returns True on ranks that continue.

        Shrink: the leaving groups disconnect; their ranks acknowledge to the service and
        (with ``exit``) terminate here; rank 0 then waits for the service to release the nodes.
        """
        if self.finished:
            return not self.runtime.world.left
        self.finished = True
        if self.action is not Action.SHRINK:
            return True
        return self.runtime._finish_shrink(self, exit)


class Runtime:
    """One per process; created on first use by :func:`dmr.runtime` (or explicitly)."""

    def __init__(
        self,
        comm: MPI.Intracomm | None = None,
        settings: Settings | None = None,
        program: list[str] | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        # what a private agent starts for each new group: this program with its arguments
        # (a C or Fortran program linked with libdmr passes its own command line)
        self.program = program or [sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]]
        self.joining: Reconfiguration | None = None
        self.step_started: float | None = None  # when the current step began (reset after a resize)
        self.last_step: float | None = None
        # the application's job (an expander job's ranks learn it on joining); an application
        # bundled by EJB runs in several subjobs and is known by its placeholder's id (DMR_APP_ID)
        self.job_id = _app_id()
        self.progress: float | None = None  # fraction of the work done, reported at each check
        self.evolving: int | None = None  # ranks the application asks to grow to (paper 000), or None
        self.agent = ""  # host:port:key of the application's agent ("" if none)
        self._agent_client: AgentClient | None = None
        self._private_agent: subprocess.Popen[str] | None = None
        self.port: str | None = None  # rank 0: the MPI port new groups connect to
        home = comm or MPI.COMM_WORLD
        group = _my_group(home)
        self.ppn = max(1, group.size // max(1, len(group.nodes)))
        token = os.environ.get("DMR_TOKEN")
        if token:
            self._join(home, group, token)
        else:
            self.world = World.first(group, home)
            self._start_first()
        self.inhibitor = Inhibitor(self.settings.inhibit_seconds, self.settings.inhibit_calls)
        self.client = ServiceClient(self.settings.service, self.settings.timeout) if self.rank == 0 else None
        self.calls = 0
        self.asked = 0  # calls that reached the service

    # -- properties ---------------------------------------------------------------------------
    @property
    def comm(self) -> MPI.Intracomm:
        return self.world.comm

    @property
    def rank(self) -> int:
        return self.world.rank

    @property
    def size(self) -> int:
        return self.world.size

    # -- start ----------------------------------------------------------------------------------
    def _start_first(self) -> None:
        """The application's first group: open the port, start the other launch groups' join."""
        launch_groups = int(os.environ.get("DMR_LAUNCH_GROUPS", "1") or 1)
        ready: bool | str = True
        tags: list[str] = []
        if self.rank == 0:
            self.agent = os.environ.get("DMR_AGENT", "")
            if not self.agent and self.job_id is not None and not self.settings.disabled:
                self.agent = self._start_private_agent()
            if self.agent:
                self.port = MPI.Open_port()
            try:
                ready, tags = self._rendezvous(launch_groups)
            except (OSError, RuntimeError, ValueError) as exc:  # told to every rank: none waits forever
                ready = f"the agent is unreachable: {exc}"
        ready, self.agent = self.comm.bcast((ready, self.agent), root=0)  # any rank may become rank 0
        if ready is not True:
            raise RuntimeError(f"dmr: the application's groups did not all start: {ready}")
        if launch_groups > 1:
            handover = {**self._handover_base(), "token": LAUNCH_TOKEN}
            self.world.accept(self.port, launch_groups - 1, handover, self._releaser(LAUNCH_TOKEN, tags))

    def _rendezvous(self, launch_groups: int) -> tuple[bool | str, list[str]]:
        """Rank 0 of the first group: post the port and wait for the other launch groups' hellos.
        An agent an EJB manager hosts comes back on the same port when the manager restarts (and
        knows nothing of this launch): until the launch deadline, the port is posted and the
        groups expected again."""
        deadline = time.monotonic() + float(os.environ.get("DMR_LAUNCH_TIMEOUT", "120"))
        while True:
            try:
                if self.agent:
                    self._agent(within=deadline - time.monotonic()).request("port", port=self.port)
                if launch_groups <= 1:
                    return True, []
                left = max(1.0, deadline - time.monotonic())
                reply = self._agent().request(
                    "expect", token=LAUNCH_TOKEN, count=launch_groups - 1, timeout=left
                )
                return (True if reply["ready"] else str(reply.get("reason"))), list(reply.get("tags") or [])
            except (OSError, ConnectionError):
                self._drop_agent_client()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)

    def _join(self, home: MPI.Intracomm, group: Group, token: str) -> None:
        """A group started to join an application: wait for the go, connect, take the handover."""
        reply: dict[str, Any] | None = None
        if home.Get_rank() == 0:
            try:
                reply = _hello(os.environ["DMR_AGENT"], token, group)
            except (OSError, RuntimeError, KeyError, ValueError) as exc:
                reply = {"go": False, "reason": f"agent unreachable: {exc}"}
        reply = home.bcast(reply, root=0)
        if not reply.get("go"):
            if home.Get_rank() == 0:
                print(f"dmr: group {group.tag} not taken ({reply.get('reason')}); exiting", file=sys.stderr)
            MPI.Finalize()
            os._exit(0)
        self.world, handover = World.connect(str(reply["port"]), group, home)
        self._adopt(handover)
        if handover["token"] != LAUNCH_TOKEN:
            self.joining = Reconfiguration(Action.EXPAND, handover["old"], self.size, self, handover["token"])

    def _start_private_agent(self) -> str:
        """Launched by plain srun: an agent process of our own (it lives as long as this rank)."""
        spec = LaunchSpec(argv=self.program, cwd=os.getcwd(), env=clean_env(dict(os.environ)), ppn=self.ppn)
        try:
            env = {**spec.env, "SLURM_JOB_ID": str(self.job_id)}  # no PMI variables: the agent is no rank
            proc = subprocess.Popen(
                [sys.executable, "-m", "dmr", "serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(spec.to_dict()) + "\n")
            proc.stdin.flush()
            address = proc.stdout.readline().strip()
        except OSError as exc:
            warn_once("agent", f"dmr: could not start an agent ({exc}); the job cannot grow")
            return ""
        self._private_agent = proc
        return address

    def _releaser(self, token: str, tags: list[str]) -> Callable[[int], None]:
        """Rank 0: let the i-th new group connect (the agent hands out the port one group at a time)."""

        def release(i: int) -> None:
            self.agent_request("release", token=token, tag=tags[i])

        return release

    def _agent(self, within: float = 0.0) -> AgentClient:
        if self._agent_client is None:
            self._agent_client = AgentClient(self.agent, timeout=None, within=within)
        return self._agent_client

    def _drop_agent_client(self) -> None:
        if self._agent_client is not None:
            self._agent_client.close()
            self._agent_client = None

    def agent_request(self, op: str, data: bytes = b"", **fields: Any) -> dict[str, Any]:
        """A request to the agent; once more on a new connection if the agent restarted meanwhile
        (an EJB manager hosts it), after posting this application's port to it again."""
        try:
            return self._agent().request(op, data, **fields)
        except (OSError, ConnectionError):
            self._drop_agent_client()
            if self.port is not None:
                self._agent().request("port", port=self.port)
            return self._agent().request(op, data, **fields)

    # -- the check ----------------------------------------------------------------------------
    def check(
        self,
        min_procs: int,
        max_procs: int,
        factor: int = 2,
        preferred: int | None = None,
        asynchronous: bool = False,
    ) -> tuple[Action, int, Reconfiguration | None]:
        validate(min_procs, max_procs, factor, preferred, self.size)
        self.calls += 1
        now = time.perf_counter()
        # the last step's compute time at this size (since the previous check, or since the last
        # resize was carried out: see ``step_started``), for the service's efficiency feedback
        self.last_step = None if self.step_started is None else now - self.step_started
        decision: p.Decision | None = None
        if self.rank == 0:
            decision = self._ask(min_procs, max_procs, factor, preferred, asynchronous)
        msg = self.comm.bcast(None if decision is None else decision.to_dict(), root=0)
        self.step_started = time.perf_counter()
        if msg is None or msg["action"] == Action.NONE:
            return Action.NONE, self.size, None
        if msg["action"] == Action.EXPAND:
            return self._expand(msg)
        return self._shrink(msg)

    def _ask(
        self, min_procs: int, max_procs: int, factor: int, preferred: int | None, asynchronous: bool
    ) -> p.Decision | None:
        assert self.client is not None
        if self.settings.disabled:
            return None
        if self.job_id is None:
            warn_once("nojob", "dmr: not in a Slurm job (SLURM_JOB_ID unset): no resizing, the app goes on")
            return None
        previous: p.Decision | None = None
        if asynchronous and self.client.pending:
            reply = self.client.receive()
            previous = reply if isinstance(reply, p.Decision) else None
            if previous is not None and previous.action != Action.NONE:
                return previous  # act on it now; ask again once resized
        if not self.inhibitor.allow():
            return previous
        self.asked += 1
        request = self._request(min_procs, max_procs, factor, preferred)
        if asynchronous:
            self.client.send(request)
            return previous
        reply = self.client.request(request)
        return reply if isinstance(reply, p.Decision) else None

    def _request(self, min_procs: int, max_procs: int, factor: int, preferred: int | None) -> p.Check:
        ppn = self.ppn
        assert self.job_id is not None
        nodes = self.world.nodes
        return p.Check(
            job_id=self.job_id,
            current=len(nodes),
            min=-(-min_procs // ppn),
            max=max_procs // ppn,
            factor=factor,
            preferred=None if preferred is None else preferred // ppn,
            nodes=nodes,
            step_seconds=None if self.last_step is None else round(self.last_step, 6),
            progress=None if self.progress is None else min(1.0, max(0.0, self.progress)),
            evolving=self._evolving_nodes(len(nodes)),
            groups=[msgspec.convert(g.to_dict(), p.GroupInfo) for g in self.world.groups],
            agent=self.agent,
            python=sys.executable,
        )

    def _evolving_nodes(self, current: int) -> int | None:
        """The open evolving request in nodes (None once the application is that large)."""
        if self.evolving is None:
            return None
        nodes = -(-self.evolving // self.ppn)
        if nodes <= current:
            self.evolving = None
            return None
        return nodes

    # -- expand -------------------------------------------------------------------------------
    def _expand(self, msg: dict[str, Any]) -> tuple[Action, int, Reconfiguration | None]:
        old, token, count = self.size, str(msg["token"]), int(msg.get("groups") or 0)
        ready: bool | str = False
        tags: list[str] = []
        if self.rank == 0:
            try:
                reply = self.agent_request(
                    "expect", token=token, count=count, launch=list(msg.get("launch") or []),
                    timeout=self.settings.join_timeout,
                )  # fmt: skip
                ready = True if reply["ready"] else f"new groups not ready: {reply.get('reason')}"
                tags = list(reply.get("tags") or [])
            except (OSError, RuntimeError, ValueError) as exc:
                ready = f"agent unreachable: {exc}"
        ready = self.comm.bcast(ready, root=0)
        if ready is True and count > 0:
            handover = {"token": token, "old": old, **self._handover_base()}
            self.world.accept(self.port, count, handover, self._releaser(token, tags))
        ok = ready is True and count > 0
        if self.rank == 0 and self.client is not None:
            if not ok:
                warn_once("expand:" + token, f"dmr: expansion {token} undone ({ready}); staying at {old}")
            self.client.request(p.Commit(job_id=self.job_id or 0, token=token, ok=ok))
        if not ok:
            return Action.NONE, self.size, None
        return Action.EXPAND, self.size, Reconfiguration(Action.EXPAND, old, self.size, self, token)

    def _handover_base(self) -> dict[str, Any]:
        s = self.settings
        return {
            "job_id": self.job_id,
            "ppn": self.ppn,
            "agent": self.agent,
            "service": list(s.service),
            "settings": [s.inhibit_seconds, s.inhibit_calls, s.timeout, s.join_timeout, s.disabled],
        }

    def _adopt(self, handover: dict[str, Any]) -> None:
        seconds, calls, timeout, join_timeout, disabled = handover["settings"]
        host, port = handover["service"]
        self.settings = Settings((host, int(port)), seconds, calls, timeout, join_timeout, disabled)
        self.job_id = handover["job_id"]
        self.ppn = handover["ppn"]
        self.agent = handover.get("agent", "")

    # -- shrink -------------------------------------------------------------------------------
    def _shrink(self, msg: dict[str, Any]) -> tuple[Action, int, Reconfiguration | None]:
        kept = set(msg["nodes"])
        leaving = {g.tag for g in self.world.groups if not set(g.nodes) <= kept}
        old = self.size
        staying = [r for r in range(old) if r not in set(self.world.ranks_of(leaving))]
        if not leaving or not staying:
            # the service's choice does not fit this world: refuse it (the service drops the shrink)
            if self.rank == 0 and self.client is not None:
                warn_once("shrink:" + str(msg["token"]), f"dmr: cannot keep only {sorted(kept)}; no shrink")
                self.client.request(p.Commit(job_id=self.job_id or 0, token=msg["token"], ok=False))
            return Action.NONE, self.size, None
        handle = Reconfiguration(
            Action.SHRINK,
            old,
            len(staying),
            self,
            msg["token"],
            leaving_groups=leaving,
            staying_ranks=staying,
        )
        return Action.SHRINK, len(staying), handle

    def _finish_shrink(self, handle: Reconfiguration, exit: bool) -> bool:
        rank = self.rank
        leaving_nodes = [n for g in self.world.groups if g.tag in handle.leaving_groups for n in g.nodes]
        stays = self.world.remove(handle.leaving_groups)
        if not stays:
            if rank == 0:  # rank 0's group left (EJB moves every rank to another subjob)
                self._drop_root()
            if exit:  # done with MPI: finalize first, so that the ack means "nothing left to kill"
                sys.stdout.flush()
                sys.stderr.flush()
                MPI.Finalize()
            if self.job_id is not None:
                send_ack(self.settings.service, self.job_id, handle.token, rank)
            if exit:
                os._exit(0)
            return False
        if self.rank == 0 and self.client is None:
            self._become_root()
        if self.rank == 0 and self.agent:
            # the leaving groups end now, however Slurm ends them: the agent must not take that for a
            # failure of the application (it is told before the service releases their nodes)
            with contextlib.suppress(OSError, ConnectionError, RuntimeError, ValueError):
                self.agent_request("leaving", nodes=leaving_nodes)
        if self.rank == 0 and self.client is not None and self.job_id is not None:
            acks = handle.old_size - handle.new_size
            reply = self.client.request(p.ShrinkReady(job_id=self.job_id, token=handle.token, acks=acks))
            if not (isinstance(reply, p.Done) and reply.ok):
                why = getattr(reply, "reason", "no answer")
                warn_once("shrink:" + handle.token, f"dmr: service did not confirm the shrink: {why}")
        return True

    def _drop_root(self) -> None:
        """Rank 0 leaves (or ends): its port and connections go (a new rank 0 opens its own)."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._agent_client is not None:
            self._agent_client.close()
            self._agent_client = None
        if self.port is not None:
            MPI.Close_port(self.port)
            self.port = None

    def _become_root(self) -> None:
        """This rank is rank 0 after a shrink removed the old one: it talks to the service now,
        and new groups connect to its port (posted to the agent, which hands it out)."""
        self.client = ServiceClient(self.settings.service, self.settings.timeout)
        if self.agent:
            self.port = MPI.Open_port()
            try:
                self._agent().request("port", port=self.port)
            except (OSError, RuntimeError) as exc:
                warn_once("agent", f"dmr: the agent is unreachable ({exc}); the job cannot grow")

    # -- end ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Cancel an asynchronous decision nobody will act on (the service gives nodes back).
        Nothing to do on a rank a shrink removed (its world is gone, its connections closed)."""
        if self.world.left or self.rank != 0 or self.client is None:
            return
        if self.client.pending:
            reply = self.client.receive()
            if isinstance(reply, p.Decision) and reply.action != Action.NONE and self.job_id is not None:
                self.client.request(p.Commit(job_id=self.job_id, token=reply.token, ok=False))
        self._drop_root()


def _hello(agent: str, token: str, group: Group) -> dict[str, Any]:
    """A joining group's hello, until the agent's answer or the launch deadline: an agent an EJB
    manager hosts comes back on the same port when the manager restarts (the hello is said again)."""
    deadline = time.monotonic() + float(os.environ.get("DMR_LAUNCH_TIMEOUT", "120"))
    wait: float | None = None  # a first hello waits for the application's release as long as it takes
    while True:
        said = False
        try:
            client = AgentClient(agent, timeout=wait, within=deadline - time.monotonic())
            try:
                said = True
                # the launch's groups wait for the first group's expect until the launch deadline
                # (it gives up then); an expansion's groups, as long as the application takes
                within = deadline - time.monotonic() + LAUNCH_SLACK if token == LAUNCH_TOKEN else None
                return client.request("hello", token=token, group=group.to_dict(), within=within)
            finally:
                client.close()
        except (OSError, ConnectionError):
            if time.monotonic() >= deadline:
                raise
            if said:  # said again to a restarted agent, it waits only until the deadline: the
                wait = max(1.0, deadline - time.monotonic())  # application may never expect it there
            time.sleep(1.0)


def _job_id() -> int | None:
    raw = os.environ.get("SLURM_JOB_ID", "")
    return int(raw) if raw.isdigit() else None


def _app_id() -> int | None:
    """The application's id for the service: DMR_APP_ID (EJB's placeholder job), else this job."""
    raw = os.environ.get("DMR_APP_ID", "")
    return int(raw) if raw.isdigit() else _job_id()


def _my_group(home: MPI.Intracomm) -> Group:
    """This process's group: its launch (``COMM_WORLD``), the job hosting it and its nodes."""
    nodes = tuple(dict.fromkeys(home.allgather(node_name())))
    job = _job_id() or 0
    step = os.environ.get("SLURM_STEP_ID", str(os.getppid()))
    tag = os.environ.get("DMR_GROUP_TAG") or f"{job}.{step}.{nodes[0]}"
    tag = home.bcast(tag, root=0)
    return Group(tag=tag, job_id=job, nodes=nodes, size=home.Get_size())
