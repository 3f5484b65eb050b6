"""Rich output shared by the CLIs (``slurm-ext``, ``ejb``): one progress bar style on stderr and one
table style on stdout."""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

Update = Callable[..., None]  # update(done, total, note="")


class RateColumn(ProgressColumn):
    """``123.4 targets/s`` (rich's running estimate of the speed)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-" if speed is None else f"{speed:,.1f} {self.unit}/s", style="progress.data.speed")


def show_progress(quiet: bool) -> bool:
    """The CLIs' rule: a progress bar when stderr is a terminal, unless ``-q/--quiet``."""
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress_bar(label: str, unit: str, *, enabled: bool = True, every: float = 0.1) -> Iterator[Update]:
    """Yields ``update(done, total, note="")``; draws nothing when not ``enabled``. The bar is
    redrawn from ``update`` (at most every ``every`` seconds): no refresh thread, so forking worker
    processes under it is safe. ``note`` is shown after the bar (e.g. the last point of a sweep)."""
    if not enabled:
        yield lambda done, total, note="": None
        return
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
        console=Console(stderr=True),
        auto_refresh=False,
    )
    task = bar.add_task(label, total=None, note="")
    last = [0.0]

    def update(done: int, total: int, note: str | None = None) -> None:
        if note is None:
            bar.update(task, completed=done, total=total)
        else:
            bar.update(task, completed=done, total=total, note=note)
        now = time.monotonic()
        if now - last[0] >= every or done >= total:
            last[0] = now
            bar.refresh()

    with bar:
        yield update


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, left: int = 1, wrap: Sequence[str] = ()
) -> Table:
    """The CLIs' table: a rule under the header; the first ``left`` columns (labels) left-aligned,
    the others right-aligned so that numbers line up. Cells are shown with ``str``, never as markup.
    Columns named in ``wrap`` may fold to fit a terminal (print the table with :func:`print_table`)."""
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for k, h in enumerate(headers):
        folds = h in wrap
        t.add_column(
            Text(h),
            justify="left" if k < left else "right",
            no_wrap=not folds,
            overflow="fold" if folds else "ellipsis",
        )
    for r in rows:
        t.add_row(*(Text(str(c)) for c in r))
    return t


def table_text(t: Table) -> str:
    """``t`` as plain text at its natural width (no wrapping, no colour): for stdout, files and tests."""
    out = io.StringIO()
    Console(file=out, width=10_000, color_system=None, force_terminal=False, legacy_windows=False).print(t)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def print_table(t: Table) -> None:
    """Print ``t`` on stdout: to a terminal's width (columns made with ``wrap`` fold), else as
    :func:`table_text`."""
    out = Console()
    if out.is_terminal:
        out.print(t)
    else:
        print(table_text(t))
