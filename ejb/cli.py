"""`ejb`: Elastic Job Bundling (Liu & Weissman, SC'15) -- experiments on SWF traces.

A thin layer: each command parses options, calls a library function in
:mod:`ejb.experiments` and prints the paper's table layout (or ``--json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ejb.experiments.bench_cli import add_bench_commands
from ejb.params import PAPER_DELTA, PAPER_MIGRATION, PAPER_MIN_PROCS, PAPER_O_MAX, EJBParams

app = typer.Typer(
    help="Elastic Job Bundling: decompose large waiting jobs into subjobs in EASY's backfill slots.",
    no_args_is_help=True,
    add_completion=False,
)
simulate_app = typer.Typer(
    help="Trace-driven experiments of the EJB paper (section 6) against EASY backfilling.",
    no_args_is_help=True,
)
app.add_typer(simulate_app, name="simulate")

Workload = Annotated[
    str, typer.Option("--workload", "-w", help="SWF trace (plain or .gz), or kth-small (bundled 500 jobs).")
]
MinProcs = Annotated[int, typer.Option(help="Eligible target jobs request at least this many processors.")]
OMax = Annotated[int, typer.Option("--o-max", help="Maximum degree of over-subscription O_max.")]
Migration = Annotated[float, typer.Option("--migration", help="Bulk migration time λ in seconds.")]
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
Out = Annotated[Path, typer.Option("--out", "-o", help="Directory for the CSV files and figures.")]
Json = Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object instead of tables.")]
NoPlots = Annotated[bool, typer.Option("--no-plots", help="Do not draw figures.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output on stderr.")]
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
Reading = Annotated[
    str,
    typer.Option(
        "--swf-reading",
        help="How SWF fields are read: paper (as the paper's simulator PYSS: allocated processors, unknown"
        " run times kept as 1-s jobs, ...; but a missing requested time is the run time), pyss (literally),"
        " default (slurm-ext sim's), or a preset with key=value overrides, e.g. 'paper,size=requested'."
        " See slurm_ext.workloads.reading.",
    ),
]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)  # a user mistake, as in slurm-ext


def _params(
    min_procs: int, o_max: int, migration: float, delta: float, waiting_first: bool = True, drop: bool = False
) -> EJBParams:
    try:
        return EJBParams(
            min_procs, o_max, migration, delta, waiting_first=waiting_first, drop_dominated_j0=drop
        )
    except ValueError as e:
        raise _fail(str(e)) from None


def _load(spec: str, reading: str = "paper") -> Any:
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import parse_reading

    try:
        return load_workload(spec, reading=parse_reading(reading))
    except (OSError, ValueError) as e:
        raise _fail(str(e).splitlines()[0]) from None


def _subset(wl: Any, limit: int | None, window: str | None) -> Any:
    from ejb.experiments.subset import parse_window, subset

    try:
        return subset(wl, limit, parse_window(window) if window else None)
    except ValueError as e:
        raise _fail(str(e)) from None


def _outdir(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _fail(f"cannot create output directory {out}: {e.strerror}") from None
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
    workload: Workload = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: Migration = PAPER_MIGRATION,
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
    out: Out = Path("ejb-results"),
    as_json: Json = False,
    no_plots: NoPlots = False,
    quiet: Quiet = False,
    swf_reading: Reading = "paper",
) -> None:
    """Experiment 1 (Table 3, Table 4, Figure 7): one elastic job per run.

    Every large job (P > min-procs with --target-rule table3, P >= min-procs with text) that
    waits in the EASY baseline becomes the only elastic job of its own run; its wait, run and
    turnaround are compared with the baseline. Rows are written to one_elastic.csv as they come.
    """
    from ejb.experiments import report
    from ejb.experiments.one_elastic import METHODS, TARGET_RULES, one_elastic
    from ejb.experiments.progress_bar import progress_bar
    from ejb.experiments.target_rows import RowWriter
    from ejb.experiments.target_runs import default_workers

    if method not in METHODS:
        raise _fail(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if target_rule not in TARGET_RULES:
        raise _fail(f"unknown target rule {target_rule!r}; valid: {', '.join(TARGET_RULES)}")
    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    wl = _subset(_load(workload, swf_reading), limit, window)
    d = _outdir(out)
    files = [d / "one_elastic.csv"]
    n = workers or default_workers()
    with RowWriter(files[0]) as sink, progress_bar("target jobs", "targets", enabled=not quiet) as bar:
        res = one_elastic(
            wl, params, method=method, sample=sample, workers=n, rule=target_rule, progress=bar, sink=sink
        )
    if not no_plots:
        files.append(d / "figure7.png")
        report.figure7(res, files[-1])
    summary = report.one_elastic_summary(res)
    text = "\n\n".join(
        [
            report.table3_text(res),
            report.table4_text(res.workload, summary["table4"]),
            f"{res.targets} target jobs simulated in {res.seconds:.1f} s ({method} method, {n} workers)",
        ]
    )
    _emit(summary, text, as_json, files)


@simulate_app.command("all-elastic")
def all_elastic_cmd(
    workload: Workload = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: Migration = PAPER_MIGRATION,
    delta: Delta = PAPER_DELTA,
    waiting_first: WaitingFirst = True,
    drop_dominated_j0: DropJ0 = False,
    out: Out = Path("ejb-results"),
    as_json: Json = False,
    no_plots: NoPlots = False,
    quiet: Quiet = False,
    swf_reading: Reading = "paper",
) -> None:
    """Experiment 2 (Tables 4-6, Figures 10-11): every job with P >= min-procs submitted to EJB.

    Before/after paired comparison of elastic, non-elastic and all jobs, bounded slowdown,
    fragmentation and the per-elastic-job overheads.
    """
    from ejb.experiments import report
    from ejb.experiments.all_elastic import all_elastic
    from ejb.experiments.progress_bar import progress_bar

    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    wl = _load(workload, swf_reading)
    with progress_bar("jobs arrived", "jobs", enabled=not quiet) as bar:
        res = all_elastic(wl, params, progress=bar)
    d = _outdir(out)
    files = [d / "all_elastic.csv"]
    report.all_elastic_csv(res, files[0])
    if not no_plots:
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
        raise _fail(f"--{name} must be comma-separated numbers, got {text!r}") from None


@simulate_app.command("sensitivity")
def sensitivity_cmd(
    workload: Workload = "kth-small",
    min_procs: MinProcs = PAPER_MIN_PROCS,
    o_max: OMax = PAPER_O_MAX,
    migration: Migration = PAPER_MIGRATION,
    delta: Delta = PAPER_DELTA,
    waiting_first: WaitingFirst = True,
    drop_dominated_j0: DropJ0 = False,
    o_max_values: Annotated[str, typer.Option(help="O_max values to try.")] = "2,4,8,16,32,64",
    migration_minutes: Annotated[str, typer.Option(help="λ values to try, in minutes.")] = "1,2,4,6,8,10",
    delta_values: Annotated[str, typer.Option(help="Δ values to try.")] = "0.8,1.0,1.2,1.4,1.6,1.8,2.0",
    sample: Annotated[int, typer.Option(min=1, help="Use every k-th target job only.")] = 1,
    workers: Workers = None,
    target_rule: TargetRule = "table3",
    out: Out = Path("ejb-results"),
    as_json: Json = False,
    no_plots: NoPlots = False,
    quiet: Quiet = False,
    swf_reading: Reading = "paper",
) -> None:
    """Sensitivity (Figure 8): experiment 1 with O_max, λ and Δ varied one at a time.

    The other parameters keep the values given by --o-max, --migration and --delta.
    """
    from ejb.experiments import report
    from ejb.experiments.one_elastic import TARGET_RULES
    from ejb.experiments.sensitivity import sensitivity, sweep_values
    from ejb.experiments.target_runs import default_workers

    if target_rule not in TARGET_RULES:
        raise _fail(f"unknown target rule {target_rule!r}; valid: {', '.join(TARGET_RULES)}")
    params = _params(min_procs, o_max, migration, delta, waiting_first, drop_dominated_j0)
    points = sweep_values(
        [int(v) for v in _floats(o_max_values, "o-max-values")],
        _floats(migration_minutes, "migration-minutes"),
        _floats(delta_values, "delta-values"),
    )
    for name, value in points:  # check every point up front, not after minutes of simulation
        if name == "o_max":
            _params(min_procs, int(value), migration, delta)
        elif name == "migration":
            _params(min_procs, o_max, value, delta)
        else:
            _params(min_procs, o_max, migration, value)
    wl = _load(workload, swf_reading)
    log = None if quiet else (lambda line: print(line, file=sys.stderr))
    n = workers or default_workers()
    res = sensitivity(wl, params, points, sample=sample, workers=n, rule=target_rule, progress=log)
    d = _outdir(out)
    files = [d / "sensitivity.csv"]
    report.sensitivity_csv(res, files[0])
    if not no_plots:
        files.append(d / "figure8.png")
        report.figure8(res, files[-1], wl.name)
    _emit(report.sensitivity_summary(res, wl.name), report.sensitivity_text(res), as_json, files)


def _live() -> None:
    from ejb.live.cli import register

    register(app)


_live()  # ejb manager / status / cancel / demo / bench live: Elastic Job Bundling on the live cluster
add_bench_commands(app)  # `ejb bench scale`, in the `bench` group registered above


if __name__ == "__main__":
    app()
