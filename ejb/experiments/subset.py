"""Quick subsets of a trace for experiment runs: the first N jobs, or a time range.

The subset is a workload of its own: its baseline is simulated from its first job, and the
warm-up/cool-down rule (first 1% of jobs, jobs ending after the last arrival) applies to the
subset's jobs, not the full trace's. A subset of a paper trace is not comparable with the
paper's tables (:func:`ejb.experiments.paper.paper_trace` says so from the name).
"""

from __future__ import annotations

from collections import Counter

from slurm_ext.sim import Workload

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_time(text: str) -> float:
    """``3600``, ``90m``, ``12h`` or ``30d`` -> seconds."""
    t = text.strip().lower()
    scale = _UNITS.get(t[-1:])
    number = t[:-1] if scale is not None else t
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (seconds, or a number with s, m, h or d)") from None
    if value < 0:
        raise ValueError(f"times must be >= 0, got {text!r}")
    return value


def parse_window(text: str) -> tuple[float, float]:
    """``START:END`` after the trace's first submission (either side may be empty)."""
    start, sep, end = text.partition(":")
    if not sep:
        raise ValueError(f"--window must be START:END (e.g. 0:30d or 10d:), got {text!r}")
    lo = parse_time(start) if start.strip() else 0.0
    hi = parse_time(end) if end.strip() else float("inf")
    if hi <= lo:
        raise ValueError(f"--window end must be after its start, got {text!r}")
    return lo, hi


def subset(
    workload: Workload, limit: int | None = None, window: tuple[float, float] | None = None
) -> Workload:
    """Jobs submitted inside ``window`` (seconds after the first submission), then the first
    ``limit`` of them."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    jobs = workload.jobs
    name = workload.name
    if window is not None and jobs:
        t0 = jobs[0].submit
        lo, hi = window
        jobs = [j for j in jobs if lo <= j.submit - t0 < hi]
        name += f".window{lo:g}-{hi:g}s"
    if limit is not None:
        jobs = jobs[:limit]
        name += f".head{limit}"
    if not jobs:
        raise ValueError("the subset has no jobs (check --limit/--window)")
    if len(jobs) == len(workload.jobs):
        return workload
    return Workload(list(jobs), workload.nodes, name, list(workload.skipped), Counter(workload.notes))
