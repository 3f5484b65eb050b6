"""What the simulator consumes: a machine size and a list of jobs.

Every workload source in :mod:`slurm_ext.workloads` (SWF trace, synthetic generator, the modified
ESP benchmark) produces a :class:`Workload`. The type lives here, beside the sources, so imports
flow one way: the simulator imports the workloads, never the reverse.

Times are simulation seconds. ``time_limit`` and ``run_time`` are wall
times *at the submitted size* ``nodes``; a resize rescales them (:func:`speedup`,
:meth:`slurm_ext.sim.engine.Simulator._resize`).
A job whose ``run_time`` exceeds its ``time_limit`` is killed at the limit, as Slurm would.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from slurm_ext.model import MalleableSpec


def split_partition(spec: str) -> tuple[str, str | None]:
    """``WHAT@PARTITION`` -> (WHAT, PARTITION), split at the last ``@``; (spec, None) without one.

    The one reading of the ``@PARTITION`` suffix of a workload spec (an SWF trace's ``PATH@N``, a
    site's ``sacct:START..END@NAME``); each source checks its partition as it reads it.
    """
    head, sep, partition = spec.rpartition("@")
    return (head, partition) if sep else (spec, None)


@dataclass(frozen=True, slots=True)
class EvolvingSpec:
    """A job that asks for ``extra_nodes`` more nodes at given fractions of its run (``000_*``).

    The ask at ``at[0]`` is repeated at each later point until one is granted (the modified
    ESP workload asks at 16% and again at 25%).
    """

    at: tuple[float, ...]
    extra_nodes: int

    def __post_init__(self) -> None:
        if not self.at or any(not 0.0 <= a < 1.0 for a in self.at):
            raise ValueError(f"evolving points must be fractions in [0, 1), got {self.at}")
        if self.extra_nodes < 1:
            raise ValueError(f"extra_nodes must be >= 1, got {self.extra_nodes}")


class SimJob(NamedTuple):
    """One job of a workload (a named tuple: cheap to build by the hundred thousand)."""

    job_id: int
    submit: float
    nodes: int
    time_limit: float  # requested wall time at ``nodes``; math.inf = unlimited
    run_time: float  # actual wall time at ``nodes``
    malleable: MalleableSpec | None = None
    serial_fraction: float = 0.0  # Amdahl serial fraction used when resized
    evolving: EvolvingSpec | None = None
    user: int = -1
    name: str = ""
    pool: str = ""  # the pool of nodes it runs in, where the workload has several (Workload.pools)


@dataclass(frozen=True, slots=True)
class SkippedJob:
    job_id: int
    reason: str


@dataclass
class Workload:
    """Jobs sorted by submit time (ties keep source order) on a machine of ``nodes`` nodes."""

    jobs: list[SimJob]
    nodes: int
    name: str = "workload"
    skipped: list[SkippedJob] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)  # adjustments made while loading
    slots: int = 1  # slots per node (node_slots): sizes and ``nodes`` count slots when above 1
    # Pools of nodes no job crosses (a site's partitions that share no node): name -> nodes, summing
    # to ``nodes``; each job's ``pool`` names one. Empty: the machine is one pool.
    pools: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError(f"a workload needs at least one node, got {self.nodes}")
        if self.pools and (sum(self.pools.values()) != self.nodes or min(self.pools.values()) < 1):
            raise ValueError(f"pools {self.pools} do not make a machine of {self.nodes} nodes")
        self.jobs.sort(key=lambda j: j.submit)

    def skipped_reasons(self) -> Counter[str]:
        return Counter(s.reason for s in self.skipped)

    def head(self, n: int) -> Workload:
        return self.with_jobs(self.jobs[:n])

    def with_jobs(self, jobs: list[SimJob]) -> Workload:
        """The same machine, notes and skipped jobs with other jobs (copies: nothing shared)."""
        return replace(self, jobs=jobs, skipped=list(self.skipped), notes=Counter(self.notes),
                       pools=dict(self.pools))  # fmt: skip

    def split(self) -> list[Workload]:
        """One workload per pool (its jobs, in order; named ``NAME[POOL]``); [self] with one pool.
        Where no job crosses pools, simulating each apart is simulating the whole machine."""
        if len(self.pools) < 2:
            return [self]
        unknown = {j.pool for j in self.jobs} - self.pools.keys()
        if unknown:
            raise ValueError(f"jobs in pools {sorted(unknown)} the machine lacks ({sorted(self.pools)})")
        return [
            Workload([j for j in self.jobs if j.pool == pool], size, f"{self.name}[{pool}]", slots=self.slots)
            for pool, size in self.pools.items()
        ]


@dataclass(frozen=True)
class MalleableRule:
    """Turns rigid jobs into malleable ones (default after ``002_*``: factor 2, submitted at max).

    A chosen job of ``n`` nodes gets ``max_nodes = n`` and ``min_nodes = max(1, n // factor**steps)``.
    Jobs smaller than ``min_size`` stay rigid. ``fraction`` of the eligible jobs are chosen with
    a seeded RNG, so a rule plus a seed always picks the same jobs.
    """

    fraction: float = 1.0
    factor: int = 2
    steps: int = 2
    min_size: int = 2
    serial_fraction: float = 0.0
    seed: int = 0

    def apply(self, workload: Workload) -> Workload:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"malleable fraction must be in [0, 1], got {self.fraction}")
        rng = random.Random(self.seed)
        jobs = []
        for j in workload.jobs:
            # Draw for every job so that the choice of one job does not depend on the others' sizes.
            chosen = rng.random() < self.fraction
            if chosen and j.malleable is None and j.nodes >= self.min_size:
                low = max(1, j.nodes // self.factor**self.steps)
                spec = MalleableSpec(low, j.nodes, self.factor)
                j = j._replace(malleable=spec, serial_fraction=self.serial_fraction)
            jobs.append(j)
        return workload.with_jobs(jobs)


def node_slots(workload: Workload, slots: int) -> Workload:
    """``workload`` counted in slots of ``slots`` per node (SD-Policy sharing cores, ``003_*``):
    every size and the machine times ``slots``, every job malleable from one slot on each of its
    nodes to all of them (a job lends at most one per node; its run time is linear in its slots)."""
    if slots < 1:
        raise ValueError(f"slots per node must be >= 1, got {slots}")
    jobs = [
        j._replace(
            nodes=j.nodes * slots, malleable=MalleableSpec(j.nodes, j.nodes * slots, 2), serial_fraction=0.0
        )
        for j in workload.jobs
    ]
    wl = workload.with_jobs(jobs)
    wl.notes[f"nodes read as {slots} slots each, every job malleable (cores shared)"] += len(jobs)
    wl.nodes, wl.slots, wl.pools = workload.nodes * slots, slots, {p: n * slots for p, n in wl.pools.items()}
    return wl


def speedup(nodes: float, serial_fraction: float) -> float:
    """Amdahl speedup on ``nodes`` nodes (linear when ``serial_fraction`` is 0)."""
    if serial_fraction <= 0.0:
        return float(nodes)
    return 1.0 / (serial_fraction + (1.0 - serial_fraction) / nodes)


INF = math.inf
