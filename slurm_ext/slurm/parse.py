"""Slurm's JSON (``squeue --json``, ``sinfo --json``, v0.0.38 in 22.05) and text output -> model types."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import hostlist

from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState

_NO_VALUE = 0xFFFFFFFF  # Slurm's NO_VAL / INFINITE for 32-bit fields
_LIVE = (JobState.PENDING, JobState.RUNNING, JobState.COMPLETING)


def expand_nodes(hostlist_expr: str | None) -> tuple[str, ...]:
    """'n[1,3-4]' -> ('n1', 'n3', 'n4')."""
    if not hostlist_expr or hostlist_expr in ("(null)", "None"):
        return ()
    return tuple(hostlist.expand_hostlist(hostlist_expr))


def compress_nodes(names: list[str] | tuple[str, ...]) -> str:
    return str(hostlist.collect_hostlist(list(names)))


def _time(value: Any) -> float | None:
    """Epoch seconds; Slurm uses 0 for 'not known yet'."""
    if not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _limit_seconds(minutes: Any) -> float | None:
    if not isinstance(minutes, int) or minutes in (_NO_VALUE, _NO_VALUE - 1) or minutes <= 0:
        return None
    return minutes * 60.0


def parse_job(raw: dict[str, Any]) -> Job:
    state = JobState.parse(str(raw.get("job_state", "")))
    nodes = expand_nodes(raw.get("nodes")) if state is not JobState.PENDING else ()
    return Job(
        job_id=int(raw["job_id"]),
        state=state,
        node_count=int(raw.get("node_count") or 0),
        name=str(raw.get("name", "")),
        user=str(raw.get("user_name", "")),
        nodes=nodes,
        submit_time=_time(raw.get("submit_time")) or 0.0,
        start_time=_time(raw.get("start_time")),
        end_time=_time(raw.get("end_time")),
        time_limit=_limit_seconds(raw.get("time_limit")),
        priority=int(raw.get("priority") or 0),
        partition=str(raw.get("partition", "")),
        dependency=str(raw.get("dependency") or ""),
        reason=str(raw.get("state_reason") or ""),
        account=str(raw.get("account") or ""),
        qos=str(raw.get("qos") or ""),
        batch_host=str(raw.get("batch_host") or ""),
        workdir=str(raw.get("current_working_directory") or ""),
        stdout=str(raw.get("standard_output") or ""),
        malleable=MalleableSpec.from_comment(str(raw.get("comment") or "")),
    )


def parse_jobs(doc: dict[str, Any]) -> list[Job]:
    """Live jobs only: squeue --json also lists finished ones (a merged resizer shows as COMPLETED)."""
    jobs = (parse_job(raw) for raw in doc.get("jobs", []))
    return [j for j in jobs if j.state in _LIVE]


def parse_node(raw: dict[str, Any]) -> Node:
    flags = {str(f).upper() for f in raw.get("state_flags", [])}
    state = NodeState.parse(str(raw.get("state", "")))
    if flags & {"DRAIN", "DRAINING", "DRAINED"}:
        state = NodeState.DRAIN
    elif "NOT_RESPONDING" in flags:
        state = NodeState.DOWN
    elif state is NodeState.IDLE and flags & {"COMPLETING", "RESERVED", "PLANNED"}:
        state = NodeState.OTHER  # still held by a job that is ending, or reserved: not free yet
    return Node(name=str(raw["name"]), state=state, cpus=int(raw.get("cpus") or 1))


def parse_nodes(doc: dict[str, Any]) -> list[Node]:
    return [parse_node(raw) for raw in doc.get("nodes", [])]


_TEST_ONLY = re.compile(r"Job (\d+) to start at (\S+) using (\d+) processors on nodes (\S+)")


def parse_test_only(text: str) -> tuple[datetime, tuple[str, ...]]:
    """'sbatch: Job 5 to start at 2026-11-22T02:50:34 using 2 processors on nodes n[3-4] ...'."""
    m = _TEST_ONLY.search(text)
    if not m:
        raise ValueError(f"unexpected sbatch --test-only output: {text.strip()!r}")
    return datetime.fromisoformat(m.group(2)), expand_nodes(m.group(4))


_SALLOC_JOB = re.compile(r"(?:Granted|Pending) job allocation (\d+)")


def parse_salloc_job_id(text: str) -> int | None:
    m = _SALLOC_JOB.search(text)
    return int(m.group(1)) if m else None
