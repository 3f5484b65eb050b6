"""`slurm-ext serve`: run the control service in the foreground."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from slurm_ext.config import ConfigError, load_config


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
        plan_interval=plan_interval,
    )
    backend = SlurmCluster(slurm_conf=cfg.cluster.slurm_conf if cfg.cluster.slurm_conf.exists() else None)
    try:
        controller = Controller(backend, pol, options)
        server = Server(controller, host or svc.host, port or svc.port)
    except OSError as exc:
        typer.secho(
            f"error: cannot listen on {host or svc.host}:{port or svc.port}: {exc}", fg="red", err=True
        )
        raise typer.Exit(1) from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    typer.echo(
        f"slurm-ext serve: listening on {server.address[0]}:{server.address[1]} "
        f"(policy {pol.name}, expand strategy {controller.strategy}"
        f"{' chosen by auto' if strategy == 'auto' else ''})"
    )
    stop.wait()
    server.stop()
