"""Connects EJB-sched (:mod:`ejb.scheduler`) to the trace-driven simulator (paper section 5).

The simulator's EASY scheduler stays unchanged: subjobs are ordinary jobs that it queues and
backfills. This module only translates:

* a target job arriving from the trace -> ``EJBScheduler.arrive``; the trace job itself stays
  in the queue as the placeholder ``J_0`` (same id, shape and queue position), so an elastic
  job whose ``J_0`` starts at once behaves exactly like the baseline;
* after every scheduling step (:meth:`SimController.after_pass`) -> IdleJobSlotsAvailable with the
  slots of EASY's view (:func:`ejb.slots.slots_from_view`); a submitted subjob starts in the next
  step of the same instant, and nodes EJB frees are rescheduled by the simulator at once;
* job starts/ends -> ``started``/``ended``; planned cancellations -> timers;
* subjobs are submitted and cancelled through :class:`slurm_ext.sim.SimCluster`, the same
  :class:`~slurm_ext.backend.ClusterBackend` interface the live EJB manager uses on Slurm;
* true progress: EJB plans with requested times only, while the simulator knows each target's
  actual run time ``R_act``. Progress along the plan scales by ``R_t/R_act``, so the
  application completes when the plan's progress reaches ``R_act/R_t``; a timer fires
  TargetAppComplete then (re-armed whenever the plan changes).

The simulator's base scheduler is plain ``"easy"``: EJB needs no scheduler of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ejb.actions import Action, CancelSubjob, Migrate, SubmitSubjob
from ejb.model import ElasticState, Target
from ejb.params import EJBParams
from ejb.scheduler import EJBScheduler, ElasticJob
from ejb.slots import slots_from_view
from slurm_ext.backend import JobRequest
from slurm_ext.sim import SimCluster, SimController, Simulator

_EPS = 1e-6


@dataclass(frozen=True, slots=True)
class ElasticRecord:
    """What an elastic job did, for the metrics of section 6.1 and Table 4."""

    job_id: int
    procs: int
    limit: float
    run_time: float  # actual run time at P_t (the trace's)
    submit: float
    first_start: float
    completed: float
    elastic: bool  # False: J0 started at arrival (Figure 9)
    subjobs: int  # subjobs that ran, J0 included
    migrations: int
    migration_time: float
    proc_seconds: float  # processors x time held by all subjobs
    restarts: int
    cases: tuple[str, ...]

    @property
    def wait(self) -> float:
        return self.first_start - self.submit

    @property
    def turnaround(self) -> float:
        return self.completed - self.submit

    @property
    def run(self) -> float:
        return self.completed - self.first_start


class EJBController(SimController):
    """Runs EJB-sched inside a :class:`Simulator` (base scheduler ``"easy"`` in the paper).

    ``select(job_id, procs)`` says which arriving trace jobs are submitted to EJB (and must
    be eligible: ``procs >= min_procs``). With ``stop_after`` the run stops once all those
    target applications have completed (experiment 1).
    """

    def __init__(
        self,
        params: EJBParams | None = None,
        select: Callable[[int, int], bool] | None = None,
        stop_after: Iterable[int] | None = None,
    ) -> None:
        self.params = params or EJBParams()
        self.ejb = EJBScheduler(self.params)
        self._select = select or (lambda _jid, procs: True)
        self._stop_after = set(stop_after) if stop_after is not None else None
        self._work: dict[int, float] = {}  # eid -> true fraction of the planned work, R_act / R_t
        self._armed: dict[int, int] = {}  # eid -> plan version with a completion timer
        self._active: dict[int, None] = {}  # eids not done, in arrival order
        self.migrations = 0
        self.cluster: SimCluster | None = None

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        # inside the run: the engine's scheduling step at the same instant follows each submit
        self.cluster = SimCluster(sim, settle=False)

    # -- controller callbacks ---------------------------------------------------------------
    def on_submit(self, sim: Simulator, job_id: int) -> bool:
        i = sim.index_of[job_id]
        procs = sim.size0[i]
        if not self.params.eligible(procs) or not self._select(job_id, procs):
            return False
        limit = sim.lim[i]
        target = Target(procs, limit)
        self._work[job_id] = min(sim.work[i], limit) / limit
        self._active[job_id] = None
        for act in self.ejb.arrive(job_id, target, sim.now):
            if isinstance(act, SubmitSubjob) and act.placeholder:
                self.ejb.bound(job_id, act.key, job_id, sim.now)  # the trace job is J0
            else:
                self._execute(sim, [act])
        return False  # J0 queues in the trace job's place

    def on_start(self, sim: Simulator, job_id: int) -> None:
        found = self.ejb.owner(job_id)
        if found is None or found[1].start is not None:
            return
        ej, _ = found
        self._execute(sim, self.ejb.started(job_id, sim.now))
        self._arm(sim, ej)

    def on_end(self, sim: Simulator, job_id: int) -> None:
        found = self.ejb.owner(job_id)
        if found is None:
            return
        ej, _ = found
        if ej.state is ElasticState.RUNNING and self.true_completion(ej) <= sim.now + _EPS:
            self._complete(sim, ej.eid)  # the job's own end coincides with the application's
        self._execute(sim, self.ejb.ended(job_id, sim.now))
        self._arm(sim, ej)

    def on_timer(self, sim: Simulator, key: Any) -> None:
        kind, eid, arg = key
        ej = self.ejb.jobs[eid]
        if kind == "done":
            if ej.state is ElasticState.RUNNING and arg == ej.version:
                self._complete(sim, eid)
        elif kind == "cancel":
            sj = ej.subjobs[arg]
            if sj.alive and sj.job_id is not None and self.cluster is not None:
                self.cluster.cancel_quietly(sj.job_id)

    # -- IdleJobSlotsAvailable ------------------------------------------------------------------
    def after_pass(self, sim: Simulator) -> None:
        """Offer the slots left after a scheduling pass to the elastic jobs.

        Elastic jobs are served in :meth:`EJBScheduler.service_order`; after one submits subjobs
        or frees nodes the others wait for the next step of this instant, when the subjobs have
        started (or the freed nodes been scheduled) and the slots are fresh.
        """
        if not self._active:
            return
        v = sim.easy_view()
        slots = slots_from_view(v.now, v.free, v.shadow, v.extra, v.head is not None)
        if slots.empty:
            return
        for eid in self.ejb.service_order(self._active):
            if not self.ejb.wants_slots(eid):
                continue
            actions = self.ejb.slots_available(eid, slots)
            if actions:
                self._execute(sim, actions)
                if sim.needs_pass or any(isinstance(a, SubmitSubjob) for a in actions):
                    return

    # -- helpers ----------------------------------------------------------------------------------
    def true_completion(self, ej: ElasticJob) -> float:
        """When the application really completes on the current plan (actual run time)."""
        if ej.plan is None:
            return math.inf
        return ej.plan.time_at(self._work[ej.eid])

    def _complete(self, sim: Simulator, eid: int) -> None:
        self._active.pop(eid, None)
        self._execute(sim, self.ejb.completed(eid, sim.now))
        if self._stop_after is not None:
            self._stop_after.discard(eid)
            if not self._stop_after:
                sim.stop()

    def _arm(self, sim: Simulator, ej: ElasticJob) -> None:
        """(Re-)arm the completion timer when the plan changed."""
        if ej.state is not ElasticState.RUNNING or self._armed.get(ej.eid) == ej.version:
            return
        self._armed[ej.eid] = ej.version
        t = self.true_completion(ej)
        if math.isfinite(t):
            sim.set_timer(max(t, sim.now), ("done", ej.eid, ej.version))

    def _execute(self, sim: Simulator, actions: list[Action]) -> None:
        cluster = self.cluster
        assert cluster is not None and cluster.sim is sim, "attach the controller to the simulator first"
        for act in actions:
            if isinstance(act, SubmitSubjob):
                jid = cluster.submit(JobRequest(act.procs, time_limit=act.limit, name=f"ejb{act.eid}"))
                self.ejb.bound(act.eid, act.key, jid, sim.now)
            elif isinstance(act, CancelSubjob):
                if act.job_id is None:
                    continue
                if act.at <= sim.now + _EPS:
                    cluster.cancel_quietly(act.job_id)
                else:
                    sim.set_timer(act.at, ("cancel", act.eid, act.key))
            elif isinstance(act, Migrate):
                self.migrations += 1
        for eid in {a.eid for a in actions}:
            self._arm(sim, self.ejb.jobs[eid])

    # -- results ----------------------------------------------------------------------------------
    def records(self) -> dict[int, ElasticRecord]:
        """One record per target application that completed."""
        out: dict[int, ElasticRecord] = {}
        for eid, ej in self.ejb.jobs.items():
            if ej.state is not ElasticState.DONE or ej.completed is None:
                continue
            out[eid] = record_of(ej, self._work[eid])
        return out


def record_of(ej: ElasticJob, work: float) -> ElasticRecord:
    assert ej.completed is not None
    first = ej.first_start
    assert first is not None
    done = ej.completed
    ran = [(s, s.start) for s in ej.subjobs.values() if s.start is not None]
    held = sum(s.procs * ((s.stop if s.stop is not None else done) - start) for s, start in ran)
    plan = ej.plan
    mig_n = ej.past_migrations + (plan.migration_count(done) if plan else 0)
    mig_t = ej.past_migration_time + (plan.migration_time(done) if plan else 0.0)
    return ElasticRecord(
        job_id=ej.eid,
        procs=ej.target.procs,
        limit=ej.target.limit,
        run_time=work * ej.target.limit,
        submit=ej.submitted,
        first_start=first,
        completed=done,
        elastic=bool(ej.elastic),
        subjobs=len(ran),
        migrations=mig_n,
        migration_time=mig_t,
        proc_seconds=held,
        restarts=ej.restarts,
        cases=tuple(c for _, c in ej.log),
    )
