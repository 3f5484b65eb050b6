"""Experiment 1 (section 6.2, Table 3, Figure 7): one elastic job per run.

Targets are the jobs with ``P >= min_procs`` whose baseline wait is positive (and that the
warm-up/cool-down rule keeps). For each, the trace is simulated with only that job submitted
to EJB, and its wait, run and turnaround are compared with the baseline's.

Fast exact method: the simulator is deterministic and, until the target arrives, a run with
one elastic job is identical to the baseline. So one baseline simulator is advanced to each
target's submit time in turn and *copied*; the copy runs with EJB on that target and stops
as soon as the target application completes -- later events cannot change its result. The
naive method (``method="naive"``) re-simulates the whole trace per target; both give
identical numbers (tested on a small trace).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ejb.params import EJBParams
from ejb.sim_driver import EJBController, ElasticRecord
from slurm_ext.metrics import Z975, PairedChange, paired, window_mask
from slurm_ext.sim import Simulator, Workload
from slurm_ext.sim.result import SimResult

METHODS = ("fast", "naive")
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class TargetOutcome:
    job_id: int
    procs: int
    base_wait: float
    base_run: float
    record: ElasticRecord

    @property
    def base_turnaround(self) -> float:
        return self.base_wait + self.base_run


@dataclass
class OneElasticResult:
    workload: str
    params: EJBParams
    method: str
    outcomes: list[TargetOutcome]
    seconds: float
    baseline_jobs: int
    notes: list[str] = field(default_factory=list)

    def _arr(self, name: str) -> np.ndarray:
        return np.array([getattr(o.record, name) for o in self.outcomes], dtype=float)

    def _base(self, name: str) -> np.ndarray:
        return np.array([getattr(o, name) for o in self.outcomes], dtype=float)

    @property
    def wait(self) -> PairedChange:
        return paired(self._base("base_wait"), self._arr("wait"), z=Z975)

    @property
    def run(self) -> PairedChange:
        return paired(self._base("base_run"), self._arr("run"), z=Z975)

    @property
    def turnaround(self) -> PairedChange:
        return paired(self._base("base_turnaround"), self._arr("turnaround"), z=Z975)

    def speedups(self) -> np.ndarray:
        """``S_tt`` of eq. (4) per target (baseline tt / elastic tt)."""
        return self._base("base_turnaround") / self._arr("turnaround")


def baseline(workload: Workload) -> SimResult:
    """The EASY-only run every comparison is made against."""
    return Simulator(workload, "easy", record_timeline=False).run()


def select_targets(base: SimResult, params: EJBParams, sample: int = 1) -> list[int]:
    """Job ids (arrival order) with ``P >= min_procs`` and baseline wait > 0, inside the window."""
    keep = window_mask(base.submit, base.end)
    wait = base.start - base.submit
    mask = keep & (base.size >= params.min_procs) & (wait > 0) & (base.start >= 0)
    ids = [int(j) for j in base.job_id[mask]]
    return ids[::sample] if sample > 1 else ids


def _controller(params: EJBParams, target: int, stop: bool) -> EJBController:
    return EJBController(params, select=lambda jid, _p: jid == target, stop_after=[target] if stop else None)


def one_elastic(
    workload: Workload,
    params: EJBParams | None = None,
    *,
    method: str = "fast",
    sample: int = 1,
    limit: int | None = None,
    progress: Progress | None = None,
) -> OneElasticResult:
    """Run experiment 1; ``sample=k`` keeps every k-th target, ``limit`` the first ``limit``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if sample < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    params = params or EJBParams()
    t0 = time.perf_counter()
    base = baseline(workload)
    ids = select_targets(base, params, sample)
    if limit is not None:
        ids = ids[:limit]
    index = {int(j): k for k, j in enumerate(base.job_id)}
    outcomes: list[TargetOutcome] = []
    runner = Simulator(workload, "easy", record_timeline=False) if method == "fast" else None
    for n, jid in enumerate(ids):
        k = index[jid]
        if runner is not None:
            runner.advance(until=float(base.submit[k]))
            sim = runner.copy()
            ctrl = _controller(params, jid, stop=True)
        else:
            sim = Simulator(workload, "easy", record_timeline=False)
            ctrl = _controller(params, jid, stop=False)
        sim.attach(ctrl)
        sim.advance()
        rec = ctrl.records().get(jid)
        if rec is None:
            raise RuntimeError(f"target job {jid} never completed under EJB")
        wait = float(base.start[k] - base.submit[k])
        outcomes.append(TargetOutcome(jid, int(base.size[k]), wait, float(base.end[k] - base.start[k]), rec))
        if progress is not None and (n + 1) % 100 == 0:
            progress(n + 1, len(ids))
    if progress is not None:
        progress(len(ids), len(ids))
    return OneElasticResult(
        workload.name, params, method, outcomes, time.perf_counter() - t0, len(workload.jobs)
    )
