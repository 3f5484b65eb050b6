"""Options shared by ``slurm-ext simulate/compare`` and ``ejb simulate ...`` (and ``ejb bench``):
one definition each, so a flag means the same thing, with the same default, in every command.

* ``--out/-o DIR``: files (CSV, JSON, figures) are written only when asked, to ``DIR``. No default
  directory: a run never litters the current directory, and two runs never overwrite each
  other's files in a shared default place.
* ``--no-plots``: with ``--out``, write no figures.
* ``-q/--quiet``: no progress bar. Without it, the (rich) bar shows when stderr is a terminal.
* ``--json``: one JSON document on stdout instead of tables.
* A user error (a bad value, a missing file) prints one ``error: ...`` line and exits with 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from slurm_ext.console import show_progress

__all__ = [
    "JsonOpt",
    "MigrationOpt",
    "NoPlotsOpt",
    "OutOpt",
    "QuietOpt",
    "ReadingOpt",
    "SeedOpt",
    "WorkloadOpt",
    "fail",
    "show_progress",
]

USER_ERROR = 2  # as click's own usage errors

WorkloadOpt = Annotated[
    str,
    typer.Option(
        "--workload",
        "-w",
        help="SWF file (plain or .gz), 'kth-small' (bundled 500-job trace), 'synthetic' or (slurm-ext"
        " simulate/compare) 'esp'.",
    ),
]
ReadingOpt = Annotated[
    str,
    typer.Option(
        "--swf-reading",
        help="How SWF fields are read (slurm_ext.workloads.reading): 'default' (requested processors,"
        " jobs with no run time skipped, jobs killed at their requested time), 'pyss' (as the EJB"
        " paper's simulator PYSS), 'paper' (pyss, but a missing requested time is the run time), or a"
        " preset with key=value overrides, e.g. 'paper,size=requested'.",
    ),
]
SeedOpt = Annotated[int, typer.Option(help="Seed for synthetic workloads and the malleable choice.")]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Write the CSV/JSON files and figures to this directory (nothing is written without it).",
    ),
]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="With --out: write no figures.")]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar (shown on stderr when it is a terminal).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
MigrationOpt = Annotated[
    float, typer.Option("--migration", help="Seconds a migration costs, λ (EJB-sched's choices).")
]


def fail(message: object) -> typer.Exit:
    """One ``error: ...`` line on stderr (the message's first line); ``raise fail(...)`` exits with 2."""
    lines = str(message).strip().splitlines()
    typer.echo(f"error: {lines[0] if lines else type(message).__name__}", err=True)
    return typer.Exit(USER_ERROR)
