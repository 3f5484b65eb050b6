"""EJB's vocabulary (paper section 2.1 and 3.1): target job, subjobs, intervals.

* :class:`Target` -- the job request ``J_t = (P_t, R_t)`` handed to EJB;
* :class:`Subjob` -- one ordinary batch job ``J_x = (P_x, R_x)`` that EJB submits for it;
  the placeholder ``J_0 = (P_t, R_t)`` is a subjob with ``placeholder=True``;
* :class:`Member` -- a started subjob as the progress model sees it: its processors,
  when its allocation starts and ends, and whether joining costs a migration;
* :class:`Interval` -- a RUN or MIGRATE interval of the elastic job ``J_e`` (§2.2).

These are plain data: no scheduler, simulator or Slurm knowledge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class IntervalKind(StrEnum):
    RUN = "RUN"
    MIGRATE = "MIGRATE"


class ElasticState(StrEnum):
    """``J_e.Stat`` of section 3, plus the terminal states."""

    WAIT = "WAIT"  # J0 queued, no subjob started yet
    RUNNING = "RUNNING"  # the target application runs on one or more subjobs
    DONE = "DONE"  # the target application completed


@dataclass(frozen=True, slots=True)
class Target:
    """``J_t = (P_t, R_t)``: processes of the application and its requested run time (s)."""

    procs: int
    limit: float

    def __post_init__(self) -> None:
        if self.procs < 1:
            raise ValueError(f"target procs must be >= 1, got {self.procs}")
        if not self.limit > 0:
            raise ValueError(f"target time limit must be > 0, got {self.limit}")


@dataclass(slots=True)
class Subjob:
    """One batch job submitted by EJB for an elastic job.

    ``limit`` is the requested time ``R_x``; ``start``/``stop`` are filled in when the batch
    system starts it and when it ends (completion, cancellation or time limit).
    ``cancel_at`` is set when EJB has planned to cancel it after a migration.
    """

    key: int
    procs: int
    limit: float
    placeholder: bool = False
    job_id: int | None = None
    submitted: float | None = None
    start: float | None = None
    stop: float | None = None
    cancel_at: float | None = None

    @property
    def running(self) -> bool:
        return self.start is not None and self.stop is None

    @property
    def pending(self) -> bool:
        return self.start is None and self.stop is None

    @property
    def alive(self) -> bool:
        return self.stop is None

    @property
    def planned_end(self) -> float:
        """When the allocation ends if nothing else happens: time limit or planned cancel."""
        if self.start is None:
            return math.inf
        end = self.start + self.limit
        return end if self.cancel_at is None else min(end, self.cancel_at)


@dataclass(frozen=True, slots=True)
class Member:
    """A subjob's share of ``J_e`` for the progress model (section 2.2).

    Its processors are usable from ``start`` (``start + λ`` if ``join``: processes migrate
    in first) until ``end`` (``end - λ`` if the application must migrate out before).
    """

    key: int
    procs: int
    start: float
    end: float
    join: bool = True


@dataclass(frozen=True, slots=True)
class Interval:
    """One interval of ``J_e.IntervalList`` (section 3.1).

    ``procs`` is the number of concurrently usable processors ``q_k`` (for a MIGRATE
    interval: those the processes occupy when it begins); ``rate`` the progress per second
    (``1 / p_A(q_k)`` for RUN, 0 for MIGRATE); ``subjobs`` the keys of the subjobs whose
    processors are in use.
    """

    kind: IntervalKind
    start: float
    duration: float
    procs: int
    rate: float
    subjobs: tuple[int, ...] = ()

    @property
    def end(self) -> float:
        return self.start + self.duration
