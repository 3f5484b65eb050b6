"""Options shared by ``slurm-ext simulate/compare`` and ``ejb simulate ...`` (and ``ejb bench``):
one definition each, so a flag means the same thing, with the same default, in every command.

* ``--out/-o DIR``: files (CSV, JSON, figures) are written only when asked, to ``DIR``. No default
  directory: a run never litters the current directory, and two runs never overwrite each
  other's files in a shared default place.
* ``--no-plots``: with ``--out``, write no figures.
* ``-q/--quiet``: no progress bar. Without it, the (rich) bar shows when stderr is a terminal.
* ``--json``: one JSON document on stdout instead of tables.
* A user error (a bad value, a missing file) prints one ``error: ...`` line and exits with 2; so
  does a usage error that click finds (an unknown option, a value of the wrong type), through
  :class:`OneLineErrors`, the group class of both apps.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from slurm_ext.console import show_progress

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover -- older typer on the real click
    from click import exceptions as _click_errors  # type: ignore[no-redef]

UsageError = _click_errors.UsageError
NoArgsIsHelp = getattr(_click_errors, "NoArgsIsHelpError", ())  # click < 8.2 shows the help itself


__all__ = [
    "JsonOpt",
    "MigrationOpt",
    "NoPlotsOpt",
    "OutOpt",
    "QuietOpt",
    "ReadingOpt",
    "SeedOpt",
    "WorkloadOpt",
    "OneLineErrors",
    "fail",
    "show_progress",
]

USER_ERROR = 2  # as click's own usage errors

WorkloadOpt = Annotated[
    str,
    typer.Option(
        "--workload",
        "-w",
        help="SWF file (plain or .gz; FILE@N: the jobs of its partition N only, e.g. CEA-Curie's 10,"
        " 'standard'), 'kth-small' (bundled 500-job trace), 'synthetic', (slurm-ext"
        " simulate/compare) 'esp', or this site's accounting: 'sacct:START..END' runs"
        " `sacct --json -a -X -S START -E END` (e.g. sacct:now-7days..now), 'sacct-file:PATH' reads"
        " its saved output. The simulator has one pool of nodes: a suffix @PARTITION"
        " (sacct:now-7days..now@batch) takes that partition's jobs only, on its nodes; without it the"
        " partitions the jobs ran in are one pool.",
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


def user_exists(name: str) -> bool:
    """Whether this host knows user ``name`` (for ``--user``: a mistake is caught before anything runs)."""
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def fail(message: object) -> typer.Exit:
    """One ``error: ...`` line on stderr (the message's first line); ``raise fail(...)`` exits with 2."""
    lines = str(message).strip().splitlines()
    typer.echo(f"error: {lines[0] if lines else type(message).__name__}", err=True)
    return typer.Exit(USER_ERROR)


@contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    try:
        yield
    except NoArgsIsHelp:
        raise  # no arguments: click shows the help
    except UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        typer.echo(f"error: {' '.join(exc.format_message().split())}{hint}", err=True)
        raise typer.Exit(USER_ERROR) from None


class OneLineErrors(TyperGroup):
    """A Typer group whose usage errors (unknown option, bad value, missing argument) are one
    ``error: ...`` line on stderr and exit code 2, like the commands' own user errors; use it
    as ``typer.Typer(cls=OneLineErrors)``."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _one_line_usage_errors():
            return super().invoke(ctx)
