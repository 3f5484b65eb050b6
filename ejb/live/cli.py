"""``ejb manager``, ``ejb status`` and ``ejb cancel``: Elastic Job Bundling on the live cluster."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ejb.live.client import manager_address, request
from ejb.params import PAPER_DELTA, EJBParams
from slurm_ext.cli_options import MigrationOpt, fail, user_exists
from slurm_ext.console import print_table, table
from slurm_ext.protocol import free_port

Manager = Annotated[
    str | None,
    typer.Option("--manager", help="The EJB manager, host:port [default: $EJB_MANAGER or 127.0.0.1:7118]"),
]


def _ask(address: str | None, msg: dict[str, Any]) -> dict[str, Any]:
    where = manager_address(address)
    try:
        reply = request(where, msg)
    except (OSError, ValueError) as exc:
        typer.echo(f"error: the EJB manager at {where} does not answer ({exc})", err=True)
        raise typer.Exit(1) from None
    if not reply.get("ok"):
        raise fail(str(reply.get("error")))
    return reply


def manager_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every address)")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port for ejb-submit, ejb status/cancel and the subjobs' pilots")
    ] = 7118,
    service_port: Annotated[int, typer.Option(help="Port for the bundled applications' DMR checks")] = 7119,
    state_dir: Annotated[
        Path | None, typer.Option(help="Where the manager keeps its state [default: <state_dir>/ejb]")
    ] = None,
    o_max: Annotated[int, typer.Option("--o-max", help="Most ranks per CPU a subjob may run (O_max)")] = 4,
    migration: MigrationOpt = 10.0,
    interval: Annotated[float, typer.Option(help="Seconds between two passes over the queue")] = 1.0,
    spares: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Held subjobs ejb-submit queues per job, which the manager reshapes and releases "
            "instead of submitting subjobs as the job's owner [default: 0 as root, else 4]",
        ),
    ] = None,
) -> None:
    """Run the EJB manager: bundles jobs submitted with ejb-submit into subjobs that start now.

    Every decision is logged with its reason; the state survives a restart. Run as root it submits
    subjobs as their owner; run as a user with Slurm's Operator level (a site's service user) it
    uses spares: held subjobs ejb-submit queues as the owner, reshaped and released when needed.
    """
    from ejb.live.daemon import Daemon, run
    from slurm_ext.config import ConfigError, load_config

    try:
        cfg = load_config()
        params = EJBParams(min_procs=2, o_max=o_max, migration=migration, delta=PAPER_DELTA)
    except (ConfigError, ValueError) as exc:
        raise fail(str(exc)) from None
    from slurm_ext.slurm.doctor import rights_at_start

    if (missing := rights_at_start(cfg.slurm_conf)) is not None:
        typer.echo(f"error: {missing.detail}; to change: {missing.fix}", err=True)
        raise typer.Exit(1)
    try:
        where = state_dir or cfg.cluster.state_dir / "ejb"
        daemon = Daemon(where, params, host, port, service_port, interval, cfg.slurm_conf, spares)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}/{service_port}: {exc}", err=True)
        raise typer.Exit(1) from None
    run(daemon)


def status_cmd(
    job: Annotated[int | None, typer.Argument(help="A bundled job (J0's id); default: all")] = None,
    manager: Manager = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object")] = False,
    events: Annotated[
        bool, typer.Option("--events", help="Also list each job's decisions and reasons")
    ] = False,
) -> None:
    """Bundled jobs: target, J0, subjobs, progress, migrations."""
    reply = _ask(manager, {"op": "status", "eid": job})
    if as_json:
        typer.echo(json.dumps(reply))
        return
    console = Console()
    rows = []
    for app in reply["apps"]:
        subs = " ".join(
            f"{k}={s['job_id']}:{s['nodes']}:{s['state']}{'*' if s['members'] else ''}"
            for k, s in sorted(app["subjobs"].items(), key=lambda kv: int(kv[0]))
        )
        prog = "-" if app["progress"] is None else f"{100 * app['progress']:.0f}%"
        shape = f"{app['nodes']} x {app['limit']:.0f}s"
        rows.append([app["eid"], app["owner"], app["phase"], shape, prog, subs, app["migrations"]])
    subjobs = "subjobs (key=job:nodes:state)"
    head = ["job (J0)", "user", "state", "P x R", "progress", subjobs, "migrations"]
    print_table(table(head, rows, left=3, wrap=[subjobs]))
    console.print("* = ranks of the application run there")
    for app in reply["apps"]:
        if app.get("command"):
            console.print(
                f"{app['eid']}  submitted as: {app['command']}", markup=False, highlight=False, soft_wrap=True
            )
    if events:
        for app in reply["apps"]:
            for t, what in app["events"]:
                console.print(f"{app['eid']}  {time.strftime('%H:%M:%S', time.localtime(t))}  {what}")


def cancel_cmd(
    job: Annotated[int, typer.Argument(help="The bundled job (J0's id, as ejb-submit printed it)")],
    manager: Manager = None,
) -> None:
    """Cancel a bundled job: J0 and every subjob EJB submitted for it, nothing else."""
    reply = _ask(manager, {"op": "cancel", "eid": job})
    cancelled = reply.get("cancelled", [])
    typer.echo(
        f"cancelled job {job}" + (f" (Slurm jobs {', '.join(map(str, cancelled))})" if cancelled else "")
    )


def _scenario_setup(workdir: Path | None) -> tuple[Path, Path | None]:
    import tempfile

    from slurm_ext.config import ConfigError, load_config

    try:
        conf = load_config().cluster.slurm_conf
    except ConfigError as exc:
        raise fail(str(exc)) from None
    where = workdir or Path(tempfile.mkdtemp(prefix="ejb-live-", dir="/tmp"))
    where.mkdir(parents=True, exist_ok=True)
    return where, conf if conf.exists() else None


def _with_manager(
    workdir: Path,
    conf: Path | None,
    run: Any,
    *args: str,
    host: str = "127.0.0.1",
    running: str | None = None,
) -> Any:
    """Run ``run(address)`` with the manager at ``running``, else with a fresh one of its own
    listening on ``host`` (``args``: its options; stopped after)."""
    from ejb.live import scenario

    proc = None
    if running is None:
        port = free_port()
        log = workdir / "manager.log"
        proc = scenario.start_manager(workdir / "state", log, port, free_port(), conf, *args, host=host)
    try:
        return run(running or f"127.0.0.1:{port}")
    except scenario.NotBundled as exc:
        logged = f"the manager's log is {log}" if proc else f"see the log of the manager at {running}"
        typer.echo(f"error: {exc}; {logged}", err=True)
        raise typer.Exit(1) from None
    finally:
        if proc is not None:
            scenario.stop_manager(proc)


def demo_cmd(
    workdir: Annotated[
        Path | None, typer.Option(help="Where job scripts and outputs go [default: a new /tmp dir]")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (progress on stderr)")] = False,
    partition: Annotated[
        str, typer.Option(help="Where the jobs go, sized to it [default: Slurm's default partition]")
    ] = "",
    user: Annotated[
        str | None,
        typer.Option(
            help="Submit the job and the background job as this user, the demo's own manager staying "
            "this command's (root) [default: this command's user]"
        ),
    ] = None,
    docker: Annotated[
        bool, typer.Option("--docker", help="Run the demo in the dockerized cluster's login container")
    ] = False,
    manager: Annotated[
        str | None,
        typer.Option(
            "--manager",
            help="Bundle through the EJB manager running at host:port (a site's, which may be an "
            "Operator's using spares) [default: one of the demo's own, started and stopped with it]",
        ),
    ] = None,
    manager_host: Annotated[
        str,
        typer.Option(help="Address the demo's own manager listens on (0.0.0.0: where nodes are other hosts)"),
    ] = "127.0.0.1",
) -> None:
    """Show EJB on the local cluster (about two minutes): a job that would wait behind a rigid one
    starts at once in a subjob on the free nodes, moves to its own job when that starts, and
    finishes with the right result. 6 nodes behind 4 busy ones where the partition has 8 idle nodes
    or more; on 3 to 7, the same shape scaled down (a node or two left free for good)."""
    from ejb.live import scenario

    if user is not None and not docker and not user_exists(user):
        raise fail(f"--user {user}: no such user here")
    if docker:
        _in_login_container(partition, user, manager, as_json)
    t0 = time.monotonic()
    where, conf = _scenario_setup(workdir)
    console = Console(stderr=as_json)
    slurm = scenario.slurm_of(conf)
    if partition and not scenario.partition_nodes(slurm, partition):
        raise fail(
            f"--partition {partition}: no such partition here (sinfo lists: {', '.join(slurm.partitions())})"
        )
    try:
        shape = scenario.WIDE.fitted(len(scenario.idle_nodes(slurm, partition)), partition, whole=True)
    except ValueError as exc:
        raise fail(f"--partition {partition or '(default)'}: {exc}") from None

    def run(address: str) -> scenario.Outcome:
        return scenario.run_once("ejb", shape, where, conf, address, progress=console.print, user=user)

    out = _with_manager(where, conf, run, host=manager_host, running=manager)
    res = out.result or {}
    left = scenario.leftover(slurm, out.job)
    hosts = _subjob_hosts(out.status)
    in_subjob = any(key != "0" for key in hosts)  # what the demo shows: the job started in a subjob
    ok = bool(res.get("checksum_ok")) and not left and in_subjob
    if as_json:
        summary = {"job": out.job, "wait": out.wait, "turnaround": out.turnaround, "result": out.result,
                   "status": out.status, "leftover_jobs": left, "workdir": str(where), "user": user,
                   "partition": partition, "subjob_hosts": hosts, "started_in_a_subjob": in_subjob,
                   "seconds": time.monotonic() - t0, "ok": ok}  # fmt: skip
        typer.echo(json.dumps(summary))
    else:
        console.print(
            f"job {out.job}: waited {out.wait:.1f} s, turnaround {out.turnaround:.1f} s (under sbatch it "
            f"would wait about {shape.background_seconds} s for the background job)"
        )
        if out.status:
            for t, what in out.status["events"]:
                console.print(f"  {time.strftime('%H:%M:%S', time.localtime(t))}  {what}")
        console.print(f"FS result: checksum ok = {res.get('checksum_ok')}, resizes = {res.get('resizes')}")
        console.print(f"jobs of EJB left in the queue: {left or 'none'}; files in {where}")
        if not in_subjob:
            console.print("EJB started no subjob: the job waited as under sbatch (see the events above)")
    if not ok:
        raise typer.Exit(1)


def _subjob_hosts(status: dict[str, Any] | None) -> dict[str, list[str]]:
    """The nodes of each subjob that ran (J0 is key "0")."""
    subjobs = (status or {}).get("subjobs", {})
    return {key: list(s.get("hosts") or []) for key, s in subjobs.items() if s.get("job_id")}


def _in_login_container(partition: str, user: str | None, manager: str | None, as_json: bool) -> None:
    """``ejb demo`` inside the login container (``manager``: an address there): its own manager
    listens where the nodes reach it, its files go to the volume every node mounts."""
    from slurm_ext.containers.compose import SHARED
    from slurm_ext.local.docker_cli import run_in_login

    workdir = f"{SHARED}/ejb-demo-{user or 'root'}-{time.strftime('%Y%m%d-%H%M%S')}"
    args = ["python3", "-m", "ejb", "demo", "--manager-host", "0.0.0.0", "--workdir", workdir]
    args += (["--partition", partition] if partition else []) + (["--user", user] if user else [])
    args += ["--manager", manager] if manager else []
    run_in_login(args + (["--json"] if as_json else []), SHARED, quiet=as_json)


def bench_live_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object")] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="Where job scripts and outputs go [default: a new /tmp dir]")
    ] = None,
    background_seconds: Annotated[int, typer.Option(help="How long the rigid background job runs")] = 60,
    steps: Annotated[int, typer.Option(help="Steps of the job (one second each at full size)")] = 40,
    spares: Annotated[
        int | None,
        typer.Option(min=0, help="The manager's --spares (subjobs made of held spares, as when not root)"),
    ] = None,
) -> None:
    """The same job behind the same background load, through sbatch and through ejb-submit."""
    from ejb.live import scenario

    where, conf = _scenario_setup(workdir)
    shape = scenario.Shape(background_seconds=background_seconds, steps=steps)
    say = (lambda _m: None) if as_json else Console(stderr=True).print
    plain = scenario.run_once("sbatch", shape, where, conf, progress=say)
    probe: dict[str, Any] = {}

    def run(address: str) -> scenario.Outcome:
        out = scenario.run_once("ejb", shape, where, conf, address, progress=say)
        probe.update(request(address, {"op": "status"})["probe"])
        return out

    ejb = _with_manager(where, conf, run, *([] if spares is None else ["--spares", str(spares)]))
    summary = {
        "sbatch": {"turnaround": plain.turnaround, "wait": plain.wait},
        "ejb": {"turnaround": ejb.turnaround, "wait": ejb.wait},
        "ratio": ejb.turnaround / plain.turnaround,
        "subjobs": len([s for s in (ejb.status or {}).get("subjobs", {}).values() if s["job_id"]]) - 1,
        "migrations": (ejb.status or {}).get("migrations", 0),
        "result_match": _same_result(plain.result, ejb.result),
        "leftover_jobs": len(scenario.leftover(scenario.slurm_of(conf), ejb.job)),
        "probe_p50_s": probe.get("p50"),
        "probe_n": probe.get("n", 0),
        "spares": spares,
        "shape": {"background_nodes": shape.background_nodes, "background_seconds": shape.background_seconds,
                  "nodes": shape.nodes, "ppn": shape.ppn, "steps": shape.steps},
        "load": os.getloadavg()[0],
    }  # fmt: skip
    if as_json:
        typer.echo(json.dumps(summary))
        return
    p50 = summary["probe_p50_s"]
    rows = [
        ["turnaround s", f"{plain.turnaround:.1f}", f"{ejb.turnaround:.1f}", "ejb <= 0.8 x sbatch"],
        ["wait s", f"{plain.wait:.1f}", f"{ejb.wait:.1f}", ""],
        ["subjobs / migrations", "", f"{summary['subjobs']} / {summary['migrations']}", ""],
        [
            "result match / leftover jobs",
            "",
            f"{summary['result_match']} / {summary['leftover_jobs']}",
            "true / 0",
        ],
        ["showbf probe p50 ms", "", "-" if p50 is None else f"{1e3 * p50:.1f}", "<= 50"],
    ]
    print_table(table(["", "sbatch", "ejb-submit", "target"], rows))
    Console().print(f"ratio {summary['ratio']:.2f}; load average {summary['load']:.2f}; files in {where}")


def _same_result(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Both runs printed FS's result, with the same checksum, and it checked out."""
    return bool(a and b and a["checksum"] == b["checksum"] and a["checksum_ok"] and b["checksum_ok"])


def register(app: typer.Typer) -> None:
    app.command("manager")(manager_cmd)
    app.command("status")(status_cmd)
    app.command("cancel")(cancel_cmd)
    app.command("demo")(demo_cmd)
    from ejb.experiments.bench_cli import BENCH_HELP

    bench = typer.Typer(help=BENCH_HELP, no_args_is_help=True)
    bench.command("live")(bench_live_cmd)
    app.add_typer(bench, name="bench")
