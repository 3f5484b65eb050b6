"""Paired before/after comparison of two runs of the same jobs, with 95% confidence intervals.

Jobs are paired by job id; a job counts if it is in the steady window of both runs. For each
metric the per-job differences ``after - before`` give a mean difference with a Student-t 95%
interval; the relative change is that difference over the baseline mean (the baseline mean taken
as fixed), which is how ``004_*`` Table 3 reports its intervals. :func:`paired` does the same
for any two aligned arrays (the EJB experiments pair their own columns with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from slurm_ext.metrics.jobs import JobMetrics

# The normal 97.5% quantile as the EJB experiments have always used it (one ulp from
# ``NormalDist().inv_cdf(0.975)``; kept so that their numbers do not move).
Z975 = 1.959963984540054


def t_quantile_975(dof: int) -> float:
    """The 97.5% quantile of Student's t with ``dof`` degrees of freedom (two-sided 95%);
    NaN for ``dof < 1``."""
    if dof < 1:
        return math.nan
    # Imported here: scipy.stats takes ~0.5 s to import, which every ``slurm-ext`` command would pay.
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.975, dof))


@dataclass(frozen=True, slots=True)
class PairedChange:
    """Means before and after, and the 95% CI of the mean paired difference (after - before)."""

    n: int
    before: float  # mean before
    after: float  # mean after
    mean_diff: float
    ci_low: float
    ci_high: float
    metric: str = ""

    @property
    def percent(self) -> float:
        """The mean paired difference over the mean before, in percent."""
        return 100.0 * self.mean_diff / self.before if self.before else math.nan

    @property
    def percent_ci(self) -> tuple[float, float]:
        if not self.before:
            return (math.nan, math.nan)
        return (100.0 * self.ci_low / self.before, 100.0 * self.ci_high / self.before)

    @property
    def change(self) -> float:
        """Relative change of the mean, e.g. -0.378 for -37.8% (``004_*`` Table 3)."""
        return (self.after - self.before) / self.before if self.before else math.nan

    @property
    def ci_change(self) -> tuple[float, float]:
        """The CI of the difference relative to the mean before (Table 3's bracket)."""
        if not self.before:
            return (math.nan, math.nan)
        return (self.ci_low / self.before, self.ci_high / self.before)

    @property
    def significant(self) -> bool:
        """Whether the interval excludes zero."""
        return not (self.ci_low <= 0.0 <= self.ci_high)


def paired(
    before: np.ndarray, after: np.ndarray, *, z: float | None = None, metric: str = ""
) -> PairedChange:
    """Paired comparison of ``after[k]`` with ``before[k]``.

    The interval uses the Student-t quantile for ``n - 1`` degrees of freedom, or the fixed
    quantile ``z`` (the EJB experiments use the normal :data:`Z975`: thousands of pairs).
    A single pair gives an unbounded interval.
    """
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    n = len(b)
    if n == 0:
        return PairedChange(0, math.nan, math.nan, math.nan, math.nan, math.nan, metric)
    d = a - b
    mean = float(d.mean())
    if n > 1:
        q = t_quantile_975(n - 1) if z is None else z
        half = q * float(d.std(ddof=1)) / math.sqrt(n)
    else:
        half = math.inf
    return PairedChange(n, float(b.mean()), float(a.mean()), mean, mean - half, mean + half, metric)


def paired_change(before: JobMetrics, after: JobMetrics, metric: str) -> PairedChange:
    """``metric`` of the jobs in the steady window of both runs, paired by job id."""
    _, ib, ia = np.intersect1d(before.job_id, after.job_id, assume_unique=True, return_indices=True)
    keep = before.steady[ib] & after.steady[ia]
    return paired(getattr(before, metric)[ib][keep], getattr(after, metric)[ia][keep], metric=metric)


def compare_runs(
    before: JobMetrics,
    after: JobMetrics,
    metrics: tuple[str, ...] = ("wait", "run", "turnaround", "bounded_slowdown"),
) -> list[PairedChange]:
    return [paired_change(before, after, m) for m in metrics]


PAIRED_METRICS = ("wait", "turnaround", "bounded_slowdown")


def paired_table(
    baseline: JobMetrics, others: dict[str, JobMetrics], metrics: tuple[str, ...] = PAIRED_METRICS
) -> str:
    """Paired change of the mean of each run in ``others`` (by name) vs ``baseline``, as a table:
    policy, metric, jobs, change, 95% CI."""
    from slurm_ext.console import table, table_text

    rows = []
    for name, jm in others.items():
        for c in compare_runs(baseline, jm, metrics):
            lo, hi = c.percent_ci
            rows.append([name, c.metric, c.n, f"{c.percent:+.1f}%", f"[{lo:+.1f}%, {hi:+.1f}%]"])
    return table_text(table(["policy", "metric", "jobs", "change", "95% CI"], rows))
