"""A reproduce command's runs spread over Slurm: ONE job array through the toolkit's Slurm adapter,
task ``i`` executing run ``i`` (:mod:`slurm_ext.reproduce.runs`), its row gathered from the shared
folder in run order. A task that fails ends the sweep (:class:`TaskFailed`: which run, the tail of its
output); so does Ctrl-C; either way the array is cancelled."""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from slurm_ext.backend import JobRequest
from slurm_ext.reproduce.runs import Done, Execute, Row, Run, output_path, read_row, write_spec

# A task that ended so never writes its row (COMPLETED without a row: see ``ArrayOptions.grace``).
FAILED = frozenset(
    {"FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
)
TAIL_LINES = 20


@dataclass(frozen=True)
class ArrayOptions:
    """How the array is submitted. ``folder`` must be on a file system every node shares."""

    folder: Path
    partition: str | None = None
    time_limit: float | None = None  # seconds, per task
    max_parallel: int | None = None  # sbatch's --array=...%K
    name: str = "reproduce"
    poll: float = 1.0  # seconds between two looks at the array
    grace: float = 30.0  # seconds a task may be ended (or gone) before its row shows (file system lag)


class TaskFailed(RuntimeError):
    """A task ended without its row."""

    def __init__(self, index: int, run: Run, state: str, output: Path) -> None:
        tail = output.read_text(errors="replace").splitlines()[-TAIL_LINES:] if output.exists() else []
        shown = "\n".join(f"  {line}" for line in tail) if tail else f"  ({output} is missing or empty)"
        hint = "" if state in FAILED else f" (is {output.parent} on a file system the nodes share?)"
        super().__init__(f"run {index} ({run.label}) ended {state} without its row{hint}; "
                         f"the end of {output}:\n{shown}")  # fmt: skip
        self.index, self.run, self.state = index, run, state


class ArrayBackend(Protocol):
    """What a sweep asks of Slurm (:class:`~slurm_ext.slurm.adapter.SlurmCluster` answers it)."""

    def submit(self, request: JobRequest) -> int: ...

    def array_states(self, job_id: int) -> dict[int, str]: ...

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None: ...


def array_spec(runs: int, max_parallel: int | None = None) -> str:
    """sbatch's ``--array``: one task per run, at most ``max_parallel`` at once."""
    return f"0-{runs - 1}" + (f"%{max_parallel}" if max_parallel else "")


def task_request(folder: Path, runs: int, options: ArrayOptions) -> JobRequest:
    """The job array: one node per task, each running ``python -m slurm_ext.reproduce.runs FOLDER``
    with this Python, its output in ``FOLDER/task-<index>.out``."""
    command = f"exec {shlex.quote(sys.executable)} -m slurm_ext.reproduce.runs {shlex.quote(str(folder))}"
    where = ("-p", options.partition) if options.partition else ()
    return JobRequest(nodes=1, time_limit=options.time_limit, name=options.name, command=command,
                      array=array_spec(runs, options.max_parallel),
                      extra_args=("-n", "1", "-o", str(output_path(folder, "%a")), *where))  # fmt: skip


def run_on_slurm(
    execute: Execute, runs: Sequence[Run], options: ArrayOptions, done: Done, cluster: ArrayBackend
) -> list[Row]:
    """Each run's row, executed as task ``i`` of one job array, in run order. The array is cancelled
    if this ends otherwise (a failed task, Ctrl-C, Slurm gone)."""
    if not runs:
        return []
    folder = options.folder.resolve()
    write_spec(folder, execute, runs)
    job_id = cluster.submit(task_request(folder, len(runs), options))
    try:
        return gather(cluster, job_id, folder, runs, options, done)
    except BaseException:
        with contextlib.suppress(Exception):  # the reason the sweep ended is the error to show
            cluster.cancel_quietly(job_id)
        raise


def gather(
    cluster: ArrayBackend, job_id: int, folder: Path, runs: Sequence[Run], options: ArrayOptions, done: Done
) -> list[Row]:
    """Wait for every task's row; TaskFailed for the first task that ended without one."""
    rows: dict[int, Row] = {}
    ended: dict[int, float] = {}  # task -> when it was first seen ended (or gone) without its row
    while True:
        for i in range(len(runs)):
            if i not in rows and (row := read_row(folder, i)) is not None:
                rows[i] = row
                done(len(rows), runs[i].label)
        if len(rows) == len(runs):
            return [rows[i] for i in range(len(runs))]
        states, now = cluster.array_states(job_id), time.monotonic()
        for i in (i for i in range(len(runs)) if i not in rows):
            state = states.get(i, "")
            if state in FAILED:
                raise TaskFailed(i, runs[i], state, output_path(folder, i))
            if state not in ("", "COMPLETED"):
                ended.pop(i, None)
            elif now - ended.setdefault(i, now) > options.grace:
                raise TaskFailed(i, runs[i], state or "(not listed)", output_path(folder, i))
        time.sleep(options.poll)
