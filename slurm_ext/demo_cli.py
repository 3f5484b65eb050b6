"""`slurm-ext demo`."""

from __future__ import annotations

import typer

from slurm_ext.config import load_config
from slurm_ext.errors import SlurmError
from slurm_ext.slurm import SlurmCluster


def demo_cmd(
    resize_only: bool = typer.Option(False, "--resize-only", help="Only the adapter part (no MPI app)."),
    expand_strategy: str = typer.Option(
        "auto", help="How the service grows FS: merge, expander or auto (merge where Slurm permits it)"
    ),
) -> None:
    """Show elasticity on the local cluster, narrated.

    Part 1: a running job shrunk and expanded through the Slurm adapter.
    Part 2: the malleable Flexible Sleep app under the DMR control service: it grows on the idle
    cluster, shrinks so a queued rigid job can start, and finishes with its state intact.
    """
    from slurm_ext.demo import resize_demo
    from slurm_ext.malleable_demo import malleable_demo
    from slurm_ext.service.controller import STRATEGIES

    if expand_strategy not in STRATEGIES:
        typer.secho(f"error: --expand-strategy must be one of {', '.join(STRATEGIES)}", err=True)
        raise typer.Exit(2)

    slurm = SlurmCluster(load_config().cluster.slurm_conf)
    try:
        typer.secho("== 1. resizing a running job through the Slurm adapter", bold=True)
        resize_demo(slurm, typer.echo)
        if not resize_only:
            typer.secho("== 2. a malleable MPI app under the DMR control service", bold=True)
            result = malleable_demo(slurm, typer.echo, strategy=expand_strategy)
            if not result["checksum_ok"]:
                raise typer.Exit(1)
    except (SlurmError, RuntimeError, TimeoutError) as exc:
        typer.secho(
            f"error: {exc} (is the cluster up? `slurm-ext cluster up`)", fg=typer.colors.RED, err=True
        )
        raise typer.Exit(1) from exc
