"""``ejb bench scale``: experiment 1 at full size on a 250K-job synthetic trace (issue 15).

A benchmark, not a test: it reports ``targets``, ``wall_s`` (end to end: generate, baseline,
every target), ``peak_rss_mb``, ``targets_per_s`` and ``workers``, and checks the issue's
targets on a 2-core machine: wall_s <= 600, peak_rss_mb <= 2048, and the peak memory when 10%
of the targets are done within 10% of the peak at the end (memory must not grow with targets).

Memory is the sum of the resident set sizes of this process and its worker processes, sampled
from ``/proc`` while rows come in (a fork shares pages, which the sum counts once per process:
an over-estimate), and this process's own peak (``getrusage``) for the baseline phase.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ejb.experiments.one_elastic import one_elastic
from ejb.experiments.target_runs import default_workers
from ejb.params import EJBParams
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

JOBS = 250_000
NODES = 256
LOAD = 0.7  # makes about 96,000 jobs wait in the EASY baseline (62,000 targets)
SEED = 1
TARGET_WALL_S = 600.0
TARGET_RSS_MB = 2048.0
TARGET_GROWTH = 0.10


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_rss_mb() -> float:
    return rss_mb(os.getpid()) + sum(rss_mb(p.pid) for p in mp.active_children() if p.pid)


def own_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class MemoryProbe:
    """Peak memory so far: the largest :func:`tree_rss_mb` sample (taken at most every ``every``
    s) or this process's own peak; remembered when ``mark_at`` rows were done."""

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self.sampled = 0.0
        self.peak_at_mark: float | None = None
        self.mark_at = 0
        self._last = 0.0

    @property
    def peak(self) -> float:
        return max(self.sampled, own_peak_mb())

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == 0:
            self.mark_at = max(1, total // 10)
        marking = self.peak_at_mark is None and done >= self.mark_at > 0
        if marking or now - self._last >= self.every or done >= total:
            self._last = now
            self.sampled = max(self.sampled, tree_rss_mb())
        if marking:
            self.peak_at_mark = self.peak


@dataclass(frozen=True)
class ScaleResult:
    jobs: int
    nodes: int
    load: float
    waiting_jobs: int
    targets: int
    wall_s: float
    peak_rss_mb: float
    peak_rss_at_10pct_mb: float
    targets_per_s: float
    workers: int
    turnaround_change: float

    @property
    def growth(self) -> float:
        """Peak at 100% of the targets over the peak at 10%, minus one."""
        return self.peak_rss_mb / self.peak_rss_at_10pct_mb - 1.0 if self.peak_rss_at_10pct_mb else 0.0

    def checks(self) -> dict[str, bool]:
        return {
            "wall_s": self.wall_s <= TARGET_WALL_S,
            "peak_rss_mb": self.peak_rss_mb <= TARGET_RSS_MB,
            "memory_growth": self.growth <= TARGET_GROWTH,
            "waiting_jobs": self.waiting_jobs >= 60_000,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"memory_growth": self.growth, "checks": self.checks()}


def bench_scale(
    jobs: int = JOBS,
    nodes: int = NODES,
    load: float = LOAD,
    seed: int = SEED,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ScaleResult:
    """Generate the trace, run experiment 1 on every target, measure."""
    t0 = time.perf_counter()
    wl = generate(SyntheticConfig(jobs=jobs, nodes=nodes, seed=seed, load=load))
    n = workers or default_workers()
    probe = MemoryProbe()

    def on_progress(done: int, total: int) -> None:
        probe(done, total)
        if progress is not None:
            progress(done, total)

    res = one_elastic(wl, EJBParams(), workers=n, progress=on_progress)
    wall = time.perf_counter() - t0
    peak = probe.peak
    return ScaleResult(
        jobs=len(wl.jobs),
        nodes=nodes,
        load=load,
        waiting_jobs=res.waiting_jobs,
        targets=res.targets,
        wall_s=wall,
        peak_rss_mb=peak,
        peak_rss_at_10pct_mb=probe.peak_at_mark if probe.peak_at_mark is not None else peak,
        targets_per_s=res.targets / wall if wall else 0.0,
        workers=n,
        turnaround_change=res.turnaround.change,
    )
