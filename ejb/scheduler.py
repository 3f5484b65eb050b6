"""EJB-sched: the event handlers of section 3, independent of any backend.

The scheduler keeps one :class:`ElasticJob` per target job and reacts to four events:

* :meth:`EJBScheduler.arrive` -- TargetJobArrivalEvent (§3.1): submit the placeholder
  ``J_0 = (P_t, R_t)``; the elastic job starts in ``WAIT``;
* :meth:`EJBScheduler.slots_available` -- IdleJobSlotsAvailableEvent (§3.2): in ``WAIT``
  cases 1-3 of Figure 4, in ``RUNNING`` cases 1-3 when ``A_t.T_c`` improves;
* :meth:`EJBScheduler.started` -- SubjobStartEvent (§3.3): launch, migrate in, or, when
  ``J_0`` starts, migrate-all / cancel ``J_0`` / restart, whichever completes earliest;
* :meth:`EJBScheduler.completed` -- TargetAppCompleteEvent (§3.4): cancel what is left.

It returns :mod:`ejb.actions` for a driver to carry out and never calls a backend itself.
EJB only knows requested times: ``T_c`` and all subjob limits come from ``R_t``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ejb.actions import Action, CancelSubjob, Migrate, SubmitSubjob
from ejb.cases import Choice, j0_options, running_cases, wait_cases
from ejb.model import ElasticState, Member, Subjob, Target
from ejb.params import EJBParams
from ejb.progress import Plan, build_plan
from ejb.slots import Slots

_EPS = 1e-6
J0_KEY = 0


@dataclass
class ElasticJob:
    """``J_e`` and its bookkeeping (section 3.1)."""

    eid: int
    target: Target
    submitted: float
    params: EJBParams
    state: ElasticState = ElasticState.WAIT
    subjobs: dict[int, Subjob] = field(default_factory=dict)
    launch: float | None = None
    epoch: list[int] = field(default_factory=list)  # started subjobs the application runs on
    plan: Plan | None = None
    completed: float | None = None
    elastic: bool | None = None  # False if J0 started at arrival (Figure 9)
    restarts: int = 0
    past_migrations: int = 0  # migrations of epochs discarded by a restart on J0
    past_migration_time: float = 0.0
    version: int = 0  # bumped whenever the plan changes
    log: list[tuple[float, str]] = field(default_factory=list)
    reported: float | None = None  # progress the application itself reported (live runs), else None

    @property
    def j0(self) -> Subjob:
        return self.subjobs[J0_KEY]

    def members(self) -> list[Member]:
        assert self.launch is not None
        out = []
        for k in self.epoch:
            sj = self.subjobs[k]
            assert sj.start is not None
            end = sj.stop if sj.stop is not None else sj.planned_end
            out.append(Member(k, sj.procs, sj.start, end, sj.start > self.launch))
        return out

    def running_procs(self) -> int:
        """Processors of running subjobs the application keeps (not about to be cancelled)."""
        return sum(self.subjobs[k].procs for k in self.epoch if self._keeps(self.subjobs[k]))

    @staticmethod
    def _keeps(sj: Subjob) -> bool:
        return sj.running and sj.cancel_at is None

    @property
    def estimated_completion(self) -> float:
        return self.plan.completion if self.plan else math.inf

    @property
    def first_start(self) -> float | None:
        starts = [s.start for s in self.subjobs.values() if s.start is not None]
        return min(starts) if starts else None

    def replan(self) -> None:
        assert self.launch is not None
        self.plan = build_plan(self.target, self.params, self.launch, self.members())
        self.version += 1

    def alive_subjobs(self) -> Iterator[Subjob]:
        return (s for s in self.subjobs.values() if s.alive)


class EJBScheduler:
    """EJB-sched for any number of elastic jobs (section 3)."""

    def __init__(self, params: EJBParams | None = None, stale_after: float = 0.0) -> None:
        """``stale_after``: a subjob still pending this long after its submission lost its slot
        and is withdrawn (0 in the simulator, where a fitting subjob starts in the same instant;
        a live driver should allow its batch system one scheduling cycle)."""
        self.params = params or EJBParams()
        self.stale_after = stale_after
        self.jobs: dict[int, ElasticJob] = {}
        self._by_job_id: dict[int, tuple[int, int]] = {}

    # -- lookup -------------------------------------------------------------------------
    def owner(self, job_id: int) -> tuple[ElasticJob, Subjob] | None:
        """The elastic job and subjob behind batch job ``job_id`` (None if not EJB's)."""
        ref = self._by_job_id.get(job_id)
        if ref is None:
            return None
        ej = self.jobs[ref[0]]
        return ej, ej.subjobs[ref[1]]

    def bound(self, eid: int, key: int, job_id: int, now: float) -> None:
        """The driver submitted subjob ``key`` of ``eid`` as batch job ``job_id``."""
        sj = self.jobs[eid].subjobs[key]
        sj.job_id = job_id
        sj.submitted = now
        self._by_job_id[job_id] = (eid, key)

    def service_order(self, eids: Iterable[int]) -> list[int]:
        """The order in which elastic jobs ``eids`` (in arrival order) are offered free slots.

        With ``waiting_first``, jobs still waiting to start come before running ones being
        expanded: launching a waiting application saves queue time, expanding a running one
        only a degree of over-subscription.
        """
        order = list(eids)
        if self.params.waiting_first:
            order.sort(key=lambda e: self.jobs[e].state is not ElasticState.WAIT)  # stable sort
        return order

    def wants_slots(self, eid: int) -> bool:
        """Whether IdleJobSlotsAvailable concerns ``eid`` (not done, not at full parallelism)."""
        ej = self.jobs[eid]
        if ej.state is ElasticState.WAIT:
            return True
        return ej.state is ElasticState.RUNNING and ej.running_procs() < ej.target.procs

    # -- §3.1 TargetJobArrivalEvent -----------------------------------------------------------
    def arrive(self, eid: int, target: Target, now: float, params: EJBParams | None = None) -> list[Action]:
        """``params``: this job's own (``ejb-submit --ejb-o-max`` ...), else the scheduler's."""
        if eid in self.jobs:
            raise ValueError(f"elastic job {eid} already exists")
        ej = ElasticJob(eid, target, now, params or self.params)
        ej.subjobs[J0_KEY] = Subjob(J0_KEY, target.procs, target.limit, placeholder=True)
        self.jobs[eid] = ej
        ej.log.append((now, "submit-j0"))
        return [SubmitSubjob(eid, J0_KEY, target.procs, target.limit, True, "placeholder J0 (3.1)")]

    # -- §3.2 IdleJobSlotsAvailableEvent ------------------------------------------------------
    def slots_available(self, eid: int, slots: Slots) -> list[Action]:
        ej = self.jobs[eid]
        now = slots.now
        actions: list[Action] = []
        for sj in list(ej.alive_subjobs()):  # a subjob that did not start at once lost its slot
            if sj.pending and not sj.placeholder and now > (sj.submitted or 0.0) + self.stale_after:
                actions += self._cancel(ej, sj, now, "subjob did not start immediately")
        actions += self._drop_j0_if_dominated(ej, now)
        if ej.state is ElasticState.DONE or slots.empty:
            return actions
        if any(sj.pending and not sj.placeholder and sj.alive for sj in ej.subjobs.values()):
            return actions  # the last decision is still being carried out
        choice: Choice | None
        if ej.state is ElasticState.WAIT:
            choice = wait_cases(ej.target, ej.params, slots)
        else:
            if ej.running_procs() >= ej.target.procs:
                return actions
            assert ej.launch is not None
            choice = running_cases(
                ej.target,
                ej.params,
                ej.launch,
                ej.members(),
                ej.running_procs(),
                ej.estimated_completion,
                slots,
            )
        if choice is None:
            return actions
        ej.log.append((now, choice.case))
        for new in choice.subjobs:
            key = max(ej.subjobs) + 1
            ej.subjobs[key] = Subjob(key, new.procs, new.limit)
            why = f"{choice.case}: T_c={choice.completion:.0f}"
            actions.append(SubmitSubjob(eid, key, new.procs, new.limit, False, why))
        return actions

    # -- §3.3 SubjobStartEvent ------------------------------------------------------------------
    def started(self, job_id: int, now: float) -> list[Action]:
        found = self.owner(job_id)
        if found is None:
            return []
        ej, sj = found
        if sj.stop is not None:  # cancelled while pending; the cancellation and the start crossed
            return [CancelSubjob(ej.eid, sj.key, sj.job_id, now, "cancelled before it started")]
        sj.start = now
        if ej.state is ElasticState.DONE:
            return self._cancel(ej, sj, now, "application already complete")
        if ej.state is ElasticState.WAIT:
            return self._launch(ej, sj, now)
        if sj.placeholder:
            return self._j0_started(ej, sj, now)
        ej.epoch.append(sj.key)
        ej.replan()
        ej.log.append((now, "migrate-in"))
        actions: list[Action] = [Migrate(ej.eid, now, now + ej.params.migration, (sj.key,), "expand")]
        return actions + self._drop_j0_if_dominated(ej, now)

    def _launch(self, ej: ElasticJob, sj: Subjob, now: float) -> list[Action]:
        ej.state = ElasticState.RUNNING
        ej.launch = now
        ej.epoch = [sj.key]
        if ej.elastic is None:
            ej.elastic = not (sj.placeholder and now <= ej.submitted + _EPS)
        ej.log.append((now, "launch-j0" if sj.placeholder else "launch"))
        actions: list[Action] = []
        if sj.placeholder:  # a not-yet-started subjob is useless once J0 runs
            for other in list(ej.alive_subjobs()):
                if other.pending:
                    actions += self._cancel(ej, other, now, "J0 started first")
        ej.replan()
        return actions

    def _j0_started(self, ej: ElasticJob, j0: Subjob, now: float) -> list[Action]:
        assert ej.launch is not None
        modelled = ej.plan.progress_at(now) if ej.plan is not None else None
        opt = j0_options(ej.target, ej.params, ej.launch, ej.members(), J0_KEY, now, ej.estimated_completion,
                         progress=ej.reported, modelled=modelled)  # fmt: skip
        ej.log.append((now, f"j0-{opt.action}"))
        actions: list[Action] = []
        if opt.action == "cancel-j0":
            return self._cancel(ej, j0, now, "J0 started; subjobs finish earlier")
        if opt.action == "migrate-all":
            at = now + ej.params.migration
            for k in ej.epoch:
                other = ej.subjobs[k]
                if other.alive:
                    other.cancel_at = min(at, other.planned_end)
                    actions.append(CancelSubjob(ej.eid, k, other.job_id, other.cancel_at, "migrated to J0"))
            ej.epoch.append(J0_KEY)
            ej.replan()
            actions.append(Migrate(ej.eid, now, at, (J0_KEY,), "migrate all processes to J0"))
            return actions
        # restart: discard progress, run from scratch on J0
        for other in list(ej.alive_subjobs()):
            if other is not j0:
                actions += self._cancel(ej, other, now, "restart on J0")
        ej.restarts += 1
        ej.reported = None  # the new run reports its own progress from 0
        if ej.plan is not None:
            ej.past_migrations += ej.plan.migration_count(now)
            ej.past_migration_time += ej.plan.migration_time(now)
        ej.launch = now
        ej.epoch = [J0_KEY]
        ej.replan()
        return actions

    def report_progress(self, eid: int, fraction: float) -> None:
        """The application's own progress (live runs: ``dmr`` reports it at every check); J0's
        choices then weigh what is really done instead of the model's estimate (eq. 1-3)."""
        ej = self.jobs.get(eid)
        if ej is not None and ej.state is ElasticState.RUNNING:
            ej.reported = min(1.0, max(0.0, fraction))

    def ended(self, job_id: int, now: float) -> list[Action]:
        """A subjob's allocation ended (time limit, cancellation): keep the plan exact."""
        found = self.owner(job_id)
        if found is None:
            return []
        ej, sj = found
        if sj.stop is not None:
            return []
        planned = sj.planned_end
        sj.stop = now
        if ej.state is ElasticState.RUNNING and sj.key in ej.epoch and abs(planned - now) > _EPS:
            ej.replan()
        return []

    def j0_dominated(self, ej: ElasticJob, now: float) -> bool:
        """Whether a queued ``J_0`` can no longer give an earlier completion (extension).

        If ``J_0`` started at ``t >= now``, migrating everything to it would complete at
        ``t + λ + (1 - f(t))·R_t`` and restarting at ``t + R_t``. While over-subscribed the
        application progresses no faster than on ``P_t`` processors (``2Δ >= 1``), so both
        only grow with ``t``; if both are already ``>= T_c`` now, ``J_0`` is dead weight that
        only holds a reservation in EASY's queue.
        """
        if ej.state is not ElasticState.RUNNING or ej.plan is None or not ej.j0.pending:
            return False
        if 2 * ej.params.delta < 1:
            return False
        t_c = ej.plan.completion
        f = ej.plan.progress_at(now)
        migrate_all = now + ej.params.migration + (1.0 - f) * ej.target.limit
        return migrate_all >= t_c - _EPS and now + ej.target.limit >= t_c - _EPS

    def _drop_j0_if_dominated(self, ej: ElasticJob, now: float) -> list[Action]:
        if not ej.params.drop_dominated_j0 or not self.j0_dominated(ej, now):
            return []
        ej.log.append((now, "drop-j0"))
        return self._cancel(ej, ej.j0, now, "J0 can no longer complete the application earlier")

    # -- §3.4 TargetAppCompleteEvent -------------------------------------------------------------
    def completed(self, eid: int, now: float) -> list[Action]:
        ej = self.jobs[eid]
        ej.state = ElasticState.DONE
        ej.completed = now
        ej.log.append((now, "complete"))
        actions: list[Action] = []
        for sj in list(ej.alive_subjobs()):
            actions += self._cancel(ej, sj, now, "target application complete")
        return actions

    def _cancel(self, ej: ElasticJob, sj: Subjob, now: float, reason: str) -> list[Action]:
        sj.cancel_at = now if sj.cancel_at is None else min(now, sj.cancel_at)
        if sj.start is None:  # never ran: gone right now
            sj.stop = now
        return [CancelSubjob(ej.eid, sj.key, sj.job_id, now, reason)]
