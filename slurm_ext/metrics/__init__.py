"""Metrics of simulated runs: per job (:mod:`.jobs`), per run (:mod:`.summary`), paired (:mod:`.compare`);
figures in :mod:`.plots` (imported on demand: it loads matplotlib)."""

from slurm_ext.metrics.compare import Z975, PairedChange, compare_runs, paired, paired_change, paired_table
from slurm_ext.metrics.jobs import (
    BSLD_TAU,
    JobMetrics,
    bounded_slowdown,
    job_metrics,
    steady_mask,
    window_mask,
    write_jobs_csv,
)
from slurm_ext.metrics.summary import RunSummary, format_table, summarize, summary_table

__all__ = [
    "BSLD_TAU",
    "Z975",
    "JobMetrics",
    "PairedChange",
    "RunSummary",
    "bounded_slowdown",
    "compare_runs",
    "format_table",
    "job_metrics",
    "paired",
    "paired_change",
    "paired_table",
    "steady_mask",
    "window_mask",
    "summarize",
    "summary_table",
    "write_jobs_csv",
]
