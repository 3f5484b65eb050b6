"""A reproduce command's runs as data, and the one task of a job array that executes one of them.

A command lists its runs (policies x parameters x workloads x seeds) as :class:`Run` s: a label and
JSON-able parameters. One pure, module-level function of the command's, ``execute(params) -> row``,
carries out one run and returns its row (a flat dict of numbers and strings). The runs are executed
here one after another (:func:`run_locally`, the default), or each as one task of a Slurm job array
(:mod:`slurm_ext.reproduce.on_slurm`): the folder it is given holds ``runs.json`` (the function's
``module:name`` and every run), and task ``i`` runs ``python -m slurm_ext.reproduce.runs FOLDER``,
which executes run ``i`` (``SLURM_ARRAY_TASK_ID``) and writes its row to ``row-i.json``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

Row = dict[str, Any]
Execute = Callable[[dict[str, Any]], Row]
Done = Callable[[int, str], None]  # (runs finished so far, the label of the last one)

SPEC = "runs.json"


@dataclass(frozen=True)
class Run:
    """One run: what progress and errors call it, and all the command's ``execute`` needs (JSON-able)."""

    label: str
    params: dict[str, Any]


def run_locally(execute: Execute, runs: Sequence[Run], done: Done) -> list[Row]:
    """Each run's row, executed in this process in order."""
    rows = []
    for run in runs:
        rows.append(execute(run.params))
        done(len(rows), run.label)
    return rows


def function_name(execute: Execute) -> str:
    """``module:name`` of a module-level function (what a task imports); ValueError for any other."""
    name = f"{execute.__module__}:{execute.__qualname__}"
    if "<" in name or resolve(name) is not execute:
        raise ValueError(f"{name}: a job array can run only a module-level function")
    return name


def resolve(name: str) -> Execute:
    module, _, attr = name.partition(":")
    fn: Execute = getattr(importlib.import_module(module), attr)
    return fn


def row_path(folder: Path, index: int) -> Path:
    return folder / f"row-{index}.json"


def output_path(folder: Path, index: int | str) -> Path:
    """Task ``index``'s stdout and stderr (``%a``: sbatch's pattern for the index)."""
    return folder / f"task-{index}.out"


def write_spec(folder: Path, execute: Execute, runs: Sequence[Run]) -> Path:
    """``runs.json`` in ``folder``; rows and outputs of an earlier sweep there are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("row-*.json"), *folder.glob("task-*.out")]:
        old.unlink()
    spec = folder / SPEC
    spec.write_text(json.dumps({"execute": function_name(execute), "runs": [asdict(r) for r in runs]}))
    return spec


def read_spec(folder: Path) -> tuple[Execute, list[Run]]:
    spec = json.loads((folder / SPEC).read_text())
    return resolve(spec["execute"]), [Run(**r) for r in spec["runs"]]


def run_task(folder: Path, index: int) -> Path:
    """Execute run ``index`` of ``folder``'s spec; its row goes to ``row-<index>.json`` (renamed into
    place once written, so a reader never sees half a row)."""
    execute, runs = read_spec(folder)
    row = execute(runs[index].params)
    path = row_path(folder, index)
    part = path.with_suffix(".part")
    part.write_text(json.dumps(row))
    part.replace(path)
    return path


def read_row(folder: Path, index: int) -> Row | None:
    path = row_path(folder, index)
    if not path.exists():
        return None
    row: Row = json.loads(path.read_text())
    return row


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m slurm_ext.reproduce.runs FOLDER``, as a job array's task (``SLURM_ARRAY_TASK_ID``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    index = os.environ.get("SLURM_ARRAY_TASK_ID", "")
    if len(args) != 1 or not index.isdigit():
        print("usage: SLURM_ARRAY_TASK_ID=I python -m slurm_ext.reproduce.runs FOLDER", file=sys.stderr)
        return 2
    folder = Path(args[0])
    label = read_spec(folder)[1][int(index)].label
    print(f"run {index} of {folder / SPEC}: {label}", flush=True)
    print(f"row: {run_task(folder, int(index))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
