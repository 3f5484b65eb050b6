"""Why MAX_SLOWDOWN 5 to unbounded give one schedule (docs/simulator/sd-policy.md): the predicted
slowdown (Eq. 4) of the mates SD-Policy picks with no limit, and of the running malleable jobs at each
of its decisions, on the workloads of ``slurm-ext reproduce sd``; then the runs at MAX_SLOWDOWN 5 and
unbounded side by side.

    nice python benchmarks/sd_mate_penalties.py --jobs 10000   # about 5 minutes
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from slurm_ext.policies.sdpolicy import SDPolicy
from slurm_ext.reproduce.sd import CASES, RICC_WINDOW, measures
from slurm_ext.sim.engine import simulate
from slurm_ext.workloads.model import MalleableRule


class Watched(SDPolicy):
    """SD-Policy that records, at each mate selection, what the limit could have cut."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.picked: list[float] = []  # the largest penalty among a choice's mates
        self.before: list[float] = []  # running malleable jobs' predicted slowdown before lending

    def select_mates(self, cl, prof, job, limit):  # type: ignore[no-untyped-def]
        self.before.extend(self._slowdown(r, 0.0) for r in cl.malleable_running())
        choice = super().select_mates(cl, prof, job, limit)
        if choice is not None:
            self.picked.append(max(self.penalty(cl.running[m], a, choice.duration) for m, a in choice.loans))
        return choice


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    return " / ".join(f"{q:.2f}" for q in np.percentile(values, [50, 90, 99, 100]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=Path("../shared/traces"))
    ap.add_argument("--jobs", type=int, default=3000)
    args = ap.parse_args()
    for case in CASES:
        wl = case.load(args.traces, args.jobs, RICC_WINDOW)
        flexible = MalleableRule(fraction=1.0).apply(wl)
        policy = Watched(max_slowdown=math.inf)
        unbounded = simulate(flexible, "easy", policy)
        at5 = simulate(flexible, "easy", SDPolicy(max_slowdown=5.0))
        picked, before = np.array(policy.picked), np.array(policy.before)
        print(f"{wl.name}, {len(wl.jobs)} jobs: {len(picked)} malleable starts")
        print(f"  chosen mates' penalty p50 / p90 / p99 / max: {quantiles(policy.picked)}"
              f" (>= 5: {np.mean(picked >= 5) if len(picked) else 0:.2%})")  # fmt: skip
        print(f"  running malleable jobs' slowdown before lending: {quantiles(policy.before)}"
              f" (>= 5: {np.mean(before >= 5) if len(before) else 0:.2%})")  # fmt: skip
        print(f"  unbounded: {measures(unbounded)}\n  MAXSD 5:   {measures(at5)}")


if __name__ == "__main__":
    main()
