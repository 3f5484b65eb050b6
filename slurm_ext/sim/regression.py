"""Regression records of simulator runs: per-job outcome and summary metrics of one case.

A *case* is a workload (``kth-small``, ``esp`` or an SWF path), a ``--policy`` name and a
malleable fraction and seed, run as ``slurm-ext simulate`` runs it. :func:`record` turns a run
into a small JSON-able dict; :func:`compare` lists the differences between two records (floats
equal within a relative 1e-9). ``benchmarks/sim_regression.py`` writes and checks the fixtures;
``tests/unit/sim/test_regression.py`` checks the small ones.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from slurm_ext.sim.result import SimResult

REL_TOL = 1e-9
# per-job columns kept in full (small traces) or as a digest (large traces)
JOB_COLUMNS = ("job_id", "start", "end", "final_size", "resizes")
SUMMARY_KEYS = (
    "makespan",
    "utilisation",
    "fragmentation",
    "mean_wait",
    "mean_turnaround",
    "mean_bounded_slowdown",
    "resizes",
    "rejected_decisions",
    "jobs_unfinished",
    "jobs_killed",
)


@dataclass(frozen=True)
class Case:
    workload: str
    policy: str
    malleable: float = 0.5
    seed: int = 0

    @property
    def tag(self) -> str:
        name = self.workload.rsplit("/", 1)[-1].split(".")[0].lower()
        return f"{name}-{self.policy}-m{round(self.malleable * 100)}-s{self.seed}"


def run_case(case: Case) -> SimResult:
    """Run ``case`` exactly as ``slurm-ext simulate -w W -p P --malleable F --seed S`` does."""
    from slurm_ext.sim.cli import RunOptions, prepare_workload, run_one

    wl = prepare_workload(
        case.workload, seed=case.seed, malleable_fraction=case.malleable, jobs=None, nodes=None
    )
    return run_one(wl, case.policy, RunOptions())[0]


def digest(result: SimResult) -> str:
    """SHA-256 of the per-job columns, times rounded to 1e-6 s (stable across float noise)."""
    h = hashlib.sha256()
    for name in JOB_COLUMNS:
        col = getattr(result, name)
        if col.dtype.kind == "f":
            col = np.round(col, 6)
        h.update(name.encode())
        h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def record(case: Case, result: SimResult, *, full: bool) -> dict[str, Any]:
    """A fixture: the case, summary metrics, and the per-job columns (``full``) or their digest."""
    from slurm_ext.metrics import summarize

    summary = summarize(result).to_dict()
    out: dict[str, Any] = {
        "case": {
            "workload": case.workload,
            "policy": case.policy,
            "malleable": case.malleable,
            "seed": case.seed,
        },
        "jobs": len(result),
        "summary": {k: summary[k] for k in SUMMARY_KEYS},
        "resize_log": len(result.resize_log),
        "digest": digest(result),
    }
    if full:
        out["columns"] = {name: getattr(result, name).tolist() for name in JOB_COLUMNS}
    return out


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Differences between two records (empty when they agree)."""
    diffs: list[str] = []
    for key in ("jobs", "resize_log"):
        if expected[key] != actual[key]:
            diffs.append(f"{key}: expected {expected[key]}, got {actual[key]}")
    for key, want in expected["summary"].items():
        got = actual["summary"][key]
        if not _close(want, got):
            diffs.append(f"summary.{key}: expected {want}, got {got}")
    if "columns" in expected and "columns" in actual:
        for name, want_col in expected["columns"].items():
            got_col = actual["columns"][name]
            bad = [k for k, (w, g) in enumerate(zip(want_col, got_col, strict=True)) if not _close(w, g)]
            if bad:
                k = bad[0]
                diffs.append(
                    f"{name}: {len(bad)} jobs differ, first job {actual['columns']['job_id'][k]}: "
                    f"expected {want_col[k]}, got {got_col[k]}"
                )
    elif expected["digest"] != actual["digest"]:
        diffs.append("per-job digest differs")
    return diffs


def _close(want: Any, got: Any) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        return math.isclose(float(want), float(got), rel_tol=REL_TOL, abs_tol=REL_TOL)
    return bool(want == got)
