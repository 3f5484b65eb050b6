"""The reproduce commands' shared options for where their runs go (``--on-slurm`` and its
companions), and :func:`run_sweep`: the runs executed here (the default) or as one Slurm job array,
under one progress bar, with one-line errors."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from slurm_ext.reproduce.on_slurm import ArrayOptions, TaskFailed, run_on_slurm
from slurm_ext.reproduce.runs import Execute, Row, Run, run_locally

if TYPE_CHECKING:
    from slurm_ext.slurm.adapter import SlurmCluster

OnSlurm = Annotated[
    bool,
    typer.Option("--on-slurm", help="Spread the runs over Slurm as one job array (default: run them here)"),
]
OnSlurmDir = Annotated[
    Path | None,
    typer.Option(help="With --on-slurm: folder for the runs, their rows and output; it MUST be on a file "
                      "system every node shares (default: OUT/on-slurm)"),
]  # fmt: skip
Partition = Annotated[
    str | None, typer.Option(help="With --on-slurm: the partition (default: the cluster's)")
]
TaskTime = Annotated[
    int | None,
    typer.Option(
        "--time", help="With --on-slurm: each run's time limit in minutes (default: the partition's)"
    ),
]
MaxParallel = Annotated[
    int | None, typer.Option(help="With --on-slurm: at most K runs at once (sbatch --array=...%K)")
]


def array_options(
    on_slurm: bool, out: Path, folder: Path | None, partition: str | None, minutes: int | None,
    max_parallel: int | None, name: str,
) -> ArrayOptions | None:  # fmt: skip
    """The job array the options ask for, None to run here; exit 2 on a mistake."""
    named = {
        "--on-slurm-dir": folder,
        "--partition": partition,
        "--time": minutes,
        "--max-parallel": max_parallel,
    }
    given = [opt for opt, value in named.items() if value is not None]
    if not on_slurm:
        if given:
            fail(f"{given[0]} needs --on-slurm")
        return None
    for opt, value in (("--time", minutes), ("--max-parallel", max_parallel)):
        if value is not None and value < 1:
            fail(f"{opt} must be >= 1, got {value}")
    limit = 60.0 * minutes if minutes else None
    return ArrayOptions(folder or out / "on-slurm", partition, limit, max_parallel, name)


def run_sweep(
    execute: Execute, runs: Sequence[Run], where: ArrayOptions | None, *, progress: bool
) -> list[Row]:
    """Every run's row, in run order: here one after another, or as one job array (``where``)."""
    from slurm_ext.console import progress_bar
    from slurm_ext.errors import SlurmError

    with progress_bar("runs", "runs", enabled=progress) as update:

        def done(finished: int, label: str) -> None:
            update(finished, len(runs), label)

        if where is None:
            return run_locally(execute, runs, done)
        try:
            return run_on_slurm(execute, runs, where, done, slurm_cluster())
        except SlurmError as exc:  # no Slurm, a partition it has not, ...
            fail(one_line(str(exc)))
        except TaskFailed as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: the job array is cancelled", err=True)
            raise typer.Exit(130) from None


def slurm_cluster() -> SlurmCluster:
    """The Slurm adapter: ``SLURM_CONF`` if set, else the toolkit's slurm.conf (the service's rule)."""
    from slurm_ext.config import load_config
    from slurm_ext.slurm.adapter import SlurmCluster

    return SlurmCluster(None if os.environ.get("SLURM_CONF") else load_config().slurm_conf)


def one_line(message: str) -> str:
    """A Slurm command's message on one line, without its repeated ``sbatch: error:`` prefixes."""
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
    return re.sub(r"(?:\b[\w.-]+: )?error: ", "", text)


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
