"""Metrics of simulated runs: per-job values, steady window, run summary, paired CI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slurm_ext.metrics import (
    bounded_slowdown,
    compare_runs,
    job_metrics,
    paired_change,
    steady_mask,
    summarize,
    summary_table,
)
from slurm_ext.metrics.compare import t_quantile_975
from slurm_ext.sim import Workload, rigid_job, simulate


def two_job_run():
    # Job 1 holds the 4 nodes for 100 s; job 2 (4 nodes, 5 s) waits 90 s.
    wl = Workload([rigid_job(1, 0, 4, 100), rigid_job(2, 10, 4, 5)], nodes=4)
    return simulate(wl, "easy")


def test_per_job_values() -> None:
    jm = job_metrics(two_job_run(), warmup=0.0, cooldown=False)
    assert jm.wait.tolist() == [0, 90]
    assert jm.run.tolist() == [100, 5]
    assert jm.turnaround.tolist() == [100, 95]
    # bounded slowdown uses max(run, 10 s): (90 + 5) / 10
    assert jm.bounded_slowdown.tolist() == [1.0, 9.5]


def test_bounded_slowdown_never_below_one() -> None:
    assert bounded_slowdown(np.array([0.0]), np.array([1.0])).tolist() == [1.0]


def test_summary_makespan_utilisation_fragmentation() -> None:
    s = summarize(two_job_run(), warmup=0.0, cooldown=False)
    assert s.makespan == 105
    assert s.utilisation == pytest.approx((4 * 100 + 4 * 5) / (4 * 105))
    assert s.fragmentation == 0.0  # the queue was never waiting on idle nodes
    assert (s.mean_wait, s.median_wait) == (45, 45)
    assert "easy" in summary_table([s])


def test_fragmentation_counts_idle_nodes_while_jobs_wait() -> None:
    # 3 of 4 nodes busy for 100 s while a 4-node job waits: 1 idle node on average.
    wl = Workload([rigid_job(1, 0, 3, 100), rigid_job(2, 0, 4, 10)], nodes=4)
    s = summarize(simulate(wl, "easy"), warmup=0.0, cooldown=False)
    assert s.fragmentation == pytest.approx(1.0)


def test_steady_window_drops_warm_up_and_cool_down() -> None:
    jobs = [rigid_job(k, k * 10, 1, 5) for k in range(1, 201)]
    jobs.append(rigid_job(999, 3000, 1, 10_000))  # the last arrival
    r = simulate(Workload(jobs, nodes=4), "easy")
    keep = steady_mask(r)
    assert not keep[:2].any()  # first 1% of 201 jobs = 2 jobs
    assert keep[2:-1].all()
    assert not keep[-1]  # ends after the last arrival


def test_paired_change_and_ci() -> None:
    r = two_job_run()
    before = job_metrics(r, warmup=0.0, cooldown=False)
    after = job_metrics(r, warmup=0.0, cooldown=False)
    after.wait = after.wait + np.array([10.0, 20.0])
    c = paired_change(before, after, "wait")
    assert (c.n, c.mean_diff) == (2, 15.0)
    half = t_quantile_975(1) * np.std([10.0, 20.0], ddof=1) / math.sqrt(2)
    assert (c.ci_low, c.ci_high) == pytest.approx((15 - half, 15 + half))
    assert c.percent == pytest.approx(100 * 15 / 45)
    assert [x.metric for x in compare_runs(before, after)] == [
        "wait",
        "run",
        "turnaround",
        "bounded_slowdown",
    ]


def test_t_quantiles() -> None:
    assert t_quantile_975(1) == pytest.approx(12.706, abs=1e-3)  # the printed tables' 3 decimals
    assert t_quantile_975(30) == pytest.approx(2.042, abs=1e-3)
    assert math.isnan(t_quantile_975(0))
    assert t_quantile_975(40) == pytest.approx(2.021, abs=2e-3)
    assert t_quantile_975(10_000) == pytest.approx(1.960, abs=1e-3)
