"""`SimCluster`: the simulator as a :class:`slurm_ext.backend.ClusterBackend`.

The seven calls every backend answers, with the live adapter's answers and errors
(:class:`slurm_ext.slurm.SlurmCluster`; the live-only calls keep the interface's defaults: no
helper jobs, no steps): ``submit`` returns the new job's id (``InvalidRequest`` for an impossible shape),
``cancel`` raises ``JobNotFound`` for a job that is neither pending nor running, ``shrink`` and
``expand`` take a running job to a new size (``InvalidRequest`` for a size that is no shrink or
expansion, or a ``keep`` that is not the job's; ``ResizeTimeout`` when the free nodes are too
few, as the live resizer job times out), ``raise_priority`` moves a pending job to the head of
the queue. Any running job may be resized, as on Slurm: malleability is the policies' concern.

Nodes have names (``n1``, ``n2``, ... unless given), and every running job holds a set of them:
a job that starts takes the lowest-named free nodes, an expansion adds the lowest-named free ones,
a shrink keeps ``keep`` (default: the job's first nodes). The simulator itself only counts nodes;
the sets are kept here, brought up to date with the simulator's sizes whenever they are read.

Two ways to drive it:

- **standalone** (``settle=True``, e.g. :meth:`SimCluster.empty`): every write is followed by
  what a cluster does at once (a submitted job arrives, and the base scheduler starts what fits),
  so :meth:`snapshot` shows what ``squeue`` would show a moment later. Time stands still until
  :meth:`advance`. The control service's own tests run against it.
- **inside a run** (``settle=False``): a :class:`~slurm_ext.sim.controller.SimController`'s
  callbacks (EJB's driver) submit and cancel through it; the engine's scheduling step at the
  same instant follows, as it would for :meth:`Simulator.submit`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import replace

from slurm_ext.backend import ClusterBackend, JobRequest
from slurm_ext.decisions import RaisePriority
from slurm_ext.errors import InvalidRequest, JobNotFound, ResizeTimeout
from slurm_ext.model import Job, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.sim.engine import Simulator
from slurm_ext.sim.states import FUTURE, PENDING, RUNNING, STATE_NAMES
from slurm_ext.workloads.model import Workload


class SimCluster(ClusterBackend):
    """A :class:`~slurm_ext.backend.ClusterBackend` over a :class:`Simulator`. Thread-safe (one lock)."""

    def __init__(
        self, sim: Simulator, *, settle: bool = True, node_names: Sequence[str] | None = None
    ) -> None:
        self.sim = sim
        self.settle = settle
        names = (
            tuple(node_names)
            if node_names is not None
            else tuple(f"n{k + 1}" for k in range(sim.total_nodes))
        )
        if len(names) != sim.total_nodes or len(set(names)) != len(names):
            raise ValueError(f"need {sim.total_nodes} distinct node names, got {len(names)}")
        self.node_names = names
        self._held: dict[int, list[str]] = {}  # running job id -> its nodes
        self._job_names: dict[int, str] = {}
        self._lock = threading.RLock()

    @classmethod
    def empty(
        cls, nodes: int, scheduler: str = "easy", node_names: Sequence[str] | None = None
    ) -> SimCluster:
        """An idle standalone cluster of ``nodes`` nodes whose base scheduler is ``scheduler``."""
        return cls(Simulator(Workload([], nodes, "sim-cluster"), scheduler), node_names=node_names)

    # ----- reads -------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        with self._lock:
            snap = self.sim.snapshot()
            held = self._sync()
            busy = {n for nodes in held.values() for n in nodes}
            nodes = tuple(
                Node(n, NodeState.ALLOCATED if n in busy else NodeState.IDLE) for n in self.node_names
            )
            names = self._job_names
            jobs = tuple(
                replace(j, nodes=tuple(held.get(j.job_id, ())), name=names.get(j.job_id, j.name))
                for j in snap.jobs
            )
            return Snapshot(snap.time, nodes, jobs)

    def job(self, job_id: int, snap: Snapshot | None = None) -> Job:
        """The pending or running job ``job_id``, or JobNotFound (as ``SlurmCluster.job``)."""
        job = (snap or self.snapshot()).job(job_id) if job_id >= 1 else None
        if job is None:
            raise JobNotFound(f"job {job_id} is not pending or running on this cluster (unknown or finished)")
        return job

    def advance(self, until: float) -> None:
        """Let simulated time run: every event before ``until`` (jobs end at their limits)."""
        with self._lock:
            self.sim.advance(until=until)
            self._sync()

    # ----- writes ------------------------------------------------------------------------------
    def submit(self, request: JobRequest) -> int:
        """Submit a job that runs until cancelled or killed at ``request.time_limit``. A range
        declared as on Slurm (``extra_args=("--comment", "dmr:min=1,max=8")``) makes it malleable."""
        if not 1 <= request.nodes <= self.sim.total_nodes:
            raise InvalidRequest(
                f"a job needs 1..{self.sim.total_nodes} nodes on this cluster, got {request.nodes}"
            )
        limit = math.inf if request.time_limit is None else request.time_limit
        if limit <= 0:
            raise InvalidRequest(f"time limit must be positive, got {limit} s")
        with self._lock:
            job_id = self.sim.submit(
                request.nodes,
                time_limit=limit,
                run_time=math.inf,
                name=request.name,
                malleable=_declared(request),
            )
            if request.name:
                self._job_names[job_id] = request.name
            self._settle()
            return job_id

    def cancel(self, job_id: int) -> None:
        with self._lock:
            self._state(job_id)  # unknown or finished: JobNotFound, as scancel through the adapter
            self.sim.cancel(job_id)
            self._settle()

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None:
        """Cancel without complaint if the job has ended already, and (``name``) only if it bears that
        name (as ``SlurmCluster.cancel_quietly``)."""
        with self._lock:
            if job_id in self.sim.index_of and (name is None or self._job_names.get(job_id) == name):
                self.sim.cancel(job_id)
                self._settle()

    def shrink(
        self, job_id: int, new_size: int, keep: Sequence[str] | None = None, snap: Snapshot | None = None
    ) -> None:
        with self._lock:
            cur = self._running(job_id, "shrink")
            if not 1 <= new_size < cur:
                raise InvalidRequest(
                    f"cannot shrink job {job_id} from {cur} to {new_size} nodes (must be 1..{cur - 1})"
                )
            mine = self._sync()[job_id]
            if keep is not None and (len(keep) != new_size or not set(keep) <= set(mine)):
                raise InvalidRequest(f"keep={list(keep)} must be {new_size} of the job's nodes {mine}")
            self.sim.resize(job_id, new_size)
            kept = set(keep) if keep is not None else set(mine[:new_size])
            self._held[job_id] = [n for n in mine if n in kept]
            self._settle()

    def expand(self, job_id: int, new_size: int, timeout: float = 10.0, snap: Snapshot | None = None) -> None:
        with self._lock:
            cur = self._running(job_id, "expand")
            extra = new_size - cur
            if extra < 1:
                raise InvalidRequest(f"cannot expand job {job_id} from {cur} to {new_size} nodes")
            if extra > self.sim.free:
                raise ResizeTimeout(
                    f"no {extra} free node(s) for job {job_id} within {max(1, math.ceil(timeout))} s "
                    f"({self.sim.free} free); resizer cancelled"
                )
            self._sync()
            self.sim.resize(job_id, new_size)
            self._sync()  # the new nodes: the lowest-named free ones
            self._settle()

    def raise_priority(self, job_id: int) -> None:
        with self._lock:
            state = self._state(job_id)
            if state != PENDING:
                raise InvalidRequest(
                    f"job {job_id} is {STATE_NAMES[state]}; only a pending job can be moved up the queue"
                )
            self.sim.apply([RaisePriority(job_id, "raise_priority")])
            self._settle()

    # ----- helpers -----------------------------------------------------------------------------
    def _state(self, job_id: int) -> int:
        """The engine state of a pending (or just submitted) or running job; JobNotFound otherwise."""
        i = self.sim.index_of.get(job_id)
        state = None if i is None else self.sim.state[i]
        if state not in (PENDING, FUTURE, RUNNING):
            raise JobNotFound(f"job {job_id} is not pending or running on this cluster (unknown or finished)")
        return PENDING if state == FUTURE else state

    def _running(self, job_id: int, verb: str) -> int:
        state = self._state(job_id)
        if state != RUNNING:
            raise InvalidRequest(f"cannot {verb} job {job_id}: it is {STATE_NAMES[state]}, not RUNNING")
        return self.sim.size[self.sim.index_of[job_id]]

    def _settle(self) -> None:
        if self.settle:
            self.sim.settle()

    def _sync(self) -> dict[int, list[str]]:
        """Bring the node sets up to date with the simulator: ended jobs give theirs back, a job
        the simulator started or grew takes the lowest-named free nodes, one it shrank keeps its first."""
        sim = self.sim
        held = self._held
        running = {sim.jid[i]: sim.size[i] for _, i in sim.ends}
        for job_id in [j for j in held if j not in running]:
            del held[job_id]
        for job_id, size in running.items():
            mine = held.get(job_id)
            if mine is not None and len(mine) > size:
                del mine[size:]
        short = {j: n - len(held.get(j, ())) for j, n in running.items() if n > len(held.get(j, ()))}
        if short:
            busy = {n for nodes in held.values() for n in nodes}
            free = iter([n for n in self.node_names if n not in busy])
            for job_id in sorted(short, key=lambda j: sim.index_of[j]):
                held.setdefault(job_id, []).extend(next(free) for _ in range(short[job_id]))
        return held


def _declared(request: JobRequest) -> MalleableSpec | None:
    """The range a job's ``--comment`` declares (read from ``squeue`` by the live adapter)."""
    args = request.extra_args
    for k, arg in enumerate(args):
        if arg == "--comment" and k + 1 < len(args):
            return MalleableSpec.from_comment(args[k + 1])
        if arg.startswith("--comment="):
            return MalleableSpec.from_comment(arg.split("=", 1)[1])
    return None
