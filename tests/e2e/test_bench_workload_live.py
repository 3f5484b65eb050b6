"""`slurm-ext bench workload` end to end at a small size: the rigid run and a malleable run under
the DMR service, every job's app checking its own result, the numbers read back from accounting."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import slurm_env

pytestmark = pytest.mark.slurm


def bench(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "slurm_ext", "bench", "workload", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=slurm_env(), timeout=600)


def test_the_workload_bench_runs_rigid_and_malleable_and_reports_both(slurm, tmp_path):
    res = bench("--jobs", "3", "--steps", "3", "--step-seconds", "1", "--mean-gap", "0.5", "--json",
                "--workdir", str(tmp_path))  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    runs = {r["mode"]: r for r in summary["runs"]}
    assert set(runs) == {"rigid", "malleable"} and runs["malleable"]["policy"] == "dmr"
    for run in runs.values():
        assert run["jobs"] == 3 and run["results_ok"] == 3, run  # each app's own check passed
        assert run["states"] == ["COMPLETED"], run
        assert run["completion_s"] > 0 and 0 < run["utilisation"] <= 1, run
    assert runs["rigid"]["actions"] == {"expand": 0, "shrink": 0, "failed": 0, "mold": 0}  # nobody asked
    assert set(runs["malleable"]["gain"]) == {"completion", "mean_wait", "mean_exec"}


def test_the_workload_bench_refuses_bad_sizes_with_exit_code_2(tmp_path):
    res = bench("--jobs", "0", "--workdir", str(tmp_path))
    assert res.returncode == 2 and "--jobs" in res.stderr, res
    res = bench("--apps", "fs,nope", "--workdir", str(tmp_path))
    assert res.returncode == 2 and "apps must be among" in res.stderr, res
