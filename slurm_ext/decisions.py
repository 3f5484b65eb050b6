"""What a policy may ask the cluster to do. Both backends carry these out.

Every decision carries a human-readable ``reason``: the live service logs it and the
simulator can record it, so any resize can be explained after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurm_ext.frozen import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class StartJob:
    """Start a pending job now on ``nodes`` nodes (simulator only: live Slurm starts jobs itself)."""

    job_id: int
    nodes: int
    reason: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class Expand:
    """Grow a running malleable job to ``new_size`` nodes."""

    job_id: int
    new_size: int
    reason: str = ""
    for_job: int | None = None  # the pending job this expansion was made for (DBES dependencies)


@fast_init
@dataclass(frozen=True, slots=True)
class Shrink:
    """Shrink a running malleable job to ``new_size`` nodes, usually so ``for_job`` can start."""

    job_id: int
    new_size: int
    reason: str = ""
    for_job: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class RaisePriority:
    """Give a pending job top priority so that it takes the nodes a shrink frees (DMR §4.3)."""

    job_id: int
    reason: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class NoAction:
    job_id: int
    reason: str = ""


Decision = StartJob | Expand | Shrink | RaisePriority | NoAction
