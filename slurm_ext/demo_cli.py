"""`slurm-ext demo`."""

from __future__ import annotations

import typer

from slurm_ext.config import load_config
from slurm_ext.errors import SlurmError
from slurm_ext.slurm import SlurmCluster


def demo_cmd() -> None:
    """Run a job on the local cluster that is shrunk and then expanded, and print what happened."""
    from slurm_ext.demo import resize_demo

    cfg = load_config().cluster
    try:
        resize_demo(SlurmCluster(cfg.slurm_conf), typer.echo)
    except SlurmError as exc:
        typer.secho(
            f"error: {exc} (is the cluster up? `slurm-ext cluster up`)", fg=typer.colors.RED, err=True
        )
        raise typer.Exit(1) from exc
