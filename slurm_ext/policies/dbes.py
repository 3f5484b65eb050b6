"""DBES: dependency-based expand/shrink (``000_*`` §IV.C, Algorithm 2).

One call of :meth:`DBES.decide` is one Maui iteration of Algorithm 2:

0. lines 9-24: open evolving requests are granted from idle nodes, or by shrinking jobs
   expanded in the second expansion step, then jobs expanded in the first step; if that
   cannot free enough nodes the request is refused (the fairness policies of [11] are not
   modelled: an ask that can be served is served);
1. line 25: schedule static requests in priority order and start the StartNow jobs (the
   leading jobs that fit in the idle nodes); the next ``ReservationDepth`` jobs that cannot
   start become StartLater jobs with a reservation at their earliest start;
2. line 26: forget the "expanded for" mark of jobs whose StartLater job no longer depends on
   them (they count as expanded for no specific job from now on);
3. lines 27-34, shrink phase: for each StartLater job in priority order, shrink expanded
   malleable jobs in the order (i) expanded for this job, (ii) expanded for no specific job,
   (iii) expanded for a lower-priority StartLater job, if that frees enough nodes to start it
   now; stop at the first StartLater job that cannot be started this way;
4. lines 35-43, first expansion step: reschedule; for each StartLater job in priority order,
   the running malleable job(s) whose end frees the last nodes it waits for (its
   *dependencies*) are expanded with the available nodes up to their maximum: idle nodes,
   plus nodes taken from jobs expanded for no specific job or for a lower-priority
   StartLater job; two or more dependencies ending together share them by equipartition;
5. line 45: backfill non-reserved jobs without delaying any StartLater job;
6. line 46, second expansion step: equipartition the idle nodes left among running
   malleable jobs on which no StartLater job depends.

Malleable jobs are always started at their minimum size and only ever shrunk back to it
("All malleable jobs are always allocated according to their minimum requirements and later
expanded"). The policy keeps, between calls, which StartLater job each expansion was made for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import QueueCounts, ViewPolicy
from slurm_ext.policies.profile import INF, SnapshotProfile
from slurm_ext.policies.working_view import (
    Queued,
    Running,
    WorkingView,
    check_depth,
    ends_at,
    leading_starts,
    min_size,
)

_NONE = None  # "expanded for no specific StartLater job" (second expansion step)


class DBES(ViewPolicy):
    name: ClassVar[str] = "dbes"
    schedules_jobs: ClassVar[bool] = True

    def __init__(self, reservation_depth: int = 5) -> None:
        # 000_* §V.A: "all the experiments were performed with ReservationDepth in Maui set to 5".
        self.depth = check_depth(reservation_depth)
        # running malleable job id -> pending job id it was expanded for, or None (step two)
        self.expanded_for: dict[int, int | None] = {}
        # the working copy at the last _forget_gone, its decision count and the marks' count then:
        # two ints, not tuples made and compared at every call (they cost more than the scan of
        # the marks they spare)
        self._forgot: WorkingView | None = None
        self._forgot_decisions = -1
        self._forgot_marks = -1
        # the last StartLater pass, for the backfill (see _backfill_resume); dropped after use
        self._pass: tuple[WorkingView, int, SnapshotProfile, int, list[tuple[Queued, float]]] | None = None
        # (time, first release after it) of the last call if it may be repeated (see still_idle)
        self._idle: tuple[float, float] | None = None
        self._steady: tuple[float, float] | None = None  # what the call's last StartLater pass found

    # ------------------------------------------------------------------------------------
    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        self._idle = None
        if not cl.pending and cl.free == 0 and not any(r.ask for r in cl.running.values()):
            # Nothing to start and no node to give (about one call in ten): only the marks move.
            self._forget_idle(cl)
            return []
        self._forget_gone(cl)
        # lines 9-24: evolving requests first, from idle nodes, else by shrinking jobs
        # expanded in the second step, then those expanded in the first step
        cl.serve_evolving(self._evolving_donors(cl), "DBES")
        self._forget_gone(cl)

        leading_starts(cl, min_size, "DBES: StartNow")
        later = self._start_later(cl)
        self._clear_invalid(cl, later)
        made = len(cl.decisions)
        self._shrink_phase(cl, later)
        if len(cl.decisions) != made:  # unchanged cluster: the same StartLater jobs
            later = self._start_later(cl)
        self._first_expansion(cl, later)

        prof, resume = self._backfill_resume(cl, later)
        if cl.free > 0:  # else the backfill starts nothing and step 2 has no node to give
            later = cl.backfill(self.depth, min_size, "DBES: backfill", prof, resume)
            self._second_expansion(cl, later)
        self._forgot = None  # holds the working copy
        if not cl.decisions:
            self._idle = self._steady
        return cl.decisions

    def may_act(self, state: QueueCounts) -> bool:
        """False when nothing is pending, no mark names a StartLater job and no idle node can go
        to a malleable job (none idle, or every malleable job at its max): about one call in ten.
        Such a call decides nothing, and of the marks drops only those of jobs that ended or are
        back at their min; the next call drops the same ones first (``_forget_gone``, or
        ``_forget_idle``), as no job is resized in between, so nothing reads them before."""
        if len(state.queue) or not all(f is None for f in self.expanded_for.values()):
            return True
        return state.free > 0 and any(cur < spec.max_nodes for cur, spec in state.malleable_sizes())

    def still_idle(self, now: float) -> bool:
        """Whether a call now, with only jobs appended to the queue since the last call (which
        decided nothing), decides nothing too. So it does when that call had no idle node and
        found its ``depth`` StartLater jobs, and no running job's expected end lies between then
        and ``now``: the availability profile is then the same but for its first step's start,
        where no job fits (no idle node), so each StartLater job gets the same reservation and the
        pass stops before the appended jobs; the dependencies and donors are the same, and without
        idle nodes neither the backfill nor step 2 runs. The expansion marks are as that call left
        them, and it would leave them so."""
        idle = self._idle
        return idle is not None and (now == idle[0] or now < idle[1])

    # ------------------------------------------------------------------------------------
    def _forget_gone(self, cl: WorkingView) -> None:
        # Which marks go depends on the copy (versioned by its decision count) and the marked
        # jobs (only this method drops marks): a second call with neither changed drops none.
        if (
            self._forgot is cl
            and self._forgot_decisions == len(cl.decisions)
            and self._forgot_marks == len(self.expanded_for)
        ):
            return
        # The marks are read, not copied, and the few that go dropped after; a key read as an
        # object (``Any``) is looked up as itself, where a typed int is boxed again per lookup.
        running = cl.running
        gone: list[Any] = []
        jid: Any
        for jid in self.expanded_for:
            r = running.get(jid)
            if r is None or r.size <= r.min:
                gone.append(jid)
        for jid in gone:
            del self.expanded_for[jid]
        self._forgot = cl
        self._forgot_decisions = len(cl.decisions)
        self._forgot_marks = len(self.expanded_for)

    def _forget_idle(self, cl: WorkingView) -> None:
        """What a call on an empty queue with no idle node does to the marks: ``_forget_gone``,
        then no StartLater job, so no job is expanded for one any more."""
        if not self.expanded_for:
            return
        for jid in list(self.expanded_for):
            r = cl.running.get(jid)
            spec = None if r is None else r.spec
            if r is None or spec is None or r.size <= max(spec.min_nodes, 1):
                del self.expanded_for[jid]
            else:
                self.expanded_for[jid] = _NONE

    def _evolving_donors(self, cl: WorkingView) -> Callable[[], list[Running]]:
        def order() -> list[Running]:
            expanded = [r for r in cl.malleable_running() if r.job_id in self.expanded_for and r.size > r.min]
            step2 = [r for r in expanded if self.expanded_for[r.job_id] is None]
            step1 = [r for r in expanded if self.expanded_for[r.job_id] is not None]
            return _in_shrink_order(step2) + _in_shrink_order(step1)

        return order

    def _start_later(self, cl: WorkingView) -> list[tuple[Queued, float]]:
        """StartLater jobs with their reservation times, without starting anything."""
        prof = cl.profile()
        first = prof.times[1] if len(prof.times) > 1 else INF  # the first release after now
        out: list[tuple[Queued, float]] = []
        clean = True  # every job passed was reserved or too large: the backfill would do the same
        k = 0
        total, now, depth = cl.total, cl.now, self.depth
        for job in cl.pending:
            if len(out) >= depth:
                break
            k += 1
            n = job.min_nodes  # min_size(job)
            if n > total:
                continue
            limit = job.time_limit
            dur = INF if limit is None else limit * job.node_count / n  # scaled_duration(job, n)
            t = prof.earliest_start(n, dur)
            if t <= now:
                clean = False
                continue  # could start now: a backfill candidate, not a StartLater job
            if t == INF:
                clean = False  # reserved here, not by the backfill
            prof.reserve(t, dur, n)
            out.append((job, t))
        self._pass = (cl, len(cl.decisions), prof, k, out) if clean else None
        # see still_idle. Set at every pass, not reset in plan: mypy would narrow the attribute to
        # None in plan after a reset there, and the compiled plan would check that type.
        self._steady = (now, first) if not cl.decisions and cl.free == 0 and len(out) == depth else None
        return out

    def _backfill_resume(
        self, cl: WorkingView, later: list[tuple[Queued, float]]
    ) -> tuple[SnapshotProfile | None, tuple[int, list[tuple[Queued, float]]] | None]:
        """Where the backfill may start: unless the copy changed since the last StartLater pass,
        its first ``k`` jobs are that pass again (each job there got the same earliest start,
        after now), so the backfill goes on from that pass's profile and reservations."""
        last, self._pass = self._pass, None
        if last is None or last[0] is not cl or last[1] != len(cl.decisions) or last[4] is not later:
            return None, None
        _, _, prof, k, out = last
        return prof, (k, out)

    def _deps(self, cl: WorkingView, t: float) -> list[Running]:
        # the malleable running jobs ending at t: called several times per StartLater job
        return [r for r in cl.malleable_running() if ends_at(r.end, t)]

    def _clear_invalid(self, cl: WorkingView, later: list[tuple[Queued, float]]) -> None:
        if all(f is None for f in self.expanded_for.values()):
            return  # no mark to clear (the common case): skip computing every dependency
        marked = set(self.expanded_for.values())
        deps = {job.job_id: {r.job_id for r in self._deps(cl, t)} for job, t in later if job.job_id in marked}
        for jid, for_job in self.expanded_for.items():
            if for_job is not None and jid not in deps.get(for_job, ()):
                self.expanded_for[jid] = _NONE

    def _donors(self, cl: WorkingView, later: list[tuple[Queued, float]], i: int) -> list[Running]:
        """Expanded jobs that may give nodes to StartLater job ``later[i]``, in shrink order."""
        me = later[i][0].job_id
        lower = {job.job_id for job, _ in later[i + 1 :]}
        own, unowned, others = [], [], []
        for r in cl.malleable_running():
            if r.size <= r.min or r.job_id not in self.expanded_for:
                continue
            f = self.expanded_for[r.job_id]
            if f == me:
                own.append(r)
            elif f is None:
                unowned.append(r)
            elif f in lower:
                others.append(r)
        return _in_shrink_order(own) + _in_shrink_order(unowned) + _in_shrink_order(others)

    def _shrink_phase(self, cl: WorkingView, later: list[tuple[Queued, float]]) -> None:
        for i, (job, _) in enumerate(later):
            n = min_size(job)
            if n - cl.free > self._spare(cl):
                break  # even every expanded job shrunk to its min would not free enough
            donors = self._donors(cl, later, i)
            if not cl.reclaim(n, donors, f"DBES: shrink to start StartLater job {job.job_id}", job.job_id):
                break
            cl.start(job, n, "DBES: StartLater job started by shrinking expanded jobs")
        self._forget_gone(cl)

    def _spare(self, cl: WorkingView) -> int:
        """Nodes all marked jobs could give back: at least what ``_donors`` may give any job."""
        spare = 0
        jid: Any  # as itself (see _forget_gone)
        for jid in self.expanded_for:
            r = cl.running.get(jid)
            if r is not None and r.malleable and r.size > r.min:
                spare += r.size - r.min
        return spare

    def _first_expansion(self, cl: WorkingView, later: list[tuple[Queued, float]]) -> None:
        made, malleable = len(cl.decisions), cl.malleable_running()
        for i, (job, t) in enumerate(later):
            if len(cl.decisions) != made:  # the list is of the copy's version (its decision count)
                made, malleable = len(cl.decisions), cl.malleable_running()
            # self._deps(cl, t) and below their max, in one pass
            deps = [r for r in malleable if r.size < r.max and ends_at(r.end, t)]
            if not deps:
                continue
            # nodes that may be moved to the dependencies: idle ones, then nodes of jobs
            # expanded for no specific job or for a lower-priority StartLater job
            dep_ids = {r.job_id for r in deps}  # (by id: ``in deps`` compares every field)
            donors = [
                d
                for d in self._donors(cl, later, i)
                if d.job_id not in dep_ids and self.expanded_for[d.job_id] != job.job_id
            ]
            want = sum(r.max - r.size for r in deps)
            avail = cl.free + sum(d.size - d.min for d in donors)
            take = min(want, avail)
            if take <= 0:
                continue
            why = f"DBES step 1: StartLater job {job.job_id} depends on this job"
            cl.reclaim(
                take, donors, f"DBES step 1: nodes moved to dependencies of job {job.job_id}", job.job_id
            )
            if len(deps) == 1:
                r = deps[0]
                cl.resize(r, r.size + min(take, cl.free), why, job.job_id)
            else:
                cl.equipartition(deps, take, why, job.job_id)
            for r in deps:
                if r.size > r.min:
                    self.expanded_for[r.job_id] = job.job_id
            self._forget_gone(cl)

    def _second_expansion(self, cl: WorkingView, later: list[tuple[Queued, float]]) -> None:
        if cl.free <= 0:
            return
        # the jobs below their max on which no StartLater job depends (see _deps), in one pass
        jobs = [r for r in cl.malleable_running() if r.size < r.max and not _ends_at_any(r.end, later)]
        if not jobs:
            return
        before = [r.size for r in jobs]  # by position
        cl.equipartition(jobs, cl.free, "DBES step 2: equipartition idle nodes")
        for k in range(len(jobs)):
            r = jobs[k]
            if r.size > before[k] and r.job_id not in self.expanded_for:
                self.expanded_for[r.job_id] = _NONE


def _ends_at_any(end: float, later: list[tuple[Queued, float]]) -> bool:
    """Whether a job ending at ``end`` is a dependency of some StartLater job (see ``_deps``)."""
    return any(ends_at(end, t) for _, t in later)  # (a loop in the compiled build)


def _in_shrink_order(jobs: list[Running]) -> list[Running]:
    """``sorted(jobs, key=_by_expansion)``, without the call for none or one (most lists here)."""
    return sorted(jobs, key=_by_expansion) if len(jobs) > 1 else jobs


def _by_expansion(r: Running) -> tuple[int, int]:
    # within a class, shrink the largest expansions first (fewest jobs disturbed)
    return (-(r.size - r.min), r.job_id)
