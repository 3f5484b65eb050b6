"""``slurm-ext reproduce dbes``: DBES's simulations (paper 000, §V) run here, beside the paper's numbers.

- Fig. 4: the time to complete the modified ESP workload (Table I: 230 jobs on 120 cores) with 10 to
  100 % malleable jobs under rigid backfilling (Maui's, ReservationDepth 5), DBES, EP, ESF, EDF and
  LDF, and the quantitative claims of §V.B checked one by one;
- Fig. 7 / Table II: 10 % evolving, 40 % malleable and 50 % rigid jobs: the makespan and how many
  evolving requests each policy served.

Every run goes through the simulator with ``strict=True`` (a decision the simulated cluster cannot
carry out aborts the run); the policies schedule by themselves (base scheduler ``none``). Each number
is the mean over ``--seeds`` submission orders. Writes ``dbes.csv``, ``dbes.png`` (Fig. 4's curves)
and ``report.md``.

Each run (a policy on one seed) is a description (:func:`runs`) executed by :func:`execute`, here or,
with ``--on-slurm``, as one task of a job array (:mod:`slurm_ext.reproduce.sweep`); :func:`aggregate`
then takes the means over the seeds.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Annotated, Any

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

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
STATE_OF_ART = ("ep", "esf", "edf", "ldf")
ESP_POLICIES = ("rigid", "dbes", *STATE_OF_ART)
RESERVATION_DEPTH = 5  # 000_* §V.A: every run used ReservationDepth 5
ESP_CORES = 120

# 000_* §V.B/§V.C, quoted numbers (Fig. 4 itself is only a plot)
PAPER_DBES_VS_RIGID_100 = 0.32  # "about 32% higher throughput than rigid scheduling"
PAPER_DBES_VS_EP_100 = 0.07  # "about 7% higher throughput than ... EP"
PAPER_DBES_VS_LDF_EVOLVING = 0.06  # Fig. 7: "about 6% in comparison to ... LDF"
PAPER_TABLE_II = {"dbes": 11, "ep": 11, "esf": 13, "edf": 17, "ldf": 12}


def makespan(wl: Workload, policy: str, *, overhead: float = 0.0) -> tuple[float, Any]:
    """(makespan, result) of one strict run: ``fcfs``/``easy-sim`` are the simulator's own passes,
    ``rigid`` is backfilling; the papers' policies schedule by themselves."""
    from slurm_ext.policies import make_policy
    from slurm_ext.sim import Simulator

    if policy in ("fcfs", "easy-sim"):
        sim = Simulator(wl, "fcfs" if policy == "fcfs" else "easy", None, strict=True)
    else:
        name = "backfill" if policy == "rigid" else policy
        opts = {"reservation_depth": RESERVATION_DEPTH} if name in ("backfill", "dbes", *STATE_OF_ART) else {}
        sim = Simulator(wl, "none", make_policy(name, **opts), strict=True, resize_overhead=overhead)
    res = sim.run()
    if not (res.end >= 0).all():
        raise RuntimeError(f"{policy}: not every job finished on {wl.name}")
    return float(res.end.max() - res.submit.min()), res


def gain(rigid: float, t: float) -> float:
    """Throughput gain of a run taking ``t`` over one taking ``rigid`` (same jobs)."""
    return rigid / t - 1.0


EVOLVING_POLICIES = ("dbes", *STATE_OF_ART)


def runs(seeds: int) -> list[Run]:
    """Fig. 4: each malleable fraction, seed and policy; then Fig. 7: each policy and seed."""
    fig4 = [Run(f"Fig. 4 {f:.0%} malleable {p} seed {seed}", {"figure": "4", "malleable": f, "policy": p,
                "seed": seed}) for f in FRACTIONS for seed in range(seeds) for p in ESP_POLICIES]  # fmt: skip
    fig7 = [Run(f"Fig. 7 {p} seed {seed}", {"figure": "7", "malleable": 0.4, "policy": p, "seed": seed})
            for p in EVOLVING_POLICIES for seed in range(seeds)]  # fmt: skip
    return fig4 + fig7


def execute(params: dict[str, Any]) -> dict[str, Any]:
    """One run's row: its makespan and (Fig. 7: 10 % evolving jobs) the evolving requests served."""
    from slurm_ext.workloads.esp import esp_workload

    evolving = params["figure"] == "7"
    wl = esp_workload(params["malleable"], 0.1 if evolving else 0.0, seed=params["seed"])
    span, res = makespan(wl, params["policy"])
    return {**params, "makespan": span, "evolving_served": res.evolving_asks_granted if evolving else ""}


def aggregate(
    rows: list[dict[str, Any]],
) -> tuple[dict[float, dict[str, float]], dict[str, dict[str, float]]]:
    """Means over the seeds: Fig. 4's makespan per malleable fraction and policy, and Fig. 7's
    makespan and evolving requests served per policy."""

    def mean(figure: str, key: str, policy: str, malleable: float | None = None) -> float:
        return statistics.fmean(r[key] for r in rows if r["figure"] == figure and r["policy"] == policy
                                and (malleable is None or r["malleable"] == malleable))  # fmt: skip

    table = {f: {p: mean("4", "makespan", p, f) for p in ESP_POLICIES} for f in FRACTIONS}
    evolving = {p: {"makespan": mean("7", "makespan", p), "served": mean("7", "evolving_served", p)}
                for p in EVOLVING_POLICIES}  # fmt: skip
    return table, evolving


def claims(table: dict[float, dict[str, float]]) -> list[tuple[str, str, str]]:
    """(claim of 000_* §V.B, the paper's value, ours)."""

    def rank(f: float, p: str) -> int:
        return sorted(STATE_OF_ART, key=table[f].__getitem__).index(p) + 1

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    r100 = table[1.0]
    best_other = min(STATE_OF_ART, key=r100.__getitem__)
    dbes_best = all(min(r, key=r.__getitem__) == "dbes" for r in table.values())
    return [
        ("DBES best in every mix", "yes", yes(dbes_best)),
        ("DBES throughput over rigid at 100%", f"+{PAPER_DBES_VS_RIGID_100:.0%}",
         f"{gain(r100['rigid'], r100['dbes']):+.1%}"),
        ("best state-of-the-art strategy at 100%", "EP", best_other.upper()),
        ("DBES throughput over EP at 100%", f"+{PAPER_DBES_VS_EP_100:.0%}",
         f"{gain(r100['ep'], r100['dbes']):+.1%}"),
        ("EP rank among EP/ESF/EDF/LDF at 10%, 30% (4 = worst)", "4, 4",
         f"{rank(0.1, 'ep')}, {rank(0.3, 'ep')}"),
        ("EP rank at 60% / 90%", "1 / 3", f"{rank(0.6, 'ep')} / {rank(0.9, 'ep')}"),
        ("ESF rank at 20% / 50%", "1 / 4", f"{rank(0.2, 'esf')} / {rank(0.5, 'esf')}"),
        ("EDF slower than rigid at 20%", "yes", yes(table[0.2]["edf"] > table[0.2]["rigid"])),
        ("EP slower than rigid at 30%", "yes", yes(table[0.3]["ep"] > table[0.3]["rigid"])),
        ("50% malleable slower than 40% under DBES", "yes", yes(table[0.5]["dbes"] > table[0.4]["dbes"])),
    ]  # fmt: skip


def lower_bound() -> float:
    """The makespan with all cores busy all the time: the ESP jobs' work over the machine (a
    malleable job's work is the same at any size: the ESP jobs scale linearly)."""
    from slurm_ext.workloads.esp import esp_workload

    return sum(j.nodes * j.run_time for j in esp_workload().jobs) / ESP_CORES


def markdown(table: dict[float, dict[str, float]], evolving: dict[str, dict[str, float]], seeds: int) -> str:
    lower = lower_bound()
    lines = [
        "# DBES (paper 000) here",
        "",
        f"## Fig. 4: modified ESP, 230 jobs on {ESP_CORES} cores, mean makespan [s] of {seeds} seed(s)",
        "",
        "| malleable | " + " | ".join(ESP_POLICIES) + " | best | DBES vs rigid |",
        "|---" * (len(ESP_POLICIES) + 3) + "|",
    ]
    for f, row in table.items():
        best = min(row, key=row.__getitem__)
        cells = " | ".join(f"{row[p]:,.0f}" for p in ESP_POLICIES)
        lines.append(f"| {f:.0%} | {cells} | {best} | {gain(row['rigid'], row['dbes']):+.1%} |")
    lines += ["", f"Lower bound (all {ESP_CORES} cores busy all the time): {lower:,.0f} s.", ""]
    lines += ["| claim (000_* §V.B) | paper | here |", "|---|---|---|"]
    lines += [f"| {what} | {paper} | {here} |" for what, paper, here in claims(table)]
    lines += [
        "",
        f"## Fig. 7 / Table II: 10 % evolving, 40 % malleable, {seeds} seed(s)",
        "",
        "| policy | makespan s | evolving requests served | paper served |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {p} | {r['makespan']:,.0f} | {r['served']:.1f} | {PAPER_TABLE_II[p]} |"
        for p, r in evolving.items()
    ]
    best_other = min(STATE_OF_ART, key=lambda p: evolving[p]["makespan"])
    lines += [
        "",
        f"DBES throughput over the best other ({best_other.upper()}): "
        f"{gain(evolving[best_other]['makespan'], evolving['dbes']['makespan']):+.1%}; "
        f"the paper: +{PAPER_DBES_VS_LDF_EVOLVING:.0%} over LDF.",
    ]
    return "\n".join(lines) + "\n"


def plot(table: dict[float, dict[str, float]], path: Path) -> Path:
    """Fig. 4: makespan against the malleable share, one curve per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    shares = [100 * f for f in table]
    for p in ESP_POLICIES:
        ax.plot(shares, [row[p] for row in table.values()], marker="o", label=p.upper())
    ax.axhline(lower_bound(), color="grey", ls="--", lw=0.8, label="all cores busy")
    ax.set(xlabel="malleable jobs [%]", ylabel="time to complete the workload [s]",
           title="Modified ESP (paper 000, Fig. 4)")  # fmt: skip
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(table: dict[float, dict[str, float]], evolving: dict[str, dict[str, float]], seeds: int,
          out: Path) -> list[Path]:  # fmt: skip
    """``dbes.csv`` (one row per run kind: Fig. 4's fraction and policy, Fig. 7's policy), ``dbes.png``
    and ``report.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [{"figure": "4", "malleable": f, "policy": p, "makespan": span, "evolving_served": ""}
            for f, row in table.items() for p, span in row.items()]  # fmt: skip
    rows += [{"figure": "7", "malleable": 0.4, "policy": p, "makespan": r["makespan"],
              "evolving_served": r["served"]} for p, r in evolving.items()]  # fmt: skip
    data = out / "dbes.csv"
    with data.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    report = out / "report.md"
    report.write_text(markdown(table, evolving, seeds))
    return [data, plot(table, out / "dbes.png"), report]


def dbes_cmd(
    out: Annotated[Path, typer.Option(help="Folder for dbes.csv, dbes.png and report.md")] = Path(
        "reproduce-dbes"
    ),
    seeds: Annotated[int, typer.Option(help="ESP submission orders averaged")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout")] = False,
    on_slurm: OnSlurm = False,
    on_slurm_dir: OnSlurmDir = None,
    partition: Partition = None,
    time: TaskTime = None,
    max_parallel: MaxParallel = None,
) -> None:
    """DBES's simulations (paper 000): Fig. 4 (10-100 % malleable, DBES against rigid, EP, ESF, EDF,
    LDF) and Fig. 7 / Table II (evolving jobs), with the paper's claims beside them."""
    if seeds < 1:
        typer.echo(f"error: --seeds must be >= 1, got {seeds}", err=True)
        raise typer.Exit(2)
    where = array_options(on_slurm, out, on_slurm_dir, partition, time, max_parallel, "reproduce-dbes")
    table, evolving = aggregate(run_sweep(execute, runs(seeds), where, progress=not as_json))
    files = write(table, evolving, seeds, out)
    if as_json:
        typer.echo(json.dumps({
            "fig4": {f"{f:g}": row for f, row in table.items()}, "fig7": evolving,
            "claims": [{"claim": c, "paper": p, "here": h} for c, p, h in claims(table)],
            "files": [str(f) for f in files],
        }))  # fmt: skip
        return
    typer.echo(files[-1].read_text())
    typer.echo("wrote " + ", ".join(str(f) for f in files))
