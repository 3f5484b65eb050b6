"""Run-wide figures of a simulated run, and the printed table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from slurm_ext.metrics.jobs import JobMetrics, job_metrics
from slurm_ext.sim.result import SimResult


@dataclass
class RunSummary:
    workload: str
    policy: str
    scheduler: str
    nodes: int
    jobs_simulated: int
    jobs_skipped: int
    jobs_unfinished: int  # never started or never ended (a policy that starts nothing, a stopped run)
    jobs_in_stats: int  # after the warm-up/cool-down exclusion
    jobs_killed: int
    makespan: float  # last end - first submit
    utilisation: float  # busy node-seconds / (nodes * makespan)
    fragmentation: float  # mean idle nodes while the queue is non-empty
    mean_wait: float
    median_wait: float
    p90_wait: float
    mean_turnaround: float
    median_turnaround: float
    mean_bounded_slowdown: float
    median_bounded_slowdown: float
    p90_bounded_slowdown: float
    max_wait: float
    resizes: int
    evolving_granted: int
    rejected_decisions: int
    wall_time: float

    def to_dict(self) -> dict[str, object]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _stat(values: np.ndarray, fn: str, q: float = 50.0) -> float:
    if len(values) == 0:
        return float("nan")
    if fn == "mean":
        return float(values.mean())
    if fn == "max":
        return float(values.max())
    return float(np.percentile(values, q))


def summarize(
    result: SimResult, *, warmup: float = 0.01, cooldown: bool = True, jm: JobMetrics | None = None
) -> RunSummary:
    if jm is None:
        jm = job_metrics(result, warmup=warmup, cooldown=cooldown)
    s = jm.where(jm.steady)
    makespan = float(jm.end.max() - result.submit.min()) if len(jm) else 0.0
    util = result.busy_area / (result.nodes * makespan) if makespan > 0 else 0.0
    frag = result.frag_area / result.queue_time if result.queue_time > 0 else 0.0
    return RunSummary(
        workload=result.workload,
        policy=result.policy or result.scheduler,
        scheduler=result.scheduler,
        nodes=result.nodes,
        jobs_simulated=len(jm),
        jobs_skipped=len(result.skipped),
        jobs_unfinished=int(
            (~result.finished & (result.state != "CLAIMED") & (result.state != "CANCELLED")).sum()
        ),
        jobs_in_stats=len(s),
        jobs_killed=int((jm.state == "TIMEOUT").sum()),
        makespan=makespan,
        utilisation=util,
        fragmentation=frag,
        mean_wait=_stat(s.wait, "mean"),
        median_wait=_stat(s.wait, "pct", 50),
        p90_wait=_stat(s.wait, "pct", 90),
        mean_turnaround=_stat(s.turnaround, "mean"),
        median_turnaround=_stat(s.turnaround, "pct", 50),
        mean_bounded_slowdown=_stat(s.bounded_slowdown, "mean"),
        median_bounded_slowdown=_stat(s.bounded_slowdown, "pct", 50),
        p90_bounded_slowdown=_stat(s.bounded_slowdown, "pct", 90),
        max_wait=_stat(s.wait, "max"),
        resizes=int(jm.resizes.sum()),
        evolving_granted=result.evolving_asks_granted,
        rejected_decisions=len(result.rejected),
        wall_time=result.wall_time,
    )


TABLE_COLUMNS = (
    ("policy", "policy", "{}"),
    ("jobs", "jobs_simulated", "{}"),
    ("makespan[s]", "makespan", "{:.0f}"),
    ("util", "utilisation", "{:.3f}"),
    ("frag[nodes]", "fragmentation", "{:.2f}"),
    ("wait mean", "mean_wait", "{:.0f}"),
    ("wait med", "median_wait", "{:.0f}"),
    ("tt mean", "mean_turnaround", "{:.0f}"),
    ("bsld mean", "mean_bounded_slowdown", "{:.2f}"),
    ("bsld med", "median_bounded_slowdown", "{:.2f}"),
    ("resizes", "resizes", "{}"),
    ("wall[s]", "wall_time", "{:.2f}"),
)


def format_table(rows: Sequence[dict[str, object]], columns: Sequence[tuple[str, str, str]]) -> str:
    """The CLIs' table (:func:`slurm_ext.console.table`) as text; ``columns`` are (header, key, format)."""
    from slurm_ext.console import table, table_text

    cells = [[_cell(fmt, r.get(key)) for _, key, fmt in columns] for r in rows]
    return table_text(table([h for h, _, _ in columns], cells))


def _cell(fmt: str, value: object) -> str:
    if value is None:
        return "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def summary_table(summaries: Sequence[RunSummary]) -> str:
    return format_table([s.to_dict() for s in summaries], TABLE_COLUMNS)
