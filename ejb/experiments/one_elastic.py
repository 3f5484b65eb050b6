"""Experiment 1 (section 6.2, Table 3, Figure 7): one elastic job per run.

Targets are the jobs with ``P >= min_procs`` whose baseline wait is positive (and that the
warm-up/cool-down rule keeps). For each, the trace is simulated with only that job submitted
to EJB, and its wait, run and turnaround are compared with the baseline's.

Fast exact method (:mod:`ejb.experiments.target_runs`): the simulator is deterministic and,
until the target arrives, a run with one elastic job is identical to the baseline. So one
baseline simulator is advanced to each target's submit time in turn, checkpointed, run with EJB
on that target until the target application completes (later events cannot change its result),
and restored. ``method="copy"`` copies the whole simulator instead of checkpointing, and
``method="naive"`` re-simulates the whole trace per target; all give identical rows (tested).

Memory: a target leaves one :class:`~ejb.experiments.target_rows.TargetRow` (kept as compact
columns, and passed to ``sink`` as it comes, e.g. a CSV writer); nothing else survives its run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ejb.experiments.target_rows import RowStore, TargetRow
from ejb.experiments.target_runs import METHODS, Target, run_parallel
from ejb.params import EJBParams
from slurm_ext.metrics import Z975, PairedChange, paired, window_mask
from slurm_ext.sim import Simulator, Workload
from slurm_ext.sim.result import SimResult

__all__ = [
    "METHODS",
    "TARGET_RULES",
    "OneElasticResult",
    "TargetPlan",
    "baseline",
    "collect",
    "one_elastic",
    "plan_targets",
    "result_of",
    "select_targets",
    "targets_of",
]

Progress = Callable[[int, int], None]
Sink = Callable[[TargetRow], None]


@dataclass
class OneElasticResult:
    workload: str
    params: EJBParams
    method: str
    rows: RowStore
    seconds: float
    baseline_jobs: int
    workers: int = 1
    rule: str = "table3"
    waiting_jobs: int = 0  # jobs with a positive wait in the baseline (any size, whole trace)
    notes: list[str] = field(default_factory=list)

    @property
    def targets(self) -> int:
        return len(self.rows)

    def _col(self, name: str) -> np.ndarray:
        return self.rows.column(name)

    @property
    def wait(self) -> PairedChange:
        return paired(self._col("base_wait"), self._col("wait"), z=Z975)

    @property
    def run(self) -> PairedChange:
        return paired(self._col("base_run"), self._col("run"), z=Z975)

    @property
    def turnaround(self) -> PairedChange:
        before = self._col("base_wait") + self._col("base_run")
        return paired(before, self._col("wait") + self._col("run"), z=Z975)

    def speedups(self) -> np.ndarray:
        """``S_tt`` of eq. (4) per target (baseline tt / elastic tt)."""
        before = self._col("base_wait") + self._col("base_run")
        return before / (self._col("wait") + self._col("run"))


def baseline(workload: Workload) -> SimResult:
    """The EASY-only run every comparison is made against."""
    return Simulator(workload, "easy", record_timeline=False).run()


TARGET_RULES = ("table3", "text")


def select_targets(base: SimResult, params: EJBParams, sample: int = 1, rule: str = "table3") -> list[int]:
    """Job ids (arrival order) that wait in the baseline, inside the window, and are large:
    ``P >= min_procs`` (``rule="text"``, as section 6.2 says) or ``P > min_procs``
    (``rule="table3"``, which reproduces the paper's target counts; see ``ejb/NOTES.md``)."""
    if rule not in TARGET_RULES:
        raise ValueError(f"unknown target rule {rule!r}; valid: {', '.join(TARGET_RULES)}")
    keep = window_mask(base.submit, base.end)
    wait = base.start - base.submit
    large = base.size > params.min_procs if rule == "table3" else base.size >= params.min_procs
    mask = keep & large & (wait > 0) & (base.start >= 0)
    ids = [int(j) for j in base.job_id[mask]]
    return ids[::sample] if sample > 1 else ids


def targets_of(base: SimResult, ids: list[int]) -> list[Target]:
    """What a target's run needs from the baseline (arrival order as ``ids``)."""
    index = {int(j): k for k, j in enumerate(base.job_id)}
    out = []
    for jid in ids:
        k = index[jid]
        wait = float(base.start[k] - base.submit[k])
        run = float(base.end[k] - base.start[k])
        out.append(Target(jid, float(base.submit[k]), int(base.size[k]), wait, run))
    return out


def one_elastic(
    workload: Workload,
    params: EJBParams | None = None,
    *,
    method: str = "fast",
    sample: int = 1,
    max_targets: int | None = None,
    workers: int = 1,
    chunk: int = 32,
    rule: str = "table3",
    progress: Progress | None = None,
    sink: Sink | None = None,
) -> OneElasticResult:
    """Run experiment 1; ``sample=k`` keeps every k-th target, ``max_targets`` the first ones,
    ``rule`` says which large jobs are targets (:func:`select_targets`).

    ``workers`` processes share the targets (rows identical for any number); ``sink`` gets each
    row in target order as soon as it is known; ``progress(done, total)`` after each row.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    params = params or EJBParams()
    t0 = time.perf_counter()
    plan = plan_targets(workload, params, sample=sample, max_targets=max_targets, rule=rule)
    rows = collect(
        run_parallel(workload, params, plan.targets, workers=workers, chunk=chunk, method=method),
        len(plan.targets),
        progress,
        sink,
    )
    return result_of(workload, params, plan, rows, time.perf_counter() - t0, method=method, workers=workers)


@dataclass(frozen=True)
class TargetPlan:
    """Experiment 1's targets (from the baseline) and what its result keeps of the baseline."""

    targets: list[Target]
    waiting_jobs: int  # jobs with a positive wait in the baseline (any size, whole trace)
    rule: str


def plan_targets(
    workload: Workload,
    params: EJBParams,
    *,
    sample: int = 1,
    max_targets: int | None = None,
    rule: str = "table3",
) -> TargetPlan:
    """The baseline run and the targets it gives (:func:`select_targets`, then the first
    ``max_targets``). The targets depend on ``params.min_procs`` only."""
    if sample < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    base = baseline(workload)
    ids = select_targets(base, params, sample, rule)
    if max_targets is not None:
        ids = ids[:max_targets]
    waiting = int(((base.start - base.submit) > 0).sum())
    return TargetPlan(targets_of(base, ids), waiting, rule)


def collect(rows: Iterable[TargetRow], total: int, progress: Progress | None = None,
            sink: Sink | None = None) -> RowStore:  # fmt: skip
    """``rows`` (in target order) kept, each passed to ``sink`` and counted by ``progress`` as it comes."""
    store = RowStore()
    if progress is not None:
        progress(0, total)
    for n, row in enumerate(rows, 1):
        store.append(row)
        if sink is not None:
            sink(row)
        if progress is not None:
            progress(n, total)
    return store


def result_of(
    workload: Workload,
    params: EJBParams,
    plan: TargetPlan,
    rows: RowStore,
    seconds: float,
    *,
    method: str = "fast",
    workers: int = 1,
) -> OneElasticResult:
    """Experiment 1's result from its targets' rows (however they were computed)."""
    return OneElasticResult(
        workload.name,
        params,
        method,
        rows,
        seconds,
        len(workload.jobs),
        workers=workers,
        rule=plan.rule,
        waiting_jobs=plan.waiting_jobs,
    )
