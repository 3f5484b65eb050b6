"""Which groups of an application leave in a shrink, and what that means for each Slurm job.

An application's ranks come in groups (see ``dmr/world.py``), each hosted by a Slurm job:
the application's own job or one of its expander jobs. A shrink removes whole groups, newest
first, under two rules that Slurm imposes:

- a job's batch host cannot be taken from it (Slurm never removes it): a group on the
  application job's batch host never leaves; a group on an expander job's batch host leaves
  only together with every other group of that job (the expander job then ends);
- the application's first group (its rank 0) never leaves.

Pure functions: the controller feeds them the check's groups and the snapshot's batch hosts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from slurm_ext.protocol import GroupInfo, group_ranks


@dataclass(frozen=True)
class GroupRef:
    """A group as the service sees it: the job hosting it and its nodes."""

    tag: str
    job_id: int
    nodes: tuple[str, ...]
    size: int = 1  # ranks

    @classmethod
    def from_check(cls, raw: GroupInfo) -> GroupRef:
        return cls(raw.tag, raw.job_id, tuple(raw.nodes), raw.size)


def node_count(groups: Sequence[GroupRef]) -> int:
    return len({n for g in groups for n in g.nodes})


def ranks_of(groups: Sequence[GroupRef], chosen: Sequence[GroupRef]) -> list[int]:
    """The ranks of the ``chosen`` groups (``groups`` in rank order)."""
    return group_ranks([(g.size, g in chosen) for g in groups])


def removal_order(groups: Sequence[GroupRef], app_job: int, batch_hosts: dict[int, str]) -> list[GroupRef]:
    """The groups in the order a shrink removes them; groups that can never leave are absent."""
    chosen: list[GroupRef] = []
    left = list(groups[1:])  # the first group (rank 0) stays
    progress = True
    while progress:
        progress = False
        for g in reversed(left):
            host = batch_hosts.get(g.job_id, "")
            on_host = host in g.nodes
            if on_host and g.job_id == app_job:
                continue
            if on_host and any(o.job_id == g.job_id for o in left if o is not g):
                continue  # the expander job's other groups first
            chosen.append(g)
            left.remove(g)
            progress = True
            break
    return chosen


def plan_shrink(
    groups: Sequence[GroupRef], app_job: int, batch_hosts: dict[int, str], target: int
) -> list[GroupRef] | None:
    """The groups to remove so that the application keeps the most nodes <= ``target`` (None: impossible)."""
    remaining = list(groups)
    removed: list[GroupRef] = []
    for g in removal_order(groups, app_job, batch_hosts):
        if node_count(remaining) <= target:
            break
        remaining.remove(g)
        removed.append(g)
    if not removed or node_count(remaining) > target:
        return None
    return removed


def release_by_job(
    groups: Sequence[GroupRef], removed: Sequence[GroupRef], job_nodes: Mapping[int, Sequence[str]]
) -> dict[int, tuple[list[str], bool]]:
    """For each Slurm job losing nodes: (nodes it keeps, whether it ends altogether)."""
    gone = {n for g in removed for n in g.nodes}
    out: dict[int, tuple[list[str], bool]] = {}
    for job_id in dict.fromkeys(g.job_id for g in removed):
        nodes = list(job_nodes.get(job_id, ()))
        keep = [n for n in nodes if n not in gone]
        out[job_id] = (keep, not keep)
    return out
