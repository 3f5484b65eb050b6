"""`ejb`: Elastic Job Bundling (Liu & Weissman, SC'15) -- experiments on SWF traces.

A thin layer: each command parses options, calls a library function in
:mod:`ejb.experiments` and prints the paper's table layout (or ``--json``). The same app is
``slurm-ext ejb`` (entry point ``slurm_ext.commands``); the options it shares with ``slurm-ext
simulate`` come from :mod:`slurm_ext.cli_options`. ``ejb reproduce`` is ``slurm-ext reproduce ejb``
(:mod:`ejb.experiments.reproduce`: all of section 6 beside the paper's numbers).
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ejb.experiments.bench_cli import add_bench_commands
from ejb.experiments.reproduce import Chunks, ejb_cmd
from ejb.params import PAPER_DELTA, PAPER_MIGRATION, PAPER_MIN_PROCS, PAPER_O_MAX, EJBParams
from slurm_ext.cli_options import (
    JsonOpt,
    MigrationOpt,
    NoPlotsOpt,
    OneLineErrors,
    OutOpt,
    QuietOpt,
    ReadingOpt,
    WorkloadOpt,
    fail,
    show_progress,
)
from slurm_ext.reproduce.sweep import MaxParallel, OnSlurm, OnSlurmDir, Partition, TaskTime, array_options

if TYPE_CHECKING:
    from ejb.experiments.one_elastic import OneElasticResult
    from ejb.experiments.spread import Source
    from slurm_ext.reproduce.on_slurm import ArrayOptions

app = typer.Typer(
    cls=OneLineErrors,
    help="Elastic Job Bundling: decompose large waiting jobs into subjobs in EASY's backfill slots.",
    no_args_is_help=True,
    add_completion=False,
)
simulate_app = typer.Typer(
    help="Trace-driven experiments of the EJB paper (section 6) against EASY backfilling.",
    no_args_is_help=True,
)
app.add_typer(simulate_app, name="simulate")

MinProcs = Annotated[int, typer.Option(help="Eligible target jobs request at least this many processors.")]
OMax = Annotated[int, typer.Option("--o-max", help="Maximum degree of over-subscription O_max.")]
Delta = Annotated[float, typer.Option("--delta", help="Over-subscription penalty factor Δ of eq. (2).")]
WaitingFirst = Annotated[
    bool,
    typer.Option(
        "--waiting-first/--arrival-order",
        help="Offer slots to waiting elastic jobs before expanding running ones (else arrival order).",
    ),
]
DropJ0 = Annotated[
    bool,
    typer.Option(
        "--drop-dominated-j0",
        help="Extension (not in the paper): withdraw J0 once its start can no longer help.",
    ),
]
Workers = Annotated[
    int | None, typer.Option(min=1, help="Worker processes (default: the CPUs available, at most 8).")
]
Limit = Annotated[
    int | None, typer.Option(min=1, help="Only the first N jobs of the trace (a quick subset).")
]
Window = Annotated[
    str | None,
    typer.Option(
        help="Only jobs submitted in START:END after the first one (seconds, or 12h, 30d; e.g. 0:30d)."
    ),
]
TargetRule = Annotated[
    str,
    typer.Option(
        help="Which large waiting jobs are targets: table3 (P > min-procs, which reproduces the paper's"
        " target counts, see ejb/NOTES.md) or text (P >= min-procs, as section 6.2 says)."
    ),
]


def _params(
    min_procs: int, o_max: int, migration: float, delta: float, waiting_first: bool = True, drop: bool = False
) -> EJBParams:
    try:
        return EJBParams(
            min_procs, o_max, migration, delta, waiting_first=waiting_first, drop_dominated_j0=drop
        )
    except ValueError as e:
        raise fail(str(e)) from None


def _load(spec: str, reading: str = "paper") -> Any:
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import parse_reading

    try:
        return load_workload(spec, reading=parse_reading(reading))
    except (OSError, ValueError) as e:
        raise fail(e) from None


def _subset(wl: Any, limit: int | None, window: str | None) -> Any:
    from ejb.experiments.subset import parse_window, subset

    try:
        return subset(wl, limit, parse_window(window) if window else None)
    except ValueError as e:
        raise fail(str(e)) from None


def _outdir(out: Path | None) -> Path | None:
    """``out``, created (before any long run, so a bad path fails at once); None: write no files."""
    if out is None:
        return None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise fail(f"cannot create output directory {out}: {e.strerror}") from None
    return out


def _emit(summary: dict[str, Any], text: str, as_json: bool, files: list[Path]) -> None:
    if as_json:
        typer.echo(json.dumps(summary, default=float))
        return
    typer.echo(text)
    for f in files:
        typer.echo(f"wrote {f}")


@simulate_app.command("one-elastic")
def one_elastic_cmd(
    workload: WorkloadOpt = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: MigrationOpt = PAPER_MIGRATION,
    delta: Delta = PAPER_DELTA,
    waiting_first: WaitingFirst = True,
    drop_dominated_j0: DropJ0 = False,
    method: Annotated[
        str,
        typer.Option(
            help="fast: from a checkpoint of the baseline at each submit time; copy: from a copy of it;"
            " naive: the whole trace per target. All give the same rows."
        ),
    ] = "fast",
    sample: Annotated[int, typer.Option(min=1, help="Use every k-th target job only.")] = 1,
    workers: Workers = None,
    limit: Limit = None,
    window: Window = None,
    target_rule: TargetRule = "table3",
    out: OutOpt = None,
    as_json: JsonOpt = False,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    swf_reading: ReadingOpt = "paper",
    on_slurm: OnSlurm = False,
    on_slurm_dir: OnSlurmDir = None,
    partition: Partition = None,
    time: TaskTime = None,
    max_parallel: MaxParallel = None,
    chunks: Chunks = None,
) -> None:
    """Experiment 1 (Table 3, Table 4, Figure 7): one elastic job per run.

    Every large job (P > min-procs with --target-rule table3, P >= min-procs with text) that
    waits in the EASY baseline becomes the only elastic job of its own run; its wait, run and
    turnaround are compared with the baseline. Rows are written to one_elastic.csv as they come
    (with --on-slurm: the targets in chunks, one task of a Slurm job array each; the same rows, at the end).
    """
    from ejb.experiments import report
    from ejb.experiments.one_elastic import METHODS, TARGET_RULES
    from ejb.experiments.target_rows import RowWriter
    from ejb.experiments.target_runs import default_workers

    if method not in METHODS:
        raise fail(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if target_rule not in TARGET_RULES:
        raise fail(f"unknown target rule {target_rule!r}; valid: {', '.join(TARGET_RULES)}")
    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    where = _where(on_slurm, out, on_slurm_dir, partition, time, max_parallel, chunks, "ejb-one-elastic")
    wl = _subset(_load(workload, swf_reading), limit, window)
    d = _outdir(out)
    files = [d / "one_elastic.csv"] if d else []
    n = workers or default_workers()
    if where is not None:
        res = _one_elastic_spread(wl, params, workload, swf_reading, limit, window, where, chunks, method,
                                  sample, target_rule, show_progress(quiet))  # fmt: skip
        if d:
            with RowWriter(files[0]) as write:
                for row in res.rows:
                    write(row)
        n = res.workers
    else:
        res = _one_elastic_here(wl, params, method, sample, n, target_rule, files, quiet)
    if d and not no_plots:
        files.append(d / "figure7.png")
        report.figure7(res, files[-1])
    summary = report.one_elastic_summary(res)
    how = f"{n} array tasks on Slurm" if where is not None else f"{n} workers"
    text = "\n\n".join(
        [
            report.table3_text(res),
            report.table4_text(res.workload, summary["table4"]),
            f"{res.targets} target jobs simulated in {res.seconds:.1f} s ({method} method, {how})",
        ]
    )
    _emit(summary, text, as_json, files)


def _one_elastic_here(
    wl: Any, params: EJBParams, method: str, sample: int, n: int, rule: str, files: list[Path], quiet: bool
) -> OneElasticResult:
    """Experiment 1 here, over ``n`` processes, its rows written to ``files[0]`` (if any) as they come."""
    from ejb.experiments.one_elastic import one_elastic
    from ejb.experiments.target_rows import RowWriter
    from slurm_ext.console import progress_bar

    with (
        RowWriter(files[0]) if files else nullcontext() as sink,
        progress_bar("target jobs", "targets", enabled=show_progress(quiet)) as bar,
    ):
        return one_elastic(
            wl, params, method=method, sample=sample, workers=n, rule=rule, progress=bar, sink=sink
        )


def _where(
    on_slurm: bool, out: Path | None, folder: Path | None, partition: str | None, minutes: int | None,
    max_parallel: int | None, chunks: int | None, name: str,
) -> ArrayOptions | None:  # fmt: skip
    """The job array --on-slurm and its companions ask for (folder: OUT/on-slurm, ./on-slurm without
    --out), None to run here; exit 2 on a mistake."""
    if chunks is not None and not on_slurm:
        raise fail("--chunks needs --on-slurm")
    return array_options(on_slurm, out or Path(), folder, partition, minutes, max_parallel, name)


def _source(workload: str, reading: str, limit: int | None = None, window: str | None = None) -> Source:
    from ejb.experiments.spread import source

    try:
        return source(workload, reading, limit, window)
    except ValueError as e:
        raise fail(str(e)) from None


def _one_elastic_spread(
    wl: Any, params: EJBParams, workload: str, reading: str, limit: int | None, window: str | None,
    where: ArrayOptions, chunks: int | None, method: str, sample: int, rule: str, progress: bool,
) -> OneElasticResult:  # fmt: skip
    """Experiment 1 with its targets in chunks, one task of a Slurm job array each (same rows as here)."""
    from time import perf_counter

    from ejb.experiments.one_elastic import plan_targets
    from ejb.experiments.spread import spread

    src = _source(workload, reading, limit, window)
    t0 = perf_counter()
    plan = plan_targets(wl, params, sample=sample, rule=rule)
    res = spread(wl, src, [params], plan, where, chunks=chunks, method=method, progress=progress)[params]
    res.seconds = perf_counter() - t0
    return res


@simulate_app.command("all-elastic")
def all_elastic_cmd(
    workload: WorkloadOpt = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: MigrationOpt = PAPER_MIGRATION,
    delta: Delta = PAPER_DELTA,
    waiting_first: WaitingFirst = True,
    drop_dominated_j0: DropJ0 = False,
    out: OutOpt = None,
    as_json: JsonOpt = False,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    swf_reading: ReadingOpt = "paper",
) -> None:
    """Experiment 2 (Tables 4-6, Figures 10-11): every job with P >= min-procs submitted to EJB.

    Before/after paired comparison of elastic, non-elastic and all jobs, bounded slowdown,
    fragmentation and the per-elastic-job overheads.
    """
    from ejb.experiments import report
    from ejb.experiments.all_elastic import all_elastic
    from slurm_ext.console import progress_bar

    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    wl = _load(workload, swf_reading)
    d = _outdir(out)
    with progress_bar("jobs arrived", "jobs", enabled=show_progress(quiet)) as bar:
        res = all_elastic(wl, params, progress=bar)
    files = []
    if d:
        files.append(d / "all_elastic.csv")
        report.all_elastic_csv(res, files[0])
    if d and not no_plots:
        files += [d / "figure10.png", d / "figure11.png"]
        report.figure10(res, files[1])
        report.figure11(res, files[2])
    summary = report.all_elastic_summary(res)
    text = "\n\n".join(
        [
            report.table5_text(res),
            report.table6_text(res),
            report.table4_text(res.workload, summary["table4"]),
            report.slowdown_text(res),
            f"simulated before and after in {res.seconds:.1f} s",
        ]
    )
    _emit(summary, text, as_json, files)


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--{name} must be comma-separated numbers, got {text!r}") from None


@simulate_app.command("sensitivity")
def sensitivity_cmd(
    workload: WorkloadOpt = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: MigrationOpt = PAPER_MIGRATION,
    delta: Delta = PAPER_DELTA,
    waiting_first: WaitingFirst = True,
    drop_dominated_j0: DropJ0 = False,
    o_max_values: Annotated[str, typer.Option(help="O_max values to try.")] = "2,4,8,16,32,64",
    migration_values: Annotated[
        str, typer.Option(help="λ values to try, in seconds (as --migration).")
    ] = "60,120,240,360,480,600",
    migration_minutes: Annotated[
        str | None, typer.Option(hidden=True, help="Old spelling: λ values in minutes.")
    ] = None,
    delta_values: Annotated[str, typer.Option(help="Δ values to try.")] = "0.8,1.0,1.2,1.4,1.6,1.8,2.0",
    sample: Annotated[int, typer.Option(min=1, help="Use every k-th target job only.")] = 1,
    workers: Workers = None,
    target_rule: TargetRule = "table3",
    out: OutOpt = None,
    as_json: JsonOpt = False,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    swf_reading: ReadingOpt = "paper",
    on_slurm: OnSlurm = False,
    on_slurm_dir: OnSlurmDir = None,
    partition: Partition = None,
    time: TaskTime = None,
    max_parallel: MaxParallel = None,
    chunks: Chunks = None,
) -> None:
    """Sensitivity (Figure 8): experiment 1 with O_max, λ and Δ varied one at a time.

    The other parameters keep the values given by --o-max, --migration and --delta. With --on-slurm,
    every point's targets in chunks, all of them one Slurm job array (the same points).
    """
    from ejb.experiments import report
    from ejb.experiments.one_elastic import TARGET_RULES, plan_targets
    from ejb.experiments.sensitivity import point_of, point_params, sensitivity, sweep_values
    from ejb.experiments.spread import spread
    from ejb.experiments.target_runs import default_workers
    from slurm_ext.console import progress_bar

    if target_rule not in TARGET_RULES:
        raise fail(f"unknown target rule {target_rule!r}; valid: {', '.join(TARGET_RULES)}")
    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    lam = (
        [60.0 * m for m in _floats(migration_minutes, "migration-minutes")]
        if migration_minutes is not None
        else _floats(migration_values, "migration-values")
    )
    points = sweep_values(
        [int(v) for v in _floats(o_max_values, "o-max-values")],
        delta=_floats(delta_values, "delta-values"),
        migration_seconds=lam,
    )
    for name, value in points:  # check every point up front, not after minutes of simulation
        if name == "o_max":
            _params(min_procs, int(value), migration, delta)
        elif name == "migration":
            _params(min_procs, o_max, value, delta)
        else:
            _params(min_procs, o_max, migration, value)
    where = _where(on_slurm, out, on_slurm_dir, partition, time, max_parallel, chunks, "ejb-sensitivity")
    wl = _load(workload, swf_reading)
    n = workers or default_workers()
    d = _outdir(out)
    if where is not None:
        src = _source(workload, swf_reading)
        plan = plan_targets(wl, params, sample=sample, rule=target_rule)
        wanted = [point_params(params, name, value) for name, value in points]
        found = spread(wl, src, wanted, plan, where, chunks=chunks, progress=show_progress(quiet))
        res = [point_of(name, value, found[p]) for (name, value), p in zip(points, wanted, strict=True)]
    else:
        with progress_bar("sweep points", "points", enabled=show_progress(quiet)) as bar:
            res = sensitivity(wl, params, points, sample=sample, workers=n, rule=target_rule, progress=bar)
    files = []
    if d:
        files.append(d / "sensitivity.csv")
        report.sensitivity_csv(res, files[0])
    if d and not no_plots:
        files.append(d / "figure8.png")
        report.figure8(res, files[-1], wl.name)
    _emit(report.sensitivity_summary(res, wl.name), report.sensitivity_text(res), as_json, files)


def _live() -> None:
    from ejb.live.cli import register

    register(app)


_live()  # ejb manager / status / cancel / demo / bench live: Elastic Job Bundling on the live cluster
add_bench_commands(app)  # `ejb bench scale`, in the `bench` group registered above
app.command("reproduce")(ejb_cmd)  # = `slurm-ext reproduce ejb` (the `slurm_ext.reproduce` entry point)


if __name__ == "__main__":
    app()
