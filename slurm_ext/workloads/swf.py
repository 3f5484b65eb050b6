"""Reading and writing the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file is a header of ``; Key: value`` comment lines followed by one job per line with
18 whitespace-separated numeric fields; ``-1`` marks a missing value. :func:`read_swf` returns
every record with all 18 fields (:class:`SwfRecord`) plus the parsed header; turning records
into simulator jobs (and deciding which to skip) is :func:`slurm_ext.workloads.swf_to_workload`.

Files may be plain or gzip-compressed (detected from the magic bytes, not the name).
A malformed line raises :class:`SwfError` naming the file and the line number.
"""

from __future__ import annotations

import gzip
import io
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TextIO

import numpy as np

FIELDS = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)


class SwfError(ValueError):
    """A malformed SWF file; the message names the file and line."""


class SwfRecord(NamedTuple):
    """One SWF job line, all 18 fields in file order (``-1`` = missing)."""

    job_number: int
    submit_time: float
    wait_time: float
    run_time: float
    allocated_procs: int
    avg_cpu_time: float
    used_memory: float
    requested_procs: int
    requested_time: float
    requested_memory: float
    status: int
    user_id: int
    group_id: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: float


@dataclass
class SwfHeader:
    """The ``; Key: value`` header lines. Repeated keys keep their last value."""

    fields: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # header lines that are not Key: value

    def _int(self, key: str) -> int | None:
        value = self.fields.get(key)
        if value is None:
            return None
        try:
            return int(value.split()[0])
        except (ValueError, IndexError):
            return None

    @property
    def max_nodes(self) -> int | None:
        return self._int("MaxNodes")

    @property
    def max_procs(self) -> int | None:
        return self._int("MaxProcs")

    @property
    def unix_start_time(self) -> int | None:
        return self._int("UnixStartTime")

    def lines(self) -> list[str]:
        return [f"; {k}: {v}" for k, v in self.fields.items()] + [f"; {n}" for n in self.notes]


@dataclass
class SwfTrace:
    """Header plus the job lines as an ``(n, 18)`` float table (``-1`` = missing)."""

    header: SwfHeader
    table: np.ndarray
    path: str = ""

    @property
    def records(self) -> list[SwfRecord]:
        """The job lines as :class:`SwfRecord` tuples (built on demand)."""
        return [_record(row) for row in self.table.tolist()]

    def __len__(self) -> int:
        return len(self.table)


def _record(v: list[float]) -> SwfRecord:
    return SwfRecord(
        int(v[0]), v[1], v[2], v[3], int(v[4]), v[5], v[6], int(v[7]), v[8], v[9],
        int(v[10]), int(v[11]), int(v[12]), int(v[13]), int(v[14]), int(v[15]), int(v[16]), v[17],
    )  # fmt: skip


def _open_text(path: Path) -> TextIO:
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _parse_header_line(header: SwfHeader, text: str) -> None:
    body = text.lstrip(";").strip()
    if not body:
        return
    key, sep, value = body.partition(":")
    if sep and key.strip() and " " not in key.strip():
        header.fields[key.strip()] = value.strip()
    else:
        header.notes.append(body)


def parse_swf_lines(lines: Iterable[str], source: str = "<swf>") -> SwfTrace:
    """Parse SWF text lines; ``source`` names the input in error messages."""
    header = SwfHeader()
    rows: list[list[float]] = []
    append = rows.append
    in_header = True
    for lineno, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped[0] == ";":
            # Comments after the first job are notes, not header fields.
            if in_header:
                _parse_header_line(header, stripped)
            continue
        in_header = False
        parts = stripped.split()
        if len(parts) != 18:
            raise SwfError(f"{source}:{lineno}: expected 18 fields, found {len(parts)}: {stripped[:80]!r}")
        try:
            v = list(map(float, parts))
        except ValueError:
            bad = next(p for p in parts if not _is_number(p))
            raise SwfError(f"{source}:{lineno}: field is not a number: {bad!r}") from None
        append(v)
    table = np.array(rows, dtype=float).reshape(-1, 18)
    return SwfTrace(header, table, source)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_swf(path: str | Path) -> SwfTrace:
    """Read an SWF file (plain or gzip). Raises :class:`SwfError` on a malformed line."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"SWF file not found: {p}")
    with _open_text(p) as f:
        text = f.read()
    trace = _parse_fast(text, str(p))
    trace.path = str(p)
    return trace


def _parse_fast(text: str, source: str) -> SwfTrace:
    """numpy's C parser for the job lines; the line-by-line parser only to explain an error."""
    header = SwfHeader()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped[0] != ";":
            break
        _parse_header_line(header, stripped)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data" for header-only files
            table = np.loadtxt(io.StringIO(text), comments=";", ndmin=2, dtype=float)
    except ValueError:
        return parse_swf_lines(text.splitlines(), source)  # raises SwfError with the line number
    if table.size == 0:
        table = np.empty((0, 18))
    if table.shape[1] != 18:
        return parse_swf_lines(text.splitlines(), source)
    return SwfTrace(header, table, source)


def _fmt(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_records(records: Iterable[SwfRecord]) -> Iterator[str]:
    for r in records:
        yield " ".join(_fmt(v) for v in r)


def write_swf(
    path: str | Path, records: Iterable[SwfRecord] | np.ndarray, header: SwfHeader | None = None
) -> None:
    """Write records (and header) as SWF; gzip if the name ends in ``.gz``."""
    p = Path(path)
    rows = [_record(r) for r in records.tolist()] if isinstance(records, np.ndarray) else records
    lines = (header.lines() if header else []) + list(format_records(rows))
    data = "\n".join(lines) + "\n"
    if p.suffix == ".gz":
        with gzip.open(p, "wt", encoding="utf-8") as f:
            f.write(data)
    else:
        p.write_text(data, encoding="utf-8")
