"""What EJB-sched asks of the batch system and of the application (paper section 4).

EJB talks to the batch scheduler only through ordinary calls -- submit a job, cancel a
job -- and tells its workers when to migrate processes. A driver (simulator or live Slurm)
carries these out and reports back job ids and job starts/ends.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SubmitSubjob:
    """Submit subjob ``key`` of elastic job ``eid`` as an ordinary batch job ``(procs, limit)``."""

    eid: int
    key: int
    procs: int
    limit: float
    placeholder: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CancelSubjob:
    """Cancel subjob ``key`` (batch id ``job_id``) at time ``at`` (now, or after a migration)."""

    eid: int
    key: int
    job_id: int | None
    at: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Migrate:
    """Move processes of the application between subjobs during ``[start, end)`` (bulk, λ long)."""

    eid: int
    start: float
    end: float
    to_keys: tuple[int, ...] = ()
    reason: str = ""


Action = SubmitSubjob | CancelSubjob | Migrate
