"""The workload benchmark's pure parts: the seeded workload and the measures from events."""

from __future__ import annotations

from pathlib import Path

from slurm_ext.bench.workload import JobSpec, generate, measures


def test_the_workload_is_seeded_and_poisson_like():
    a = generate(200, 10.0, seed=7, step_seconds=6, steps=10)
    assert a == generate(200, 10.0, seed=7, step_seconds=6, steps=10)
    assert a != generate(200, 10.0, seed=8, step_seconds=6, steps=10)
    gaps = [y.arrival - x.arrival for x, y in zip(a, a[1:], strict=False)]
    assert 8 < sum(gaps) / len(gaps) < 12 and min(gaps) >= 0
    assert {s.app for s in a} == {"fs", "cg", "jacobi", "nbody"} and {s.size for s in a} == {3, 4, 5, 6}


def test_node_seconds_follow_the_resizes_of_the_events(tmp_path: Path):
    ids = {1: JobSpec("a", 0, "fs", "", 4), 2: JobSpec("b", 0, "fs", "", 2)}
    rows = {1: (0.0, 0.0, 100.0, "COMPLETED"), 2: (0.0, 50.0, 100.0, "COMPLETED")}
    events = [
        {"kind": "commit", "resize": "expand", "ok": True, "job": 1, "time": 10.0, "new": 8},
        {"kind": "commit", "resize": "expand", "ok": False, "job": 1, "time": 20.0, "new": 16},  # undone
        {"kind": "shrink", "job": 1, "time": 50.0, "new": 6},
        {"kind": "decision", "job": 2, "time": 60.0, "new": 4},
    ]
    m = measures("malleable", "dmr", ids, rows, events, 8, tmp_path)
    # job 1: 4 x 10 + 8 x 40 + 6 x 50 = 660; job 2: 2 x 50 = 100; 8 nodes x 100 s
    assert m["utilisation"] == (660 + 100) / 800
    assert m["completion_s"] == 100 and m["mean_wait_s"] == 25 and m["mean_exec_s"] == 75
    assert m["actions"] == {"expand": 0, "shrink": 1, "failed": 0}
