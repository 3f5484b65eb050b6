"""The cluster as the jobs of one partition see it: the policies decide within it.

Slurm allocates a job only on nodes of its partition, and a node may be in several partitions.
A policy deciding for a job of partition P gets :func:`partition_view`: P's nodes (each once);
P's jobs as they are; other partitions' jobs that hold some of P's nodes, with those nodes only
and rigid (they are not P's to resize); and only the pending jobs that can use *any* node of P,
so that a shrink is never made for a job that cannot use the nodes it frees. Where partitions
overlap in part, a pending job that can use only some of P's nodes is left to Slurm.

Nodes that name no partition (the simulator; a Slurm that does not say) make the view the
whole cluster, as before partitions were read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from slurm_ext.model import Job, Node, Snapshot


def partition_names(snap: Snapshot) -> list[str]:
    """Every partition some node is in, sorted; empty where the nodes name none."""
    return sorted({p for n in snap.nodes for p in n.partitions})


def partition_members(nodes: Iterable[Node]) -> dict[str, set[str]]:
    """Partition -> the names of its nodes (a node in several partitions is in each)."""
    members: dict[str, set[str]] = {}
    for node in nodes:
        for p in node.partitions:
            members.setdefault(p, set()).add(node.name)
    return members


def partition_view(snap: Snapshot, partitions: str) -> Snapshot:
    """``snap`` as seen from ``partitions`` (Slurm's comma list, as a pending job shows it)."""
    names = {p for p in partitions.split(",") if p}
    if not names or not any(n.partitions for n in snap.nodes):
        return snap
    if all(names.issuperset(n.partitions) for n in snap.nodes) and all(
        names.issuperset(j.partition.split(",")) for j in snap.jobs if j.partition
    ):
        return snap  # one partition (the usual case): nothing to take out, no map to build
    members = partition_members(snap.nodes)
    nodes = tuple(n for n in snap.nodes if names.intersection(n.partitions))
    here = {n.name for n in nodes}
    if len(nodes) == len(snap.nodes) and all(_ours(j, names, here, members) for j in snap.jobs):
        return snap  # one partition (or every job may use every node): nothing to take out
    jobs: list[Job] = []
    for job in snap.jobs:
        if job.nodes:
            held = tuple(n for n in job.nodes if n in here)
            if not held:
                continue
            if job.partition in names:
                jobs.append(job)
            else:  # another partition's job on shared nodes: it holds them, it is not ours to resize
                jobs.append(replace(job, nodes=held, node_count=len(held), malleable=None, evolving=None))
        elif _can_use_all(job, here, members):
            jobs.append(job)
    return Snapshot(time=snap.time, nodes=nodes, jobs=tuple(jobs))


def _can_use_all(job: Job, here: set[str], members: dict[str, set[str]]) -> bool:
    """A pending job may start on any of ``here`` (a job naming no partition: anywhere)."""
    if not job.partition:
        return True
    usable: set[str] = set()
    for p in job.partition.split(","):
        usable |= members.get(p, set())
    return here <= usable


def _ours(job: Job, names: set[str], here: set[str], members: dict[str, set[str]]) -> bool:
    if job.nodes:
        return job.partition in names or not job.partition
    return _can_use_all(job, here, members)
