"""``ejb bench scale``: registered by :mod:`ejb.cli` with :func:`add_bench_commands`, into the
``bench`` group if another module registered one already (``ejb bench live``), else its own."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from slurm_ext.cli_options import JsonOpt, QuietOpt, show_progress

BENCH_HELP = "Benchmarks of EJB (not tests): scale (simulated), live (on the local cluster)."


def add_bench_commands(app: typer.Typer) -> None:
    """Add ``scale`` to ``app``'s ``bench`` group, creating the group if there is none."""
    group = next((g.typer_instance for g in app.registered_groups if g.name == "bench"), None)
    if group is None:
        group = typer.Typer(help=BENCH_HELP, no_args_is_help=True)
        app.add_typer(group, name="bench")
    group.command("scale")(scale_cmd)


def scale_cmd(
    jobs: Annotated[int, typer.Option(min=1000, help="Jobs in the synthetic trace.")] = 250_000,
    nodes: Annotated[int, typer.Option(min=16, help="Nodes of the synthetic machine.")] = 256,
    load: Annotated[float, typer.Option(min=0.05, help="Offered load of the synthetic trace.")] = 0.7,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic trace.")] = 1,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes (default: the CPUs).")] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Experiment 1 on every target of a large synthetic trace: time, memory, throughput.

    Targets (issue 15, 2 cores): wall_s <= 600, peak_rss_mb <= 2048, peak memory at 10% of
    the targets within 10% of the peak at 100%, and >= 60,000 jobs waiting in the baseline.
    """
    from ejb.experiments.bench_scale import bench_scale
    from slurm_ext.console import progress_bar, table, table_text

    with progress_bar("target jobs", "targets", enabled=show_progress(quiet)) as bar:
        r = bench_scale(jobs, nodes, load, seed, workers, progress=bar)
    if as_json:
        typer.echo(json.dumps(r.to_dict()))
        return
    rows = [
        ("targets", f"{r.targets:,} (of {r.jobs:,} jobs; {r.waiting_jobs:,} wait in the baseline)"),
        ("wall_s", f"{r.wall_s:.1f}"),
        ("peak_rss_mb", f"{r.peak_rss_mb:.0f} (at 10% of the targets: {r.peak_rss_at_10pct_mb:.0f})"),
        ("targets_per_s", f"{r.targets_per_s:.1f}"),
        ("workers", str(r.workers)),
    ]
    typer.echo(table_text(table(["measure", "value"], rows, left=2)))
    typer.echo("checks: " + ", ".join(f"{k} {'ok' if ok else 'MISSED'}" for k, ok in r.checks().items()))
