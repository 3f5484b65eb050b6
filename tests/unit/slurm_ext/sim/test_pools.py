"""A machine of several pools (a site's partitions that share no node): each job runs in its own."""

from __future__ import annotations

import numpy as np

from slurm_ext.model import MalleableSpec
from slurm_ext.sim.cli import RunOptions, run_one
from slurm_ext.sim.result import SimResult
from slurm_ext.workloads.model import SimJob, Workload


def jobs(pool_a: str = "a", pool_b: str = "b") -> list[SimJob]:
    return [
        SimJob(1, 0.0, 2, 100.0, 100.0, pool=pool_a),
        SimJob(2, 1.0, 2, 100.0, 100.0, pool=pool_a),
        SimJob(3, 2.0, 1, 50.0, 50.0, pool=pool_b),
    ]


def starts(result: SimResult) -> dict[int, float]:
    return dict(zip(result.job_id.tolist(), result.start.tolist(), strict=True))


def test_a_job_waits_for_its_pool_while_another_pool_is_idle() -> None:
    result, summary = run_one(Workload(jobs(), 4, "two", pools={"a": 2, "b": 2}), "easy", RunOptions())
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 2.0}
    alone, _ = run_one(Workload(jobs("", ""), 4, "one"), "easy", RunOptions())
    assert starts(alone)[2] == 1.0  # one pool: job 2 starts on the other two nodes at once
    # the run's accounting is the whole machine's
    assert summary.nodes == 4 and summary.jobs_simulated == 3 and result.workload == "two"
    assert result.busy_area == 2 * 100 + 2 * 100 + 1 * 50
    line = result.timeline
    assert line["busy"].max() <= 4 and line["busy"][np.searchsorted(line["time"], 2.0)] == 3
    assert result.queue_time == 99.0  # job 2 queued from 1 to 100


def test_each_pool_has_its_own_policy_and_a_job_grows_within_its_pool() -> None:
    grows = SimJob(3, 2.0, 1, 400.0, 400.0, malleable=MalleableSpec(1, 4, 2), pool="b")
    wl = Workload([*jobs()[:2], grows], 4, "two", pools={"a": 2, "b": 2})
    result, _ = run_one(wl, "dmr", RunOptions(check_period=10.0))
    final = dict(zip(result.job_id.tolist(), result.final_size.tolist(), strict=True))
    assert final[3] == 2  # grew onto pool b's other node, never onto a's
    assert result.resizes.sum() >= 1
