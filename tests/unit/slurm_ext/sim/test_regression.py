"""Today's simulator outputs on kth-small and ESP must not change (fixtures in tests/fixtures/sim_regression).

Rewrite them only for an intended change of behaviour: ``python benchmarks/sim_regression.py --record``.
The full KTH-SP2 cases are checked by that script without ``--record`` (too slow for unit tests).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from slurm_ext.sim.regression import Case, compare, record, run_case

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sim_regression"
POLICIES = ("easy", "fcfs", "dmr", "dbes", "sd", "minagree")
POLICIES += ("ep", "esf", "edf", "ldf", "backfill", "sd-dynamic")  # sharing the working copy and profile
CASES = [Case(w, p) for w in ("kth-small", "esp") for p in POLICIES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.tag)
def test_outputs_unchanged(case: Case) -> None:
    expected = json.loads((FIXTURES / f"{case.tag}.json").read_text())
    assert compare(expected, record(case, run_case(case), full=True)) == []


def test_compare_sees_a_moved_job_and_a_changed_metric() -> None:
    case = CASES[2]  # kth-small under dmr
    expected = json.loads((FIXTURES / f"{case.tag}.json").read_text())
    moved = copy.deepcopy(expected)
    moved["columns"]["start"][7] += 1e-6 * max(1.0, abs(moved["columns"]["start"][7]))
    moved["summary"]["mean_wait"] *= 1 + 1e-8
    diffs = compare(expected, moved)
    assert any(d.startswith("start: 1 jobs differ") for d in diffs)
    assert any(d.startswith("summary.mean_wait") for d in diffs)
    noise = copy.deepcopy(expected)
    noise["summary"]["mean_wait"] *= 1 + 1e-12
    assert compare(expected, noise) == []
