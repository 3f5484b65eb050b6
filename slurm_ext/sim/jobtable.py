"""The simulator's job table: one row per job, as plain per-column lists, and the typed view of
the simulator that the scheduler passes, snapshots and results read.

:class:`JobTable` holds the columns (indexed by an internal index ``i``: arrival order, jobs a
controller submits appended). Only the engine writes them; every other module reads them
through :class:`SimView`, the part of :class:`~slurm_ext.sim.engine.Simulator` they use. This
module imports nothing of the engine, the schedulers or the results at run time, so each of
them can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from slurm_ext.model import MalleableSpec
from slurm_ext.sim.states import FUTURE
from slurm_ext.workloads.model import EvolvingSpec, SimJob

if TYPE_CHECKING:
    from slurm_ext.sim.queue_index import QueueBySize


class JobTable:
    """Per-job columns; plain lists are the fastest thing CPython has and copy with one slice.

    - ``jid`` (job id), ``sub`` (submit time), ``size0`` (submitted nodes), ``lim`` and
      ``work`` (requested and actual time at ``size0``): never change once a row exists;
    - ``size`` (current nodes), ``start_t``/``end_t`` (-1 until known), ``state`` (see
      :data:`slurm_ext.sim.states.STATE_NAMES`), ``resizes``, ``ver`` (bumped by every start,
      resize and end: events carry it, so a stale one is dropped), ``qkey`` (queue order as a
      key: arrival counter, negative after a ``RaisePriority``);
    - sparse columns, dicts keyed by index: ``spec`` (malleable range), ``serial`` (serial
      fraction), ``evolving``;
    - ``index_of[job_id] -> i``.
    """

    __slots__ = (
        "jid",
        "sub",
        "size0",
        "lim",
        "work",
        "size",
        "start_t",
        "end_t",
        "state",
        "resizes",
        "ver",
        "qkey",
        "spec",
        "serial",
        "evolving",
        "index_of",
    )

    # Columns that never change once a row exists (rows are only appended).
    STATIC = ("jid", "sub", "size0", "lim", "work")
    # Columns a run writes, with a row's value before its job arrives (None: ``size`` is ``size0``).
    MUTABLE: dict[str, object] = {
        "size": None,
        "start_t": -1.0,
        "end_t": -1.0,
        "state": FUTURE,
        "resizes": 0,
        "ver": 0,
        "qkey": 0,
    }
    SPARSE = ("spec", "serial", "evolving")

    jid: list[int]
    sub: list[float]
    size0: list[int]
    lim: list[float]  # work units (= seconds at size0)
    work: list[float]  # actual work, same units
    size: list[int]
    start_t: list[float]
    end_t: list[float]
    state: list[int]
    resizes: list[int]
    ver: list[int]
    qkey: list[int]
    spec: dict[int, MalleableSpec]
    serial: dict[int, float]
    evolving: dict[int, EvolvingSpec]
    index_of: dict[int, int]

    def __init__(self, jobs: Sequence[SimJob] = ()) -> None:
        n = len(jobs)
        self.jid = [j.job_id for j in jobs]
        self.sub = [float(j.submit) for j in jobs]
        self.size0 = [j.nodes for j in jobs]
        self.lim = [float(j.time_limit) for j in jobs]
        self.work = [float(j.run_time) for j in jobs]
        self.size = list(self.size0)
        self.start_t = [-1.0] * n
        self.end_t = [-1.0] * n
        self.state = [FUTURE] * n
        self.resizes = [0] * n
        self.ver = [0] * n
        self.qkey = [0] * n
        self.spec = {i: j.malleable for i, j in enumerate(jobs) if j.malleable}
        self.serial = {i: j.serial_fraction for i, j in enumerate(jobs) if j.serial_fraction}
        self.evolving = {i: j.evolving for i, j in enumerate(jobs) if j.evolving}
        self.index_of = {jid: i for i, jid in enumerate(self.jid)}
        if len(self.index_of) != n:
            raise ValueError("workload job ids are not unique")

    def __len__(self) -> int:
        return len(self.jid)

    def append(
        self,
        job_id: int,
        submit: float,
        nodes: int,
        limit: float,
        work: float,
        malleable: MalleableSpec | None = None,
        serial_fraction: float = 0.0,
    ) -> int:
        """Add a row for a job not yet arrived; returns its index."""
        i = len(self.jid)
        self.jid.append(job_id)
        self.sub.append(submit)
        self.size0.append(nodes)
        self.lim.append(float(limit))
        self.work.append(float(work))
        self.size.append(nodes)
        self.start_t.append(-1.0)
        self.end_t.append(-1.0)
        self.state.append(FUTURE)
        self.resizes.append(0)
        self.ver.append(0)
        self.qkey.append(0)
        if malleable is not None:
            self.spec[i] = malleable
        if serial_fraction:
            self.serial[i] = serial_fraction
        self.index_of[job_id] = i
        return i

    def copy(self) -> JobTable:
        """An independent table with the same rows (each column copied by one slice)."""
        new = object.__new__(JobTable)
        for name in JobTable.__slots__:
            setattr(new, name, getattr(self, name).copy())
        return new

    def columns(self) -> dict[str, object]:
        """Every column by name (the lists and dicts themselves, not copies)."""
        return {name: getattr(self, name) for name in JobTable.__slots__}


class SimView(Protocol):
    """What the scheduler passes (:mod:`~slurm_ext.sim.schedulers`), snapshots
    (:mod:`~slurm_ext.sim.snapshot`) and results (:mod:`~slurm_ext.sim.result`) read of the
    simulator; the engine's :class:`~slurm_ext.sim.engine.Simulator` is one. A pass also edits
    ``queue`` in place and starts jobs with :meth:`start_queued`; nothing else writes."""

    table: JobTable
    now: float
    free: int
    total_nodes: int
    queue: list[int]  # queued job indices, in order
    qsizes: list[int]  # queued jobs per size (index = nodes)
    queue_by_size: QueueBySize | None  # the queued jobs by size (policy runs with EASY's pass)
    ends: list[tuple[float, int]]  # running jobs' (expected end, index), sorted
    exp_end: dict[int, float]  # running jobs' expected ends
    evolve_asking: dict[int, int]  # index -> target size while an evolving ask is open

    @property
    def stable_prefix(self) -> int: ...

    @property
    def trace_jobs(self) -> int: ...

    def start_queued(self, i: int, nodes: int | None = None) -> None: ...
