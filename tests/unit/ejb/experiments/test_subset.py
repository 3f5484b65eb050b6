"""--limit / --window: quick subsets whose warm-up/cool-down rule is the subset's own."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ejb.cli import app
from ejb.experiments import paper
from ejb.experiments.one_elastic import baseline, select_targets
from ejb.experiments.subset import parse_time, parse_window, subset
from ejb.params import EJBParams
from slurm_ext.workloads import bundled_trace_path, load_swf


@pytest.fixture(scope="module")
def small():
    return load_swf(bundled_trace_path())


def test_parse_times_and_windows():
    assert parse_time("90") == 90 and parse_time("90m") == 5400 and parse_time("2d") == 172800
    assert parse_window("1h:2h") == (3600, 7200)
    assert parse_window(":1h") == (0, 3600) and parse_window("1h:")[1] == float("inf")
    for bad in ("1h", "2h:1h", "x:1h", "-5:"):
        with pytest.raises(ValueError):
            parse_window(bad)


def test_limit_keeps_the_first_jobs_and_renames(small):
    sub = subset(small, limit=200)
    assert [j.job_id for j in sub.jobs] == [j.job_id for j in small.jobs[:200]]
    assert paper.paper_trace(sub.name) is None  # not comparable with the paper's tables
    assert subset(small) is small


def test_window_is_relative_to_the_first_submission(small):
    t0 = small.jobs[0].submit
    sub = subset(small, window=(86400.0, 3 * 86400.0))
    assert sub.jobs and all(86400 <= j.submit - t0 < 3 * 86400 for j in sub.jobs)
    inside = [j for j in small.jobs if 86400 <= j.submit - t0 < 3 * 86400]
    assert len(sub.jobs) == len(inside)
    with pytest.raises(ValueError, match="no jobs"):
        subset(small, window=(1e12, 2e12))


def test_warm_up_and_cool_down_apply_to_the_subset(small):
    cut = 0
    for limit in range(120, 500, 40):
        base = baseline(subset(small, limit=limit))
        ids = set(select_targets(base, EJBParams(), rule="text"))  # P >= 8
        last = base.submit.max()
        for k, j in enumerate(base.job_id):
            big_waiting = base.size[k] >= 8 and base.start[k] > base.submit[k]
            if k < int(limit * 0.01):
                assert int(j) not in ids  # the subset's first 1%
            elif big_waiting and base.end[k] > last:  # ends after the subset's last arrival
                assert int(j) not in ids
                cut += 1
            elif big_waiting:
                assert int(j) in ids
    assert cut > 0  # some subsets do cut targets at their own end


def test_cli_limit_window_and_workers(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "simulate",
            "one-elastic",
            "--limit",
            "300",
            "--workers",
            "2",
            "--no-plots",
            "-q",
            "-o",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "2 workers" in r.output
    bad = CliRunner().invoke(app, ["simulate", "one-elastic", "--window", "5d", "-q", "-o", str(tmp_path)])
    assert bad.exit_code == 2 and "START:END" in bad.output


def test_cli_swf_reading_option(tmp_path):
    ok = CliRunner().invoke(
        app,
        [
            "simulate",
            "one-elastic",
            "--swf-reading",
            "default",
            "--limit",
            "200",
            "--no-plots",
            "-q",
            "-o",
            str(tmp_path),
        ],
    )
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["simulate", "one-elastic", "--swf-reading", "paper,size=huge", "-q"])
    assert bad.exit_code == 2 and "size='huge'" in bad.output


def test_cli_target_rule_option(tmp_path):
    args = [
        "simulate",
        "one-elastic",
        "--limit",
        "300",
        "--workers",
        "1",
        "--no-plots",
        "-q",
        "-o",
        str(tmp_path),
    ]
    strict = CliRunner().invoke(app, [*args, "--json"])
    loose = CliRunner().invoke(app, [*args, "--json", "--target-rule", "text"])
    assert strict.exit_code == loose.exit_code == 0
    a, b = (json.loads(r.stdout) for r in (strict, loose))
    assert a["target_rule"] == "table3" and b["target_rule"] == "text"
    assert a["targets"] < b["targets"]  # P > 8 drops the jobs of exactly 8
    bad = CliRunner().invoke(app, ["simulate", "one-elastic", "--target-rule", "paper", "-q"])
    assert bad.exit_code == 2 and "unknown target rule" in bad.output
