"""Per-job metrics of a simulated run, and the steady-state window used for statistics."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from slurm_ext.sim.result import SimResult

BSLD_TAU = 10.0  # seconds: the usual bounded-slowdown threshold (EJB paper 004_*, §6.1)
WARMUP = 0.01  # fraction of the first arrivals left out of statistics (004_* §5)


@dataclass
class JobMetrics:
    """Columns over the jobs that started and ended (arrival order)."""

    job_id: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    nodes: np.ndarray
    wait: np.ndarray
    run: np.ndarray
    turnaround: np.ndarray
    bounded_slowdown: np.ndarray
    resizes: np.ndarray
    malleable: np.ndarray
    state: np.ndarray
    steady: np.ndarray  # inside the warm-up/cool-down window

    def __len__(self) -> int:
        return len(self.job_id)

    def where(self, mask: np.ndarray) -> JobMetrics:
        return JobMetrics(**{k: v[mask] for k, v in self.__dict__.items()})


def bounded_slowdown(
    turnaround: np.ndarray, run: np.ndarray, tau: float = BSLD_TAU, floor: float = 1.0
) -> np.ndarray:
    """``max(floor, turnaround / max(run, tau))``.

    ``run`` is usually the job's own run time; the EJB experiments divide both runs'
    turnarounds by the *baseline* run time (``004_*`` eq. 5) and use no floor (``floor=0``).
    """
    t = np.asarray(turnaround, dtype=float)
    return np.maximum(floor, t / np.maximum(np.asarray(run, dtype=float), tau))


def window_mask(
    submit: np.ndarray, end: np.ndarray, warmup: float = WARMUP, cooldown: bool = True
) -> np.ndarray:
    """Jobs kept for statistics (``004_*`` §5): not among the first ``warmup`` fraction of
    arrivals and, with ``cooldown``, ended (``end >= 0``) no later than the last arrival."""
    n = len(submit)
    keep = np.ones(n, dtype=bool)
    if n == 0:
        return keep
    order = np.argsort(submit, kind="stable")
    keep[order[: int(n * warmup)]] = False
    if cooldown:
        keep &= (end >= 0) & (end <= submit.max())
    return keep


def steady_mask(result: SimResult, warmup: float = WARMUP, cooldown: bool = True) -> np.ndarray:
    """:func:`window_mask` of a run."""
    return window_mask(result.submit, result.end, warmup, cooldown)


def job_metrics(
    result: SimResult, *, warmup: float = WARMUP, cooldown: bool = True, tau: float = BSLD_TAU
) -> JobMetrics:
    fin = result.finished
    steady = steady_mask(result, warmup, cooldown)[fin]
    submit, start, end = result.submit[fin], result.start[fin], result.end[fin]
    wait = start - submit
    run = end - start
    turnaround = wait + run
    return JobMetrics(
        job_id=result.job_id[fin],
        submit=submit,
        start=start,
        end=end,
        nodes=result.size[fin],
        wait=wait,
        run=run,
        turnaround=turnaround,
        bounded_slowdown=bounded_slowdown(turnaround, run, tau),
        resizes=result.resizes[fin],
        malleable=result.malleable[fin],
        state=result.state[fin],
        steady=steady,
    )


CSV_COLUMNS = (
    "job_id",
    "submit",
    "start",
    "end",
    "nodes",
    "wait",
    "run",
    "turnaround",
    "bounded_slowdown",
    "resizes",
    "malleable",
    "state",
    "steady",
)


def write_jobs_csv(path: str | Path, jm: JobMetrics) -> None:
    """One row per finished job."""
    cols = [getattr(jm, c) for c in CSV_COLUMNS]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for row in zip(*(c.tolist() for c in cols), strict=True):
            w.writerow(_fmt(v) for v in row)


def _fmt(v: object) -> object:
    if isinstance(v, float):
        return f"{v:.6g}" if not v.is_integer() else int(v)
    if isinstance(v, bool):
        return int(v)
    return v
