"""Statistics of section 6: measurement window, paired before/after comparison, bounded slowdown.

* Warm-up/cool-down (section 5): the first 1% of the jobs (by arrival) and the jobs that end
  after the last arrival are left out of every analysis.
* Before-and-after comparison (section 6.4, Lilja): the 95% confidence interval of the mean
  of the paired differences; a change is significant when the interval excludes zero. With
  thousands of pairs the normal quantile 1.96 is used.
* Bounded slowdown (eq. 5): turnaround over the *baseline* run time, bounded below by 10 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
WARMUP_FRACTION = 0.01
SLOWDOWN_BOUND = 10.0


def analysis_mask(submit: np.ndarray, end: np.ndarray, warmup: float = WARMUP_FRACTION) -> np.ndarray:
    """Jobs kept by the warm-up/cool-down rule; ``submit`` must be in arrival order."""
    n = len(submit)
    keep = np.ones(n, dtype=bool)
    keep[: int(math.floor(n * warmup))] = False
    if n:
        last_arrival = submit.max()
        keep &= (end >= 0) & (end <= last_arrival)
    return keep


@dataclass(frozen=True, slots=True)
class Paired:
    """Before/after means and the 95% CI of the mean paired difference (after - before)."""

    n: int
    before: float
    after: float
    ci_low: float
    ci_high: float

    @property
    def change(self) -> float:
        """Relative change of the mean, e.g. -0.378 for -37.8%."""
        return (self.after - self.before) / self.before if self.before else math.nan

    @property
    def ci_change(self) -> tuple[float, float]:
        """The CI of the difference relative to the mean before (Table 3's bracket)."""
        if not self.before:
            return (math.nan, math.nan)
        return (self.ci_low / self.before, self.ci_high / self.before)

    @property
    def significant(self) -> bool:
        return not (self.ci_low <= 0.0 <= self.ci_high)


def paired(before: np.ndarray, after: np.ndarray) -> Paired:
    before = np.asarray(before, dtype=float)
    after = np.asarray(after, dtype=float)
    n = len(before)
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan)
    d = after - before
    mean = float(d.mean())
    half = Z95 * float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return Paired(n, float(before.mean()), float(after.mean()), mean - half, mean + half)


def bounded_slowdown(turnaround: np.ndarray, baseline_run: np.ndarray) -> np.ndarray:
    return np.asarray(turnaround, dtype=float) / np.maximum(
        np.asarray(baseline_run, dtype=float), SLOWDOWN_BOUND
    )


def pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:+.1f}%"
