"""Workload sources for the simulator: SWF traces, a synthetic generator, the bundled trace.

Every source returns a :class:`slurm_ext.workloads.model.Workload`. :func:`load_workload` maps the
CLI's ``--workload`` argument (a path, ``kth-small``, ``synthetic``, ``esp``, or a site's accounting:
``sacct:START..END[@PARTITION]``, ``sacct-file:PATH[@PARTITION]``, :mod:`slurm_ext.workloads.sacct`) to one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from slurm_ext.workloads.esp import esp_workload
from slurm_ext.workloads.model import SimJob, SkippedJob, Workload, split_partition
from slurm_ext.workloads.reading import DEFAULT, SwfReading, apply_reading
from slurm_ext.workloads.sacct import is_sacct_spec, load_sacct
from slurm_ext.workloads.swf import SwfTrace, read_swf

BUNDLED_TRACE = "KTH-SP2-1996-2.1-cln.head500.swf"


def bundled_trace_path() -> Path:
    """The small SWF trace shipped in ``slurm_ext/data`` (first 500 jobs of KTH-SP2, with header)."""
    return Path(str(resources.files("slurm_ext.data").joinpath(BUNDLED_TRACE)))


def machine_nodes(trace: SwfTrace, procs_per_node: int = 1) -> int | None:
    """Nodes of the machine from the header: ``MaxProcs`` / procs per node, else ``MaxNodes``."""
    h = trace.header
    if h.max_procs and h.max_procs > 0:
        return max(1, h.max_procs // procs_per_node)
    if h.max_nodes and h.max_nodes > 0:
        return h.max_nodes
    return None


def swf_to_workload(
    trace: SwfTrace,
    *,
    procs_per_node: int = 1,
    nodes: int | None = None,
    missing_limit: str | None = None,
    reading: SwfReading = DEFAULT,
    name: str | None = None,
    partition: int | None = None,
) -> Workload:
    """Turn SWF records into simulator jobs; every job left out is listed with its reason.

    How each ambiguous field is read is ``reading`` (:mod:`slurm_ext.workloads.reading`; the
    default: size from requested processors, else allocated; jobs larger than the machine, with
    no run time or no submit time skipped; a job running past its requested time killed at it;
    a missing requested time replaced by the run time). Sizes are in nodes of ``procs_per_node``
    processors (rounded up). ``missing_limit`` overrides ``reading.missing_limit`` (kept for
    callers of the older signature). ``nodes`` overrides the header's machine size. ``partition``:
    only the jobs of that partition (SWF field 16; the others are not the workload, so not listed).
    """
    if procs_per_node < 1:
        raise ValueError(f"procs_per_node must be >= 1, got {procs_per_node}")
    if missing_limit is not None:
        reading = replace(reading, missing_limit=missing_limit)
    machine = nodes or machine_nodes(trace, procs_per_node)
    notes: Counter[str] = Counter()
    t = trace.table
    if partition is not None:
        mine = t[:, 15] == partition
        if not mine.any():
            present = ", ".join(str(int(v)) for v in np.unique(t[:, 15]))
            raise ValueError(f"no job of partition {partition} in the trace (its partitions: {present})")
        notes[f"jobs of other partitions than {partition} left out"] += int((~mine).sum())
        t = t[mine]
    job, submit, run, alloc, req_procs, req_time, user = (t[:, k] for k in (0, 1, 3, 4, 7, 8, 11))
    if reading.size == "allocated":
        procs = np.where(alloc > 0, alloc, req_procs)
    else:
        procs = np.where(req_procs > 0, req_procs, alloc)
    size = np.ceil(np.maximum(procs, 0) / procs_per_node)
    if machine is None:
        machine = max(1, int(size.max(initial=1)))
        notes["machine size from the largest job (no MaxProcs/MaxNodes header)"] += 1
    r = apply_reading(reading, submit, run, alloc, req_time, size, machine, procs_per_node, notes)
    submit, size, limit, actual, tiny, no_limit = r.submit, r.size, r.limit, r.run, r.tiny, r.no_limit
    # One reason per job; the first that applies wins (order of the checks).
    checks = [
        (procs <= 0, "no size (requested and allocated processors missing or zero)"),
        (submit < 0, "missing submit time"),
        (actual < 0, "missing run time"),
        (actual == 0, "zero run time"),
        (size > machine, "larger than the machine"),
    ]
    if reading.missing_limit == "skip":
        checks.append((no_limit, "missing requested time"))
    if reading.unknown_run == "tiny":
        checks[0] = (~tiny & (procs <= 0), checks[0][1])
    reason = np.full(len(t), -1)
    for k in range(len(checks) - 1, -1, -1):
        reason[checks[k][0]] = k
    keep = reason < 0
    skipped = [
        SkippedJob(
            int(j),
            checks[r][1] + (f" ({int(sz)} > {machine} nodes)" if checks[r][1].startswith("larger") else ""),
        )
        for j, r, sz in zip(job[~keep].tolist(), reason[~keep].tolist(), size[~keep].tolist(), strict=True)
    ]
    filled = keep & no_limit
    if filled.any() and reading.missing_limit == "run_time":
        notes["requested time missing: run time used as limit"] += int(filled.sum())
    elif filled.any():
        notes["requested time missing: run time used as estimate, job runs 1 s"] += int(filled.sum())
    jobs = [
        SimJob(j, s, n, lim, r, user=u)
        for j, s, n, lim, r, u in zip(
            job[keep].astype(np.int64).tolist(),
            submit[keep].tolist(),
            size[keep].astype(np.int64).tolist(),
            limit[keep].tolist(),
            actual[keep].tolist(),
            user[keep].astype(np.int64).tolist(),
            strict=True,
        )
    ]
    label = name or (Path(trace.path).name if trace.path else "swf")
    label += "" if partition is None else f"@{partition}"
    return Workload(jobs, machine, label, skipped, notes)


def load_swf(path: str | Path, **options: object) -> Workload:
    """Read an SWF file (plain or gzip) into a :class:`Workload`; options as :func:`swf_to_workload`."""
    return swf_to_workload(read_swf(path), **options)  # type: ignore[arg-type]


def load_workload(
    spec: str,
    *,
    seed: int = 0,
    jobs: int | None = None,
    nodes: int | None = None,
    reading: SwfReading = DEFAULT,
    cores_per_node: int = 1,
) -> Workload:
    """``PATH`` (SWF; ``PATH@N``: its partition N's jobs only), ``kth-small`` (bundled trace), ``synthetic``,
    ``esp``, or a site's accounting
    (``sacct:START..END[@PARTITION]``, ``sacct-file:PATH[@PARTITION]``: :mod:`slurm_ext.workloads.sacct`,
    the machine ``nodes`` or the partitions' size); ``reading``
    applies to SWF traces (:mod:`slurm_ext.workloads.reading`); ``cores_per_node``: an SWF trace's
    processors are cores of nodes that many cores each (the machine is MaxProcs / cores nodes, a
    job takes whole nodes: its processors / cores, rounded up)."""
    if cores_per_node < 1:
        raise ValueError(f"--cores-per-node must be at least 1, got {cores_per_node}")
    key = spec.strip().lower()
    if key == "kth-small":
        bundled = load_swf(bundled_trace_path(), nodes=nodes, reading=reading, procs_per_node=cores_per_node)
        wl = _as_nodes(bundled, cores_per_node)
        return wl.head(jobs) if jobs else wl
    if key == "synthetic":
        from slurm_ext.workloads.synthetic import SyntheticConfig, generate

        cfg = SyntheticConfig(jobs=jobs or 1000, nodes=nodes or 128, seed=seed)
        return generate(cfg)
    if key == "esp":
        return load_esp(seed=seed)
    if is_sacct_spec(spec):
        wl = load_sacct(spec, nodes=nodes)
        return wl.head(jobs) if jobs else wl
    path, partition = _swf_partition(spec)
    if not path.is_file():
        raise ValueError(
            f"workload {spec!r} is neither a file (PATH or PATH@PARTITION) nor one of: kth-small, synthetic,"
            " esp, sacct:START..END[@PARTITION], sacct-file:PATH[@PARTITION]"
        )
    swf = load_swf(path, nodes=nodes, reading=reading, procs_per_node=cores_per_node, partition=partition)
    wl = _as_nodes(swf, cores_per_node)
    if not wl.jobs:
        raise ValueError(f"workload {spec!r} has no jobs (an empty file, or not in SWF?)")
    return wl.head(jobs) if jobs else wl


def _swf_partition(spec: str) -> tuple[Path, int | None]:
    """``PATH`` or ``PATH@N``: an SWF trace, and the number of the partition (field 16) to take."""
    path = Path(spec)
    head, tail = split_partition(spec)
    if tail is not None and tail.isdigit() and not path.is_file():
        return Path(head), int(tail)
    return path, None


def _as_nodes(wl: Workload, cores_per_node: int) -> Workload:
    if cores_per_node > 1:
        wl.notes[f"processors read as cores of {cores_per_node}-core nodes (whole nodes per job)"] += len(
            wl.jobs
        )
    return wl


def load_esp(*, seed: int = 0, malleable_fraction: float = 0.0, evolving_fraction: float = 0.0) -> Workload:
    """The modified ESP workload of ``000_*`` (built by :func:`slurm_ext.workloads.esp.esp_workload`)."""
    return esp_workload(malleable_fraction=malleable_fraction, evolving_fraction=evolving_fraction, seed=seed)
