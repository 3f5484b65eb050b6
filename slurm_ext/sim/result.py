"""The outcome of a simulated run: per-job columns (numpy) plus run-wide accounting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from slurm_ext.sim.jobtable import SimView
from slurm_ext.sim.states import STATE_NAMES, Rejected
from slurm_ext.sim.timeline import Timeline
from slurm_ext.workloads.model import SkippedJob, Workload


class FinishedRun(SimView, Protocol):
    """What :meth:`SimResult.from_sim` reads of a simulator beyond :class:`SimView`: its run
    accounting (:class:`~slurm_ext.sim.engine.Simulator` is one)."""

    workload_name: str
    scheduler_name: str
    policy: Any
    skipped: list[SkippedJob]
    busy_area: float
    frag_area: float
    queue_time: float
    rejected: list[Rejected]
    resize_log: list[tuple[float, int, int, int]]
    decisions: int
    evolve_granted: set[int]
    wall_time: float

    def timeline_columns(self) -> Timeline: ...


@dataclass
class SimResult:
    """Per-job arrays share one order (arrival order). ``start``/``end`` are -1 where a job never
    started/ended (a run stopped early, a claimed or cancelled job)."""

    workload: str
    scheduler: str
    policy: str
    nodes: int
    job_id: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray  # submitted nodes
    final_size: np.ndarray  # nodes when it ended (differs after resizes)
    limit: np.ndarray  # requested time at the submitted size
    work: np.ndarray  # actual run time at the submitted size (inf: runs until cancelled)
    state: np.ndarray  # state names
    resizes: np.ndarray
    malleable: np.ndarray  # bool
    busy_area: float  # node-seconds of allocated nodes
    frag_area: float  # idle node-seconds while the queue was non-empty
    queue_time: float  # seconds with a non-empty queue
    t_first: float  # first arrival
    t_last: float  # clock when the run stopped
    timeline: dict[str, np.ndarray] = field(default_factory=dict)
    skipped: list[SkippedJob] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    resize_log: list[tuple[float, int, int, int]] = field(default_factory=list)  # (t, job, old, new)
    decisions: int = 0
    evolving_asks_granted: int = 0
    wall_time: float = 0.0

    @classmethod
    def from_sim(cls, sim: FinishedRun) -> SimResult:
        table = sim.table
        n = len(table)
        names = np.array(STATE_NAMES)
        malleable = np.zeros(n, dtype=bool)
        if table.spec:
            malleable[list(table.spec)] = True
        first = table.sub[0] if sim.trace_jobs else 0.0
        times, busy, running, queued = sim.timeline_columns()
        return cls(
            workload=sim.workload_name,
            scheduler=sim.scheduler_name,
            policy=getattr(sim.policy, "name", type(sim.policy).__name__) if sim.policy else "",
            nodes=sim.total_nodes,
            job_id=np.array(table.jid, dtype=np.int64),
            submit=np.array(table.sub, dtype=float),
            start=np.array(table.start_t, dtype=float),
            end=np.array(table.end_t, dtype=float),
            size=np.array(table.size0, dtype=np.int64),
            final_size=np.array(table.size, dtype=np.int64),
            limit=np.array(table.lim, dtype=float),
            work=np.array(table.work, dtype=float),
            state=names[np.array(table.state, dtype=np.int64)] if n else np.array([], dtype=str),
            resizes=np.array(table.resizes, dtype=np.int64),
            malleable=malleable,
            busy_area=sim.busy_area,
            frag_area=sim.frag_area,
            queue_time=sim.queue_time,
            t_first=first,
            t_last=sim.now,
            timeline={
                "time": np.frombuffer(times, dtype=float).copy(),
                "busy": np.frombuffer(busy, dtype=np.int64).copy(),
                "running": np.frombuffer(running, dtype=np.int64).copy(),
                "queued": np.frombuffer(queued, dtype=np.int64).copy(),
            },
            skipped=list(sim.skipped),
            rejected=list(sim.rejected),
            resize_log=list(sim.resize_log),
            decisions=sim.decisions,
            evolving_asks_granted=len(sim.evolve_granted),
            wall_time=sim.wall_time,
        )

    @classmethod
    def combined(cls, parts: list[SimResult], workload: Workload) -> SimResult:
        """One run of ``workload`` from the runs of its pools (:meth:`Workload.split`):
        the jobs of all in arrival order, the areas and counts added, the timelines summed (each
        pool's value holds until its next row), and the time with a queue wherever one pool had one."""
        first = parts[0]
        order = np.argsort(np.concatenate([r.submit for r in parts]), kind="stable")

        def column(name: str) -> np.ndarray:
            return np.concatenate([getattr(r, name) for r in parts])[order]

        when = np.unique(np.concatenate([r.timeline["time"] for r in parts if r.timeline]))
        timeline = {"time": when}
        for key in ("busy", "running", "queued"):
            total = np.zeros(len(when), dtype=np.int64)
            for r in parts:
                if r.timeline and len(r.timeline["time"]):
                    row = np.searchsorted(r.timeline["time"], when, side="right") - 1
                    total += np.where(row >= 0, r.timeline[key][np.maximum(row, 0)], 0)
            timeline[key] = total
        queued = timeline["queued"][:-1] > 0
        return cls(
            workload=workload.name, scheduler=first.scheduler, policy=first.policy, nodes=workload.nodes,
            job_id=column("job_id"), submit=column("submit"), start=column("start"), end=column("end"),
            size=column("size"), final_size=column("final_size"), limit=column("limit"), work=column("work"),
            state=column("state"), resizes=column("resizes"), malleable=column("malleable"),
            busy_area=sum(r.busy_area for r in parts), frag_area=sum(r.frag_area for r in parts),
            queue_time=float(np.diff(when)[queued].sum()) if len(when) > 1 else 0.0,
            t_first=min(r.t_first for r in parts), t_last=max(r.t_last for r in parts),
            timeline=timeline,
            skipped=list(workload.skipped), rejected=[x for r in parts for x in r.rejected],
            resize_log=sorted(x for r in parts for x in r.resize_log),
            decisions=sum(r.decisions for r in parts),
            evolving_asks_granted=sum(r.evolving_asks_granted for r in parts),
            wall_time=sum(r.wall_time for r in parts),
        )  # fmt: skip

    @property
    def finished(self) -> np.ndarray:
        """Mask of jobs that started and ended (completed, killed, or cancelled while running)."""
        return (self.start >= 0) & (self.end >= 0)

    def __len__(self) -> int:
        return len(self.job_id)
