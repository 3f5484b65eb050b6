"""Experiment 1's per-target runs: serial, or over a pool of processes, with identical rows.

Each target's run starts from the baseline state at the target's submit time: a *runner*
simulator (the baseline, no controller) is advanced to that time, checkpointed
(:mod:`slurm_ext.sim.checkpoint`), run with EJB on the target until the target application
completes (the controller stops it there: later events cannot change the target's result),
then restored. The state at a given time does not depend on how the runner got there, so
any split of the targets over processes gives the same rows.

Parallel runs fork worker processes (the workload is inherited, not pickled); targets go out in
chunks in arrival order, so every worker's runner only moves forward through the trace, and rows
come back in target order whatever the number of workers. A worker that dies (say, killed for
memory) raises ``BrokenProcessPool`` instead of hanging the run; an error in a target's run is
raised in the caller.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

from ejb.experiments.target_rows import TargetRow, row_of
from ejb.params import EJBParams
from ejb.sim_driver import EJBController
from slurm_ext.sim import Simulator, Workload
from slurm_ext.sim.checkpoint import checkpoint, restore

METHODS = ("fast", "copy", "naive")


class Target(NamedTuple):
    job_id: int
    submit: float
    procs: int
    base_wait: float
    base_run: float


class TargetNeverCompleted(RuntimeError):
    pass


def _controller(params: EJBParams, job_id: int, stop: bool) -> EJBController:
    return EJBController(params, select=lambda jid, _p: jid == job_id, stop_after=[job_id] if stop else None)


def _row(t: Target, ctrl: EJBController) -> TargetRow:
    rec = ctrl.records().get(t.job_id)
    if rec is None:
        raise TargetNeverCompleted(f"target job {t.job_id} never completed under EJB")
    return row_of(t.job_id, t.procs, t.base_wait, t.base_run, rec)


class Runner:
    """The baseline simulator, moved forward from target to target."""

    def __init__(self, workload: Workload, params: EJBParams, method: str = "fast") -> None:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
        self.workload = workload
        self.params = params
        self.method = method
        self.sim = Simulator(workload, "easy", record_timeline=False)
        self.until = -float("inf")

    def run(self, t: Target) -> TargetRow:
        if self.method == "naive":  # the whole trace again, to the end (the reference method)
            sim = Simulator(self.workload, "easy", record_timeline=False)
            ctrl = _controller(self.params, t.job_id, stop=False)
            sim.attach(ctrl)
            try:
                sim.advance()
                return _row(t, ctrl)
            finally:
                sim.controller = None  # no cycle left for the garbage collector (see below)
        if t.submit < self.until:  # behind us: start over (a worker handed an earlier chunk)
            self.sim = Simulator(self.workload, "easy", record_timeline=False)
        self.until = t.submit
        self.sim.advance(until=t.submit)
        ctrl = _controller(self.params, t.job_id, stop=True)
        if self.method == "copy":
            sim = self.sim.copy()
            sim.attach(ctrl)
            try:
                sim.advance()
                return _row(t, ctrl)
            finally:
                # sim.controller <-> ctrl.sim is a cycle: left to the garbage collector, whole
                # simulator copies piled up (the memory growth of issue 15). Break it now.
                sim.controller = None
        cp = checkpoint(self.sim)
        try:
            self.sim.attach(ctrl)
            self.sim.advance()
            return _row(t, ctrl)
        finally:
            restore(self.sim, cp)


def run_serial(
    workload: Workload, params: EJBParams, targets: Sequence[Target], method: str = "fast"
) -> Iterator[TargetRow]:
    runner = Runner(workload, params, method)
    for t in targets:
        yield runner.run(t)


# -- process pool ----------------------------------------------------------------------------
_SHARED: tuple[Workload, EJBParams, str] | None = None  # set before forking
_RUNNER: Runner | None = None  # one per worker process


def _run_chunk(chunk: list[Target]) -> list[TargetRow]:
    global _RUNNER
    if _RUNNER is None:
        assert _SHARED is not None, "workers are forked after _SHARED is set"
        _RUNNER = Runner(*_SHARED)
    return [_RUNNER.run(t) for t in chunk]


def chunks(targets: Sequence[Target], size: int) -> list[list[Target]]:
    return [list(targets[k : k + size]) for k in range(0, len(targets), size)]


def default_workers() -> int:
    """The CPUs this process may use (at most 8)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def run_parallel(
    workload: Workload,
    params: EJBParams,
    targets: Sequence[Target],
    *,
    workers: int,
    chunk: int = 32,
    method: str = "fast",
) -> Iterator[TargetRow]:
    """Rows in target order, computed by ``workers`` forked processes (serial when 1)."""
    if workers < 1 or chunk < 1:
        raise ValueError(f"workers and chunk must be >= 1, got {workers}, {chunk}")
    if workers == 1 or len(targets) <= chunk:
        yield from run_serial(workload, params, targets, method)
        return
    global _SHARED
    _SHARED = (workload, params, method)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
    try:
        for rows in pool.map(_run_chunk, chunks(targets, chunk)):
            yield from rows
    finally:  # also on an error or an abandoned generator: drop what has not started
        pool.shutdown(wait=True, cancel_futures=True)
        _SHARED = None
