"""Experiment 1 and the sensitivity sweep in chunks (what ``--on-slurm`` runs, one chunk per array
task), executed here one after another: the same rows and results as the unchunked runs, exactly; a
chunk's description survives JSON and a task's way through ``runs.json``; the CLI's options."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ejb.experiments.one_elastic import one_elastic, plan_targets
from ejb.experiments.report import one_elastic_summary
from ejb.experiments.sensitivity import point_of, point_params, sensitivity, sweep_values
from ejb.experiments.spread import CHUNK_TARGETS, Source, execute, load, runs, source, split, spread
from ejb.experiments.target_runs import Target
from ejb.params import EJBParams
from slurm_ext.reproduce.runs import read_row, run_task, write_spec

SMALL = Source("kth-small", "paper")
runner = CliRunner()


@pytest.fixture(scope="module")
def small():
    return load(SMALL)


def same_result(a, b) -> None:
    """Two experiment-1 results alike in all but wall time and how the rows were computed (compared as
    JSON: a mean of no targets is NaN)."""
    assert list(a.rows) == list(b.rows)

    def summary(r) -> str:
        kept = {k: v for k, v in one_elastic_summary(r).items() if k not in ("seconds", "workers")}
        return json.dumps(kept, sort_keys=True, default=float)

    assert summary(a) == summary(b)


@pytest.mark.parametrize("chunks", [None, 1, 2, 7, 1000])
def test_chunked_rows_equal_the_unchunked_ones(small, chunks):
    params = EJBParams()
    whole = one_elastic(small, params)
    plan = plan_targets(small, params)
    found = spread(small, SMALL, [params], plan, None, chunks=chunks, progress=False)
    assert list(found) == [params]
    same_result(found[params], whole)
    assert found[params].workers == min(chunks or 1, whole.targets)  # one chunk per 200 targets by default


def test_chunked_sampled_targets_and_the_text_rule_equal_the_unchunked_ones(small):
    params = EJBParams(o_max=4, migration=300.0, delta=1.5)
    whole = one_elastic(small, params, sample=3, rule="text")
    plan = plan_targets(small, params, sample=3, rule="text")
    same_result(spread(small, SMALL, [params], plan, None, chunks=4, progress=False)[params], whole)


def test_a_chunked_sweep_gives_the_points_of_the_unchunked_one(small):
    base = EJBParams()
    points = sweep_values((2, 8), delta=(1.0, 2.0), migration_seconds=(60.0, 120.0))
    whole = sensitivity(small, base, points)
    wanted = [point_params(base, name, value) for name, value in points]
    chosen = runs(SMALL, wanted, plan_targets(small, base).targets, chunks=3)
    assert len(chosen) == 3 * len(set(wanted)) == 3 * 4  # the default point is run once
    found = spread(small, SMALL, wanted, plan_targets(small, base), None, chunks=3, progress=False)
    assert [point_of(name, value, found[p]) for (name, value), p in zip(points, wanted, strict=True)] == whole


def test_split_cuts_contiguous_near_equal_parts_in_order():
    targets = [Target(j, float(j), 9, 1.0, 2.0) for j in range(10)]
    for k in (1, 2, 3, 4, 9, 10):
        parts = split(targets, k)
        assert len(parts) == k and sum(parts, []) == targets
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert len(split(targets, 50)) == 10  # never an empty part
    assert split([], 3) == [] and split([]) == []
    many = [Target(j, float(j), 9, 1.0, 2.0) for j in range(2 * CHUNK_TARGETS + 1)]
    assert [len(p) for p in split(many)] == [133, 134, 134]  # one part per CHUNK_TARGETS, rounded up
    with pytest.raises(ValueError, match="chunks must be >= 1"):
        split(targets, 0)


def test_a_chunk_goes_through_runs_json_as_a_task_runs_it(small, tmp_path):
    params = EJBParams(o_max=16)
    plan = plan_targets(small, params)
    chosen = runs(SMALL, [params], plan.targets, chunks=2)
    assert json.loads(json.dumps([asdict(r) for r in chosen])) == [asdict(r) for r in chosen]
    write_spec(tmp_path, execute, chosen)
    for i, run in enumerate(chosen):
        run_task(tmp_path, i)  # what `python -m slurm_ext.reproduce.runs FOLDER` does as task i
        row = read_row(tmp_path, i)
        assert row is not None and row["rows"] == execute(run.params)["rows"]
    assert chosen[0].label.endswith("(1 of 2)") and chosen[1].label.endswith("(2 of 2)")


def test_a_tasks_source_names_files_absolutely(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert source("kth-small", "pyss", 100, "0:10d") == Source("kth-small", "pyss", 100, "0:10d")
    assert source("trace.swf", "paper").workload == os.path.join(tmp_path, "trace.swf")
    assert source("trace.swf@3", "paper").workload == os.path.join(tmp_path, "trace.swf@3")
    assert source("sacct-file:jobs.json", "paper").workload == f"sacct-file:{tmp_path / 'jobs.json'}"
    with pytest.raises(ValueError, match="live sacct query"):
        source("sacct:2024-01-01..2024-02-01", "paper")


def test_the_cli_options_need_on_slurm(tmp_path: Path):
    from ejb.cli import app

    for command in ("one-elastic", "sensitivity"):
        for given in (["--chunks", "2"], ["--max-parallel", "2"], ["--on-slurm-dir", str(tmp_path)]):
            res = runner.invoke(app, ["simulate", command, "-q", *given])
            assert res.exit_code == 2 and "needs --on-slurm" in res.output, res.output
        assert "--on-slurm" in runner.invoke(app, ["simulate", command, "--help"]).output


def test_reproduce_ejb_in_chunks_gives_the_rows_of_run_all(small):
    from ejb.experiments.reproduce import (
        QUICK_DELTA,
        QUICK_MIGRATION,
        QUICK_O_MAX,
        rows_of,
        run_all,
        run_all_spread,
    )

    points = sweep_values(QUICK_O_MAX, delta=QUICK_DELTA, migration_seconds=QUICK_MIGRATION)
    here = run_all(small, points, 1, lambda *a: None)
    chunked = run_all_spread(small, SMALL, points, None, 3, progress=False)
    assert rows_of(chunked) == rows_of(here)
    assert chunked["tasks"] == 3 * (1 + len(points))  # the quick sweep has not the default point


def test_no_targets_no_runs_an_empty_result(small):
    params = EJBParams(min_procs=10_000)
    plan = plan_targets(small, params)
    assert plan.targets == [] and runs(SMALL, [params], plan.targets) == []
    found = spread(small, SMALL, [params], plan, None, progress=False)
    same_result(found[params], one_elastic(small, params))
