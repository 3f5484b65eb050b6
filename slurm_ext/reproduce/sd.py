"""``slurm-ext reproduce sd``: SD-Policy's simulations (paper 003, §4) run here, beside the paper's numbers.

Two of the paper's workloads are public logs (its Table 1): RICC 2010 September (10,000 jobs on
1,024 nodes of 8 cores) and CEA-Curie 2011's primary partition (198,509 jobs, 5,040 nodes of 16
cores). Each is run under static EASY backfilling (the baseline every figure is normalised to) and
under SD-Policy (every job malleable) with MAX_SLOWDOWN 5, 10, 50, unbounded and dynamic (Figs.
1-3), twice: on whole nodes (what a site without core sharing can do live) and sharing cores as the
paper does (``--share-cores``: a mate lends half the cores of each node it shares, SharingFactor 0.5,
the ideal runtime model). The metrics are the paper's: makespan, mean response time (end - submit) and
mean slowdown (response time / run time, not bounded; run times under 1 s read as 1 s).

Writes ``sd.csv`` (one row per workload and run), ``sd.png`` (each run's metrics normalised to the
baseline, as the paper's figures are) and ``report.md`` (the tables with the paper's numbers beside
them). Why the baselines differ from the paper's is in ``docs/simulator/sd-policy.md``; RICC's
September window is not named in the paper (``--ricc-window``: where it starts, in September jobs).

Each run is a description (:func:`runs`) executed by :func:`execute`, here or, with ``--on-slurm``, as
one task of a job array (:mod:`slurm_ext.reproduce.sweep`); :func:`relate` then sets each row beside EASY's.
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import typer

from slurm_ext.reproduce.runs import Run
from slurm_ext.reproduce.sweep import (
    MaxParallel,
    OnSlurm,
    OnSlurmDir,
    Partition,
    TaskTime,
    array_options,
    run_sweep,
)
from slurm_ext.workloads.model import Workload

SEPTEMBER = 123 * 86400  # RICC-2010-2.swf's submit times count from 2010-05-01 (it has no header)
RICC_WINDOW = 113_250  # September jobs before the window: the nearest to Table 1 (sd-policy.md)
MAX_SLOWDOWNS: tuple[float | Literal["dynamic"], ...] = (5.0, 10.0, 50.0, math.inf, "dynamic")
QUICK_JOBS = 2_000

# Paper 003, Table 1 (static backfill) and the text of §4.1-4.2 (SD-Policy's best change).
PAPER_BASELINE = {
    "RICC-sept": {"jobs": 10_000, "makespan": 407_043.0, "response": 43_537.0, "slowdown": 1_341.0},
    "CEA-Curie": {"jobs": 198_509, "makespan": 21_615_111.0, "response": 29_858.5, "slowdown": 3_666.5},
}
PAPER_BEST = {"RICC-sept": {"slowdown": -0.257}, "CEA-Curie": {"slowdown": -0.704, "response": -0.50}}
# §4.3, Fig. 8: SD-Policy (dynamic) under the worst-case runtime model against the ideal one
PAPER_WORST = {
    "RICC-sept": "response +1.5% at most, slowdown +3.5%, makespan +9%",
    "CEA-Curie": "response +1.5% at most, slowdown +1%, makespan +1% at most",
}
WORST_RUN = "SD cores dynamic, worst case"  # Fig. 8's second model


@dataclass(frozen=True)
class Case:
    """One of the paper's workloads: its name and how it is read from the traces folder."""

    name: str
    load: Callable[[Path, int | None, int], Workload]


def ricc_sept(traces: Path, jobs: int | None, window: int) -> Workload:
    """RICC 2010: 10,000 (or ``jobs``, if fewer) consecutive September jobs, ``window`` September jobs in."""
    from slurm_ext.workloads import load_workload

    wl = load_workload(str(traces / "RICC-2010-2.swf.gz"), nodes=1024, cores_per_node=8)
    september = [j for j in wl.jobs if j.submit >= SEPTEMBER]
    want = min(jobs or 10_000, 10_000)
    if len(september) < window + want:
        raise ValueError(f"RICC has {len(september)} September jobs: too few for {want} from job {window} on")
    return Workload(september[window : window + int(want)], wl.nodes, "RICC-sept", [], wl.notes)


def curie(traces: Path, jobs: int | None, window: int) -> Workload:
    """CEA-Curie 2011, partition 10 (``standard``): the 198,509 jobs of Table 1 (run times missing
    read as 1 s, as the paper counts them)."""
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import PYSS

    del window
    path = str(traces / "CEA-Curie-2011-2.1-cln.swf.gz") + "@10"
    wl = load_workload(path, nodes=5040, cores_per_node=16, reading=PYSS, jobs=jobs)
    wl.name = "CEA-Curie"
    return wl


CASES = (Case("RICC-sept", ricc_sept), Case("CEA-Curie", curie))


def measures(result: Any) -> dict[str, float]:
    """The paper's metrics of one run (a :class:`~slurm_ext.sim.result.SimResult`)."""
    response = result.end - result.submit
    run = np.maximum(result.end - result.start, 1.0)
    return {
        "makespan": float(result.end.max() - result.submit.min()),
        "response": float(response.mean()),
        "slowdown": float((response / run).mean()),
    }


SHARINGS = ("nodes", "cores")  # whole nodes lent, or cores shared on nodes (003's own)


def label(max_slowdown: float | str, sharing: str = "nodes") -> str:
    prefix = "SD" if sharing == "nodes" else "SD cores"
    if max_slowdown == "dynamic":
        return f"{prefix} dynamic"
    return f"{prefix} MAXSD inf" if max_slowdown == math.inf else f"{prefix} MAXSD {max_slowdown:g}"


KEYS = ("makespan", "response", "slowdown")
# SD-Policy's own backfill without malleability: as many reservations as SDPolicy makes (its
# reservation_depth, Slurm's bf_max_job_test in spirit), where EASY makes one; the paper's "static
# backfill" is Slurm's, which plans many jobs too
BACKFILL = "backfill:100"
BACKFILL_RUN = "static backfill (100 reservations)"


def runs(traces: Path, jobs: int | None, window: int, sharings: tuple[str, ...] = SHARINGS) -> list[Run]:
    """Per workload: EASY, static backfill with SD-Policy's reservations, then SD-Policy (every job
    malleable) at each MAX_SLOWDOWN, on whole nodes and sharing cores, and sharing cores under the
    worst-case runtime model (Fig. 8). ``max_slowdown`` is a string ("5", "inf", "dynamic": JSON has
    no infinity)."""
    found = []
    for case in CASES:
        where = {"case": case.name, "traces": str(traces.resolve()), "jobs": jobs, "window": window}
        rigid = {"sharing": None, "max_slowdown": None}
        found.append(Run(f"{case.name} EASY", {**where, **rigid, "scheduler": "easy"}))
        found.append(Run(f"{case.name} {BACKFILL_RUN}", {**where, **rigid, "scheduler": BACKFILL}))
        for sharing in sharings:
            for m in MAX_SLOWDOWNS:
                given = {"sharing": sharing, "max_slowdown": m if m == "dynamic" else f"{m:g}"}
                found.append(Run(f"{case.name} {label(m, sharing)}", {**where, **given}))
        if "cores" in sharings:
            worst = {"sharing": "cores", "max_slowdown": "dynamic", "runtime_model": "worst"}
            found.append(Run(f"{case.name} {WORST_RUN}", {**where, **worst}))
    return found


@functools.lru_cache(maxsize=len(CASES))
def workload(case: str, traces: str, jobs: int | None, window: int) -> Workload:
    """A case's workload, read once per process (runs only read it)."""
    return next(c for c in CASES if c.name == case).load(Path(traces), jobs, window)


@functools.lru_cache(maxsize=len(CASES) * len(SHARINGS))
def flexible(case: str, traces: str, jobs: int | None, window: int, sharing: str) -> Workload:
    """The workload as SD-Policy runs it: every job malleable on whole nodes, or on node slots
    (``cores``: a node's cores shared by two jobs)."""
    from slurm_ext.workloads.model import MalleableRule, node_slots

    wl = workload(case, traces, jobs, window)
    return node_slots(wl, 2) if sharing == "cores" else MalleableRule(fraction=1.0).apply(wl)


def execute(params: dict[str, Any]) -> dict[str, Any]:
    """One run's row (its ``*_vs_easy`` come after, from :func:`relate`)."""
    from slurm_ext.policies.sdpolicy import SDPolicy
    from slurm_ext.sim.engine import simulate

    where = (params["case"], params["traces"], params["jobs"], params["window"])
    wl, sharing, m = workload(*where), params["sharing"], params["max_slowdown"]
    if sharing is None:
        scheduler = params["scheduler"]
        result, run = simulate(wl, scheduler), "EASY" if scheduler == "easy" else BACKFILL_RUN
    else:
        slowdown: float | Literal["dynamic"] = "dynamic" if m == "dynamic" else float(m)
        model = params.get("runtime_model", "ideal")
        policy = SDPolicy(max_slowdown=slowdown, share_cores=sharing == "cores", runtime_model=model)
        result = simulate(flexible(*where, sharing), "easy", policy, runtime_model=model)
        run = WORST_RUN if model == "worst" else label(slowdown, sharing)
    return {
        "workload": wl.name,
        "run": run,
        "jobs": len(wl.jobs),
        "seconds": result.wall_time,
        **measures(result),
    }


def relate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its metrics over its workload's EASY row's (``makespan_vs_easy``, ...) and over
    its static backfill row's (``makespan_vs_backfill``, ...)."""
    base = {(r["workload"], r["run"]): r for r in rows if r["run"] in ("EASY", BACKFILL_RUN)}
    against = (("easy", "EASY"), ("backfill", BACKFILL_RUN))
    return [
        {
            **r,
            **{
                f"{k}_vs_{name}": r[k] / base[r["workload"], run][k] - 1
                for k in KEYS
                for name, run in against
            },
        }
        for r in rows
    ]


def write_report(rows: list[dict[str, Any]], out: Path, jobs: int | None) -> list[Path]:
    """``sd.csv``, ``sd.png`` and ``report.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    table = out / "sd.csv"
    with table.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return [table, plot(rows, out / "sd.png"), markdown(rows, out / "report.md", jobs)]


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Each SD run's makespan, response time and slowdown over EASY's (the paper's Figs. 1-3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(len(names), 1, figsize=(10, 4 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        runs = [r for r in rows if r["workload"] == name and r["run"] != "EASY"]
        x = np.arange(len(runs))
        for k, key in enumerate(("makespan", "response", "slowdown")):
            ax.bar(x + (k - 1) * 0.27, [1 + r[f"{key}_vs_easy"] for r in runs], 0.27, label=key)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(x, [r["run"].removeprefix("SD ") for r in runs], rotation=20)
        ax.set(title=name, ylabel="normalised to EASY")
        ax.legend(fontsize="small", loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _changes(row: dict[str, Any], key: str) -> str:
    if row["run"] == "EASY":
        return ""
    if row["run"] == BACKFILL_RUN:
        return f" ({100 * row[f'{key}_vs_easy']:+.1f}%)"
    return f" ({100 * row[f'{key}_vs_easy']:+.1f}% / {100 * row[f'{key}_vs_backfill']:+.1f}%)"


def markdown(rows: list[dict[str, Any]], path: Path, jobs: int | None) -> Path:
    lines = ["# SD-Policy (paper 003) here", ""]
    if jobs:
        lines += [f"The first {jobs:,} jobs of each workload, not the paper's sizes.", ""]
    for name in dict.fromkeys(r["workload"] for r in rows):
        paper, best = PAPER_BASELINE[name], PAPER_BEST[name]
        lines += [
            f"## {name}",
            "",
            "| run | jobs | makespan s | response s | slowdown |",
            "|---|---|---|---|---|",
        ]  # an SD row's changes: against EASY / against static backfill
        lines.append(f"| paper: static backfill | {paper['jobs']:,.0f} | {paper['makespan']:,.0f} | "
                     f"{paper['response']:,.0f} | {paper['slowdown']:,.1f} |")  # fmt: skip
        for r in (r for r in rows if r["workload"] == name):
            cells = [f"{r[k]:,.0f}" + _changes(r, k) for k in KEYS]
            lines.append(f"| {r['run']} | {r['jobs']:,} | " + " | ".join(cells) + " |")
        said = ", ".join(f"{k} {100 * v:+.1f}%" for k, v in best.items())
        lines += ["", f"The paper's SD-Policy (cores shared on nodes): best {said} against its baseline.",
                  f"Its Fig. 8, worst case against ideal: {PAPER_WORST[name]}.", ""]  # fmt: skip
    lines.append(
        'Rows "SD cores" share cores as the paper does; rows "SD" lend whole nodes. An SD row\'s changes'
        f" are against EASY / against {BACKFILL_RUN}, SD-Policy's own backfill without malleability."
    )
    lines.append("Why the numbers differ: docs/simulator/sd-policy.md.")
    path.write_text("\n".join(lines) + "\n")
    return path


def sd_cmd(
    out: Annotated[Path, typer.Option(help="Folder for sd.csv, sd.png and report.md")] = Path("reproduce-sd"),
    traces: Annotated[
        Path, typer.Option(help="Folder holding RICC-2010-2.swf.gz and CEA-Curie-2011-2.1-cln.swf.gz")
    ] = Path("../shared/traces"),
    quick: Annotated[bool, typer.Option(help=f"The first {QUICK_JOBS:,} jobs of each workload only")] = False,
    jobs: Annotated[int | None, typer.Option(help="The first N jobs of each workload only")] = None,
    ricc_window: Annotated[
        int, typer.Option(help="September jobs of RICC before the workload's 10,000 (not named in the paper)")
    ] = RICC_WINDOW,
    sharing: Annotated[
        str,
        typer.Option(help="SD-Policy's runs: nodes (whole nodes lent), cores (cores shared, 003's), or both"),
    ] = "both",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout")] = False,
    on_slurm: OnSlurm = False,
    on_slurm_dir: OnSlurmDir = None,
    partition: Partition = None,
    time: TaskTime = None,
    max_parallel: MaxParallel = None,
) -> None:
    """SD-Policy's simulations (paper 003): EASY and SD at each MAX_SLOWDOWN on RICC-sept and
    CEA-Curie, with the paper's numbers beside them (SD on the whole Curie log is slow: --quick or --jobs)."""
    if jobs is not None and jobs < 1:
        typer.echo(f"error: --jobs must be >= 1, got {jobs}", err=True)
        raise typer.Exit(2)
    if sharing not in (*SHARINGS, "both"):
        typer.echo(f"error: --sharing must be nodes, cores or both, got {sharing!r}", err=True)
        raise typer.Exit(2)
    sharings = SHARINGS if sharing == "both" else (sharing,)
    jobs = jobs or (QUICK_JOBS if quick else None)
    where = array_options(on_slurm, out, on_slurm_dir, partition, time, max_parallel, "reproduce-sd")
    try:  # read here first: a missing or short log is one line, before any run starts
        for case in CASES:
            workload(case.name, str(traces.resolve()), jobs, ricc_window)
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    rows = relate(run_sweep(execute, runs(traces, jobs, ricc_window, sharings), where, progress=not as_json))
    files = write_report(rows, out, jobs)
    if as_json:
        typer.echo(json.dumps({"rows": rows, "paper_baseline": PAPER_BASELINE, "paper_best": PAPER_BEST,
                               "files": [str(f) for f in files]}))  # fmt: skip
        return
    typer.echo(files[-1].read_text())
    typer.echo("wrote " + ", ".join(str(f) for f in files))
