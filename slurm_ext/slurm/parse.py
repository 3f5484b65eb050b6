"""Slurm's JSON (``squeue --json``, ``sinfo --json``) and text output -> model types.

One parser for every supported release; the shapes differ:

- 22.05 (data_parser v0.0.38): ``job_state`` a string; numbers plain integers (``0xFFFFFFFF`` = none);
  ``sinfo`` lists ``nodes`` with ``state`` and ``state_flags``.
- 24.11 (v0.0.42), 26.05 (v0.0.45): ``job_state`` a list (``["RUNNING"]``, flags after the base state);
  numbers are objects ``{"set": bool, "infinite": bool, "number": N}``; ``sinfo`` has no ``nodes`` key but
  entries grouped by state: ``sinfo: [{"nodes": {"nodes": [names]}, "node": {"state": [...]}, "cpus": {}}]``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

import hostlist

from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState

_NO_VALUE = 0xFFFFFFFF  # Slurm's NO_VAL / INFINITE for 32-bit fields
# Minutes: a job without a limit in a partition with MaxTime=INFINITE shows 525600 (a year) in every
# release (from 24.11 also ``infinite: true``): no limit, as for NO_VAL.
_UNLIMITED_MINUTES = 525600
_LIVE = (JobState.PENDING, JobState.RUNNING, JobState.COMPLETING)


def expand_nodes(hostlist_expr: str | None) -> tuple[str, ...]:
    """'n[1,3-4]' -> ('n1', 'n3', 'n4')."""
    if not hostlist_expr or hostlist_expr in ("(null)", "None"):
        return ()
    return tuple(hostlist.expand_hostlist(hostlist_expr))


def compress_nodes(names: list[str] | tuple[str, ...]) -> str:
    return str(hostlist.collect_hostlist(list(names)))


def _number(value: Any) -> int | float | None:
    """A plain number (22.05) or ``{"set", "infinite", "number"}`` (24.11+); None if unset or infinite."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _first(value: Any) -> str:
    """``"RUNNING"`` (22.05) or ``["RUNNING", "FLAG", ...]`` (24.11+) -> the base state."""
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value or "")


def _time(value: Any) -> float | None:
    """Epoch seconds; Slurm uses 0 for 'not known yet'."""
    number = _number(value)
    if number is None or number <= 0:
        return None
    return float(number)


def _limit_seconds(value: Any) -> float | None:
    """Minutes -> seconds; None for no limit (unset, infinite, NO_VAL or a year and more)."""
    minutes = _number(value)
    if minutes is None or minutes <= 0 or minutes >= _UNLIMITED_MINUTES:
        return None
    return minutes * 60.0


def parse_job(raw: dict[str, Any]) -> Job:
    state = JobState.parse(_first(raw.get("job_state")))
    nodes = expand_nodes(raw.get("nodes")) if state is not JobState.PENDING else ()
    return Job(
        job_id=int(raw["job_id"]),
        state=state,
        node_count=int(_number(raw.get("node_count")) or 0),
        name=str(raw.get("name", "")),
        user=str(raw.get("user_name", "")),
        nodes=nodes,
        submit_time=_time(raw.get("submit_time")) or 0.0,
        start_time=_time(raw.get("start_time")),
        end_time=_time(raw.get("end_time")),
        time_limit=_limit_seconds(raw.get("time_limit")),
        priority=int(_number(raw.get("priority")) or 0),
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


def _node_state(base: str, flags: set[str]) -> NodeState:
    state = NodeState.parse(base)
    if flags & {"DRAIN", "DRAINING", "DRAINED"}:
        state = NodeState.DRAIN
    elif "NOT_RESPONDING" in flags:
        state = NodeState.DOWN
    elif state is NodeState.IDLE and flags & {"COMPLETING", "RESERVED", "PLANNED"}:
        state = NodeState.OTHER  # still held by a job that is ending, or reserved: not free yet
    return state


def _planned(base: str, flags: set[str]) -> bool:
    """Idle but for a pending job's plan (nothing else holds it)."""
    return "PLANNED" in flags and _node_state(base, flags - {"PLANNED"}) is NodeState.IDLE


def _state_and_flags(state: Any, flags: Any) -> tuple[str, set[str]]:
    """22.05: ``state`` a string, ``state_flags`` a list; 24.11+: ``state`` a list, flags merged in."""
    names = [str(s).upper() for s in (state if isinstance(state, list) else [state or ""])]
    return names[0] if names else "", set(names[1:]) | {str(f).upper() for f in flags or []}


def parse_node(raw: dict[str, Any]) -> Node:
    """One entry of ``sinfo --json``'s ``nodes`` (22.05) or of ``scontrol show nodes --json``."""
    base, flags = _state_and_flags(raw.get("state"), raw.get("state_flags"))
    cpus = int(_number(raw.get("cpus")) or 1)
    parts = tuple(str(x) for x in raw.get("partitions") or ())
    return Node(name=str(raw["name"]), state=_node_state(base, flags), cpus=cpus, partitions=parts,
                planned=_planned(base, flags))  # fmt: skip


def _parse_group(raw: dict[str, Any]) -> list[Node]:
    """One grouped entry of ``sinfo --json``'s ``sinfo`` list (24.11+): nodes sharing a state."""
    base, flags = _state_and_flags(raw.get("node", {}).get("state"), None)
    state = _node_state(base, flags)
    cpus_raw = raw.get("cpus", {})
    cpus = int(_number(cpus_raw.get("maximum") if isinstance(cpus_raw, dict) else cpus_raw) or 1)
    part = raw.get("partition", {}).get("name")
    parts = (str(part),) if part else ()
    planned = _planned(base, flags)
    return [Node(name=str(name), state=state, cpus=cpus, partitions=parts, planned=planned)
            for name in raw.get("nodes", {}).get("nodes", [])]  # fmt: skip


def parse_nodes(doc: dict[str, Any]) -> list[Node]:
    """Every node once, in name order as Slurm lists them (a node in several partitions is one node)."""
    if "nodes" in doc:
        return [parse_node(raw) for raw in doc["nodes"]]
    seen: dict[str, Node] = {}
    for group in doc.get("sinfo", []):  # one group per partition and state: a shared node is in several
        for node in _parse_group(group):
            known = seen.setdefault(node.name, node)
            if known is not node and not set(node.partitions) <= set(known.partitions):
                seen[node.name] = replace(known, partitions=known.partitions + node.partitions)
    return sorted(seen.values(), key=lambda n: _natural_key(n.name))


def _natural_key(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1


# 22.05/24.11: "Job 5 to start at 2026-11-22T02:50:34 using 2 processors on nodes n[3-4] in partition debug";
# 25.05+: "... 2026-11-23T19:43:44 a using 2 processors on nodes n[4-5] in partition debug", and maybe
# " on cluster NAME" before " using".
_TEST_ONLY = re.compile(
    r"Job (\d+) to start at (\S+)(?: a)?(?: on cluster \S+)? using (\d+) processors on nodes (\S+)"
)


def parse_test_only(text: str) -> tuple[datetime, tuple[str, ...]]:
    """``sbatch --test-only``'s answer -> (expected start, nodes), in every release's wording."""
    m = _TEST_ONLY.search(text)
    if not m:
        raise ValueError(f"unexpected sbatch --test-only output: {text.strip()!r}")
    return datetime.fromisoformat(m.group(2)), expand_nodes(m.group(4))


_SALLOC_JOB = re.compile(r"(?:Granted|Pending) job allocation (\d+)")


def parse_salloc_job_id(text: str) -> int | None:
    m = _SALLOC_JOB.search(text)
    return int(m.group(1)) if m else None


def parse_array_states(text: str) -> dict[int, str]:
    """``squeue -h -r -o '%K|%T'`` of one job array: task index -> state (lines of no task skipped)."""
    states = {}
    for line in text.splitlines():
        index, _, state = line.strip().partition("|")
        if index.isdigit() and state:
            states[int(index)] = state
    return states
