"""`slurm-ext bench workload` end to end at a small size: the rigid run and a malleable run under
the DMR service, every job's app checking its own result, the numbers read back from accounting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import slurm_env

pytestmark = pytest.mark.slurm


def bench(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "slurm_ext", "bench", "workload", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=slurm_env(), timeout=600)


def test_the_workload_bench_runs_rigid_and_malleable_over_two_seeds_and_reports_both(slurm, tmp_path):
    plots = tmp_path / "plots"
    res = bench("--jobs", "2", "--steps", "3", "--step-seconds", "1", "--mean-gap", "0.5", "--seeds", "2",
                "--policy", "dmr", "--policy", "dmr:async", "--json", "--workdir", str(tmp_path),
                "--out", str(plots))  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert [(r["seed"], r["policy"]) for r in summary["runs"]] == [
        (1, "none"), (1, "dmr"), (1, "dmr:async"), (2, "none"), (2, "dmr"), (2, "dmr:async")
    ]  # fmt: skip
    for run in summary["runs"]:
        assert run["jobs"] == 2 and run["results_ok"] == 2, run  # each app's own check passed
        assert run["states"] == ["COMPLETED"], run
        assert run["completion_s"] > 0 and 0 < run["utilisation"] <= 1, run
        assert [j["nodes"][-1][1] for j in run["per_job"]] == [0, 0], run  # Table 4 per job
        assert Path(run["plot"]).stat().st_size > 1000  # nodes per job over time
        if run["mode"] == "rigid":
            assert run["actions"] == {"expand": 0, "shrink": 0, "failed": 0, "mold": 0}  # nobody asked
        else:  # paper 002's Table 3 per job, synchronous and asynchronous checks
            assert set(run["gain"]) == {"completion", "mean_wait", "mean_exec"}
            assert run["per_job_gain"]["completion"]["n"] == 2, run["per_job_gain"]
            times = run["action_times"]  # paper 002's Table 2: resizes timed as the apps saw them
            assert times["expand"]["quantity"] + times["shrink"]["quantity"] >= run["actions"]["expand"], run
            assert times["none"]["quantity"] == 0 or times["none"]["max_s"] < 5, times
    gains = summary["gains"]["dmr"]
    # over both seeds (the wait: only where some job waited in the rigid run: 2 jobs may all fit)
    assert gains["completion"]["n"] == 2 and isinstance(gains["completion"]["ci95"], float), gains
    assert set(summary["definitions"]) >= {"completion_s", "mean_job_completion_s", "per_job"}


def test_the_workload_bench_refuses_bad_sizes_with_exit_code_2(tmp_path):
    res = bench("--jobs", "0", "--workdir", str(tmp_path))
    assert res.returncode == 2 and "--jobs" in res.stderr, res
    res = bench("--apps", "fs,nope", "--workdir", str(tmp_path))
    assert res.returncode == 2 and "apps must be among" in res.stderr, res
