"""`ejb bench scale` on a small trace: the fields it reports (speed is never asserted here)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ejb.cli import app
from ejb.experiments.bench_scale import MemoryProbe, ScaleResult, bench_scale, tree_rss_mb
from ejb.experiments.one_elastic import baseline, select_targets
from ejb.params import EJBParams
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

KEYS = {"targets", "wall_s", "peak_rss_mb", "targets_per_s", "workers"}


def test_bench_counts_every_target_and_reports_memory():
    r = bench_scale(jobs=3000, nodes=64, load=0.8, seed=2, workers=2)
    wl = generate(SyntheticConfig(jobs=3000, nodes=64, seed=2, load=0.8))
    base = baseline(wl)
    assert r.targets == len(select_targets(base, EJBParams())) > 100
    assert r.waiting_jobs == int(((base.start - base.submit) > 0).sum())
    assert r.workers == 2 and r.wall_s > 0 and r.targets_per_s > 0
    assert 0 < r.peak_rss_at_10pct_mb <= r.peak_rss_mb
    assert set(r.checks()) == {"wall_s", "peak_rss_mb", "memory_growth", "waiting_jobs"}
    assert r.checks()["waiting_jobs"] is False  # a 3000-job trace cannot make 60,000 jobs wait


def test_growth_and_checks_follow_the_numbers():
    r = ScaleResult(250_000, 256, 0.7, 90_000, 60_000, 700.0, 1000.0, 800.0, 85.7, 2, -0.3)
    assert abs(r.growth - 0.25) < 1e-12
    assert r.checks() == {"wall_s": False, "peak_rss_mb": True, "memory_growth": False, "waiting_jobs": True}


def test_memory_probe_marks_the_peak_at_ten_percent():
    probe = MemoryProbe(every=0.0)
    probe(0, 50)
    assert probe.mark_at == 5 and probe.peak_at_mark is None
    for done in range(1, 51):
        probe(done, 50)
    assert probe.peak_at_mark is not None and probe.peak >= probe.peak_at_mark > 0
    assert tree_rss_mb() > 0


def test_cli_prints_one_json_object():
    r = CliRunner().invoke(
        app, ["bench", "scale", "--jobs", "2000", "--nodes", "32", "--workers", "1", "--json"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data) >= KEYS and data["workers"] == 1
    bad = CliRunner().invoke(app, ["bench", "scale", "--jobs", "10"])
    assert bad.exit_code == 2


def test_scale_joins_an_existing_bench_group():
    import typer

    from ejb.experiments.bench_cli import add_bench_commands

    main = typer.Typer()
    other = typer.Typer()
    other.command("live")(lambda: None)
    main.add_typer(other, name="bench")
    add_bench_commands(main)
    assert [g.name for g in main.registered_groups] == ["bench"]
    names = {c.name for c in other.registered_commands}
    assert names == {"live", "scale"}
    alone = typer.Typer()
    add_bench_commands(alone)
    assert [g.name for g in alone.registered_groups] == ["bench"]
