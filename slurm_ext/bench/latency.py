"""Latency of DMR on the live local cluster (`slurm-ext bench latency`), beside paper 002's numbers.

The driver starts a control service in-process (real adapter, DMR policy, the chosen expansion
strategy, free port), submits one 2-node job that runs this module as a worker under
``dmr-run`` (one rank per node), and reads the worker's timings plus the service's own:

- ``no_action``: rank 0's ``check_status`` round trip answered "no action" (paper: 9.4 ms avg)
- ``expand``: service side, decision -> new nodes in the application's hands (merged into its
  job, or the expander job running on them)
- ``expand_total``: as the application sees it, ``check_status`` -> new ranks computing:
  decision, nodes, launch, connect + merge and redistribution of the state (paper: 423 ms
  avg; its times include the runtime's reconfiguration, so compare with this row)
- ``shrink``: service side, decision -> leaving ranks gone (acks) and their nodes back to Slurm
  (paper: 425 ms avg); every shrink
- ``shrink_below_launch``: the shrinks among them to fewer nodes than the job was launched on
- ``shrink_app``: as the application sees it, ``check_status`` -> computing again on fewer ranks
  (includes the decision's snapshot of the cluster and the redistribution)

The worker is this module's :func:`worker` (mpi4py, ``--app python``) or its C twin
``latency_worker.c`` on libdmr (``--app c``, compiled for the run with ``dmr-config``'s flags).
Launched on 2 nodes, it times the no-action round trips, then repeats the cycle
2 -> 1 -> 2 -> 4 -> 2 nodes (each a ``check_status(n, n)``), carrying ``state_mb`` of
block-distributed state that it checks at the end. After each shrink it computes one step of
``settle`` seconds at the smaller size, as a real step loop does: Slurm refuses, to the
second, a step of the same job on a node it just released, and the service waits that second
out (reported as ``credential_waits``); growing back onto the same node within a second is an
artefact of a benchmark loop, not of an application.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from slurm_ext.backend import ClusterBackend

LAUNCH_NODES = 2
CYCLE = (1, 2, 4, 2)  # nodes asked for at successive steps, starting from the launch size
RETRIES, RETRY_GAP = 20, 0.25  # a cycle step answered "no action" is asked again (latency_worker.c too)
STRATEGIES = ("merge", "expander")
APPS = ("python", "c")
PAPER = {"no_action": 0.0094, "expand": None, "expand_total": 0.423, "shrink": 0.425}
# targets (p50, idle machine) from the issue; expand_total's depends on the strategy
TARGET = {
    "merge": {"no_action": 0.001, "expand_total": 1.0, "shrink": 0.25},
    "expander": {"no_action": 0.001, "expand_total": 1.5, "shrink": 0.25},
}
LABEL = {
    "no_action": "no action: check round trip",
    "expand": "expand: decision -> nodes held",
    "expand_total": "expand: check -> new ranks computing",
    "shrink": "shrink: decision -> nodes back to Slurm",
    "shrink_below_launch": "shrink below the launch size",
    "shrink_app": "shrink: check -> computing again",
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
    from slurm_ext.console import table as cli_table
    from slurm_ext.console import table_text

    target = TARGET[result["strategy"]]
    rows = []
    for key, label in LABEL.items():
        r = result["operations"].get(key, {"n": 0})
        paper, goal = PAPER.get(key), target.get(key)
        ok = "" if goal is None or not r.get("n") else ("yes" if r["p50"] <= goal else "NO")
        p50, p95 = r.get("p50", float("nan")), r.get("p95", float("nan"))
        paper_s = "" if paper is None else f"{paper:.4f}"
        goal_s = "" if goal is None else f"<= {goal}"
        rows.append([label, r.get("n", 0), f"{p50:.4f}", f"{p95:.4f}", paper_s, goal_s, ok])
    head = ["operation", "n", "p50 s", "p95 s", "paper avg", "target p50", "ok"]
    return table_text(cli_table(head, rows))


# -- driver ----------------------------------------------------------------------------------
def _quiet(backend: ClusterBackend, wait: float = 30.0) -> int:
    """Idle nodes, once every node is idle or ``wait`` seconds have passed: nodes a job that just
    ended still completes would make the first expansions wait or be refused (seen in CI, right
    after another test's job). Another user's jobs are waited for ``wait`` seconds only."""
    deadline = time.monotonic() + wait
    snap = backend.snapshot()
    while snap.free < snap.total_nodes and time.monotonic() < deadline:
        time.sleep(0.5)
        snap = backend.snapshot()
    return snap.free


def run(
    strategy: str = "merge",
    cycles: int = 10,
    no_action: int = 200,
    state_mb: float = 64,
    settle: float = 2.0,
    timeout: float = 1500,
    app: str = "python",
    events_out: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark on the local cluster; returns ``{"operations": {...}, ...}``. The service's
    events log (JSON lines: every decision with its reason) is kept at ``events_out`` if given."""
    from slurm_ext.config import load_config
    from slurm_ext.policies.dmr import DMRPolicy
    from slurm_ext.service import Controller, Server, ServiceOptions
    from slurm_ext.slurm.adapter import EXPANDER_PREFIX, RESIZER_PREFIX, SlurmCluster

    if strategy not in STRATEGIES:
        raise BenchError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if app not in APPS:
        raise BenchError(f"--app must be one of {', '.join(APPS)}, got {app!r}")
    cfg = load_config()
    backend = SlurmCluster(slurm_conf=cfg.cluster.slurm_conf)
    try:
        idle = _quiet(backend)
    except Exception as exc:
        raise BenchError(f"local cluster not reachable ({exc}); run `slurm-ext cluster up`") from None
    if idle < max(CYCLE):
        raise BenchError(f"needs {max(CYCLE)} idle nodes, the cluster has {idle}")
    if strategy == "merge" and not backend.expansion_permitted():
        raise BenchError("--strategy merge needs permit_job_expansion (`slurm-ext cluster up --expansion`)")
    events = Path(tempfile.mkdtemp(prefix="dmr-bench-events-")) / "events.jsonl"
    options = ServiceOptions(expand_timeout=10, snapshot_interval=0.5, expand_strategy=strategy,
                             events_path=events)  # fmt: skip
    ctl = Controller(backend, DMRPolicy(), options)
    server = Server(ctl, host="127.0.0.1", port=0)
    server.start()
    job_id: int | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="dmr-bench-") as tmp:
            out = Path(tmp) / "worker.out"
            script = Path(tmp) / "job.sh"
            command = worker_command(app, Path(tmp), cycles, no_action, state_mb, settle)
            script.write_text(
                "#!/bin/bash\n"
                f"export DMR_SERVICE={server.address[0]}:{server.address[1]}\n"
                f"{sys.executable} -m dmr --ppn 1 -- {command}\n"
            )
            res = backend.cmd.run(
                ["sbatch", "--parsable", "-N", str(LAUNCH_NODES), "--ntasks-per-node=1",
                 "-t", str(max(5, int(timeout // 60) + 1)), "-J", "dmr-bench", "-o", str(out), str(script)]
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
        worker_result = json.loads(line.removeprefix("BENCH_RESULT "))
    finally:
        if job_id is not None and backend.snapshot().job(job_id) is not None:
            backend.cmd.run(["scancel", str(job_id)], check=False)
        server.stop()
        ctl.background.shutdown(wait=True)
    left = [j.job_id for j in backend.snapshot().jobs if j.name.startswith((RESIZER_PREFIX, EXPANDER_PREFIX))]
    service_shrinks = ctl.timings["shrink"]  # one job: in the order of the app's shrinks
    below = [
        t for t, new in zip(service_shrinks, worker_result["shrink_to"], strict=False) if new < LAUNCH_NODES
    ]
    ops = {
        "no_action": summarize(worker_result["no_action"]),
        "expand": summarize(ctl.timings["expand"]),
        "expand_total": summarize(worker_result["expand_total"]),
        "shrink": summarize(service_shrinks),
        "shrink_below_launch": summarize(below),
        "shrink_app": summarize(worker_result["shrink_app"]),
    }
    return {
        "strategy": strategy,
        "app": app,
        "operations": ops,
        **ops,
        "state_mb": state_mb,
        "cycles": cycles,
        "credential_waits": summarize(ctl.timings["credential_wait"]),
        "settle_s": settle,
        "helpers_left": left,
        "answers": answers(events, keep=events_out),
        "events": str(events_out) if events_out else None,
        "checksum_ok": worker_result["checksum_ok"],
        "paper_avg": PAPER,
        "target_p50": TARGET[strategy],
    }


def answers(events: Path, last: int = 8, keep: Path | None = None) -> list[str]:
    """The service's last ``last`` answers to the worker ("shrink 2->1: why", "none 1->1: why"), the
    cycle's checks coming after the no-action ones: what says why a cycle did not resize. The events
    file goes with it (copied to ``keep`` first, if given)."""
    from slurm_ext.service.events import read_events

    said = [e for e in read_events(events) if e.get("kind") == "decision"][-last:]
    if keep is not None and events.exists():
        shutil.copyfile(events, keep)
    shutil.rmtree(events.parent, ignore_errors=True)
    return [f"{e.get('action')} {e.get('old')}->{e.get('new')}: {e.get('reason') or ''}" for e in said]


def worker_command(app: str, tmp: Path, cycles: int, no_action: int, state_mb: float, settle: float) -> str:
    """The worker's command line in the job: this module under Python, or the C worker built now."""
    if app == "c":
        from dmr.toolchain import ToolchainError, compile_program

        try:
            prog = compile_program(Path(__file__).with_name("latency_worker.c"), tmp / "latency_worker")
        except ToolchainError as exc:
            raise BenchError(f"cannot build the C worker: {exc}") from None
        return f"{prog} {cycles} {no_action} {state_mb} {settle}"
    args = f"--worker --cycles {cycles} --no-action {no_action} --state-mb {state_mb} --settle {settle}"
    return f"{sys.executable} {Path(__file__).resolve()} {args}"


# -- worker (inside the job) ------------------------------------------------------------------
def factor_between(a: int, b: int) -> int:
    """The DMR factor that takes ``a`` ranks to ``b`` (or back)."""
    big, small = max(a, b), min(a, b)
    return big // small if big % small == 0 and big > small else 2


def worker(cycles: int, no_action: int, state_mb: float, settle: float = 2.0) -> None:
    import numpy as np

    import dmr
    from dmr.redistribute import block_range, global_checksum

    m = dmr.Malleable(1, max(CYCLE), 2)
    samples: dict[str, Any] = {"no_action": []}
    if not m.joined:  # the ranks launched with the job: no-action round trips, then the state
        for _ in range(no_action):
            t0 = time.perf_counter()
            action, _, _ = m.runtime.check(m.size, m.size, 2)
            samples["no_action"].append(time.perf_counter() - t0)
            assert action is dmr.Action.NONE
        words = int(state_mb * (1 << 20)) // 8
        lo, hi = block_range(words, m.size, m.rank)
        m.arrays["state"] = np.arange(lo, hi, dtype=np.uint64)
        m.values["checksum"] = global_checksum(m.comm, m.arrays["state"])

    def spec(step: int) -> tuple[int, int, int]:
        want = CYCLE[step % len(CYCLE)]
        return want, want, factor_between(m.size, want)

    for step in m.steps(len(CYCLE) * cycles, spec=spec):
        for _ in range(RETRIES):  # a step answered "no action" (Slurm slow to answer, a node still
            if m.size == CYCLE[step % len(CYCLE)]:  # completing) is asked again: each step resizes
                break
            time.sleep(RETRY_GAP)
            m.check(spec(step))
        if m.history and m.history[-1][0] == m.step and m.history[-1][1] == "shrink":
            time.sleep(settle)  # one compute step at the smaller size
    ok = tuple(global_checksum(m.comm, m.arrays["state"])) == tuple(m.values["checksum"])
    if m.rank == 0:
        hist = m.history  # (step, action, old ranks, new ranks, seconds); one rank per node
        samples["expand_total"] = [h[4] for h in hist if h[1] == "expand"]
        samples["shrink_app"] = [h[4] for h in hist if h[1] == "shrink"]
        samples["shrink_to"] = [h[3] for h in hist if h[1] == "shrink"]
        samples["checksum_ok"] = ok
        print("BENCH_RESULT " + json.dumps(samples), flush=True)


# -- CLI -------------------------------------------------------------------------------------
def latency_cmd(
    strategy: Annotated[
        str, typer.Option(help="How the service grows the job: merge (resizer job) or expander (second job)")
    ] = "merge",
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (seconds) instead of a table")
    ] = False,
    cycles: Annotated[
        int, typer.Option(help="Cycles of 2->1->2->4->2 nodes (two expands and two shrinks each)")
    ] = 10,
    no_action: Annotated[int, typer.Option(help="No-action round trips to time")] = 200,
    state_mb: Annotated[float, typer.Option(help="MiB of block-distributed state carried along")] = 64,
    settle: Annotated[float, typer.Option(help="Seconds of compute after each shrink")] = 2.0,
    app: Annotated[
        str, typer.Option(help="The worker: python (mpi4py, dmr) or c (libdmr, dmr.h; needs a C compiler)")
    ] = "python",
    events: Annotated[
        Path | None,
        typer.Option(help="Keep the service's events log here (JSON lines: each decision and why)"),
    ] = None,
) -> None:
    """Time no-action, expand and shrink on the local cluster, beside paper 002's Table 2."""
    if cycles < 1 or no_action < 1 or state_mb < 0 or settle < 0:
        typer.secho("error: --cycles and --no-action must be >= 1, --state-mb and --settle >= 0", err=True)
        raise typer.Exit(2)
    if events is not None:
        try:
            events.parent.mkdir(parents=True, exist_ok=True)
            events.touch()
        except OSError as exc:
            typer.secho(f"error: cannot write --events {events}: {exc.strerror}", err=True)
            raise typer.Exit(2) from None
    try:
        result = run(strategy, cycles, no_action, state_mb, settle, app=app, events_out=events)
    except BenchError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    if json_out:
        typer.echo(json.dumps(result))
        return
    typer.echo(
        f"strategy {strategy}, {app} worker, launched on {LAUNCH_NODES} nodes, cycles of {CYCLE} nodes, "
        "1 rank per node"
    )
    typer.echo(table(result))
    typer.echo(
        f"state {state_mb:g} MiB, checksum ok: {result['checksum_ok']}, "
        f"resizer/expander jobs left: {result['helpers_left']}, "
        f"credential waits: {result['credential_waits'].get('n', 0)}"
    )
    typer.echo(
        "rows: no action = check round trip; expand: decision -> nodes held = service side, until the\n"
        "nodes are in the job (merge) or the expander job runs on them; expand: check -> new ranks\n"
        "computing = the app's view (launch, connect, merge, redistribution); shrink: decision -> nodes\n"
        "back to Slurm = service side, leaving ranks' acks included; shrink: check -> computing again =\n"
        "the app's view. Paper 002 Table 2 times the runtime's operations: compare with the app's view."
    )


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(
        description="DMR latency benchmark (worker side; see `slurm-ext bench latency`)"
    )
    ap.add_argument("--worker", action="store_true", help="run as the in-job worker")
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--no-action", type=int, default=200)
    ap.add_argument("--state-mb", type=float, default=64)
    ap.add_argument("--settle", type=float, default=2.0)
    a = ap.parse_args(argv)
    if not a.worker:
        ap.error("run the benchmark with `slurm-ext bench latency`")
    worker(a.cycles, a.no_action, a.state_mb, a.settle)


if __name__ == "__main__":
    main()
