"""Latency of DMR on the live local cluster (`slurm-ext bench latency`), beside paper 002's numbers.

The driver starts a control service in-process (real adapter, DMR policy, free port),
submits one 1-node job that runs this module as a worker under ``srun --mpi=pmi2``, and
reads the worker's timings plus the service's own:

- ``no_action``: rank 0's ``check_status`` round trip answered "no action" (paper: 9.4 ms avg)
- ``expand``: service side, decision -> nodes merged into the job (paper: 423 ms avg)
- ``shrink``: decision -> nodes released, acks included (paper: 425 ms avg)
- ``fs_1to2``: Flexible Sleep 1 -> 2 ranks with ``state_mb`` of state: check + resizer job +
  spawn + merge + redistribution, as the application sees it
- ``expand_spawn``: 1 -> 2 as the application sees it with no state (expand + spawn + merge)

The worker alternates ``check_status(2, 2)`` (request an expand) and ``check_status(1, 1)``
(request a shrink) through :class:`dmr.Malleable`, first without state, then with it. After
each shrink it computes one step of ``settle`` seconds at the smaller size, as a real step
loop does: Slurm refuses, to the second, a step of the same job on a node it just released,
and the service waits that second out (reported as ``credential_waits``); growing back onto
the same node within a second is an artefact of a benchmark loop, not of an application.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

PAPER = {"no_action": 0.0094, "expand": 0.423, "shrink": 0.425, "fs_1to2": None, "expand_spawn": None}
TARGET = {"no_action": 0.002, "expand": 0.5, "shrink": 0.3, "fs_1to2": 3.0, "expand_spawn": None}
LABEL = {
    "no_action": "no action round trip",
    "expand": "expand: decision -> nodes merged",
    "shrink": "shrink: decision -> nodes released",
    "fs_1to2": "FS 1->2 incl. spawn + redistribution",
    "expand_spawn": "expand 1->2 incl. spawn (no state)",
}


class BenchError(RuntimeError):
    """The benchmark cannot run (cluster down, too few idle nodes, job failed)."""


# -- statistics ------------------------------------------------------------------------------
def summarize(samples: list[float]) -> dict[str, float | int]:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(samples),
        "p50": statistics.median(ordered),
        "p95": p95,
        "mean": statistics.fmean(samples),
    }


def table(result: dict[str, Any]) -> str:
    rows = [f"{'operation':40} {'n':>4} {'p50 s':>9} {'p95 s':>9} {'paper avg':>10} {'target p50':>11}  ok"]
    for key, label in LABEL.items():
        r = result["operations"].get(key, {"n": 0})
        paper, target = PAPER[key], TARGET[key]
        ok = "" if target is None or not r.get("n") else ("yes" if r["p50"] <= target else "NO")
        p50, p95 = r.get("p50", float("nan")), r.get("p95", float("nan"))
        paper_s = "" if paper is None else f"{paper:.4f}"
        target_s = "" if target is None else f"<= {target}"
        rows.append(
            f"{label:40} {r.get('n', 0):>4} {p50:>9.4f} {p95:>9.4f} {paper_s:>10} {target_s:>11}  {ok}"
        )
    return "\n".join(rows)


# -- driver ----------------------------------------------------------------------------------
def run(
    resizes: int = 20,
    no_action: int = 200,
    state_mb: float = 1024,
    settle: float = 2.0,
    timeout: float = 1500,
) -> dict[str, Any]:
    """Run the benchmark on the local cluster; returns ``{"operations": {...}, ...}``."""
    from slurm_ext.config import load_config
    from slurm_ext.policies.dmr import DMRPolicy
    from slurm_ext.service import Controller, Server, ServiceOptions
    from slurm_ext.slurm.adapter import RESIZER_PREFIX, SlurmCluster

    cfg = load_config()
    backend = SlurmCluster(slurm_conf=cfg.cluster.slurm_conf)
    try:
        idle = backend.snapshot().free
    except Exception as exc:
        raise BenchError(f"local cluster not reachable ({exc}); run `slurm-ext cluster up`") from None
    if idle < 2:
        raise BenchError(f"needs 2 idle nodes, the cluster has {idle}")
    ctl = Controller(backend, DMRPolicy(), ServiceOptions(expand_timeout=10, snapshot_interval=0.5))
    server = Server(ctl, host="127.0.0.1", port=0)
    server.start()
    job_id: int | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="dmr-bench-") as tmp:
            out = Path(tmp) / "worker.out"
            args = f"--worker --resizes {resizes} --no-action {no_action} --state-mb {state_mb}"
            args += f" --settle {settle}"
            script = Path(tmp) / "job.sh"
            script.write_text(
                "#!/bin/bash\n"
                f"export DMR_SERVICE={server.address[0]}:{server.address[1]}\n"
                f"srun --mpi=pmi2 -n 1 {sys.executable} {Path(__file__).resolve()} {args}\n"
            )
            res = backend.cmd.run(
                ["sbatch", "--parsable", "-N", "1", "-t", str(max(5, int(timeout // 60) + 1)),
                 "-J", "dmr-bench", "-o", str(out), str(script)]
            )  # fmt: skip
            job_id = int(res.stdout.strip().split(";")[0])
            deadline = time.monotonic() + timeout
            while backend.snapshot().job(job_id) is not None:
                if time.monotonic() > deadline:
                    raise BenchError(f"benchmark job {job_id} did not finish within {timeout:.0f} s")
                time.sleep(1.0)
            text = out.read_text() if out.exists() else ""
        line = next((ln for ln in text.splitlines() if ln.startswith("BENCH_RESULT ")), None)
        if line is None:
            raise BenchError(f"benchmark job {job_id} printed no result:\n{text[-2000:]}")
        worker = json.loads(line.removeprefix("BENCH_RESULT "))
    finally:
        if job_id is not None and backend.snapshot().job(job_id) is not None:
            backend.cmd.run(["scancel", str(job_id)], check=False)
        server.stop()
        ctl.background.shutdown(wait=True)
    left = [j.job_id for j in backend.snapshot().jobs if j.name.startswith(RESIZER_PREFIX)]
    ops = {
        "no_action": summarize(worker["no_action"]),
        "expand": summarize(ctl.timings["expand"][: resizes * 2]),
        "shrink": summarize(worker["shrink"]),
        "fs_1to2": summarize(worker["fs_1to2"]),
        "expand_spawn": summarize(worker["expand_spawn"]),
    }
    return {
        "operations": ops,
        "state_mb": state_mb,
        "resizes": resizes,
        "service_shrink": summarize(ctl.timings["shrink"]),
        "credential_waits": summarize(ctl.timings["credential_wait"]),
        "settle_s": settle,
        "resizers_left": left,
        "checksum_ok": worker["checksum_ok"],
        "paper_avg": PAPER,
        "target_p50": TARGET,
    }


# -- worker (inside the job) ------------------------------------------------------------------
def worker(resizes: int, no_action: int, state_mb: float, settle: float = 2.0) -> None:
    import numpy as np

    import dmr
    from dmr.redistribute import block_range, global_checksum

    rt = dmr.runtime()
    samples: dict[str, Any] = {"no_action": []}
    if rt.joining is None:  # the original rank: the no-action round trips first
        for _ in range(no_action):
            t0 = time.perf_counter()
            action, _, _ = rt.check(1, 1)
            samples["no_action"].append(time.perf_counter() - t0)
            assert action is dmr.Action.NONE
    m = dmr.Malleable(1, 2, 2)
    m.spec = (2, 2, 2, None) if m.size == 1 else (1, 1, 2, None)
    total = 4 * resizes  # phase 1 (no state): 2*resizes steps; phase 2 (with state): 2*resizes steps
    for step in m.steps(total):
        if step == 2 * resizes - 1 and m.size == 1 and "state" not in m.arrays:
            words = int(state_mb * (1 << 20)) // 8
            lo, hi = block_range(words, 1, 0)
            m.arrays["state"] = np.arange(lo, hi, dtype=np.uint64)
            m.values["checksum"] = global_checksum(m.comm, m.arrays["state"])
        m.spec = (2, 2, 2, None) if m.size == 1 else (1, 1, 2, None)
        if m.size == 1 and step < total - 1:
            time.sleep(settle)  # one compute step at the smaller size
    ok = True
    if "state" in m.arrays:
        ok = tuple(global_checksum(m.comm, m.arrays["state"])) == tuple(m.values["checksum"])
    if m.rank == 0:
        hist = m.history
        half = 2 * resizes
        samples["expand_spawn"] = [h[4] for h in hist if h[1] == "expand" and h[0] < half]
        samples["fs_1to2"] = [h[4] for h in hist if h[1] == "expand" and h[0] >= half]
        samples["shrink"] = [h[4] for h in hist if h[1] == "shrink" and h[0] < half]
        samples["fs_shrink"] = [h[4] for h in hist if h[1] == "shrink" and h[0] >= half]
        samples["checksum_ok"] = ok
        print("BENCH_RESULT " + json.dumps(samples), flush=True)


# -- CLI -------------------------------------------------------------------------------------
bench_app = typer.Typer(help="Benchmarks on the live local cluster.", no_args_is_help=True)


@bench_app.command("latency")
def latency_cmd(
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (seconds) instead of a table")
    ] = False,
    resizes: Annotated[
        int, typer.Option(help="Expand+shrink cycles per phase (>= 20 for the issue's numbers)")
    ] = 20,
    no_action: Annotated[int, typer.Option(help="No-action round trips to time")] = 200,
    state_mb: Annotated[float, typer.Option(help="FS state in MiB for the 1->2 reconfiguration")] = 1024,
    settle: Annotated[float, typer.Option(help="Seconds of compute after each shrink")] = 2.0,
) -> None:
    """Time no-action, expand, shrink and FS 1->2 (with state) on the local cluster, beside paper 002."""
    try:
        result = run(resizes, no_action, state_mb, settle)
    except BenchError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    if json_out:
        typer.echo(json.dumps(result))
        return
    typer.echo(table(result))
    typer.echo(
        f"state {state_mb:g} MiB, checksum ok: {result['checksum_ok']}, "
        f"resizers left: {result['resizers_left']}, "
        f"credential waits: {result['credential_waits'].get('n', 0)}"
    )


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(
        description="DMR latency benchmark (worker side; see `slurm-ext bench latency`)"
    )
    ap.add_argument("--worker", action="store_true", help="run as the in-job worker")
    ap.add_argument("--resizes", type=int, default=20)
    ap.add_argument("--no-action", type=int, default=200)
    ap.add_argument("--state-mb", type=float, default=1024)
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--json", action="store_true", help="driver: print JSON")
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.resizes, a.no_action, a.state_mb, a.settle)
        return
    result = run(a.resizes, a.no_action, a.state_mb, a.settle)
    print(json.dumps(result) if a.json else table(result))


if __name__ == "__main__":
    main()
