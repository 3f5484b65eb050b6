"""``slurm-ext bench workload``: paper 002's fixed-vs-flexible workload on the local cluster.

A seeded mix of FS, CG, Jacobi and N-body jobs arrives with Poisson inter-arrival times (the
paper: "a Poisson distribution of factor 10") and is run twice on the same cluster: **rigid**
(every job at its submitted size, never asking: ``DMR_DISABLE=1``) and **malleable** (the same
jobs declare their range in ``--comment dmr:min=..,max=..,preferred=..``; a control service with
the chosen policy shrinks and grows them). Job times come from Slurm's accounting; the resizes
and the node-seconds they change come from the service's events (``events.jsonl``), not from a
second bookkeeping.

The shape is the paper's (§7.5, Table 1): every job is submitted at its maximum size ("the
user-preferred scenario of a fast execution"; ``--submit-at min`` for paper 000's shape), with the
paper's minimum, maximum and preferred sizes scaled from its 64-node cluster to this one; FS has no
preferred size (wide optimization). The paper's throughput runs used CG, Jacobi and N-body only
(its FS was for the overhead runs), and so does the default mix; ``--apps fs,cg,jacobi,nbody`` adds FS.

The local cluster's nodes share one host's two cores, so real compute does not speed up with
nodes: every app sleeps a modelled part of each step (FS ``--step-seconds``, the others
``--model-seconds``) with small real problems beside it, so the benchmark measures scheduling,
as the paper's testbed did. The modelled step scales as ``1 / N^A`` (apps' ``--scaling``):
the default A = log(900.3 / 620.26) / log 4 = 0.27 is the paper's own measure (Table 4, 50 jobs:
jobs shrunk 4x, from their maximum to their preferred size, ran 1.45x longer), and a power law
keeps that ratio at this cluster's sizes. Time is scaled down 10x: the paper's jobs ran about
600 s at their maximum with arrivals every 10 s; here about 60 s with arrivals every 1 s.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

import typer

PAPER = {"completion": -0.52, "wait": -0.67}  # the issue's reading of paper 002's Table 4 (gains vs fixed)
GAINS = ("completion", "mean_wait", "mean_exec")  # malleable / rigid - 1, per seed
# What each number of a run is (paper 002's Table 4 names "completion time" for the workload's).
DEFINITIONS = {
    "completion_s": "workload makespan: first submission to last end",
    "mean_job_completion_s": "mean over jobs of end - submit (each job's own completion time)",
    "mean_wait_s": "mean over jobs of start - submit",
    "mean_exec_s": "mean over jobs of end - start",
    "utilisation": "node-seconds held by the jobs (resizes included) / (nodes x makespan)",
    "per_job": "each job: times in seconds from the first submission, its nodes over time [[t, nodes], ...]",
    "per_job_gain": "paper 002 Table 3: mean, std over jobs of 1 - malleable/rigid (wait, exec, completion)",
    "action_times": "paper 002 Table 2: per action, how many (in all, per job) and how long: 'none' the "
    "service's time to decide, 'expand'/'shrink' the application's own time for the resize (its check "
    "to the end of the redistribution, from each job's result line)",
}
# Paper 002's Table 2 (400-job workload): (quantity, actions/job, min, max, mean, std seconds)
PAPER_TABLE_2 = {
    "sync": {
        "none": (None, None, 0.0010, 0.2078, 0.0094, 0.0102),
        "expand": (50, 0.125, 0.367, 0.530, 0.423, 0.146),
        "shrink": (194, 0.485, 0.233, 0.541, 0.425, 0.498),
    },
    "async": {
        "none": (None, None, 0.0003, 0.1140, 0.0137, 0.0112),
        "expand": (107, 0.267, 0.366, 40.418, 8.820, 12.688),
        "shrink": (303, 0.757, 0.334, 0.555, 0.422, 0.049),
    },
}


@dataclass(frozen=True)
class JobSpec:
    name: str
    arrival: float  # seconds after the first submission
    app: str
    args: str
    size: int  # nodes it is submitted with (and runs at, when rigid)
    min_size: int = 1
    preferred: int | None = None
    max_size: int | None = None  # None: its submitted size
    minutes: int = 20  # its time limit (sbatch -t)


APPS_ALL = ("fs", "cg", "jacobi", "nbody")
APPS_PAPER = ("cg", "jacobi", "nbody")  # paper 002 §7.5: "one of the three non-synthetic applications"
SUBMIT_AT = ("max", "min")  # paper 002 submits at the maximum; paper 000 (DBES) at the minimum
START_SECONDS = 15.0  # a job's start-up (srun, MPI_Init, the service's first answer) beside its steps
LIMITS = ("fixed", "estimate")  # every job -t 20, or twice its expected run time (a user's estimate)


# Paper 002, Table 1 (one process per node): min, max, preferred.
TABLE1 = {"fs": (1, 20, None), "cg": (2, 32, 8), "jacobi": (2, 32, 8), "nbody": (1, 16, 1)}
# Its cluster's size, inferred from §7.5 (five jobs on 40 nodes, a 32-node job waiting until 8 are
# released, then 64 nodes allocated): 64 nodes, so its largest jobs took half of it.
PAPER_NODES = 64
# Table 4, 50 jobs: mean execution 900.3 s flexible (shrunk 32 -> 8) vs 620.26 s fixed
SCALING = math.log(900.3 / 620.26) / math.log(4)


def shapes(nodes: int) -> dict[str, tuple[int, int, int | None]]:
    """Table 1 scaled from the paper's 64 nodes to a ``nodes``-node cluster, rounded down to powers
    of two (sizes reachable from one another by the resize factor 2)."""

    def scale(n: int) -> int:
        return 2 ** int(math.log2(max(1.0, n * nodes / PAPER_NODES)))

    return {
        app: (scale(lo), scale(hi), None if pref is None else scale(pref))
        for app, (lo, hi, pref) in TABLE1.items()
    }


def generate(
    jobs: int,
    mean_gap: float,
    seed: int,
    step_seconds: float,
    steps: int,
    nodes: int = 8,
    scaling: float = SCALING,
    apps: tuple[str, ...] = APPS_PAPER,
    submit_at: str = "max",
    long_fraction: float = 0.0,
    limits: str = "fixed",
) -> list[JobSpec]:
    """The workload: ``apps`` in a seeded random mix, exponential gaps of mean ``mean_gap`` s; each
    job submitted at its maximum (or minimum) size, a step lasting about ``step_seconds`` (x0.5, x1,
    x1.5) on 4 ranks; ``long_fraction`` of the jobs run 4x the steps. ``limits``: every job asks for
    20 minutes ("fixed"), or for twice its expected run time at its submitted size ("estimate"):
    SD-Policy lends a mate's nodes only to a job that ends before the mate's limit, which equal
    limits never allow."""
    unknown = set(apps) - set(APPS_ALL)
    if not apps or unknown or submit_at not in SUBMIT_AT or limits not in LIMITS:
        raise ValueError(f"apps must be among {', '.join(APPS_ALL)}, submit_at one of {SUBMIT_AT}, "
                         f"limits one of {LIMITS}")  # fmt: skip
    if not 0 <= long_fraction <= 1:
        raise ValueError(f"the long fraction must be in [0, 1], got {long_fraction}")
    rng = random.Random(seed)
    small = {"fs": "--state-mb 8", "cg": "--n 32 --iters 25", "jacobi": "--n 64 --sweeps 5",
             "nbody": "--bodies 64 --substeps 2"}  # fmt: skip
    table = shapes(nodes)
    out, t = [], 0.0
    for i in range(jobs):
        app = rng.choice(sorted(apps))
        lo, hi, pref = table[app]
        # the step's work on one rank, so that a step on 4 ranks takes step_seconds x (0.5, 1, 1.5)
        work = step_seconds * rng.choice((0.5, 1.0, 1.5)) * 4**scaling
        # drawn only when asked for: the mixes of --long-fraction 0 stay those of earlier runs
        n_steps = steps * 4 if long_fraction and rng.random() < long_fraction else steps
        model = "--step-seconds" if app == "fs" else "--model-seconds"
        args = (f"--steps {n_steps} {model} {work:.2f} --scaling {scaling:.3f} {small[app]} "
                f"--min {lo} --max {hi}" + ("" if pref is None else f" --preferred {pref}"))  # fmt: skip
        size = hi if submit_at == "max" else lo
        expected = n_steps * work / size**scaling + START_SECONDS
        minutes = 20 if limits == "fixed" else math.ceil(2 * expected / 60)
        out.append(JobSpec(f"w{i:02d}-{app}", round(t, 2), app, args, size, lo, pref, hi, minutes))
        t += rng.expovariate(1.0 / mean_gap)
    return out


def _sh(args: list[str], env: dict[str, str]) -> str:
    res = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"{args[0]}: {res.stderr.strip()}")
    return res.stdout


def _time(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def run_mode(mode: str, policy: str, specs: list[JobSpec], workdir: Path, nodes: int) -> dict[str, Any]:
    """Submit the workload (``mode`` rigid or malleable) and wait for it; the measures."""
    from dmr_apps import script as app_script
    from slurm_ext.config import load_config
    from slurm_ext.policies import make_policy
    from slurm_ext.service import Controller, Server, ServiceOptions
    from slurm_ext.service.events import read_events
    from slurm_ext.slurm.adapter import SlurmCluster

    conf = load_config().cluster.slurm_conf
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    env["SLURM_CONF"] = str(conf)
    out_dir = workdir / mode
    out_dir.mkdir(parents=True, exist_ok=True)
    events = out_dir / "events.jsonl"
    server = None
    if mode == "malleable":
        options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, events_path=events, plan_interval=5)
        chosen = make_policy(policy.removesuffix(":async"))  # dmr:async: the apps check with icheck_status
        server = Server(Controller(SlurmCluster(slurm_conf=conf), chosen, options), port=0)
        server.start()
        env["DMR_SERVICE"] = f"{server.address[0]}:{server.address[1]}"
    else:
        env["DMR_DISABLE"] = "1"
    ids: dict[int, JobSpec] = {}
    t0 = time.monotonic()
    try:
        for spec in specs:
            time.sleep(max(0.0, t0 + spec.arrival - time.monotonic()))
            job_script = out_dir / f"{spec.name}.sh"
            asynchronous = " --async" if mode == "malleable" and policy.endswith(":async") else ""
            job_script.write_text(f"#!/bin/bash\n{sys.executable} -m dmr --ppn 1 -- {sys.executable} "
                                  f"{app_script(spec.app)} {spec.args}{asynchronous}\n")  # fmt: skip
            argv = ["sbatch", "--parsable", "-N", str(spec.size), "-t", str(spec.minutes), "-J", spec.name,
                    "-o", str(out_dir / f"{spec.name}-%j.out")]  # fmt: skip
            if mode == "malleable":
                pref = "" if spec.preferred is None else f",preferred={spec.preferred}"
                top = spec.max_size or spec.size
                argv += ["--comment", f"dmr:min={spec.min_size},max={top},factor=2{pref}"]
            ids[int(_sh([*argv, str(job_script)], env).split(";")[0])] = spec
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            left = [ln for ln in _sh(["squeue", "-h", "-o", "%i"], env).split() if int(ln) in ids]
            if not left:
                break
            time.sleep(2)
    finally:
        if server is not None:
            server.stop()
    time.sleep(1)
    acct = _sh(
        ["sacct", "-X", "-n", "-P", "-j", ",".join(map(str, ids)), "-o", "JobID,Submit,Start,End,State"], env
    )
    rows = job_rows(acct)
    resizes = [e for e in read_events(events)] if events.exists() else []
    return measures(mode, policy, ids, rows, resizes, nodes, out_dir)


def job_rows(acct: str) -> dict[int, tuple[float, float, float, str]]:
    """(submit, start, end, final state) per job from ``sacct -X -P -o JobID,Submit,Start,End,State``.

    Slurm writes a new accounting record at each resize (state RESIZING for the old one), and the
    new record's Submit is the resize time: a job's submit and start are its first record's, its
    end and state its last's.
    """
    rows: dict[int, tuple[float, float, float, str]] = {}
    for line in acct.splitlines():
        jid, sub, start, end, state = line.split("|")
        t_sub, t_start, t_end = _time(sub), _time(start), _time(end)
        if not jid.isdigit() or t_sub is None or t_start is None or t_end is None:
            continue
        old = rows.get(int(jid))
        if old is None:
            rows[int(jid)] = (t_sub, t_start, t_end, state)
        else:
            last = state if t_end >= old[2] and state != "RESIZING" else old[3]
            rows[int(jid)] = (min(old[0], t_sub), min(old[1], t_start), max(old[2], t_end), last)
    return rows


def measures(
    mode: str, policy: str, ids: dict[int, JobSpec], rows: dict, events: list[dict[str, Any]], nodes: int,
    out_dir: Path,
) -> dict[str, Any]:  # fmt: skip
    submit = min(r[0] for r in rows.values())
    end = max(r[2] for r in rows.values())
    waits = [max(0.0, r[1] - r[0]) for r in rows.values()]  # Slurm may stamp a start 1 s early
    runs = [r[2] - r[1] for r in rows.values()]
    # node-seconds: each job from its start at its submitted size, changed by its resizes
    molded = {e["job"]: e["nodes"] for e in events if e["kind"] == "molded-start" and e.get("nodes")}
    per_job = []
    busy = 0.0
    for jid, (sub, start, stop, state) in sorted(rows.items()):
        changes = sorted((e["time"], e["new"]) for e in events if e.get("job") == jid and _resized(e))
        steps = node_steps(start, stop, molded.get(jid, ids[jid].size), changes)  # molded: the size decided
        busy += sum(n * (t1 - t0) for (t0, n), (t1, _) in pairwise(steps))
        spec = ids[jid]
        per_job.append({
            "job_id": jid, "name": spec.name, "app": spec.app, "submitted_nodes": spec.size,
            "submit": sub - submit, "start": start - submit, "end": stop - submit,
            "wait_s": max(0.0, start - sub), "exec_s": stop - start, "completion_s": stop - sub,
            "resizes": len(changes), "state": state, "nodes": [[t - submit, n] for t, n in steps],
        })  # fmt: skip
    actions = {k: sum(1 for e in events if e["kind"] == k) for k in ("expand", "shrink", "failed")}
    actions["mold"] = sum(1 for e in events if e["kind"] == "mold" and e.get("ok"))
    # what the policy answered when it did not act: the bench says why a policy made no decision
    unmoved = Counter(str(e.get("reason") or "no reason given") for e in events
                      if e["kind"] == "decision" and e.get("action") == "none")  # fmt: skip
    results = [app_results(f.read_text()) for f in out_dir.glob("*.out")]  # each job's result lines
    ok = sum(1 for found in results if any(True in (r.get("ok"), r.get("checksum_ok")) for r in found))
    times = action_times(events, [r for found in results for r in found], len(ids))
    return {
        "mode": mode, "policy": policy if mode == "malleable" else "none", "jobs": len(ids),
        "completion_s": end - submit, "mean_wait_s": statistics.mean(waits),
        "mean_exec_s": statistics.mean(runs),
        "mean_job_completion_s": statistics.mean(j["completion_s"] for j in per_job),
        "utilisation": busy / (nodes * (end - submit)), "actions": actions, "results_ok": ok,
        "no_action_reasons": unmoved.most_common(3), "action_times": times,
        "states": sorted({r[3] for r in rows.values()}), "per_job": per_job,
    }  # fmt: skip


def app_results(text: str) -> list[dict[str, Any]]:
    """The ``<NAME>_RESULT {json}`` lines an application's rank 0 printed (apps/common.py), parsed;
    lines that are not one, or whose JSON is broken, left out."""
    found = []
    for line in text.splitlines():
        name, _, payload = line.partition("_RESULT ")
        if payload and name.isupper():
            with contextlib.suppress(ValueError):
                found.append(json.loads(payload))
    return [r for r in found if isinstance(r, dict)]


def action_times(
    events: list[dict[str, Any]], results: list[dict[str, Any]], jobs: int
) -> dict[str, dict[str, Any]]:
    """Paper 002's Table 2 for one run (:data:`DEFINITIONS`): for no action, expand and shrink, the
    count, the count per job and the min, max, mean and standard deviation of their seconds (no
    action as the service timed it, the resizes as the applications' ``results`` did)."""
    took: dict[str, list[float]] = {
        "none": [float(e["seconds"]) for e in events
                 if e["kind"] == "decision" and e.get("action") == "none" and e.get("seconds") is not None],
        "expand": [], "shrink": [],
    }  # fmt: skip
    for result in results:
        for _step, action, _old, _new, seconds in result.get("resizes") or []:
            if action in ("expand", "shrink"):
                took[action].append(float(seconds))
    return {
        action: {
            "quantity": len(xs),
            "per_job": len(xs) / jobs if jobs else 0.0,
            "min_s": min(xs, default=None),
            "max_s": max(xs, default=None),
            "mean_s": statistics.fmean(xs) if xs else None,
            "std_s": statistics.stdev(xs) if len(xs) > 1 else None,
        }  # fmt: skip
        for action, xs in took.items()
    }


def node_steps(
    start: float, stop: float, size: int, changes: list[tuple[float, int]]
) -> list[tuple[float, int]]:
    """A job's nodes over its run as steps ``(time, nodes from then on)``, ending with ``(stop, 0)``:
    ``size`` from ``start``, then each ``(time, new size)`` change (clipped to the run)."""
    steps = [(start, size)]
    for when, new in changes:
        at = max(start, min(when, stop))
        if at == steps[-1][0]:
            steps[-1] = (at, new)
        else:
            steps.append((at, new))
    steps.append((stop, 0))
    return steps


def table_2(runs: list[dict[str, Any]], seeds: int) -> Any:
    """Each malleable run's action times beside paper 002's Table 2 (sync for a synchronous run)."""
    from rich.table import Table

    def cells(n: int | None, per_job: float | None, lo: float | None, hi: float | None, mean: float | None,
              std: float | None) -> tuple[str, str, str]:  # fmt: skip
        def num(v: float | None) -> str:
            return "-" if v is None else f"{v:.3g}"

        count = "-" if n is None else f"{n} ({per_job:.2f}/job)"
        return count, f"{num(lo)}..{num(hi)}", f"{num(mean)} ± {num(std)}"

    table = Table("run (paper 002 Table 2)", "action", "count", "min..max s", "mean ± std s", "paper: count",
                  "paper: mean ± std s")  # fmt: skip
    for r in runs:
        if r["mode"] == "rigid" or "action_times" not in r:
            continue
        label = r["policy"] + (f", seed {r['seed']}" if seeds > 1 else "")
        paper = PAPER_TABLE_2["async" if r["policy"].endswith(":async") else "sync"]
        for action, t in r["action_times"].items():
            ours = cells(t["quantity"], t["per_job"], t["min_s"], t["max_s"], t["mean_s"], t["std_s"])
            theirs = cells(*paper[action])
            table.add_row(label, action, *ours, theirs[0], theirs[2])
    return table


def gain(malleable: float, rigid: float) -> float | None:
    """``malleable / rigid - 1``; None where the rigid run's value is 0 (no job waited)."""
    return malleable / rigid - 1 if rigid else None


def per_job_gains(rigid: list[dict[str, Any]], malleable: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Paper 002's Table 3 per-job measures: for each job, ``1 - malleable / rigid`` of its wait,
    execution and completion time (positive: better than rigid; the wait only of jobs that waited
    when rigid); their mean and standard deviation over the jobs."""
    before = {j["name"]: j for j in rigid}
    out: dict[str, dict[str, Any]] = {}
    for key in ("wait_s", "exec_s", "completion_s"):
        values = [1 - j[key] / b[key] for j in malleable if (b := before.get(j["name"])) and b[key] > 0]
        spread = statistics.stdev(values) if len(values) > 1 else None
        out[key.removesuffix("_s")] = {"mean": statistics.mean(values) if values else None, "std": spread,
                                       "n": len(values)}  # fmt: skip
    return out


def interval(values: list[float]) -> dict[str, float | int | None]:
    """Mean and the half-width of its two-sided 95% interval (Student's t; None for fewer than two
    values, the mean too for none)."""
    from slurm_ext.metrics.compare import t_quantile_975

    mean = statistics.mean(values) if values else None
    if len(values) < 2:
        return {"mean": mean, "ci95": None, "n": len(values)}
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return {"mean": mean, "ci95": half, "n": len(values)}


def plot_nodes(run: dict[str, Any], nodes: int, path: Path, title: str) -> Path:
    """Nodes per job over time, stacked (one colour per job): the run's shape at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    jobs = run["per_job"]
    times = np.unique([t for j in jobs for t, _ in j["nodes"]])
    fig, ax = plt.subplots(figsize=(10, 4))
    layers = []
    for j in jobs:
        at = np.array([t for t, _ in j["nodes"]])
        held = np.array([n for _, n in j["nodes"]])
        idx = np.searchsorted(at, times, side="right") - 1
        layers.append(np.where(idx >= 0, held[np.clip(idx, 0, None)], 0))
    ax.stackplot(times, layers, step="post", labels=[j["name"] for j in jobs], lw=0)
    ax.axhline(nodes, color="grey", ls="--", lw=0.8)
    ax.set(xlabel="seconds since the first submission", ylabel="nodes", ylim=(0, nodes * 1.05), title=title)
    if len(jobs) <= 20:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _resized(event: dict[str, Any]) -> bool:
    """A committed expansion, or a shrink (its nodes released)."""
    if event["kind"] == "shrink":
        return True
    return event["kind"] == "commit" and event.get("resize") == "expand" and bool(event.get("ok"))


def _spread(measure: dict[str, Any]) -> str:
    """'+28% ± 12' (mean ± standard deviation over the jobs), or '-'."""
    if measure["mean"] is None:
        return "-"
    return f"{100 * measure['mean']:+.0f}%" + (
        f" ± {100 * measure['std']:.0f}" if measure["std"] is not None else ""
    )


def _cell(run: dict[str, Any], key: str) -> str:
    change = run.get("gain", {}).get(key)
    return f"{run[f'{key}_s']:.0f}" + (f" ({100 * change:+.0f}%)" if change is not None else "")


def workload_cmd(
    jobs: Annotated[int, typer.Option(help="Jobs in the workload")] = 16,
    mean_gap: Annotated[
        float, typer.Option(help="Mean inter-arrival time, seconds (Poisson arrivals)")
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the job mix and arrivals")] = 1,
    seeds: Annotated[
        int,
        typer.Option(
            help="Workloads to run, seeds --seed, --seed+1, ...: each policy's gain with its 95% interval"
        ),
    ] = 1,
    steps: Annotated[int, typer.Option(help="Steps of every job")] = 10,
    step_seconds: Annotated[float, typer.Option(help="Mean step length on 4 nodes, seconds")] = 6.0,
    scaling: Annotated[
        float, typer.Option(help="Step time on N nodes ~ 1/N^A (0 < A <= 1) [default: 0.27, the paper's]")
    ] = SCALING,
    policy: Annotated[
        list[str],
        typer.Option(
            help="Policies of the malleable runs (repeat); NAME:async: the apps check asynchronously"
        ),
    ] = ["dmr"],  # noqa: B006
    apps: Annotated[
        str, typer.Option(help="Apps of the mix, comma-separated, of fs,cg,jacobi,nbody (paper 002 §7.5's)")
    ] = ",".join(APPS_PAPER),
    submit_at: Annotated[
        str, typer.Option(help="Jobs are submitted at their 'max' size (paper 002) or 'min' (paper 000)")
    ] = "max",
    long_fraction: Annotated[float, typer.Option(help="Fraction of the jobs that run 4x the steps")] = 0.0,
    limits: Annotated[
        str,
        typer.Option(help="Time limits: 'fixed' (20 min each) or 'estimate' (twice a job's expected time)"),
    ] = "fixed",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object")] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="Scripts, outputs and events [default: new /tmp dir]")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write a plot of nodes per job over time for each run here (PNG)")
    ] = None,
) -> None:
    """Paper 002's workload: rigid vs malleable (per policy), completion, wait, execution, utilisation."""
    import tempfile

    from slurm_ext.config import load_config
    from slurm_ext.policies import make_policy

    if jobs < 1 or mean_gap <= 0 or steps < 1 or step_seconds <= 0 or not 0 < scaling <= 1 or seeds < 1:
        typer.echo("error: --jobs, --steps and --seeds must be >= 1, --mean-gap and --step-seconds > 0, "
                   "--scaling in (0, 1]", err=True)  # fmt: skip
        raise typer.Exit(2)
    nodes = load_config().cluster.nodes
    try:
        mix = tuple(a.strip() for a in apps.split(",") if a.strip())
        workloads = {k: generate(jobs, mean_gap, k, step_seconds, steps, nodes, scaling, mix, submit_at,
                                 long_fraction, limits)
                     for k in range(seed, seed + seeds)}  # fmt: skip
        for name in policy:  # a bad name fails now, not after the rigid run
            make_policy(name.removesuffix(":async"))
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    where = workdir or Path(tempfile.mkdtemp(prefix="workload-", dir="/tmp"))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    runs = []
    for k, specs in workloads.items():
        base = where / f"seed{k}" if seeds > 1 else where
        if seeds > 1:
            typer.echo(f"seed {k} ({k - seed + 1} of {seeds}) ...", err=True)
        rigid = run_mode("rigid", "none", specs, base, nodes)
        rigid["seed"] = k
        runs.append(rigid)
        for name in policy:
            r = run_mode("malleable", name, specs, base / name, nodes)
            r["seed"] = k
            r["gain"] = {g: gain(r[f"{g}_s"], rigid[f"{g}_s"]) for g in GAINS}
            r["per_job_gain"] = per_job_gains(rigid["per_job"], r["per_job"])
            runs.append(r)
        for r in runs[-1 - len(policy) :]:
            label = "rigid" if r["mode"] == "rigid" else r["policy"]
            if out is not None:
                r["plot"] = str(
                    plot_nodes(r, nodes, out / f"nodes-seed{k}-{label}.png", f"seed {k}: {label}")
                )
    stated = [r for r in runs if "gain" in r]
    gains = {
        name: {
            g: interval([v for r in stated if r["policy"] == name and (v := r["gain"][g]) is not None])
            for g in GAINS
        }
        for name in policy
    }
    summary = {"workload": [asdict(s) for s in workloads[seed]], "runs": runs, "gains": gains,
               "definitions": DEFINITIONS, "paper_gain": PAPER, "seed": seed, "seeds": seeds,
               "scaling": scaling, "apps": apps, "submit_at": submit_at, "long_fraction": long_fraction,
               "limits": limits, "load": os.getloadavg()[0],
               "workdir": str(where)}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(summary))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("run", "completion s", "mean wait s", "mean exec s", "utilisation", "expands/shrinks/molds",
                  "ok")  # fmt: skip
    for r in runs:
        label = r["mode"] if r["mode"] == "rigid" else f"malleable ({r['policy']})"
        label += f", seed {r['seed']}" if seeds > 1 else ""
        acts = r["actions"]
        resizes = f"{acts['expand']}/{acts['shrink']}/{acts['mold']}"
        cells = [_cell(r, k) for k in ("completion", "mean_wait", "mean_exec")]
        table.add_row(label, *cells, f"{r['utilisation']:.2f}", resizes, f"{r['results_ok']}/{r['jobs']}")
    Console().print(table)
    per_job = Table("per job vs rigid (paper 002 Table 3)", "wait gain", "execution gain", "completion gain")
    for r in runs:
        if "per_job_gain" in r:
            label = r["policy"] + (f", seed {r['seed']}" if seeds > 1 else "")
            per_job.add_row(label, *(_spread(r["per_job_gain"][k]) for k in ("wait", "exec", "completion")))
    Console().print(per_job)
    Console().print(table_2(runs, seeds))
    if seeds > 1:
        for name, by in gains.items():
            said = ", ".join(
                f"{g.replace('_', ' ')} {100 * v['mean']:+.0f}% ± {100 * v['ci95']:.0f}"
                for g, v in by.items()
                if v["mean"] is not None and v["ci95"] is not None
            )
            Console().print(f"{name} vs rigid over {seeds} seeds (mean ± 95% interval): {said}", markup=False)
    for r in runs:
        if r["mode"] == "rigid":
            continue
        if not any(r["actions"][k] for k in ("expand", "shrink", "mold")):
            why = (
                "; ".join(f"{reason} ({n}x)" for reason, n in r["no_action_reasons"]) or "no check reached it"
            )
            Console().print(f"{r['policy']} made no decision; its answers: {why}", markup=False)
    Console().print(
        f"paper 002 (malleable vs fixed): completion {PAPER['completion']:+.0%}, wait {PAPER['wait']:+.0%}; "
        f"target: completion <= 0.7x rigid. Files in {where}"
    )
