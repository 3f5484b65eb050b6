"""`slurm-ext serve`: run the control service in the foreground."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from slurm_ext.config import ConfigError, load_config
from slurm_ext.stop_signal import on_stop_signal, wait_for


def serve_cmd(
    policy: Annotated[
        str | None, typer.Option(help="Reconfiguration policy, e.g. dmr [default: conf]")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on [default: conf]")] = None,
    port: Annotated[int | None, typer.Option(help="TCP port [default: conf service.port]")] = None,
    plan_interval: Annotated[
        float,
        typer.Option(
            help="Run the policy on the whole cluster every this many seconds (0: only when a "
            "job checks); resizes for jobs not asking wait for their next check"
        ),
    ] = 5.0,
    min_efficiency: Annotated[
        float,
        typer.Option(
            help="Do not grow a job again if its last growth's measured parallel efficiency "
            "(speedup / size ratio, from the step times its ranks report) fell below this; 0: off"
        ),
    ] = 0.0,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port (same address as the service)")
    ] = None,
    events: Annotated[
        Path | None,
        typer.Option(
            help="Where decisions and resize steps are logged as JSON lines "
            "[default: <state_dir>/service/events.jsonl]"
        ),
    ] = None,
    journal_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where each resize step is recorded before it is done, for repair after a crash "
            "[default: <state_dir>/service/journal]"
        ),
    ] = None,
    expand_timeout: Annotated[
        float | None, typer.Option(help="Seconds a resizer job may wait for nodes [default: conf]")
    ] = None,
    expand_strategy: Annotated[
        str | None,
        typer.Option(
            help="How jobs grow: merge (resizer job, needs permit_job_expansion), expander (a second job "
            "hosts the new ranks) or auto (merge only where Slurm permits it) [default: conf]"
        ),
    ] = None,
    ack_timeout: Annotated[float, typer.Option(help="Seconds to wait for leaving ranks' acks")] = 30.0,
    log_file: Annotated[Path | None, typer.Option(help="Also log decisions to this file")] = None,
) -> None:
    """Answer DMR runtimes (expand / shrink / no action) and resize their jobs on the live cluster.

    Protocol: JSON lines over TCP, see slurm_ext/protocol.py. Every decision is logged with its reason.
    """
    from slurm_ext.policies import make_policy
    from slurm_ext.service import Controller, Server, ServiceOptions
    from slurm_ext.service.controller import STRATEGIES
    from slurm_ext.slurm.adapter import SlurmCluster

    try:
        cfg = load_config()
        svc = cfg.service
        pol = make_policy(policy or svc.policy)
        strategy = expand_strategy or svc.expand_strategy
        if not 0 <= min_efficiency <= 1:
            raise ValueError(f"--min-efficiency must be between 0 and 1, got {min_efficiency}")
        if strategy not in STRATEGIES:
            raise ValueError(f"--expand-strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    except (ConfigError, ValueError) as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", handlers=handlers, force=True)
    options = ServiceOptions(
        expand_timeout=expand_timeout if expand_timeout is not None else svc.expand_timeout_s,
        ack_timeout=ack_timeout,
        expand_strategy=strategy,
        journal_dir=journal_dir or cfg.cluster.state_dir / "service" / "journal",
        events_path=events or events_path(cfg.cluster.state_dir),
        plan_interval=plan_interval,
        min_efficiency=min_efficiency,
    )
    from slurm_ext.slurm.doctor import rights_at_start

    if (missing := rights_at_start(cfg.slurm_conf)) is not None:
        typer.secho(f"error: {missing.detail}; to change: {missing.fix}", fg="red", err=True)
        raise typer.Exit(1)
    backend = SlurmCluster(slurm_conf=cfg.slurm_conf)
    try:
        controller = Controller(backend, pol, options)
        server = Server(controller, host or svc.host, port or svc.port)
    except OSError as exc:
        typer.secho(
            f"error: cannot listen on {host or svc.host}:{port or svc.port}: {exc}", fg="red", err=True
        )
        raise typer.Exit(1) from None
    if metrics_port is not None:
        from prometheus_client import start_http_server

        try:
            start_http_server(
                metrics_port, addr=host or svc.host, registry=controller.events.metrics.registry
            )
        except OSError as exc:
            typer.secho(f"error: cannot serve metrics on port {metrics_port}: {exc}", fg="red", err=True)
            raise typer.Exit(1) from None
    stop = on_stop_signal()
    server.start()
    typer.echo(
        f"slurm-ext serve: listening on {server.address[0]}:{server.address[1]} "
        f"(policy {pol.name}, expand strategy {controller.strategy}"
        f"{' chosen by auto' if strategy == 'auto' else ''})"
    )
    wait_for(stop)
    server.stop()


def events_path(state_dir: Path) -> Path:
    return state_dir / "service" / "events.jsonl"


def events_cmd(
    job: Annotated[int | None, typer.Option("--job", "-j", help="Only this job's events")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line, as stored")] = False,
    path: Annotated[
        Path | None, typer.Option(help="Events file [default: <state_dir>/service/events.jsonl]")
    ] = None,
) -> None:
    """What the control service did: decisions and each resize's phases, as a table or JSON."""
    import json

    from slurm_ext.console import print_table, table
    from slurm_ext.service.events import read_events

    try:
        path = path or events_path(load_config().cluster.state_dir)
    except ConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    events = list(read_events(path, job))
    if json_out:
        for event in events:
            typer.echo(json.dumps(event))
        return
    rows = []
    for e in events:
        sizes = f"{e['old']}->{e['new']}" if "old" in e and "new" in e else ""
        phases = ", ".join(f"{k} {v:.3f}" for k, v in (e.get("phases") or {}).items())
        detail = "; ".join(str(x) for x in (e.get("action"), e.get("strategy"), e.get("reason"), phases) if x)
        seconds = f"{e['seconds']:.3f}" if isinstance(e.get("seconds"), int | float) else ""
        when = time.strftime("%H:%M:%S", time.localtime(e.get("time", 0)))
        rows.append([when, e.get("kind", ""), e.get("job", ""), e.get("policy", ""), sizes, seconds, detail])
    typer.echo(f"{len(events)} events from {path}")
    head = ["time", "kind", "job", "policy", "sizes", "seconds", "detail"]
    print_table(table(head, rows, left=2, wrap=["detail"]))
