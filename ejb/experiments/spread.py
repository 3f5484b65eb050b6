"""Experiment 1 and the sensitivity sweep in chunks, for ``--on-slurm``: each chunk one run of the
reproduce commands' job-array runner (:mod:`slurm_ext.reproduce.runs`, :mod:`slurm_ext.reproduce.sweep`).

A target's run does not depend on any other's (:mod:`ejb.experiments.target_runs`), so the targets,
picked once here from the baseline (:func:`~ejb.experiments.one_elastic.plan_targets`), are cut into
contiguous chunks (:func:`split`), and each parameter set with each chunk is one
:class:`~slurm_ext.reproduce.runs.Run` (:func:`runs`): how to read the workload again
(:class:`Source`), the EJB parameters, the method and the chunk's targets. :func:`execute`, one
array task's work, reads the workload, runs its targets one after another and returns their rows
as JSON lists. Put back in run order, they are the rows a local run gives, number for number (a
JSON float is the float), and :func:`results` builds from them the same
:class:`~ejb.experiments.one_elastic.OneElasticResult` per parameter set; the sweep's points come
from those (:func:`~ejb.experiments.sensitivity.point_of`). A parameter set asked for twice (the
sweep's default point, experiment 1's parameters) is computed once.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ejb.experiments.one_elastic import OneElasticResult, TargetPlan, collect, result_of
from ejb.experiments.target_rows import COLUMNS, TargetRow
from ejb.experiments.target_runs import Target, run_serial
from ejb.params import EJBParams
from slurm_ext.reproduce.on_slurm import ArrayOptions
from slurm_ext.reproduce.runs import Row, Run
from slurm_ext.sim import Workload

CHUNK_TARGETS = 200  # targets per chunk unless --chunks says how many chunks
BUILT_IN = ("kth-small", "synthetic", "esp")  # workloads load_workload makes without a file
_INT = frozenset({"job_id", "procs", "subjobs", "migrations", "restarts"})


@dataclass(frozen=True)
class Source:
    """How a task reads the workload again, as the command did: ``load_workload(workload)`` with the
    SWF reading ``reading``, then :func:`~ejb.experiments.subset.subset` (``limit``, ``window`` as
    ``--limit``, ``--window`` give them)."""

    workload: str
    reading: str = "paper"
    limit: int | None = None
    window: str | None = None


def source(
    workload: str, reading: str = "paper", limit: int | None = None, window: str | None = None
) -> Source:
    """The :class:`Source` of a command's workload, a file's path made absolute (a task may start
    elsewhere). ValueError for a live accounting query (``sacct:``): a task could read other jobs."""
    key = workload.strip().lower()
    if key in BUILT_IN:
        return Source(workload, reading, limit, window)
    if key.startswith("sacct:"):
        raise ValueError(f"--on-slurm: the tasks cannot read {workload!r} again as it is now (a live sacct "
                         "query); save it with sacct --json and give sacct-file:PATH")  # fmt: skip
    if key.startswith("sacct-file:"):
        prefix, _, path = workload.strip().partition(":")
        return Source(f"{prefix}:{os.path.abspath(path)}", reading, limit, window)
    return Source(os.path.abspath(workload), reading, limit, window)


@functools.lru_cache(maxsize=4)
def load(src: Source) -> Workload:
    """The workload of ``src``, read once per process (runs only read it)."""
    from ejb.experiments.subset import parse_window, subset
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import parse_reading

    wl = load_workload(src.workload, reading=parse_reading(src.reading))
    return subset(wl, src.limit, parse_window(src.window) if src.window else None)


def split(targets: Sequence[Target], chunks: int | None = None) -> list[list[Target]]:
    """The targets in ``chunks`` contiguous parts of near-equal size, in order (default: one part per
    :data:`CHUNK_TARGETS` targets; never an empty part)."""
    if chunks is not None and chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    n = len(targets)
    k = min(chunks or math.ceil(n / CHUNK_TARGETS), n)
    return [list(targets[i * n // k : (i + 1) * n // k]) for i in range(k)]


def label(params: EJBParams) -> str:
    return f"O_max {params.o_max} λ {params.migration:g} s Δ {params.delta:g}"


def runs(
    src: Source, params: Sequence[EJBParams], targets: Sequence[Target], *, chunks: int | None = None,
    method: str = "fast",
) -> list[Run]:  # fmt: skip
    """Each distinct parameter set (in order) with each chunk of the targets."""
    parts = split(targets, chunks)
    found = []
    for p in dict.fromkeys(params):
        for k, part in enumerate(parts):
            described = {"source": asdict(src), "params": asdict(p), "method": method,
                         "targets": [list(t) for t in part]}  # fmt: skip
            name = f"{label(p)}: targets {part[0].job_id}-{part[-1].job_id} ({k + 1} of {len(parts)})"
            found.append(Run(name, described))
    return found


def execute(params: dict[str, Any]) -> Row:
    """One chunk: its targets' rows (lists in :data:`~ejb.experiments.target_rows.COLUMNS` order) and
    the seconds they took."""
    t0 = time.perf_counter()
    wl = load(Source(**params["source"]))
    targets = [Target(int(j), float(s), int(p), float(w), float(r)) for j, s, p, w, r in params["targets"]]
    found = run_serial(wl, EJBParams(**params["params"]), targets, params["method"])
    return {"rows": [plain(row) for row in found], "seconds": time.perf_counter() - t0}


def plain(row: TargetRow) -> list[int | float]:
    """A row as JSON numbers (as :class:`~ejb.experiments.target_rows.RowStore` keeps them)."""
    return [int(v) if name in _INT else float(v) for name, v in zip(COLUMNS, row, strict=True)]


def results(
    workload: Workload, plan: TargetPlan, chosen: Sequence[Run], rows: Sequence[Row], *, method: str = "fast",
    seconds: float | None = None,
) -> dict[EJBParams, OneElasticResult]:  # fmt: skip
    """Experiment 1's result for each parameter set of ``chosen`` (:func:`runs`), from the runs' rows
    (in run order). Its ``seconds``: ``seconds`` if given, else what its chunks took together;
    its ``workers``: its chunks."""
    found: dict[EJBParams, tuple[list[TargetRow], float, int]] = {}
    for run, row in zip(chosen, rows, strict=True):
        params = EJBParams(**run.params["params"])
        kept, took, parts = found.get(params, ([], 0.0, 0))
        kept += [TargetRow(*values) for values in row["rows"]]
        found[params] = (kept, took + row["seconds"], parts + 1)
    out = {}
    for params, (kept, took, parts) in found.items():
        if len(kept) != len(plan.targets):
            raise RuntimeError(f"{label(params)}: {len(kept)} rows for {len(plan.targets)} targets")
        store = collect(kept, len(kept))
        out[params] = result_of(workload, params, plan, store, took if seconds is None else seconds,
                                method=method, workers=parts)  # fmt: skip
    return out


def spread(
    workload: Workload, src: Source, params: Sequence[EJBParams], plan: TargetPlan,
    where: ArrayOptions | None, *, chunks: int | None = None, method: str = "fast", progress: bool = True,
) -> dict[EJBParams, OneElasticResult]:  # fmt: skip
    """Experiment 1 for each parameter set, its target chunks run here one after another (``where``
    None) or as one job array (:func:`slurm_ext.reproduce.sweep.run_sweep`; a failure exits as it says)."""
    from slurm_ext.reproduce.sweep import run_sweep

    chosen = runs(src, params, plan.targets, chunks=chunks, method=method)
    rows = run_sweep(execute, chosen, where, progress=progress)
    found = results(workload, plan, chosen, rows, method=method)
    for p in params:  # no targets: no runs, an empty result
        if p not in found:
            found[p] = result_of(workload, p, plan, collect([], 0), 0.0, method=method, workers=0)
    return found
