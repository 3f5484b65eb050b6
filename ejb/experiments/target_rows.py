"""One result row per target job of experiment 1, kept as compact columns.

A row is all experiment 1 keeps of a target's run (the paper's metrics and Table 4's inputs):
about 100 bytes in :class:`RowStore`, against the simulator, controller and plan objects a run
builds and drops. :class:`RowWriter` streams rows to CSV as they come.
"""

from __future__ import annotations

import csv
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import numpy as np

from ejb.sim_driver import ElasticRecord


class TargetRow(NamedTuple):
    job_id: int
    procs: int
    limit: float
    run_time: float  # the target's actual run time at P_t
    base_wait: float
    base_run: float
    wait: float
    run: float
    subjobs: int
    migrations: int
    migration_time: float
    proc_seconds: float
    restarts: int

    @property
    def base_turnaround(self) -> float:
        return self.base_wait + self.base_run

    @property
    def turnaround(self) -> float:
        return self.wait + self.run


COLUMNS = TargetRow._fields
_INT = frozenset({"job_id", "procs", "subjobs", "migrations", "restarts"})


def row_of(job_id: int, procs: int, base_wait: float, base_run: float, rec: ElasticRecord) -> TargetRow:
    return TargetRow(
        job_id,
        procs,
        rec.limit,
        rec.run_time,
        base_wait,
        base_run,
        rec.wait,
        rec.run,
        rec.subjobs,
        rec.migrations,
        rec.migration_time,
        rec.proc_seconds,
        rec.restarts,
    )


class RowStore:
    """Rows as one typed array per column (8 bytes per value)."""

    def __init__(self) -> None:
        # int columns ("q") and float ones ("d"): one element type per column, not one for all
        self._cols: dict[str, array[Any]] = {name: array("q" if name in _INT else "d") for name in COLUMNS}

    def append(self, row: TargetRow) -> None:
        for col, value in zip(self._cols.values(), row, strict=True):
            col.append(value)

    def __len__(self) -> int:
        return len(self._cols["job_id"])

    def column(self, name: str) -> np.ndarray:
        """A column as a numpy array (a copy)."""
        return np.array(self._cols[name], dtype=np.int64 if name in _INT else float)

    def __iter__(self) -> Iterator[TargetRow]:
        for values in zip(*self._cols.values(), strict=True):
            yield TargetRow(*values)

    def nbytes(self) -> int:
        return sum(c.itemsize * len(c) for c in self._cols.values())


CSV_HEADER = [*COLUMNS[:6], "base_turnaround", "wait", "run", "turnaround", "speedup", *COLUMNS[8:]]


def csv_fields(r: TargetRow) -> list[object]:
    return [
        *r[:6],
        r.base_turnaround,
        r.wait,
        r.run,
        r.turnaround,
        r.base_turnaround / r.turnaround if r.turnaround > 0 else float("nan"),
        *r[8:],
    ]


class RowWriter:
    """Writes rows to a CSV file as they come (a context manager)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None

    def __enter__(self) -> RowWriter:
        self._file = open(self.path, "w", newline="")  # noqa: SIM115 -- closed in __exit__
        self._csv = csv.writer(self._file)
        self._csv.writerow(CSV_HEADER)
        return self

    def __call__(self, row: TargetRow) -> None:
        self._csv.writerow(csv_fields(row))

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()
