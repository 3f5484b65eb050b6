"""EJB experiment 1 on kth-small gives today's fixture, row for row (recorded by
``benchmarks/ejb_regression.py --record``; the whole KTH-SP2 case is checked there)."""

from __future__ import annotations

import json
from pathlib import Path

from ejb.experiments.regression import run_case
from slurm_ext.workloads import bundled_trace_path

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "ejb_regression" / "kth-small-one-elastic.json"


def test_kth_small_experiment_one_is_unchanged():
    want = json.loads(FIXTURE.read_text())
    got = json.loads(json.dumps(run_case(bundled_trace_path(), full_rows=True)))  # as stored
    assert got["targets"] == want["targets"] and got["rows"] == want["rows"]
    assert got == want
