"""The typed view of a cluster that every part of the toolkit shares.

A :class:`Snapshot` is what a policy sees: nodes, running jobs and the pending queue
at one instant. The live Slurm adapter builds it from ``squeue --json``/``sinfo --json``;
the simulator builds it from its own state. Policies never know which.

Times are seconds (floats): absolute times are Unix epoch seconds on live Slurm and
simulation seconds in the simulator; durations (``time_limit``) are seconds, ``None``
meaning unlimited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import ClassVar

from slurm_ext.frozen import fast_init


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    OTHER = "OTHER"

    @classmethod
    def parse(cls, text: str) -> JobState:
        try:
            return cls(text.upper())
        except ValueError:
            return cls.OTHER


class NodeState(StrEnum):
    IDLE = "IDLE"
    ALLOCATED = "ALLOCATED"
    MIXED = "MIXED"
    DOWN = "DOWN"
    DRAIN = "DRAIN"
    OTHER = "OTHER"

    @classmethod
    def parse(cls, text: str) -> NodeState:
        try:
            return cls(text.upper())
        except ValueError:
            return cls.OTHER


@dataclass(frozen=True, slots=True)
class MalleableSpec:
    """How far a job may be resized, in nodes (DMR's ``min, max, factor, preferred``)."""

    min_nodes: int
    max_nodes: int
    factor: int = 2
    preferred: int | None = None

    def __post_init__(self) -> None:
        if self.min_nodes < 1:
            raise ValueError(f"min_nodes must be >= 1, got {self.min_nodes}")
        if self.max_nodes < self.min_nodes:
            raise ValueError(f"max_nodes ({self.max_nodes}) < min_nodes ({self.min_nodes})")
        if self.factor < 2:
            raise ValueError(f"factor must be >= 2, got {self.factor}")
        if self.preferred is not None and not self.min_nodes <= self.preferred <= self.max_nodes:
            raise ValueError(
                f"preferred ({self.preferred}) outside [min_nodes, max_nodes] = "
                f"[{self.min_nodes}, {self.max_nodes}]"
            )

    # Declared at submission in a field Slurm keeps: `sbatch --comment "dmr:min=1,max=8,factor=2"`
    # (`preferred=N` optional; other text in the comment is left alone).
    COMMENT_TAG: ClassVar[str] = "dmr:"

    @classmethod
    def from_comment(cls, comment: str) -> MalleableSpec | None:
        """The spec a job's ``--comment`` declares, or None (no declaration, or not a valid one)."""
        for word in comment.replace(";", " ").split():
            if not word.startswith(cls.COMMENT_TAG):
                continue
            try:
                kv = dict(item.split("=", 1) for item in word[len(cls.COMMENT_TAG) :].split(",") if item)
                return cls(int(kv["min"]), int(kv["max"]), int(kv.get("factor", 2)),
                           int(kv["preferred"]) if "preferred" in kv else None)  # fmt: skip
            except (KeyError, ValueError):
                return None
        return None

    def to_comment(self) -> str:
        pref = "" if self.preferred is None else f",preferred={self.preferred}"
        return f"{self.COMMENT_TAG}min={self.min_nodes},max={self.max_nodes},factor={self.factor}{pref}"

    def sizes(self, current: int) -> list[int]:
        """Sizes reachable from ``current`` by multiplying/dividing by ``factor``, ascending."""
        out = {current}
        n = current
        while n * self.factor <= self.max_nodes:
            n *= self.factor
            out.add(n)
        n = current
        while n % self.factor == 0 and n // self.factor >= self.min_nodes:
            n //= self.factor
            out.add(n)
        return sorted(s for s in out if self.min_nodes <= s <= self.max_nodes or s == current)

    def toward(self, current: int, target: int) -> int:
        """The size a resize from ``current`` to ``target`` can really make: the largest size
        reachable by the factor that does not pass ``target`` (a shrink frees at least what was
        asked, a growth takes no more than was given); ``current`` if there is none. The
        application's runtime knows only these sizes (DMR's ``factor``); policies other than DMR
        pick any size in the range."""
        if target < current:
            return max((s for s in self.sizes(current) if s <= target), default=current)
        return max((s for s in self.sizes(current) if current < s <= target), default=current)

    def start_size(self, target: int) -> int | None:
        """The largest size up to ``target`` a job declaring a preferred size may start on (one its
        runtime can reach the preferred size from); ``target`` with no preferred size; None if none."""
        if self.preferred is None:
            return target if self.min_nodes <= target <= self.max_nodes else None
        return max((s for s in self.sizes(self.preferred) if s <= target), default=None)


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    state: NodeState
    cpus: int = 1
    partitions: tuple[str, ...] = ()  # every partition the node is in (empty: not known, the simulator)
    # idle, and a pending job is planned on it (Slurm 23.02+ flags it PLANNED; its state is then
    # OTHER): free only to a job that ends before that one starts, which the EJB probe works out
    planned: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class Job:
    job_id: int
    state: JobState
    node_count: int
    name: str = ""
    user: str = ""
    nodes: tuple[str, ...] = ()
    submit_time: float = 0.0
    start_time: float | None = None
    end_time: float | None = None  # expected end (running) or expected start+limit (pending)
    time_limit: float | None = None  # seconds; None = unlimited
    priority: int = 0
    partition: str = ""
    dependency: str = ""
    reason: str = ""
    malleable: MalleableSpec | None = None
    # an open evolving request (paper 000) of a running job: the size it asks to grow to. Its
    # ``malleable`` spec is then ``[current, ask]`` and only describes the ask: a policy grants it
    # (an ``Expand`` to that size) or refuses it, and never resizes the job otherwise.
    evolving: int | None = None
    # live Slurm only (what a job submitted on this job's behalf must share with it)
    account: str = ""
    qos: str = ""
    batch_host: str = ""
    workdir: str = ""
    stdout: str = ""

    @property
    def is_running(self) -> bool:
        return self.state is JobState.RUNNING

    @property
    def is_pending(self) -> bool:
        return self.state is JobState.PENDING


@dataclass(frozen=True)
class Snapshot:
    """Nodes and jobs at one instant. ``jobs`` holds only live jobs (pending or running)."""

    time: float
    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...] = field(default=())

    @cached_property
    def total_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.state not in (NodeState.DOWN, NodeState.DRAIN))

    @cached_property
    def idle_nodes(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.state is NodeState.IDLE)

    @property
    def free(self) -> int:
        return len(self.idle_nodes)

    @cached_property
    def running(self) -> tuple[Job, ...]:
        return tuple(j for j in self.jobs if j.is_running)

    @cached_property
    def pending(self) -> tuple[Job, ...]:
        """Pending jobs in scheduling order: highest priority first, then oldest."""
        return tuple(
            sorted(
                (j for j in self.jobs if j.is_pending),
                key=lambda j: (-j.priority, j.submit_time, j.job_id),
            )
        )

    def job(self, job_id: int) -> Job | None:
        return next((j for j in self.jobs if j.job_id == job_id), None)
