"""Output of the experiments: the paper's table layouts, CSV files, figures and JSON summaries.

Tables 3-6 are printed with the paper's numbers beside ours when the workload is one of the
paper's traces (:mod:`ejb.experiments.paper`). Figures use matplotlib's Agg backend.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ejb.experiments import paper
from ejb.experiments.all_elastic import AllElasticResult, table4_columns
from ejb.experiments.one_elastic import OneElasticResult
from ejb.experiments.sensitivity import Point
from slurm_ext.console import table, table_text
from slurm_ext.metrics import PairedChange


def pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:+.1f}%"


def _num(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:,.0f}"


def _ci(p: PairedChange) -> str:
    return f"({_num(p.ci_low)}, {_num(p.ci_high)})"


def _rows(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """The CLIs' table style (:func:`slurm_ext.console.table`): labels left, numbers right."""
    return table_text(table(header, rows, left=left))


def _trace_label(name: str) -> str:
    return paper.paper_trace(name) or name


# -- experiment 1 --------------------------------------------------------------------------------
def table3_text(r: OneElasticResult) -> str:
    tt = r.turnaround
    lo, hi = tt.ci_change
    label = _trace_label(r.workload)
    rows = [
        [
            f"{label} (ours)",
            str(tt.n),
            pct(r.wait.change),
            pct(r.run.change),
            f"{pct(tt.change)} [{pct(lo)}, {pct(hi)}]",
        ]
    ]
    ref = paper.TABLE3.get(label)
    if ref:
        rows.append(
            [
                f"{label} (paper)",
                f"{ref['targets']:.0f}",
                pct(ref["wait"]),
                pct(ref["run"]),
                f"{pct(ref['tt'])} [{pct(ref['ci_low'])}, {pct(ref['ci_high'])}]",
            ]
        )
    head = ["trace", "target jobs", "t_w", "t_r", "t_t [95% conf. interval]"]
    title = "Table 3: change of mean wait, run and turnaround time of elastic jobs vs the targets' baseline"
    op = ">" if r.rule == "table3" else ">="
    rule = f"targets: P {op} {r.params.min_procs} waiting in the baseline (--target-rule {r.rule})"
    compared = f"; {targets_line(tt.n, ref['targets'])}" if ref else ""
    return f"{title}\n{_rows(head, rows)}\n{rule}{compared}"


def targets_line(ours: int, theirs: float) -> str:
    """``target jobs: 5,598 vs the paper's 4,399 (+27.3%)``."""
    return f"target jobs: {ours:,} vs the paper's {theirs:,.0f} ({pct(ours / theirs - 1)})"


def table4_text(label: str, stats: dict[str, float]) -> str:
    def row(name: str, s: dict[str, float]) -> list[str]:
        return [
            name,
            f"{s['subjobs']:.1f}",
            f"{s['migrations']:.1f}",
            f"{s['migration_share'] * 100:.1f}%",
            f"{s['resource_overhead'] * 100:.1f}%",
        ]

    trace = _trace_label(label)
    rows = [row(f"{trace} (ours)", stats)]
    if trace in paper.TABLE4:
        rows.append(row(f"{trace} (paper)", paper.TABLE4[trace]))
    head = ["trace", "subjobs", "migrations", "migration duration", "resource overhead"]
    return f"Table 4: migration related statistics per elastic job\n{_rows(head, rows)}"


def one_elastic_summary(r: OneElasticResult) -> dict[str, Any]:
    tt = r.turnaround
    lo, hi = tt.ci_change
    trace = _trace_label(r.workload)
    return {
        "experiment": "one-elastic",
        "workload": r.workload,
        "params": asdict(r.params),
        "method": r.method,
        "targets": tt.n,
        "target_rule": r.rule,
        "workers": r.workers,
        "wait_change": r.wait.change,
        "run_change": r.run.change,
        "turnaround_change": tt.change,
        "turnaround_ci": [lo, hi],
        "mean_turnaround_before": tt.before,
        "mean_turnaround_after": tt.after,
        "table4": one_elastic_table4(r),
        "seconds": r.seconds,
        "paper": {"table3": paper.TABLE3.get(trace), "table4": paper.TABLE4.get(trace)},
    }


def one_elastic_table4(r: OneElasticResult) -> dict[str, float]:
    c = r.rows.column
    return table4_columns(
        c("run"),
        c("migration_time"),
        c("procs") * c("run_time"),
        c("proc_seconds"),
        c("subjobs"),
        c("migrations"),
    )


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure7(r: OneElasticResult, path: Path) -> None:
    """(a) mean t_w + t_r before and after; (b) CDF of the turnaround speedup S_tt."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    waits = [r.wait.before, r.wait.after]
    runs = [r.run.before, r.run.after]
    a.bar(["baseline", "EJB"], waits, label="mean $t_w$", color="#d95f02")
    a.bar(["baseline", "EJB"], runs, bottom=waits, label="mean $t_r$", color="#1b9e77")
    a.set_ylabel("seconds")
    a.set_title(f"(a) target jobs' mean turnaround ({_trace_label(r.workload)})")
    a.legend()
    s = np.sort(r.speedups())
    b.plot(s, np.arange(1, len(s) + 1) / len(s))
    b.set_xscale("log")
    b.axvline(1.0, color="grey", lw=0.8)
    b.set_xlabel("speedup of turnaround time $S_{tt}$")
    b.set_ylabel("CDF")
    b.set_title("(b) CDF of $S_{tt}$")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- experiment 2 --------------------------------------------------------------------------------
def _after(after: float, before: float) -> str:
    return f"{_num(after)} ({pct(after / before - 1) if before else 'n/a'})"


def table5_text(r: AllElasticResult) -> str:
    trace = _trace_label(r.workload)
    ref = paper.TABLE5.get(trace, {})
    rows = []
    for g in r.groups.values():
        tt, tw, tr = g.turnaround, g.wait, g.run
        rows.append(
            [f"{trace} (ours)", g.name, str(g.n), _num(tt.before), _after(tt.after, tt.before), _ci(tt)]
            + [_num(tw.before), _after(tw.after, tw.before), _ci(tw), _num(tr.before)]
            + ["—" if g.name == "non-elastic" else _after(tr.after, tr.before)]
        )
        p = ref.get(g.name)
        if p:
            ci = f"({_num(p['tt_ci_low'])}, {_num(p['tt_ci_high'])})"
            rows.append(
                [f"{trace} (paper)", g.name, f"{p['n']:.0f}", _num(p["tt_before"])]
                + [_after(p["tt_after"], p["tt_before"]), ci, _num(p["tw_before"])]
                + [_after(p["tw_after"], p["tw_before"]), "", _num(p["tr_before"])]
                + ["—" if g.name == "non-elastic" else _after(p["tr_after"], p["tr_before"])]
            )
    head = ["workload", "job type", "jobs", "tt before", "tt after (change)", "tt 95% CI"]
    head += ["tw before", "tw after (change)", "tw 95% CI", "tr before", "tr after (change)"]
    title = "Table 5: before-and-after comparison (95% confidence intervals of paired differences)"
    ne = r.groups["non-elastic"].turnaround
    verdict = (
        ("significantly worse" if ne.change > 0 else "significantly better")
        if ne.significant
        else "not significant"
    )
    note = f"non-elastic jobs' turnaround change {pct(ne.change)}: {verdict} at 95%"
    return f"{title}\n{_rows(head, rows, left=2)}\n{note}"


def table6_text(r: AllElasticResult) -> str:
    trace = _trace_label(r.workload)
    b, a = r.fragmentation

    def row(name: str, before: float, after: float, nodes: float) -> list[str]:
        return [
            name,
            f"{before:.1f}",
            f"{before / nodes * 100:.1f}%",
            f"{after:.1f}",
            f"{after / nodes * 100:.1f}%",
            pct(after / before - 1) if before else "n/a",
        ]

    rows = [row(f"{trace} (ours)", b, a, r.nodes)]
    if trace in paper.TABLE6:
        pb, pa = paper.TABLE6[trace]
        rows.append(row(f"{trace} (paper)", pb, pa, r.nodes))
    head = ["trace", "np before", "% before", "np after", "% after", "change"]
    return f"Table 6: fragmentation (idle processors while the queue is non-empty)\n{_rows(head, rows)}"


def slowdown_text(r: AllElasticResult) -> str:
    rows = [
        [g.name, f"{g.slowdown.before:.1f}", f"{g.slowdown.after:.1f}", pct(g.slowdown.change)]
        for g in r.groups.values()
    ]
    fair = (
        f"fairness: slope of t_w over job size {r.fairness[0]:.1f} s/proc before, {r.fairness[1]:.1f} after"
    )
    return (
        f"Figure 10: mean bounded slowdown\n{_rows(['job type', 'before', 'after', 'change'], rows)}\n{fair}"
    )


def _paired_dict(p: PairedChange) -> dict[str, float | bool]:
    return {
        "before": p.before,
        "after": p.after,
        "change": p.change,
        "ci_low": p.ci_low,
        "ci_high": p.ci_high,
        "significant": p.significant,
    }


def all_elastic_summary(r: AllElasticResult) -> dict[str, Any]:
    trace = _trace_label(r.workload)
    return {
        "experiment": "all-elastic",
        "workload": r.workload,
        "params": asdict(r.params),
        "groups": {
            g.name: {"jobs": g.n} | {name: _paired_dict(p) for name, p in g.metrics().items()}
            for g in r.groups.values()
        },
        "fragmentation": {"before": r.fragmentation[0], "after": r.fragmentation[1], "nodes": r.nodes},
        "fairness_slope": {"before": r.fairness[0], "after": r.fairness[1]},
        "table4": r.table4(),
        "seconds": r.seconds,
        "paper": {"table5": paper.TABLE5.get(trace), "table6": paper.TABLE6.get(trace)},
    }


def all_elastic_csv(r: AllElasticResult, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["job_type", "jobs", "metric", "before", "after", "change", "ci_low", "ci_high", "significant"]
        )
        for g in r.groups.values():
            for name, p in g.metrics().items():
                w.writerow(
                    [g.name, g.n, name, p.before, p.after, p.change, p.ci_low, p.ci_high, p.significant]
                )


def figure10(r: AllElasticResult, path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(r.groups)
    x = np.arange(len(names))
    ax.bar(x - 0.2, [r.groups[n].slowdown.before for n in names], 0.4, label="before (EASY)")
    ax.bar(x + 0.2, [r.groups[n].slowdown.after for n in names], 0.4, label="after (EASY + EJB)")
    ax.set_xticks(x, names)
    ax.set_ylabel("mean bounded slowdown")
    ax.set_title(f"Figure 10: bounded slowdown ({_trace_label(r.workload)})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure11(r: AllElasticResult, path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = np.linspace(1, max(1, int(r.size.max(initial=1))), 50)
    for label, tw, slope in (
        ("before", r.wait_before, r.fairness[0]),
        ("after", r.wait_after, r.fairness[1]),
    ):
        c = np.polyfit(r.size, tw, 1) if len(tw) > 1 else (slope, 0.0)
        ax.plot(xs, np.polyval(c, xs), label=f"{label}: {slope:.0f} s/proc")
    ax.set_xlabel("job size (processors)")
    ax.set_ylabel("$t_w$ regression (s)")
    ax.set_title("Figure 11: wait time over job size")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- sensitivity ---------------------------------------------------------------------------------
def sensitivity_text(points: list[Point]) -> str:
    rows = []
    for p in points:
        value = f"{p.value / 60:g} min" if p.parameter == "migration" else f"{p.value:g}"
        tt = f"{pct(p.tt_change)} [{pct(p.ci_low)}, {pct(p.ci_high)}]"
        rows.append(
            [p.parameter, value, str(p.targets), _num(p.tt_before), _num(p.tt_after)]
            + [pct(p.wait_change), pct(p.run_change), tt]
        )
    head = ["parameter", "value", "targets", "tt baseline", "tt elastic", "t_w", "t_r", "t_t [95% CI]"]
    return f"Figure 8: sensitivity of elastic jobs' mean turnaround\n{_rows(head, rows)}"


def sensitivity_csv(points: list[Point], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(asdict(points[0]).keys()) if points else ["parameter"])
        for p in points:
            w.writerow(list(asdict(p).values()))


def figure8(points: list[Point], path: Path, label: str) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    titles = {"o_max": "(a) $O_{max}$", "migration": "(b) λ (minutes)", "delta": "(c) Δ"}
    for ax, name in zip(axes, ("o_max", "migration", "delta"), strict=True):
        pts = [p for p in points if p.parameter == name]
        if not pts:
            ax.set_visible(False)
            continue
        xs = [p.value / 60 if name == "migration" else p.value for p in pts]
        ax.plot(xs, [p.tt_after for p in pts], "o-", label="elastic jobs")
        ax.axhline(pts[0].tt_before, color="grey", ls="--", label="baseline")
        if name == "o_max":
            ax.set_xscale("log", base=2)
        ax.set_title(titles[name])
        ax.set_ylabel("mean turnaround (s)")
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.suptitle(f"Figure 8: sensitivity ({_trace_label(label)})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sensitivity_summary(points: list[Point], label: str) -> dict[str, Any]:
    return {"experiment": "sensitivity", "workload": label, "points": [asdict(p) for p in points]}
