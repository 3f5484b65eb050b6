"""EJB's tunable constants, with the defaults of the paper (section 5).

* ``min_procs`` -- a job is an elastic candidate if it requests at least this many
  processors (paper: 8);
* ``o_max`` -- upper bound on the degree of over-subscription, so a target job of
  ``P_t`` processes runs on at least ``ceil(P_t / o_max)`` processors (paper: 8, §2.2);
* ``migration`` -- length λ of one bulk MIGRATE interval in seconds (paper: 120 s, §2.2);
* ``delta`` -- over-subscription penalty factor Δ of equation (2) (paper: 1);
* ``waiting_first`` -- when several elastic jobs compete for the same slots (experiment 2),
  serve those still in ``WAIT`` before expanding ``RUNNING`` ones, each group in arrival
  order; ``False`` serves all in arrival order. The paper leaves this order open;
* ``drop_dominated_j0`` -- an extension, off by default (the paper keeps ``J_0`` queued
  until the application completes): withdraw ``J_0`` as soon as its start could no longer
  win the comparison of section 3.3 (see :meth:`ejb.scheduler.EJBScheduler.j0_dominated`).
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER_MIN_PROCS = 8
PAPER_O_MAX = 8
PAPER_MIGRATION = 120.0
PAPER_DELTA = 1.0


@dataclass(frozen=True, slots=True)
class EJBParams:
    min_procs: int = PAPER_MIN_PROCS
    o_max: int = PAPER_O_MAX
    migration: float = PAPER_MIGRATION
    delta: float = PAPER_DELTA
    waiting_first: bool = True
    drop_dominated_j0: bool = False

    def __post_init__(self) -> None:
        if self.min_procs < 2:
            raise ValueError(f"min_procs must be >= 2, got {self.min_procs}")
        if self.o_max < 1:
            raise ValueError(f"o_max must be >= 1, got {self.o_max}")
        if self.migration < 0:
            raise ValueError(f"migration (lambda) must be >= 0 seconds, got {self.migration}")
        if self.delta <= 0:
            raise ValueError(f"delta must be > 0, got {self.delta}")

    def eligible(self, procs: int) -> bool:
        """Whether a job of ``procs`` processors may become elastic (section 5)."""
        return procs >= self.min_procs
