"""A site's own accounting as a workload: ``sacct --json`` -> :class:`Workload`.

``-w sacct:START..END[@PARTITION]`` runs ``sacct --json -a -X -S START -E END [-r PARTITION]`` (START
and END in any form sacct takes: ``2025-06-01``, ``2025-06-01T08:00``, ``now-7days``; END may be left
out: now). ``-w sacct-file:PATH[@PARTITION]`` reads that command's output saved to a file, so
accounting copied from a cluster can be simulated anywhere.

Every release's JSON is read (22.05: data_parser v0.0.38, 24.11: v0.0.42, 26.05: v0.0.45): numbers
are plain integers or ``{"set", "infinite", "number"}`` objects, ``state.current`` a string or a list.
Each finished job becomes a :class:`SimJob`: submitted at ``time.submission`` (seconds after the first
job kept), on ``allocation_nodes`` nodes (else its ``nodes`` hostlist), running ``time.elapsed``
seconds with ``time.limit`` minutes as its limit (no limit: the run time, as for SWF traces). A job
that never started, is not finished, has no nodes or is larger than the machine is listed in
``Workload.skipped`` with the reason.

The machine: ``--nodes`` (one pool); else, from the live cluster, the nodes of the partitions the
jobs ran in (the Slurm adapter's reading of the nodes, ``sinfo --json``:
:meth:`slurm_ext.slurm.SlurmCluster.partitions`), partitions that share no node as pools of their
own (each job simulated on its partition's nodes: ``Workload.pools``), partitions that share nodes
as one pool (a node counted once); else (a file, or sinfo failing) the nodes the jobs ran on. A job
is whole nodes, also where ``select/cons_tres`` let it share one. Slurm's commands run through the adapter.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hostlist

from slurm_ext.errors import SlurmError, SlurmUnavailable
from slurm_ext.workloads.model import SimJob, SkippedJob, Workload, split_partition

if TYPE_CHECKING:
    from slurm_ext.slurm.adapter import SlurmCluster

SACCT = "sacct:"
SACCT_FILE = "sacct-file:"
SPEC_HELP = "sacct:START..END[@PARTITION] (e.g. sacct:now-7days..now@batch) or sacct-file:PATH[@PARTITION]"
TIMEOUT = 300.0  # seconds sacct may take (weeks of a big site's accounting)

_NO_VALUE = 0xFFFFFFFE  # 32-bit NO_VAL (INFINITE is one more): 24.11 shows a pending job's start so
_UNLIMITED_MINUTES = 525600  # a year: what an unlimited partition's jobs show as their limit
# Base states of a job that has not ended (sacct lists them for a window reaching now).
_LIVE = {"PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "RESIZING", "CONFIGURING", "COMPLETING"}


class SacctError(ValueError):
    """A bad ``sacct:`` spec, sacct missing or failing, or output that is not ``sacct --json``'s."""


@dataclass(frozen=True, slots=True)
class SacctSpec:
    """``sacct:START..END@PARTITION`` (``path`` None) or ``sacct-file:PATH@PARTITION``."""

    start: str = ""
    end: str = ""
    path: Path | None = None
    partition: str | None = None

    def command(self) -> list[str]:
        """The sacct command line this spec runs (``path`` None)."""
        from slurm_ext.slurm.adapter import accounting_command

        return accounting_command(self.start, self.end, self.partition)


def is_sacct_spec(spec: str) -> bool:
    key = spec.strip().lower()
    return key.startswith(SACCT) or key.startswith(SACCT_FILE)


def parse_spec(spec: str) -> SacctSpec:
    """``sacct:START..END[@PARTITION]`` or ``sacct-file:PATH[@PARTITION]``; SacctError if malformed."""
    text = spec.strip()
    key = text.lower()
    bad = f"workload {spec!r}: expected {SPEC_HELP}"
    if key.startswith(SACCT_FILE):
        body = text[len(SACCT_FILE) :]
        path, partition = _partition(body, bad)
        if not path:
            raise SacctError(bad)
        return SacctSpec(path=Path(path), partition=partition)
    if not key.startswith(SACCT):
        raise SacctError(bad)
    body, partition = _partition(text[len(SACCT) :], bad)
    start, sep, end = body.partition("..")
    if not sep or not start.strip() or ".." in end or any(c.isspace() for c in body.strip()):
        raise SacctError(bad)
    return SacctSpec(start=start.strip(), end=end.strip() or "now", partition=partition)


def _partition(body: str, bad: str) -> tuple[str, str | None]:
    head, partition = split_partition(body)
    if partition is None:
        return body.strip(), None
    if not partition.strip() or not head.strip():
        raise SacctError(bad)
    return head.strip(), partition.strip()


def _slurm(timeout: float = 60.0) -> SlurmCluster:
    """The Slurm adapter for this host's cluster (``SLURM_CONF`` as set in the environment)."""
    from slurm_ext.slurm.adapter import SlurmCluster

    return SlurmCluster(timeout=timeout)


def _sacct_error(exc: SlurmError) -> SacctError:
    """The adapter's error as this module's one line (a missing command: where to run instead)."""
    if isinstance(exc, SlurmUnavailable) and isinstance(exc.__cause__, FileNotFoundError):
        name = exc.command[0] if exc.command else "sacct"
        return SacctError(
            f"{name}: command not found (run where Slurm's commands are, or save"
            f" `sacct --json -a -X -S ... -E ...` there and use sacct-file:PATH)"
        )
    return SacctError(str(exc))


def run_sacct(spec: SacctSpec, timeout: float = TIMEOUT, slurm: SlurmCluster | None = None) -> dict[str, Any]:
    """sacct's JSON for the spec's window (through the adapter, ``slurm``, else this host's);
    SacctError with sacct's own message if it fails."""
    try:
        text = (slurm or _slurm()).accounting(spec.start, spec.end, spec.partition, timeout)
    except SlurmError as exc:
        raise _sacct_error(exc) from None
    return parse_json(text, "sacct's output")


def parse_json(text: str, source: str) -> dict[str, Any]:
    """``sacct --json`` output -> the document; SacctError naming ``source`` if it is not that."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise SacctError(f"{source} is not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SacctError(f"{source} is not sacct --json output (no 'jobs' list)")
    jobs = doc["jobs"]
    if jobs and not any(isinstance(j, dict) and isinstance(j.get("time"), dict) for j in jobs):
        raise SacctError(f"{source} is not sacct --json output (its jobs have no 'time'; squeue's?)")
    # An empty result is an error too ("Nothing found", 9003): that is no jobs, not a failure.
    errors = [e for e in doc.get("errors") or [] if isinstance(e, dict) and e.get("error_number") != 9003]
    if errors and not doc["jobs"]:
        first = errors[0]
        said = first.get("description") or first.get("error") or first
        raise SacctError(f"{source}: sacct reported an error: {said}")
    return doc


def partition_nodes(slurm: SlurmCluster | None = None) -> dict[str, set[str]]:
    """Partition -> its node names, as the Slurm adapter reads them (``slurm``, else this host's);
    SacctError if sinfo is missing or fails."""
    try:
        return (slurm or _slurm()).partitions()
    except SlurmError as exc:
        raise _sacct_error(exc) from None


# ---- reading one job ---------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A plain number (22.05) or ``{"set", "infinite", "number"}`` (24.11+); None if unset, infinite
    or NO_VAL."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float) or value >= _NO_VALUE:
        return None
    return float(value)


def _state(value: Any) -> str:
    """``state.current``: ``"COMPLETED"`` (22.05) or ``["COMPLETED", flags...]`` (24.11+)."""
    if isinstance(value, list):
        return str(value[0]).upper() if value else ""
    return str(value or "").upper()


def _node_names(value: Any) -> list[str]:
    text = str(value or "").strip()
    if not text or text in ("None assigned", "(null)", "None"):
        return []
    try:
        return list(hostlist.expand_hostlist(text))
    except hostlist.BadHostlist:
        return []


@dataclass(frozen=True, slots=True)
class SacctRecord:
    """The fields of one sacct job the simulator uses; None where sacct has no value."""

    job_id: int
    name: str
    user: str
    partition: str
    state: str
    submit: float | None
    start: float | None
    elapsed: float | None
    limit: float | None  # seconds; None: no limit
    nodes: int
    node_names: tuple[str, ...]


def sacct_record(raw: dict[str, Any]) -> SacctRecord:
    """One job of ``sacct --json`` (any supported release's)."""
    t = raw.get("time") or {}
    names = _node_names(raw.get("nodes"))
    count = _number(raw.get("allocation_nodes"))
    nodes = int(count) if count and count > 0 else len(names)
    submit, start, end = (_number(t.get(k)) for k in ("submission", "start", "end"))
    elapsed = _number(t.get("elapsed"))
    if elapsed is None and start and end:
        elapsed = max(0.0, end - start)
    minutes = _number(t.get("limit"))
    limit = None if minutes is None or minutes <= 0 or minutes >= _UNLIMITED_MINUTES else minutes * 60.0
    state = _state((raw.get("state") or {}).get("current"))
    return SacctRecord(
        job_id=int(raw["job_id"]),
        name=str(raw.get("name") or ""),
        user=str(raw.get("user") or (raw.get("association") or {}).get("user") or ""),
        partition=str(raw.get("partition") or ""),
        state=state,
        submit=submit if submit and submit > 0 else None,
        start=start if start and start > 0 else None,
        elapsed=elapsed,
        limit=limit,
        nodes=nodes,
        node_names=tuple(names),
    )


def _why_not(r: SacctRecord, partition: str | None) -> str | None:
    """Why the job cannot be simulated, or None (machine size aside)."""
    if partition is not None and r.partition != partition:
        return f"in another partition ({r.partition or 'none'})"
    if r.state in _LIVE:
        return f"not finished ({r.state})"
    if r.start is None or (r.nodes == 0 and r.state == "CANCELLED"):
        return (
            "cancelled while pending"
            if r.state == "CANCELLED"
            else f"never started ({r.state or 'no state'})"
        )
    if r.nodes == 0:
        return "zero nodes"
    if r.submit is None:
        return "missing submit time"
    if r.elapsed is None:
        return "missing run time"
    if r.elapsed <= 0:
        return "zero run time"
    return None


# ---- the workload ----------------------------------------------------------------------------


def sacct_to_workload(
    doc: dict[str, Any],
    *,
    partition: str | None = None,
    nodes: int | None = None,
    machine: dict[str, set[str]] | None = None,
    name: str = "sacct",
) -> Workload:
    """``sacct --json``'s document -> a workload; every job left out is in ``skipped`` with its reason.

    Only jobs of ``partition`` if given. The machine: ``nodes``; else the nodes of the partitions the
    kept jobs ran in, from ``machine`` (partition -> node names, :func:`partition_nodes`); else the
    nodes the kept jobs ran on (a note says so).
    """
    notes: Counter[str] = Counter()
    kept: list[SacctRecord] = []
    skipped: list[SkippedJob] = []
    seen: set[int] = set()
    for raw in doc.get("jobs", []):
        try:
            r = sacct_record(raw)
        except (KeyError, TypeError, ValueError, AttributeError):
            job_id = raw.get("job_id", -1) if isinstance(raw, dict) else -1
            skipped.append(SkippedJob(job_id if isinstance(job_id, int) else -1, "unreadable record"))
            continue
        reason = _why_not(r, partition)
        if reason is None and r.job_id in seen:
            reason = "repeated job id (a heterogeneous job's component)"
        if reason is not None:
            skipped.append(SkippedJob(r.job_id, reason))
            continue
        seen.add(r.job_id)
        kept.append(r)
    size, pools, pool_of = _machine(kept, partition, nodes, machine, notes)
    if pools:  # a job sacct names no partition of could be in any pool: it cannot be placed
        skipped += [SkippedJob(r.job_id, "no partition recorded") for r in kept if r.partition not in pool_of]
        kept = [r for r in kept if r.partition in pool_of]

    def room(r: SacctRecord) -> int:  # the nodes a job may run on: its pool's, else the machine's
        return pools[pool_of[r.partition]] if pools else size

    where = "its partition" if pools else "the machine"
    skipped += [SkippedJob(r.job_id, f"larger than {where} ({r.nodes} > {room(r)} nodes)")
                for r in kept if r.nodes > room(r)]  # fmt: skip
    kept = [r for r in kept if r.nodes <= room(r)]
    first = min((r.submit for r in kept if r.submit is not None), default=0.0)
    users: dict[str, int] = {}
    jobs: list[SimJob] = []
    for r in kept:
        run = float(r.elapsed or 0.0)
        limit = r.limit
        if limit is None:
            limit = run
            notes["no time limit: run time used as limit"] += 1
        user = users.setdefault(r.user, len(users))
        submit = float(r.submit or 0.0) - first
        pool = pool_of.get(r.partition, "")
        jobs.append(SimJob(r.job_id, submit, r.nodes, limit, run, user=user, name=r.name, pool=pool))
    return Workload(jobs, size, name, skipped, notes, pools=pools)


def _machine(
    kept: list[SacctRecord],
    partition: str | None,
    nodes: int | None,
    machine: dict[str, set[str]] | None,
    notes: Counter[str],
) -> tuple[int, dict[str, int], dict[str, str]]:
    """(the machine's nodes, its pools (name -> nodes; none: one pool), each partition's pool).
    Partitions that share no node are pools of their own: no job runs across two, and each pool's
    jobs are simulated on its nodes only; partitions that share nodes (even through a third) are
    one pool, their nodes counted once."""
    if nodes:
        return nodes, {}, {}
    largest = max((r.nodes for r in kept), default=1)
    parts = {partition} if partition else {r.partition for r in kept if r.partition}
    if machine is not None and parts and parts <= machine.keys():
        groups = node_sharing_groups({p: machine[p] for p in parts})
        for names, members in groups:
            if len(names) > 1:
                pool = f"one pool of {len(members)} nodes"
                notes[f"partitions {', '.join(names)} share nodes: simulated as {pool}"] += sum(
                    1 for r in kept if r.partition in names
                )
        total = len(set().union(*(machine[p] for p in parts)))
        if len(groups) == 1:
            return max(1, total), {}, {}
        pools = {",".join(names): len(members) for names, members in groups}
        apart = ", ".join(f"{name} ({size})" for name, size in pools.items())
        notes[f"partitions simulated apart, each on its own nodes: {apart}"] += len(kept)
        return total, pools, {p: ",".join(names) for names, _ in groups for p in names}
    ran_on = {n for r in kept for n in r.node_names}
    size = max(1, largest, len(ran_on))
    if kept:
        notes[f"machine size {size} nodes: the nodes these jobs ran on (give --nodes for the real size)"] += (
            len(kept)
        )
    return size, {}, {}


def node_sharing_groups(partitions: dict[str, set[str]]) -> list[tuple[list[str], set[str]]]:
    """Partitions grouped where they share nodes, directly or through others: (sorted names, their
    nodes) per group, in the order of each group's first name."""
    groups: list[tuple[list[str], set[str]]] = []
    for name in sorted(partitions):
        names, members = [name], set(partitions[name])
        for group in [g for g in groups if g[1] & members]:
            groups.remove(group)
            names, members = names + group[0], members | group[1]
        groups.append((sorted(names), members))
    return sorted(groups)


def load_sacct(spec: str, *, nodes: int | None = None) -> Workload:
    """``sacct:START..END[@PARTITION]`` (runs sacct, and sinfo for the machine's size) or
    ``sacct-file:PATH[@PARTITION]`` -> a :class:`Workload`; SacctError (a ValueError) with a one-line
    message if the spec is malformed, sacct is missing or fails, or the output is not sacct's JSON."""
    s = parse_spec(spec)
    machine: dict[str, set[str]] | None = None
    if s.path is not None:
        if not s.path.is_file():
            raise SacctError(f"workload {spec!r}: no such file: {s.path}")
        doc = parse_json(s.path.read_text(encoding="utf-8", errors="replace"), str(s.path))
        label = s.path.name
    else:
        slurm = _slurm()
        if not nodes:
            try:
                machine = partition_nodes(slurm)
            except SacctError:
                machine = None  # the nodes the jobs ran on, with a note
        if machine is not None and s.partition and s.partition not in machine:
            known = ", ".join(sorted(machine)) or "none"
            raise SacctError(f"workload {spec!r}: no partition {s.partition!r} here (sinfo lists: {known})")
        doc = run_sacct(s, slurm=slurm)
        label = f"sacct {s.start}..{s.end}"
    if s.partition:
        label += f"@{s.partition}"
    wl = sacct_to_workload(doc, partition=s.partition, nodes=nodes, machine=machine, name=label)
    if not wl.jobs:
        reasons = ", ".join(f"{k}: {v}" for k, v in wl.skipped_reasons().most_common(3)) or "no job at all"
        raise SacctError(f"workload {spec!r} has no finished job to simulate ({reasons})")
    return wl
