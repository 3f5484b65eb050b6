"""``slurm-ext reproduce ejb`` (also ``ejb reproduce``): the EJB paper's experiments (004, §6) run
here, beside the paper's numbers.

Of the paper's four traces (its Table 2: CTC, SDSC, Blue Horizon, KTH-SP2) only KTH-SP2 is here, so
each table has the paper's KTH row beside ours:

- experiment 1 (§6.2, Table 3, Table 4, Fig. 7): one elastic job per run
  (:func:`~ejb.experiments.one_elastic.one_elastic`);
- the sensitivity sweeps (Fig. 8: O_max, λ, Δ; the paper's figure is of CTC, so only its statements
  are compared) (:func:`~ejb.experiments.sensitivity.sensitivity`);
- experiment 2 (§6.4, Tables 4-6, Figs. 10 and 11): every job with P >= 8 submitted to EJB
  (:func:`~ejb.experiments.all_elastic.all_elastic`).

Every run has the paper's parameters (P >= 8, O_max 8, λ 120 s, Δ 1), reads the trace as PYSS did
(``--swf-reading paper``) and takes experiment 1's targets as Table 3 counts them (P > 8 waiting in
the baseline); why, and why the numbers differ, is in ``ejb/NOTES.md``. ``--quick``: the first
5,000 jobs of KTH-SP2 and a sweep of 2-3 values per parameter (seconds, not the paper's trace).

Writes ``ejb.csv`` (one row per number: where it is in the paper, ours and the paper's),
``figure7.png``, ``figure8.png``, ``figure10.png``, ``figure11.png`` (drawn by
:mod:`ejb.experiments.report`, as ``ejb simulate ... --out`` draws them) and ``report.md``.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ejb.experiments.all_elastic import AllElasticResult
    from ejb.experiments.one_elastic import OneElasticResult
    from ejb.experiments.sensitivity import Point

# --chunks of the commands that spread experiment 1 (spread.CHUNK_TARGETS is the 200)
Chunks = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="With --on-slurm: the targets in N chunks, one array task each (per parameter set of a sweep;"
        " default: one chunk per 200 targets).",
    ),
]
KTH_FILE = "KTH-SP2-1996-2.1-cln.swf.gz"
TRACE = "KTH"  # its key in ejb.experiments.paper's tables
QUICK_JOBS = 5_000
QUICK_O_MAX = (2, 16, 64)
QUICK_MIGRATION = (60.0, 600.0)  # λ in seconds: 1 and 10 minutes, the ends of Fig. 8b
QUICK_DELTA = (0.8, 2.0)
FIGURES = ("figure7.png", "figure8.png", "figure10.png", "figure11.png")
CSV_FIELDS = ("source", "group", "metric", "here", "paper")

# 004_* §6.2: Table 3's AVG row (all four traces) and what the text says of Fig. 7b (all traces)
PAPER_TABLE3_AVG = {"wait": -0.614, "run": 0.372, "tt": -0.391}
PAPER_UNCHANGED = "1/4"  # "1/4 of the target jobs' tt are unchanged"
PAPER_WORSE = "< 3%"  # "< 3% of the elastic jobs experience worse results"
PAPER_BEST_SPEEDUP = "1,000"  # "Some exceptionally well-performing jobs have tt 1,000 times faster"
# 004_* §6.2 on Fig. 8 (CTC) and §6.4 on Figs. 10-11: statements, not numbers
PAPER_FIG8 = {
    "o_max": "the larger the better; no evident gain beyond 16",
    "migration": "not very sensitive (λ 1 to 10 min)",
    "delta": "not very sensitive (Δ 0.8 to 2.0)",
}


def pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def num(x: float) -> str:
    return f"{x:,.0f}"


# -- runs ----------------------------------------------------------------------------------------
def sweep(quick: bool) -> list[tuple[str, float]]:
    """Fig. 8's points: the paper's values (``sensitivity.sweep_values``), or a few with ``quick``."""
    from ejb.experiments.sensitivity import sweep_values

    if quick:
        return sweep_values(QUICK_O_MAX, delta=QUICK_DELTA, migration_seconds=QUICK_MIGRATION)
    return sweep_values()


def run_all(wl: Any, points: list[tuple[str, float]], workers: int, update: Any) -> dict[str, Any]:
    """Experiment 1, the sweeps and experiment 2 with the paper's parameters; ``update(done, total,
    note)`` after each run. Returns the results and each part's wall time."""
    from ejb.experiments.all_elastic import all_elastic
    from ejb.experiments.one_elastic import one_elastic
    from ejb.experiments.sensitivity import sensitivity
    from ejb.params import EJBParams

    params = EJBParams()
    total = 2 + len(points)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    one = one_elastic(wl, params, workers=workers)
    seconds["experiment 1"] = time.perf_counter() - t0
    update(1, total, f"experiment 1: {one.targets} targets")

    def point_done(done: int, _total: int, note: str) -> None:
        update(1 + done, total, note)

    t0 = time.perf_counter()
    points_out = sensitivity(wl, params, points, workers=workers, progress=point_done)
    seconds["sensitivity"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    every = all_elastic(wl, params)
    seconds["experiment 2"] = time.perf_counter() - t0
    update(total, total, "experiment 2")
    return {"one": one, "points": points_out, "all": every, "seconds": seconds}


def run_all_spread(
    wl: Any, src: Any, points: list[tuple[str, float]], where: ArrayOptions | None, chunks: int | None, *,
    progress: bool,
) -> dict[str, Any]:  # fmt: skip
    """:func:`run_all` with experiment 1 and the sweeps' targets in chunks, one Slurm job array
    (:mod:`ejb.experiments.spread`: the same results; ``where`` None: the chunks here, one after
    another); experiment 2, one simulation, runs here after."""
    from ejb.experiments.all_elastic import all_elastic
    from ejb.experiments.one_elastic import plan_targets
    from ejb.experiments.sensitivity import point_of, point_params
    from ejb.experiments.spread import spread
    from ejb.params import EJBParams

    params = EJBParams()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    plan = plan_targets(wl, params)
    wanted = [params] + [point_params(params, name, value) for name, value in points]
    found = spread(wl, src, wanted, plan, where, chunks=chunks, progress=progress)
    seconds["on Slurm"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    every = all_elastic(wl, params)
    seconds["experiment 2"] = time.perf_counter() - t0
    points_out = [
        point_of(name, value, found[p]) for (name, value), p in zip(points, wanted[1:], strict=True)
    ]
    tasks = sum(r.workers for r in found.values())
    return {"one": found[params], "points": points_out, "all": every, "seconds": seconds, "tasks": tasks}


# -- what is compared ----------------------------------------------------------------------------
def speedup_stats(one: OneElasticResult) -> dict[str, float]:
    """Fig. 7b as the paper's text reads it: the shares of targets with S_tt = 1 and with S_tt < 1,
    and the largest S_tt."""
    import numpy as np

    s = one.speedups()
    if len(s) == 0:
        return {"unchanged_share": 0.0, "worse_share": 0.0, "max_speedup": 0.0}
    same = np.isclose(s, 1.0, rtol=1e-9, atol=0.0)
    return {
        "unchanged_share": float(same.mean()),
        "worse_share": float(((s < 1.0) & ~same).mean()),
        "max_speedup": float(s.max()),
    }


def rows_of(res: dict[str, Any]) -> list[dict[str, Any]]:
    """``ejb.csv``: one row per measured number, the paper's beside it where the paper has one
    (``paper`` empty where it gives a figure or a statement only)."""
    from ejb.experiments import paper
    from ejb.experiments.report import one_elastic_table4

    one: OneElasticResult = res["one"]
    every: AllElasticResult = res["all"]
    rows: list[dict[str, Any]] = []

    def add(source: str, group: str, metric: str, here: float, theirs: float | str = "") -> None:
        rows.append({"source": source, "group": group, "metric": metric, "here": here, "paper": theirs})

    t3 = paper.TABLE3[TRACE]
    tt = one.turnaround
    lo, hi = tt.ci_change
    add("Table 3", TRACE, "targets", tt.n, t3["targets"])
    for metric, here, key in (("wait_change", one.wait.change, "wait"), ("run_change", one.run.change, "run"),
                              ("tt_change", tt.change, "tt"), ("tt_ci_low", lo, "ci_low"),
                              ("tt_ci_high", hi, "ci_high")):  # fmt: skip
        add("Table 3", TRACE, metric, here, t3[key])
    stats = speedup_stats(one)
    add("Fig. 7", TRACE, "tt_before", tt.before)
    add("Fig. 7", TRACE, "tt_after", tt.after)
    add("Fig. 7", TRACE, "unchanged_share", stats["unchanged_share"], 0.25)
    add("Fig. 7", TRACE, "worse_share", stats["worse_share"], PAPER_WORSE)
    add("Fig. 7", TRACE, "max_speedup", stats["max_speedup"], 1000.0)
    t4 = paper.TABLE4[TRACE]
    for group, ours in (("experiment 1", one_elastic_table4(one)), ("experiment 2", every.table4())):
        for key in ("subjobs", "migrations", "migration_share", "resource_overhead"):
            add("Table 4", group, key, ours[key], t4[key])
    for p in res["points"]:
        group = f"{p.parameter}={p.value:g}"
        for key in ("targets", "tt_before", "tt_after", "tt_change", "ci_low", "ci_high", "wait_change",
                    "run_change"):  # fmt: skip
            add("Fig. 8", group, key, getattr(p, key))
    t5 = paper.TABLE5[TRACE]
    for g in every.groups.values():
        ref = t5[g.name]
        add("Table 5", g.name, "jobs", g.n, ref["n"])
        for metric, pair in (("tt", g.turnaround), ("tw", g.wait), ("tr", g.run)):
            add("Table 5", g.name, f"{metric}_before", pair.before, ref[f"{metric}_before"])
            add("Table 5", g.name, f"{metric}_after", pair.after, ref[f"{metric}_after"])
        add("Table 5", g.name, "tt_ci_low", g.turnaround.ci_low, ref["tt_ci_low"])
        add("Table 5", g.name, "tt_ci_high", g.turnaround.ci_high, ref["tt_ci_high"])
        add("Fig. 10", g.name, "slowdown_before", g.slowdown.before)
        add("Fig. 10", g.name, "slowdown_after", g.slowdown.after)
    before, after = every.fragmentation
    pb, pa = paper.TABLE6[TRACE]
    add("Table 6", TRACE, "idle_before", before, pb)
    add("Table 6", TRACE, "idle_after", after, pa)
    add("Fig. 11", "all", "wait_slope_before", every.fairness[0])
    add("Fig. 11", "all", "wait_slope_after", every.fairness[1])
    return rows


def _sweep_line(points: list[Point], name: str) -> str:
    pts = [p for p in points if p.parameter == name]
    unit = (lambda v: f"{v / 60:g} min") if name == "migration" else (lambda v: f"{v:g}")
    return ", ".join(f"{pct(p.tt_change)} at {unit(p.value)}" for p in pts) or "not run"


def _t5_row(group: str, who: str, n: float, pairs: list[tuple[float, float]], ci: tuple[float, float]) -> str:
    """A row of Table 5; ``pairs``: t_t, t_w, t_r (before, after). Non-elastic jobs' t_r is not compared."""
    cells = [[num(b), f"{num(a)} ({pct(a / b - 1) if b else 'n/a'})"] for b, a in pairs]
    (tt, tt_after), (tw, tw_after), (tr, tr_after) = cells
    tr_after = "—" if group == "non-elastic" else tr_after
    return (f"| {group} | {who} | {n:,.0f} | {tt} | {tt_after} | ({num(ci[0])}, {num(ci[1])}) | {tw} | "
            f"{tw_after} | {tr} | {tr_after} |")  # fmt: skip


def markdown(res: dict[str, Any], wl_name: str, jobs: int, subset_of: int | None, workers: int) -> str:
    from ejb.experiments import paper
    from ejb.experiments.report import one_elastic_table4

    one: OneElasticResult = res["one"]
    every: AllElasticResult = res["all"]
    points: list[Point] = res["points"]
    t3, t4, t5 = paper.TABLE3[TRACE], paper.TABLE4[TRACE], paper.TABLE5[TRACE]
    lines = ["# EJB (paper 004) here", ""]
    lines.append(f"KTH-SP2 ({wl_name}: {jobs:,} jobs on {every.nodes} processors), read as PYSS did, "
                 "with the paper's parameters (P >= 8, O_max 8, λ 120 s, Δ 1). Of the paper's four traces "
                 "only KTH-SP2 is here: the paper's KTH numbers are beside ours.")  # fmt: skip
    if subset_of is not None:
        lines += ["", f"**The first {jobs:,} of its {subset_of:,} jobs only** (`--quick`/`--jobs`): not the "
                  "paper's trace, its numbers are there for reference."]  # fmt: skip
    tt = one.turnaround
    lo, hi = tt.ci_change
    avg = PAPER_TABLE3_AVG
    lines += [
        "",
        "## Table 3: experiment 1, one elastic job per run",
        "",
        "Targets: jobs with P > 8 waiting in the EASY baseline (Table 3's counts; §6.2 says P >= 8: "
        "ejb/NOTES.md).",
        "",
        "| | target jobs | t_w | t_r | t_t [95% conf. interval] |",
        "|---|---|---|---|---|",
        f"| paper, KTH | {t3['targets']:,.0f} | {pct(t3['wait'])} | {pct(t3['run'])} | "
        f"{pct(t3['tt'])} [{pct(t3['ci_low'])}, {pct(t3['ci_high'])}] |",
        f"| paper, average of 4 traces | | {pct(avg['wait'])} | {pct(avg['run'])} | {pct(avg['tt'])} |",
        f"| here | {tt.n:,} | {pct(one.wait.change)} | {pct(one.run.change)} | {pct(tt.change)} "
        f"[{pct(lo)}, {pct(hi)}] |",
    ]
    stats = speedup_stats(one)
    lines += [
        "",
        "## Fig. 7: the targets' turnaround (figure7.png)",
        "",
        "| | paper (all four traces) | here |",
        "|---|---|---|",
        f"| targets' mean t_t, baseline -> elastic [s] | (a plot) | {num(tt.before)} -> {num(tt.after)} |",
        f"| targets with t_t unchanged (S_tt = 1) | {PAPER_UNCHANGED} | {stats['unchanged_share']:.1%} |",
        f"| targets worse off (S_tt < 1) | {PAPER_WORSE} | {stats['worse_share']:.1%} |",
        f"| largest speedup S_tt | {PAPER_BEST_SPEEDUP} | {stats['max_speedup']:,.0f} |",
    ]

    def t4_row(name: str, s: dict[str, float]) -> str:
        return (f"| {name} | {s['subjobs']:.1f} | {s['migrations']:.1f} | {s['migration_share']:.1%} | "
                f"{s['resource_overhead']:.1%} |")  # fmt: skip

    lines += [
        "",
        "## Table 4: migrations per elastic job",
        "",
        "| | subjobs | migrations | migration duration | resource overhead |",
        "|---|---|---|---|---|",
        t4_row("paper, KTH", t4),
        t4_row("here, experiment 1 (targets)", one_elastic_table4(one)),
        t4_row("here, experiment 2 (elastic jobs)", every.table4()),
    ]
    lines += [
        "",
        "## Fig. 8: sensitivity of the targets' mean turnaround (figure8.png)",
        "",
        "The paper's Fig. 8 is of CTC (not here): only what its text says is compared.",
        "",
        "| parameter | value | targets | t_t baseline s | t_t elastic s | t_w | t_r | t_t [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        value = f"{p.value / 60:g} min" if p.parameter == "migration" else f"{p.value:g}"
        lines.append(f"| {p.parameter} | {value} | {p.targets:,} | {num(p.tt_before)} | {num(p.tt_after)} | "
                     f"{pct(p.wait_change)} | {pct(p.run_change)} | {pct(p.tt_change)} "
                     f"[{pct(p.ci_low)}, {pct(p.ci_high)}] |")  # fmt: skip
    lines += ["", "| parameter | paper (CTC) | here: t_t change |", "|---|---|---|"]
    lines += [f"| {name} | {said} | {_sweep_line(points, name)} |" for name, said in PAPER_FIG8.items()]
    lines += [
        "",
        "## Table 5: experiment 2, every job with P >= 8 submitted to EJB, before and after",
        "",
        "| job type | | jobs | t_t before | t_t after (change) | t_t 95% CI of the differences | t_w before "
        "| t_w after (change) | t_r before | t_r after (change) |",
        "|---" * 10 + "|",
    ]
    for g in every.groups.values():
        ref = t5[g.name]
        theirs = [(ref[f"{k}_before"], ref[f"{k}_after"]) for k in ("tt", "tw", "tr")]
        ours = [(pair.before, pair.after) for pair in (g.turnaround, g.wait, g.run)]
        lines.append(_t5_row(g.name, "paper", ref["n"], theirs, (ref["tt_ci_low"], ref["tt_ci_high"])))
        lines.append(_t5_row(g.name, "here", g.n, ours, (g.turnaround.ci_low, g.turnaround.ci_high)))
    ne = every.groups["non-elastic"].turnaround
    worse = "worse" if ne.change > 0 else "better"
    verdict = f"significantly {worse}" if ne.significant else "not significant"
    lines += ["", f"Non-elastic jobs' t_t: {pct(ne.change)}, {verdict} at 95% "
              "(the paper: +0.4%, not significant)."]  # fmt: skip
    before, after = every.fragmentation
    pb, pa = paper.TABLE6[TRACE]
    nodes = every.nodes
    lines += [
        "",
        "## Table 6: fragmentation, idle processors while the queue is not empty",
        "",
        "| | np before | % before | np after | % after | change |",
        "|---|---|---|---|---|---|",
        f"| paper, KTH | {pb:.1f} | {pb / nodes:.1%} | {pa:.1f} | {pa / nodes:.1%} | {pct(pa / pb - 1)} |",
        f"| here | {before:.1f} | {before / nodes:.1%} | {after:.1f} | {after / nodes:.1%} | "
        f"{pct(after / before - 1) if before else 'n/a'} |",
        "",
        "## Fig. 10: mean bounded slowdown (figure10.png)",
        "",
        'The paper gives no numbers: its slowdowns are "consistent with the turnaround time results" of '
        "Table 5.",
        "",
        "| job type | before | after | change | t_t change (Table 5) |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {g.name} | {g.slowdown.before:,.1f} | {g.slowdown.after:,.1f} | {pct(g.slowdown.change)} | "
              f"{pct(g.turnaround.change)} |" for g in every.groups.values()]  # fmt: skip
    sb, sa = every.fairness
    lines += [
        "",
        "## Fig. 11: fairness, t_w regressed on job size (figure11.png)",
        "",
        "| | paper | here |",
        "|---|---|---|",
        f"| slope of t_w over job size, before -> after [s per processor] | flatter under EJB | "
        f"{sb:,.1f} -> {sa:,.1f} ({'flatter' if abs(sa) < abs(sb) else 'not flatter'}) |",
        "",
        "The paper's priority inversions (about -20 % under EJB) are not measured here.",
        "",
        wall_time(res, workers),
        "",
        "Why the numbers differ: ejb/NOTES.md.",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def wall_time(res: dict[str, Any], workers: int) -> str:
    one: OneElasticResult = res["one"]
    sec: dict[str, float] = res["seconds"]
    points = len(res["points"])
    if "on Slurm" in sec:
        return (f"Wall time: experiment 1 and sensitivity {sec['on Slurm']:.1f} s on Slurm ({res['tasks']} "
                f"array tasks; {one.targets:,} targets, {points} points), experiment 2 "
                f"{sec['experiment 2']:.1f} s here.")  # fmt: skip
    return (f"Wall time ({workers} worker(s)): experiment 1 {sec['experiment 1']:.1f} s ({one.targets:,} "
            f"targets), sensitivity {sec['sensitivity']:.1f} s ({points} points), experiment 2 "
            f"{sec['experiment 2']:.1f} s.")  # fmt: skip


def write(res: dict[str, Any], wl_name: str, jobs: int, subset_of: int | None, workers: int,
          out: Path) -> list[Path]:  # fmt: skip
    """``ejb.csv``, the four figures and ``report.md`` in ``out``."""
    from ejb.experiments import report

    rows = rows_of(res)
    data = out / "ejb.csv"
    with data.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(CSV_FIELDS))
        writer.writeheader()
        writer.writerows(rows)
    figures = [out / name for name in FIGURES]
    report.figure7(res["one"], figures[0])
    report.figure8(res["points"], figures[1], wl_name)
    report.figure10(res["all"], figures[2])
    report.figure11(res["all"], figures[3])
    md = out / "report.md"
    md.write_text(markdown(res, wl_name, jobs, subset_of, workers))
    return [data, *figures, md]


def ejb_cmd(
    out: Annotated[Path, typer.Option(help="Folder for ejb.csv, the figures and report.md")] = Path(
        "reproduce-ejb"
    ),
    traces: Annotated[Path, typer.Option(help=f"Folder holding {KTH_FILE}")] = Path("../shared/traces"),
    quick: Annotated[
        bool, typer.Option(help=f"The first {QUICK_JOBS:,} jobs of KTH-SP2, 2-3 values per swept parameter")
    ] = False,
    jobs: Annotated[int | None, typer.Option(help="The first N jobs of KTH-SP2 only")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Processes for experiment 1 and the sweeps (default: the CPUs, <= 8)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout")] = False,
    on_slurm: OnSlurm = False,
    on_slurm_dir: OnSlurmDir = None,
    partition: Partition = None,
    time: TaskTime = None,
    max_parallel: MaxParallel = None,
    chunks: Chunks = None,
) -> None:
    """The EJB paper's section 6 (paper 004) on KTH-SP2, beside its numbers: experiment 1, the
    O_max/λ/Δ sweeps and experiment 2, for Tables 3-6 and Figures 7, 8, 10 and 11 (--quick: seconds).
    With --on-slurm, experiment 1 and the sweeps are one Slurm job array (experiment 2 runs here)."""
    from ejb.experiments.subset import subset
    from ejb.experiments.target_runs import default_workers
    from slurm_ext.console import progress_bar
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import PAPER

    for name, value in (("--jobs", jobs), ("--workers", workers), ("--chunks", chunks)):
        if value is not None and value < 1:
            typer.echo(f"error: {name} must be >= 1, got {value}", err=True)
            raise typer.Exit(2)
    if chunks is not None and not on_slurm:
        typer.echo("error: --chunks needs --on-slurm", err=True)
        raise typer.Exit(2)
    where = array_options(on_slurm, out, on_slurm_dir, partition, time, max_parallel, "reproduce-ejb")
    path = traces / KTH_FILE
    if not path.is_file():
        typer.echo(f"error: {path}: no such file (--traces: the folder holding {KTH_FILE})", err=True)
        raise typer.Exit(2)
    try:
        full = load_workload(str(path), reading=PAPER)
        out.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    limit = jobs or (QUICK_JOBS if quick else None)
    wl = subset(full, limit) if limit is not None and limit < len(full.jobs) else full
    subset_of = len(full.jobs) if wl is not full else None
    n = workers or default_workers()
    points = sweep(quick)
    if where is not None:
        from ejb.experiments.spread import source

        src = source(str(path), "paper", limit)
        res = run_all_spread(wl, src, points, where, chunks, progress=not as_json)
    else:
        with progress_bar("runs", "runs", enabled=not as_json) as update:
            res = run_all(wl, points, n, update)
    files = write(res, path.name, len(wl.jobs), subset_of, n, out)
    if as_json:
        spread = {"on_slurm_tasks": res["tasks"]} if where is not None else {}
        typer.echo(json.dumps({
            "workload": path.name, "jobs": len(wl.jobs), "rows": rows_of(res), "seconds": res["seconds"],
            "workers": n, **spread, "files": [str(f) for f in files],
        }))  # fmt: skip
        return
    typer.echo(files[-1].read_text())
    typer.echo("wrote " + ", ".join(str(f) for f in files))


# At the end, not the top: importing slurm_ext.reproduce (the first time) loads its entry points, this
# module's ejb_cmd among them, which must be defined by then. Its options are read when a command runs.
from slurm_ext.reproduce.sweep import (  # noqa: E402
    MaxParallel,
    OnSlurm,
    OnSlurmDir,
    Partition,
    TaskTime,
    array_options,
)

if TYPE_CHECKING:
    from slurm_ext.reproduce.on_slurm import ArrayOptions
