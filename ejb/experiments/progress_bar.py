"""One rich progress bar on stderr for long runs: done/total, items per second and ETA."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
from rich.text import Text


class RateColumn(ProgressColumn):
    """``123.4 targets/s`` (rich's running estimate of the speed)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-" if speed is None else f"{speed:,.1f} {self.unit}/s", style="progress.data.speed")


@contextmanager
def progress_bar(
    label: str, unit: str, *, enabled: bool = True, every: float = 0.1
) -> Iterator[Callable[[int, int], None]]:
    """Yields ``update(done, total)``; draws nothing when not ``enabled``. The bar is redrawn
    from ``update`` (at most every ``every`` seconds): no refresh thread, so forking worker
    processes under it is safe."""
    if not enabled:
        yield lambda done, total: None
        return
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        auto_refresh=False,
    )
    task = bar.add_task(label, total=None)
    last = [0.0]

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)
        now = time.monotonic()
        if now - last[0] >= every or done >= total:
            last[0] = now
            bar.refresh()

    with bar:
        yield update
