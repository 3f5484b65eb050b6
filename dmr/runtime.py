"""The per-process DMR runtime: asks the service (rank 0), shares the decision, carries it out.

Collective over the application's current communicator. ``check`` returns
``(action, new_size, handle)``; on an action the handle (:class:`Reconfiguration`) is
what the application uses to move its data, as the paper's opaque handler:

- expand: the new ranks are already spawned onto the nodes just added and merged; the
  handle's communicator is the new world. Spawned ranks get their own handle from
  :attr:`Runtime.joining`, and both sides call the same handle methods in the same order.
- shrink: the handle's communicator is still the old world; the application moves its
  data to the staying ranks (:meth:`Reconfiguration.redistribute`), then
  :meth:`Reconfiguration.finish` disconnects the leaving ranks, which acknowledge to the
  service and exit; rank 0 tells the service, which shrinks the allocation after all acks.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from mpi4py import MPI

from dmr import redistribute as rd
from dmr.client import ServiceClient, send_ack, warn_once
from dmr.config import Settings, validate
from dmr.inhibitor import Inhibitor
from dmr.world import World
from slurm_ext import protocol as p


class Action(StrEnum):
    NONE = "none"
    EXPAND = "expand"
    SHRINK = "shrink"


def node_name() -> str:
    """The Slurm node this rank runs on (``SLURMD_NODENAME``), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


@dataclass
class Reconfiguration:
    """The handle of one resize, on every rank of the old and new world."""

    action: Action
    old_size: int
    new_size: int
    runtime: Runtime
    token: str = ""
    finished: bool = False

    @property
    def comm(self) -> MPI.Intracomm:
        return self.runtime.world.comm

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    @property
    def leaving(self) -> bool:
        """True on the ranks a shrink removes."""
        return self.action is Action.SHRINK and self.rank >= self.new_size

    def redistribute(self, local: np.ndarray | None) -> np.ndarray:
        """Move a block-distributed array from the old to the new layout (new ranks pass None)."""
        return rd.redistribute(self.comm, local, self.old_size, self.new_size)

    def bcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank of the resize (replicated state: step counter, parameters)."""
        return self.comm.bcast(obj, root=0)

    def finish(self, exit: bool = True) -> bool:
        """Complete the resize; returns True on ranks that continue.

        Shrink: collective disconnect; leaving ranks acknowledge to the service and (with
        ``exit``) terminate here; rank 0 then waits for the service to shrink the job.
        """
        if self.finished:
            return not self.runtime.world.left
        self.finished = True
        if self.action is not Action.SHRINK:
            return True
        return self.runtime._finish_shrink(self, exit)


@dataclass
class _Plan:
    """An expansion in factor steps: (ranks to add, their hosts) per spawn."""

    steps: list[tuple[int, list[str]]] = field(default_factory=list)


class Runtime:
    """One per process; created on first use by :func:`dmr.runtime` (or explicitly)."""

    def __init__(self, comm: MPI.Intracomm | None = None, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.joining: Reconfiguration | None = None
        self.job_id = _job_id()
        joined = World.join()
        if joined is None:
            self.world = World.launch(comm)
            nodes = self.world.comm.allgather(node_name())
            self.ppn = max(1, self.world.size // max(1, len(dict.fromkeys(nodes))))
            self.rank_nodes: list[str] = nodes
        else:
            self.world, handover = joined
            self._adopt(handover)
            self._continue_expand(handover)
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
        decision: p.Decision | None = None
        if self.rank == 0:
            decision = self._ask(min_procs, max_procs, factor, preferred, asynchronous)
        msg = self.comm.bcast(None if decision is None else decision.to_dict(), root=0)
        if msg is None or msg["action"] == Action.NONE:
            return Action.NONE, self.size, None
        procs = int(msg["new_size"]) * self.ppn
        if msg["action"] == Action.EXPAND:
            return self._expand(procs, list(msg["nodes"]), msg["token"])
        handle = Reconfiguration(Action.SHRINK, self.size, procs, self, msg["token"])
        return Action.SHRINK, procs, handle

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
        return p.Check(
            job_id=self.job_id,
            current=self.size // ppn,
            min=-(-min_procs // ppn),
            max=max_procs // ppn,
            factor=factor,
            preferred=None if preferred is None else preferred // ppn,
            floor=self.world.sizes[0] // ppn,
            nodes=list(dict.fromkeys(self.rank_nodes)),
            levels=[s // ppn for s in self.world.sizes],
        )

    # -- expand -------------------------------------------------------------------------------
    def _plan(self, target: int, hosts: list[str]) -> _Plan:
        """One spawn per new node (``ppn`` ranks each).

        Slurm's pmi2 runs a spawn as ``srun --ntasks=k --nodelist=<host>`` with the
        environment of the job's first ``srun`` (``SLURM_NNODES`` of the launch), so a
        spawn spanning several nodes is refused; one node per spawn always fits. Every
        intermediate size also becomes a level, so any later shrink lands on one.
        """
        plan = _Plan()
        count = (target - self.size) // self.ppn
        for i in range(count):
            plan.steps.append((self.ppn, hosts[i : i + 1] if i < len(hosts) else []))
        return plan

    def _expand(
        self, target: int, hosts: list[str], token: str
    ) -> tuple[Action, int, Reconfiguration | None]:
        old = self.size
        plan = self._plan(target, hosts if self.settings.spawn_host else [])
        handover = {"plan": plan.steps, "old": old, "token": token, **self._handover_base()}
        ok = True
        try:
            self._run_plan(plan.steps, 0, handover)
        except MPI.Exception as exc:
            ok = False
            warn_once("spawn", f"dmr: spawning {target - old} ranks failed ({exc}); staying at {old}")
        if self.rank == 0 and self.client is not None:
            self.client.request(p.Commit(job_id=self.job_id or 0, token=token, ok=ok))
        if not ok:
            return Action.NONE, self.size, None
        return Action.EXPAND, self.size, Reconfiguration(Action.EXPAND, old, self.size, self, token)

    def _run_plan(self, steps: list[tuple[int, list[str]]], start: int, handover: dict[str, Any]) -> None:
        for i in range(start, len(steps)):
            count, nodes = steps[i]
            self.world.spawn(count, nodes or None, {**handover, "index": i + 1})
        self.rank_nodes = self.comm.allgather(node_name())

    def _handover_base(self) -> dict[str, Any]:
        s = self.settings
        return {
            "job_id": self.job_id,
            "ppn": self.ppn,
            "service": list(s.service),
            "settings": [s.inhibit_seconds, s.inhibit_calls, s.timeout, s.spawn_host, s.disabled],
        }

    def _adopt(self, handover: dict[str, Any]) -> None:
        seconds, calls, timeout, spawn_host, disabled = handover["settings"]
        host, port = handover["service"]
        self.settings = Settings((host, int(port)), seconds, calls, timeout, spawn_host, disabled)
        self.job_id = handover["job_id"]
        self.ppn = handover["ppn"]

    def _continue_expand(self, handover: dict[str, Any]) -> None:
        """In a spawned rank: take part in the rest of the expansion plan, then hand out the handle."""
        self._run_plan([tuple(s) for s in handover["plan"]], handover["index"], handover)  # type: ignore[misc]
        self.joining = Reconfiguration(Action.EXPAND, handover["old"], self.size, self, handover["token"])

    # -- shrink -------------------------------------------------------------------------------
    def _finish_shrink(self, handle: Reconfiguration, exit: bool) -> bool:
        rank = self.rank
        stays = self.world.shrink_to(handle.new_size)
        if not stays:
            if exit:  # done with MPI: finalize first, so that the ack means "nothing left to kill"
                sys.stdout.flush()
                sys.stderr.flush()
                MPI.Finalize()
            if self.job_id is not None:
                send_ack(self.settings.service, self.job_id, handle.token, rank)
            if exit:
                os._exit(0)
            return False
        self.rank_nodes = self.rank_nodes[: handle.new_size]
        if self.rank == 0 and self.client is not None and self.job_id is not None:
            acks = handle.old_size - handle.new_size
            reply = self.client.request(p.ShrinkReady(job_id=self.job_id, token=handle.token, acks=acks))
            if not (isinstance(reply, p.Done) and reply.ok):
                why = getattr(reply, "reason", "no answer")
                warn_once("shrink:" + handle.token, f"dmr: service did not confirm the shrink: {why}")
        return True

    # -- end ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Cancel an asynchronous decision nobody will act on (the service gives nodes back)."""
        if self.rank != 0 or self.client is None:
            return
        if self.client.pending:
            reply = self.client.receive()
            if isinstance(reply, p.Decision) and reply.action != Action.NONE and self.job_id is not None:
                self.client.request(p.Commit(job_id=self.job_id, token=reply.token, ok=False))
        self.client.close()


def _job_id() -> int | None:
    raw = os.environ.get("SLURM_JOB_ID", "")
    return int(raw) if raw.isdigit() else None
