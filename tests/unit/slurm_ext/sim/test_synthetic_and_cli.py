"""Synthetic generator (seeded, sane shapes) and the simulate/compare commands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from slurm_ext.cli import app
from slurm_ext.sim import MalleableRule, simulate
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

runner = CliRunner()


def test_synthetic_is_seeded_and_shaped() -> None:
    a = generate(SyntheticConfig(jobs=2000, nodes=128, seed=3))
    b = generate(SyntheticConfig(jobs=2000, nodes=128, seed=3))
    c = generate(SyntheticConfig(jobs=2000, nodes=128, seed=4))
    assert a.jobs == b.jobs and a.jobs != c.jobs
    sizes = np.array([j.nodes for j in a.jobs])
    assert sizes.min() >= 1 and sizes.max() <= 128
    assert 0.15 < (sizes == 1).mean() < 0.35  # serial jobs
    assert all(j.time_limit >= j.run_time > 0 for j in a.jobs)
    submits = [j.submit for j in a.jobs]
    assert submits == sorted(submits)
    # Offered load close to the configured 0.7.
    area = sum(j.nodes * j.run_time for j in a.jobs)
    assert 0.5 < area / (128 * (submits[-1] - submits[0])) < 0.9


def test_malleable_rule_is_seeded_and_respects_sizes() -> None:
    wl = load_workload("kth-small")
    m1 = MalleableRule(fraction=0.5, seed=1).apply(wl)
    m2 = MalleableRule(fraction=0.5, seed=1).apply(wl)
    specs = [j.malleable for j in m1.jobs]
    assert specs == [j.malleable for j in m2.jobs]
    chosen = [(j, s) for j, s in zip(m1.jobs, specs, strict=True) if s]
    assert 0.3 < len(chosen) / len(wl.jobs) < 0.6
    assert all(s.max_nodes == j.nodes and s.min_nodes == max(1, j.nodes // 4) for j, s in chosen)
    assert all(j.nodes >= 2 for j, _ in chosen)
    # Still runs (rigid base scheduler ignores malleability).
    assert simulate(m1, "easy").finished.all()


def test_simulate_json(tmp_path: Path) -> None:
    res = runner.invoke(app, ["simulate", "--workload", "kth-small", "--policy", "easy", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout.strip().splitlines()[-1])
    for key in ("jobs_simulated", "jobs_skipped", "makespan", "utilisation", "mean_wait", "median_wait",
                "mean_turnaround", "mean_bounded_slowdown", "fragmentation", "wall_time"):  # fmt: skip
        assert key in data
    assert data["jobs_simulated"] == 500


def test_simulate_writes_csv_and_plots(tmp_path: Path) -> None:
    res = runner.invoke(
        app, ["simulate", "-w", "synthetic", "--jobs", "200", "-p", "fcfs", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fcfs.gantt.png", "fcfs.jobs.csv", "fcfs.summary.json", "fcfs.timeline.png"]
    lines = (tmp_path / "fcfs.jobs.csv").read_text().splitlines()
    assert lines[0].startswith("job_id,submit,start,end") and len(lines) == 201


def test_compare_prints_one_table_and_paired_changes() -> None:
    res = runner.invoke(app, ["compare", "-p", "fcfs,easy,backfill:3", "-w", "kth-small"])
    assert res.exit_code == 0, res.output
    assert "paired change of the mean vs fcfs" in res.stdout
    assert all(name in res.stdout for name in ("fcfs", "easy", "backfill:3"))


def test_errors_are_one_line_and_non_zero() -> None:
    for args in (
        ["simulate", "-p", "nope"],
        ["simulate", "-w", "/no/such.swf"],
        ["compare", "-p", "easy,nope"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 2
        assert res.output.strip().startswith("error:") and len(res.output.strip().splitlines()) == 1
