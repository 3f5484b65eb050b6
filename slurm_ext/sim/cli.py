"""``slurm-ext simulate`` and ``slurm-ext compare``: thin commands over :func:`run_one`."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from slurm_ext.cli_options import (
    JsonOpt,
    NoPlotsOpt,
    OutOpt,
    QuietOpt,
    ReadingOpt,
    SeedOpt,
    WorkloadOpt,
    fail,
    show_progress,
)
from slurm_ext.console import progress_bar
from slurm_ext.metrics import RunSummary, job_metrics, paired_table, summarize, summary_table, write_jobs_csv
from slurm_ext.policies.sdpolicy import slots_per_node
from slurm_ext.sim.engine import Simulator
from slurm_ext.sim.registry import policy_names, resolve
from slurm_ext.sim.result import SimResult
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.model import MalleableRule, Workload, node_slots
from slurm_ext.workloads.reading import parse_reading
from slurm_ext.workloads.swf import SwfError

# Options of both commands (the ones ejb shares too are in slurm_ext.cli_options).
BaseOpt = Annotated[
    str, typer.Option(help="Base scheduler under a resizing policy (fcfs, easy, backfill[:D]).")
]
MalleableOpt = Annotated[float, typer.Option(help="Fraction of jobs made malleable (0-1).")]
SerialOpt = Annotated[float, typer.Option(help="Amdahl serial fraction of malleable jobs (0 = linear).")]
EvolvingOpt = Annotated[float, typer.Option(help="ESP only: fraction of evolving jobs (0-1).")]
JobsOpt = Annotated[int | None, typer.Option(help="Use only the first N jobs (synthetic: generate N).")]
NodesOpt = Annotated[
    int | None,
    typer.Option(
        help="Machine size in nodes (one SWF processor is one node, or see --cores-per-node): overrides"
        " the trace's header;"
        " synthetic: the generated machine (default 128); sacct: overrides the partitions' size (sinfo)."
    ),
]
CoresOpt = Annotated[
    int,
    typer.Option(
        help="SWF traces: processors are cores of nodes this many cores each; jobs take whole nodes"
        " (processors / cores, rounded up), the machine is MaxProcs / cores nodes."
    ),
]
ShareCoresOpt = Annotated[
    bool,
    typer.Option(
        help="SD-Policy shares nodes' cores as 003 does: each node is 1/SharingFactor slots, a mate lends one"
        " on each node it shares, every job malleable (sd, sd:N, sd-dynamic and the rigid baselines only)."
    ),
]
SharingOpt = Annotated[
    float,
    typer.Option(
        help="SD-Policy's SharingFactor: the share of a mate's nodes (--share-cores: cores) it lends."
    ),
]
RuntimeModelOpt = Annotated[
    str,
    typer.Option(
        help="How a job's pace follows its cores (003 §3.4): ideal (linear in its cores) or worst (its"
        " least-provisioned node's pace; needs --share-cores)."
    ),
]
OverheadOpt = Annotated[float, typer.Option(help="Seconds a resize pauses the job.")]
CheckOpt = Annotated[float | None, typer.Option(help="Malleable jobs ask the policy every N s.")]


@dataclass
class RunOptions:
    base: str = "easy"
    resize_overhead: float = 0.0
    check_period: float | None = None
    sd_options: dict[str, Any] = field(default_factory=dict)  # SD-Policy's (registry.resolve)
    runtime_model: str = "ideal"


def sd_options(share_cores: bool, sharing_factor: float, runtime_model: str) -> dict[str, Any]:
    """SD-Policy's options as given on the command line: none when all are the defaults."""
    if not share_cores and sharing_factor == 0.5 and runtime_model == "ideal":
        return {}
    return {"share_cores": share_cores, "sharing_factor": sharing_factor, "runtime_model": runtime_model}


def prepare_workload(
    spec: str,
    *,
    seed: int,
    malleable_fraction: float,
    jobs: int | None,
    nodes: int | None,
    evolving_fraction: float = 0.0,
    serial_fraction: float = 0.0,
    swf_reading: str = "default",
    cores_per_node: int = 1,
    slots: int = 1,
) -> Workload:
    """Load ``spec`` and make ``malleable_fraction`` of its jobs malleable (factor 2, at max); with
    ``slots`` > 1, count it in slots of nodes instead (:func:`node_slots`: every job malleable)."""
    if slots > 1:
        if malleable_fraction:
            raise ValueError("--share-cores makes every job malleable: leave --malleable-fraction out")
        wl = prepare_workload(spec, seed=seed, malleable_fraction=0.0, jobs=jobs, nodes=nodes,
                              evolving_fraction=evolving_fraction, swf_reading=swf_reading,
                              cores_per_node=cores_per_node)  # fmt: skip
        return node_slots(wl, slots)
    if spec.strip().lower() == "esp":
        from slurm_ext.workloads import load_esp

        wl = load_esp(seed=seed, malleable_fraction=malleable_fraction, evolving_fraction=evolving_fraction)
        if serial_fraction:
            wl.jobs = [j._replace(serial_fraction=serial_fraction) if j.malleable else j for j in wl.jobs]
        return wl
    if evolving_fraction:
        raise ValueError("--evolving-fraction applies to the esp workload only")
    wl = load_workload(spec, seed=seed, jobs=jobs, nodes=nodes, reading=parse_reading(swf_reading),
                       cores_per_node=cores_per_node)  # fmt: skip
    if malleable_fraction > 0:
        wl = MalleableRule(fraction=malleable_fraction, serial_fraction=serial_fraction, seed=seed).apply(wl)
    return wl


def run_one(
    wl: Workload, policy: str, opts: RunOptions, progress: bool = False
) -> tuple[SimResult, RunSummary]:
    """Simulate ``wl`` under ``policy`` and summarise it; wall time covers the simulation only.
    A machine of several pools (a site's partitions that share no node) is one run per pool, each
    with a policy of its own (the policies decide within a partition), put together."""
    parts = []
    for part in wl.split():
        r = resolve(policy, opts.base, opts.sd_options)
        sim = Simulator(
            part,
            r.scheduler,
            r.policy,
            resize_overhead=opts.resize_overhead,
            check_period=opts.check_period,
            runtime_model=opts.runtime_model,
        )
        label = policy if len(wl.pools) < 2 else f"{policy} {part.name}"
        with progress_bar(label, "arrivals", enabled=progress) as bar:
            parts.append(sim.run(progress=bar if progress else None))
    result = parts[0] if len(parts) == 1 else SimResult.combined(parts, wl)
    summary = summarize(result)
    if r.policy is not None:
        summary.policy = r.name  # as the user named it: sd:5 and sd:50 are two rows, not two "sd"
    return result, summary


def write_outputs(
    out: Path, result: SimResult, summary: RunSummary, tag: str, plots: bool = True
) -> list[Path]:
    """Per-job CSV, summary JSON and (with ``plots``) the timeline and, for small runs, a Gantt chart."""
    from slurm_ext.metrics.plots import GANTT_MAX_JOBS, plot_gantt, plot_timeline

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise fail(f"cannot create output directory {out}: {e.strerror}") from None
    paths = [out / f"{tag}.jobs.csv", out / f"{tag}.summary.json"]
    write_jobs_csv(paths[0], job_metrics(result))
    paths[1].write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
    if plots:
        paths.append(plot_timeline(result, out / f"{tag}.timeline.png"))
        if result.finished.sum() <= GANTT_MAX_JOBS:
            paths.append(plot_gantt(result, out / f"{tag}.gantt.png"))
    return paths


USER_ERRORS = (ValueError, FileNotFoundError, SwfError, KeyError)
POLICY_HELP = (
    "fcfs, easy, backfill[:D], or a policy name (sd:N: SD-Policy at MAX_SLOWDOWN N, inf or dynamic)."
)


def simulate_cmd(
    workload: WorkloadOpt = "kth-small",
    policy: Annotated[
        str,
        typer.Option("--policy", "-p", help=POLICY_HELP),
    ] = "easy",
    base: BaseOpt = "easy",
    malleable_fraction: MalleableOpt = 0.0,
    serial_fraction: SerialOpt = 0.0,
    evolving_fraction: EvolvingOpt = 0.0,
    seed: SeedOpt = 0,
    jobs: JobsOpt = None,
    nodes: NodesOpt = None,
    cores_per_node: CoresOpt = 1,
    share_cores: ShareCoresOpt = False,
    sharing_factor: SharingOpt = 0.5,
    runtime_model: RuntimeModelOpt = "ideal",
    resize_overhead: OverheadOpt = 0.0,
    check_period: CheckOpt = None,
    swf_reading: ReadingOpt = "default",
    out: OutOpt = None,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Simulate one workload under one policy and print its metrics."""
    t0 = time.perf_counter()
    try:
        wl = prepare_workload(
            workload,
            seed=seed,
            malleable_fraction=malleable_fraction,
            jobs=jobs,
            nodes=nodes,
            evolving_fraction=evolving_fraction,
            serial_fraction=serial_fraction,
            swf_reading=swf_reading,
            cores_per_node=cores_per_node,
            slots=slots_per_node(sharing_factor) if share_cores else 1,
        )
        sd = sd_options(share_cores, sharing_factor, runtime_model)
        opts = RunOptions(base, resize_overhead, check_period, sd, runtime_model)
        result, summary = run_one(wl, policy, opts, progress=show_progress(quiet))
        summary.wall_time = time.perf_counter() - t0  # load + simulate, not the output files
        paths = write_outputs(out, result, summary, policy.replace(":", "_"), not no_plots) if out else []
    except USER_ERRORS as e:
        raise fail(e) from None
    if as_json:
        typer.echo(json.dumps(summary.to_dict()))
        return
    typer.echo(summary_table([summary]))
    if summary.jobs_skipped:
        reasons = ", ".join(f"{k}: {v}" for k, v in wl.skipped_reasons().most_common())
        typer.echo(f"skipped {summary.jobs_skipped} jobs ({reasons})")
    for note, count in wl.notes.items():
        typer.echo(f"note: {note} ({count} jobs)")
    if result.rejected:
        typer.echo(
            f"{len(result.rejected)} policy decisions could not be carried out, e.g. {result.rejected[0]}"
        )
    for p in paths:
        typer.echo(f"wrote {p}")


def compare_cmd(
    policies: Annotated[
        str, typer.Option("--policies", "-p", help="Comma-separated policy names; the first is the baseline.")
    ] = "fcfs,easy,backfill",
    workload: WorkloadOpt = "kth-small",
    base: BaseOpt = "easy",
    malleable_fraction: MalleableOpt = 0.0,
    serial_fraction: SerialOpt = 0.0,
    evolving_fraction: EvolvingOpt = 0.0,
    seed: SeedOpt = 0,
    jobs: JobsOpt = None,
    nodes: NodesOpt = None,
    cores_per_node: CoresOpt = 1,
    share_cores: ShareCoresOpt = False,
    sharing_factor: SharingOpt = 0.5,
    runtime_model: RuntimeModelOpt = "ideal",
    resize_overhead: OverheadOpt = 0.0,
    check_period: CheckOpt = None,
    swf_reading: ReadingOpt = "default",
    out: OutOpt = None,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run several policies on the same workload; one table, plus paired changes vs the first."""
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise fail(f"no policy given; valid: {', '.join(policy_names())}")
    try:
        for name in names:  # fail on a bad name or option before any long run
            resolve(name, base, sd_options(share_cores, sharing_factor, runtime_model))
        wl = prepare_workload(
            workload,
            seed=seed,
            malleable_fraction=malleable_fraction,
            jobs=jobs,
            nodes=nodes,
            evolving_fraction=evolving_fraction,
            serial_fraction=serial_fraction,
            swf_reading=swf_reading,
            cores_per_node=cores_per_node,
            slots=slots_per_node(sharing_factor) if share_cores else 1,
        )
        sd = sd_options(share_cores, sharing_factor, runtime_model)
        opts = RunOptions(base, resize_overhead, check_period, sd, runtime_model)
        runs = [run_one(wl, name, opts, progress=show_progress(quiet)) for name in names]
        paths = []
        if out:
            for name, (res, summ) in zip(names, runs, strict=True):
                paths += write_outputs(out, res, summ, name.replace(":", "_"), not no_plots)
    except USER_ERRORS as e:
        raise fail(e) from None
    summaries = [s for _, s in runs]
    if as_json:
        typer.echo(json.dumps([s.to_dict() for s in summaries]))
        return
    typer.echo(summary_table(summaries))
    if len(runs) > 1:
        others = {name: job_metrics(res) for name, (res, _) in zip(names[1:], runs[1:], strict=True)}
        typer.echo(f"\npaired change of the mean vs {names[0]} (jobs in both steady windows, 95% CI):")
        typer.echo(paired_table(job_metrics(runs[0][0]), others))
    for p in paths:
        typer.echo(f"wrote {p}")
