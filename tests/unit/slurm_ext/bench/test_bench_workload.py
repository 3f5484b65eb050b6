"""The workload benchmark's pure parts: the seeded workload and the measures from events."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_ext.bench.workload import (
    JobSpec,
    action_times,
    app_results,
    gain,
    generate,
    interval,
    measures,
    node_steps,
    per_job_gains,
    plot_nodes,
    shapes,
)


def test_the_workload_is_seeded_and_poisson_like():
    every = ("fs", "cg", "jacobi", "nbody")
    a = generate(200, 10.0, seed=7, step_seconds=6, steps=10, apps=every)
    assert a == generate(200, 10.0, seed=7, step_seconds=6, steps=10, apps=every)
    assert a != generate(200, 10.0, seed=8, step_seconds=6, steps=10, apps=every)
    gaps = [y.arrival - x.arrival for x, y in zip(a, a[1:], strict=False)]
    assert 8 < sum(gaps) / len(gaps) < 12 and min(gaps) >= 0
    assert {s.app for s in a} == {"fs", "cg", "jacobi", "nbody"}
    # every job is submitted at its maximum and declares the range of paper 002's Table 1, scaled
    for job in a:
        lo, hi, pref = shapes(8)[job.app]
        assert (job.min_size, job.size, job.preferred) == (lo, hi, pref)
        assert f"--min {lo} --max {hi}" in job.args


def test_table1_scales_with_the_cluster_to_sizes_the_factor_reaches():
    # 64 nodes: the paper's own sizes (FS 20 rounds down to 16)
    assert shapes(64) == {"fs": (1, 16, None), "cg": (2, 32, 8), "jacobi": (2, 32, 8), "nbody": (1, 16, 1)}
    assert shapes(8) == {"fs": (1, 2, None), "cg": (1, 4, 1), "jacobi": (1, 4, 1), "nbody": (1, 2, 1)}
    assert shapes(1) == {"fs": (1, 1, None), "cg": (1, 1, 1), "jacobi": (1, 1, 1), "nbody": (1, 1, 1)}


def test_a_step_on_four_ranks_lasts_about_the_step_length_and_a_4x_shrink_costs_the_papers_ratio():
    from dmr_apps.common import step_time
    from slurm_ext.bench.workload import SCALING

    for job in generate(40, 10.0, seed=3, step_seconds=6, steps=10):
        words = job.args.split()
        work = float(words[words.index("--step-seconds" if job.app == "fs" else "--model-seconds") + 1])
        assert round(step_time(work, 4, SCALING), 1) in (3.0, 6.0, 9.0)
    # paper 002, Table 4 (50 jobs): 900.3 s shrunk 32 -> 8 vs 620.26 s; the same ratio for 4 -> 1
    for big in (32, 4):
        assert abs(step_time(1.0, big // 4, SCALING) / step_time(1.0, big, SCALING) - 900.3 / 620.26) < 1e-9
    assert step_time(10.0, 4) == 2.5  # default: perfectly scalable


def test_long_jobs_and_estimated_limits_give_sd_policy_mates_that_end_after_a_new_job():
    from dmr_apps.common import step_time
    from slurm_ext.bench.workload import SCALING, START_SECONDS

    assert all(j.minutes == 20 for j in generate(30, 1.0, seed=2, step_seconds=6, steps=10))  # as before
    mix = generate(60, 1.0, seed=2, step_seconds=6, steps=10, long_fraction=0.3, limits="estimate")
    steps = {j.name: int(j.args.split()[1]) for j in mix}
    assert set(steps.values()) == {10, 40} and 8 < sum(n == 40 for n in steps.values()) < 30
    for job in mix:  # twice the expected time at its submitted size, in whole minutes
        words = job.args.split()
        work = float(words[words.index("--step-seconds" if job.app == "fs" else "--model-seconds") + 1])
        expected = steps[job.name] * step_time(work, job.size, SCALING) + START_SECONDS
        assert job.minutes == math.ceil(2 * expected / 60), job
    assert max(j.minutes for j in mix) > 2 * min(j.minutes for j in mix)  # long mates outlast short jobs
    for bad in ({"limits": "guess"}, {"long_fraction": 1.5}):
        with pytest.raises(ValueError):
            generate(3, 1.0, seed=2, step_seconds=6, steps=10, **bad)


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
    assert m["actions"] == {"expand": 0, "shrink": 1, "failed": 0, "mold": 0}
    # Table 4's columns per job: job 1 grew at 10 s and shrank at 50 s; job 2 waited 50 s
    a, b = m["per_job"]
    assert a["nodes"] == [[0.0, 4], [10.0, 8], [50.0, 6], [100.0, 0]] and a["resizes"] == 2
    assert (b["wait_s"], b["exec_s"], b["completion_s"], b["nodes"]) == (
        50.0,
        50.0,
        100.0,
        [[50.0, 2], [100.0, 0]],
    )
    assert m["mean_job_completion_s"] == 100.0
    assert plot_nodes(m, 8, tmp_path / "nodes.png", "two jobs").stat().st_size > 1000


def test_a_jobs_nodes_over_time_clip_changes_to_its_run_and_merge_changes_at_one_instant():
    assert node_steps(10.0, 20.0, 4, []) == [(10.0, 4), (20.0, 0)]
    assert node_steps(10.0, 20.0, 4, [(5.0, 2), (15.0, 8), (25.0, 1)]) == [
        (10.0, 2),
        (15.0, 8),
        (20.0, 1),
        (20.0, 0),
    ]


def test_a_gain_over_seeds_has_the_students_t_interval():
    assert gain(50.0, 100.0) == -0.5 and gain(3.0, 0.0) is None  # no rigid wait: no gain to state
    assert interval([]) == {"mean": None, "ci95": None, "n": 0}
    one = interval([0.2])
    assert one == {"mean": 0.2, "ci95": None, "n": 1}  # no interval from one seed (JSON: null)
    three = interval([-0.4, -0.5, -0.6])
    # mean -0.5, sd 0.1, t(0.975, 2) = 4.303: half-width 4.303 x 0.1 / sqrt(3)
    assert math.isclose(three["mean"], -0.5) and math.isclose(three["ci95"], 4.302652729 * 0.1 / math.sqrt(3))


def test_a_molded_job_counts_from_the_size_it_started_on_and_silence_is_explained(tmp_path: Path):
    ids = {1: JobSpec("a", 0, "fs", "", 4)}
    rows = {1: (0.0, 0.0, 100.0, "COMPLETED")}
    events = [
        {"kind": "decision", "job": 1, "time": 1.0, "action": "none", "reason": "no idle node"},
        {"kind": "decision", "job": 1, "time": 2.0, "action": "none", "reason": "no idle node"},
        {"kind": "mold", "job": 1, "time": 0.0, "ok": True, "old": 4, "new": 2},
        {"kind": "molded-start", "job": 1, "time": 0.0, "ok": True, "decided": 2, "nodes": 2},
    ]
    m = measures("malleable", "dbes", ids, rows, events, 8, tmp_path)
    assert m["utilisation"] == 2 * 100 / 800  # on 2 nodes, not the 4 it asked for
    assert m["actions"]["mold"] == 1 and m["no_action_reasons"] == [("no idle node", 2)]


def test_a_resized_jobs_accounting_records_make_one_job():
    from slurm_ext.bench.workload import job_rows

    # sacct -X after two resizes of job 177 (each resize starts a record whose Submit is the resize)
    acct = "\n".join([
        "177|2026-11-25T06:54:35|2026-11-25T06:54:34|2026-11-25T06:56:18|RESIZING",
        "176|2026-11-25T06:53:00|2026-11-25T06:53:10|2026-11-25T06:54:00|COMPLETED",
        "177|2026-11-25T06:56:18|2026-11-25T06:54:34|2026-11-25T06:56:31|RESIZING",
        "177|2026-11-25T06:56:31|2026-11-25T06:54:34|2026-11-25T06:56:47|COMPLETED",
        "178|2026-11-25T06:56:40|Unknown|Unknown|PENDING",
    ])  # fmt: skip
    rows = job_rows(acct)
    sub, start, end, state = rows[177]
    assert state == "COMPLETED" and end - start == 133 and start - sub == -1  # as Slurm stamped them
    assert set(rows) == {176, 177}


def test_the_papers_mix_and_submission_at_the_minimum():
    import pytest

    mix = generate(30, 1.0, seed=2, step_seconds=6, steps=10)  # the default: paper 002 §7.5's three apps
    assert {j.app for j in mix} == {"cg", "jacobi", "nbody"}
    low = generate(30, 1.0, seed=2, step_seconds=6, steps=10, submit_at="min")
    assert all(j.size == j.min_size and j.max_size == shapes(8)[j.app][1] for j in low)
    with pytest.raises(ValueError):
        generate(3, 1.0, seed=2, step_seconds=6, steps=10, apps=("lulesh",))


def test_per_job_gains_are_paper_002_table_3s_measures():
    rigid = [{"name": "a", "wait_s": 100.0, "exec_s": 50.0, "completion_s": 150.0},
             {"name": "b", "wait_s": 0.0, "exec_s": 40.0, "completion_s": 40.0}]  # fmt: skip
    malleable = [{"name": "a", "wait_s": 20.0, "exec_s": 75.0, "completion_s": 95.0},
                 {"name": "b", "wait_s": 5.0, "exec_s": 40.0, "completion_s": 45.0}]  # fmt: skip
    g = per_job_gains(rigid, malleable)
    assert g["wait"] == {"mean": 0.8, "std": None, "n": 1}  # b did not wait when rigid: no gain to state
    assert math.isclose(g["exec"]["mean"], (-0.5 + 0.0) / 2) and g["exec"]["n"] == 2
    assert math.isclose(g["completion"]["mean"], ((1 - 95 / 150) + (1 - 45 / 40)) / 2)


def test_table_2_times_no_action_from_the_service_and_resizes_from_the_apps_result_lines():
    events = [
        {"kind": "decision", "action": "none", "seconds": 0.002},
        {"kind": "decision", "action": "none", "seconds": 0.004},
        {"kind": "decision", "action": "expand", "seconds": 0.3},  # an action: timed by the app
        {"kind": "expand", "seconds": 0.9},
    ]
    fs = {"checksum_ok": True, "resizes": [[3, "expand", 2, 4, 0.5], [9, "shrink", 4, 2, 0.25]]}
    cg = {"ok": True, "resizes": [[5, "expand", 2, 4, 1.5]]}
    stray = {"resizes": [[1, "expand", 1, 2, 9]]}  # not an app's result line
    outputs = [
        f"step 1\nFS_RESULT {json.dumps(fs)}",
        f"CG_RESULT {json.dumps(cg)}\nnot_RESULT {json.dumps(stray)}",
        "JACOBI_RESULT {not json",
    ]
    t = action_times(events, [r for text in outputs for r in app_results(text)], jobs=4)
    none = t["none"]
    assert (none["quantity"], none["per_job"], none["min_s"], none["max_s"]) == (2, 0.5, 0.002, 0.004)
    assert math.isclose(none["mean_s"], 0.003) and math.isclose(none["std_s"], math.sqrt(2) * 0.001)
    assert t["expand"]["quantity"] == 2 and t["expand"]["mean_s"] == 1.0 and t["expand"]["per_job"] == 0.5
    assert t["shrink"] == {"quantity": 1, "per_job": 0.25, "min_s": 0.25, "max_s": 0.25, "mean_s": 0.25,
                           "std_s": None}  # fmt: skip
    empty = action_times([], [], jobs=0)["expand"]
    assert empty["quantity"] == 0 and empty["per_job"] == 0.0 and empty["mean_s"] is None


@pytest.mark.parametrize(
    ("policy", "said"), [("nope", "unknown policy 'nope'"), ("sd:x", "sd:x: MAX_SLOWDOWN")]
)
def test_a_bad_policy_is_refused_before_any_run(policy: str, said: str) -> None:
    run = subprocess.run([sys.executable, "-m", "slurm_ext", "bench", "workload", "--policy", "dmr:async",
                          "--policy", policy], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2 and said in run.stderr and not run.stdout, run.stderr
