"""SD-Policy: slowdown-driven co-scheduling (``003_*`` §3), adapted to whole nodes.

``003_*`` shares nodes between a running job (a *mate*) and a new job by taking cores from
the mate. Here nodes are exclusive, so a mate lends whole nodes instead: it shrinks by ``a``
nodes while the new job runs and is expanded back when the new job ends (Listing 3,
``expand_job(owner)``). What is kept from the paper:

* the scheduler is a backfill that, for each job in priority order, first tries a static
  start and, right after it fails, the malleable one (§3.1, Listing 1);
* a malleable start happens only if the job is malleable and its predicted end is earlier
  than its static end (reservation start + requested time) (Listing 1, ``static_end >
  mall_end``);
* mates are running malleable jobs; at most ``max_mates`` (2, §3.2.4) per new job; the set
  chosen minimises the Performance Impact, the sum of the mates' penalties (Eq. 1), where a
  mate's penalty is its predicted slowdown after lending (Eq. 4):
  ``(wait + predicted run + increase) / requested time``; a mate whose penalty would reach
  ``MAX_SLOWDOWN`` is not eligible (Eq. 2);
* ``MAX_SLOWDOWN`` is static (a number chosen by the administrator; 10 was best on the
  largest workload, §4.1) or dynamic: the average predicted slowdown of the running jobs,
  recomputed at each call (§3.2.2);
* the new job must end inside each mate's allocation (before the mate's expected end)
  (§3.2.4);
* a mate lends at most ``sharing_factor`` of its nodes (the paper's SharingFactor, 0.5,
  §3.3) and never goes below its minimum size.

Whole-node adaptation of constraint 3 (sum of weights = requested nodes): the new job gets
``k`` nodes, idle ones first, the rest from its mates; ``k`` is its requested size if
possible, else the largest size down to its minimum for which a mate set exists, and its run
time grows by ``requested / k`` (§3.4: run time proportional to resources; with whole nodes
the ideal and worst-case models coincide).

With ``share_cores`` the paper's own sharing is modelled instead: each node is ``1 /
sharing_factor`` slots of cores (2 for the paper's 0.5) and job sizes are counted in slots
(:func:`slurm_ext.workloads.model.node_slots` makes such a workload). A mate lends one slot on each
node it shares and keeps all its nodes; the new job runs on its requested number of nodes, idle
ones whole and the rest one slot of a mate's node each (constraint 3); its run time and the mates'
grow as their slots fall (§3.4's ideal model, Eq. 5). When a mate ends first, its slots on the
nodes it shared go to the new job (Listing 3: cores back to the running tasks).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from math import ceil
from operator import attrgetter, is_, neg
from typing import ClassVar, Literal

from slurm_ext.decisions import Decision
from slurm_ext.policies.base import QueueCounts, ViewPolicy
from slurm_ext.policies.profile import SnapshotProfile
from slurm_ext.policies.working_view import INF, Queued, Running, WorkingView, scaled_duration

_Group = tuple[tuple[tuple[int, int], ...], float]  # ((mate id, nodes lent), ...), impact
_Row = tuple[float, int, float, int]  # a mate's (*SDPolicy._terms, cap)


@dataclass(frozen=True, slots=True)
class MateChoice:
    nodes: int  # the new job's size
    duration: float  # its predicted run time at that size
    loans: tuple[tuple[int, int], ...]  # (mate id, nodes lent)
    impact: float  # sum of the mates' penalties (Eq. 1)


class SDPolicy(ViewPolicy):
    name: ClassVar[str] = "sd"
    schedules_jobs: ClassVar[bool] = True

    def __init__(
        self,
        max_slowdown: float | Literal["dynamic"] = 10.0,
        max_mates: int = 2,
        sharing_factor: float = 0.5,
        reservation_depth: int = 100,
        candidate_mates: int = 20,
        share_cores: bool = False,
        runtime_model: Literal["ideal", "worst"] = "ideal",
    ) -> None:
        if max_slowdown != "dynamic" and not (isinstance(max_slowdown, int | float) and max_slowdown > 1):
            raise ValueError(f"max_slowdown must be a number > 1 or 'dynamic', got {max_slowdown!r}")
        if max_mates < 1:
            raise ValueError(f"max_mates must be >= 1, got {max_mates}")
        if not 0 < sharing_factor <= 1:
            raise ValueError(f"sharing_factor must be in (0, 1], got {sharing_factor}")
        self.max_slowdown = max_slowdown
        self.max_mates = max_mates
        self.sharing_factor = sharing_factor
        # slots per node: 1 is whole nodes; with share_cores, 1 / sharing_factor (a whole number)
        self.slots = slots_per_node(sharing_factor) if share_cores else 1
        if runtime_model not in ("ideal", "worst"):
            raise ValueError(f"runtime_model must be ideal or worst, got {runtime_model!r}")
        if runtime_model == "worst" and self.slots != 2:
            raise ValueError("the worst-case runtime model needs shared cores with a sharing factor of 0.5")
        # §3.4: the worst case (Eq. 6) is what the paper's policy predicts with; ideal is Eq. 5
        self.worst_case = runtime_model == "worst"
        self.depth = reservation_depth  # Slurm's backfill plans many jobs (bf_max_job_test)
        self.candidate_mates = candidate_mates  # the paper's "first nm mates with lower p"
        self.requested: dict[int, float] = {}  # job id -> requested time, as first seen
        # the queue as the last call's plan left it, and whether each of its jobs is in ``requested``
        self._queue_seen: list[Queued] = []
        self._recorded = True
        self.loans: dict[int, tuple[tuple[int, int], ...]] = {}  # new job -> (mate, nodes)
        # (working copy, its decision count, what _mates returned for it)
        self._mate_cache: tuple[WorkingView, int, _Mates] | None = None
        # what _mates last worked out and what it read: (the limit, the malleable running jobs'
        # entries, each one's id, size and expected end), kept from call to call (a job's arrival
        # changes none of it)
        self._last_mates: tuple[float, list[Running], list[tuple[int, int, float]], _Mates] | None = None

    # ------------------------------------------------------------------------------------
    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        self._remember_requests(cl)
        cl.serve_evolving(list, "SD")  # no evolving jobs in 003_*: asks get idle nodes only
        self._give_back(cl)
        limit = self.current_limit(cl)
        reserved = 0
        prof = cl.profile()
        # Kinds of job (size, requested time, minimum size) that found no mates since the profile
        # or the working copy last changed: select_mates reads nothing else of a job, so another
        # of that kind (an array's, a user's series) finds none either, until the next change.
        no_mates: set[tuple[int, float | None, int]] = set()
        changed = True  # the working copy changed since the check below last ran
        for job in list(cl.pending):
            if changed:  # its answer changes only with the copy: free nodes, the mates
                if cl.free == 0 and not self._mates(cl, limit).mates:
                    break  # no node to start a job on, statically or with mates: nothing more can start
                changed = False
            n = job.node_count
            if n > cl.total:
                continue
            asked = job.time_limit
            dur = INF if asked is None else asked * n / n  # scaled_duration(job, n), inline
            if n <= cl.free and prof.fits_now(n, dur):
                cl.start(job, n, "SD: static backfill")
                prof.reserve(cl.now, dur, n)
                no_mates.clear()
                changed = True
                continue
            if job.malleable is None and reserved >= self.depth:
                continue  # no reservation left to make, no mate to take: when it starts is not needed
            if job.malleable is not None:
                kind = (n, asked, job.min_nodes)
                if kind not in no_mates:
                    choice = self.select_mates(cl, prof, job, limit)
                    if choice is not None:
                        self._run_with_mates(cl, job, choice)
                        prof = _rebuild(cl, prof)
                        no_mates.clear()
                        changed = True
                        continue
                    no_mates.add(kind)
                if reserved >= self.depth:
                    continue
            if prof.reserve_earliest(n, dur):  # its start is remembered if select_mates asked it
                reserved += 1
                no_mates.clear()
        self._mate_cache = None  # holds the working copy
        self._queue_seen = cl.pending
        return cl.decisions

    def may_act(self, state: QueueCounts) -> bool:
        """False when no mate waits for its nodes back and either nothing is pending or no node
        is idle and no malleable job runs (the pass then stops at its first job: nothing starts
        statically and no mate can lend). Such a call decides nothing and changes nothing the
        next call reads: the requested times it would record, the next call records the same
        (queued jobs' limits do not change, and only this policy starts jobs), and those it
        would drop are of ended jobs, read never again."""
        if self.loans:
            return True
        if not len(state.queue):
            return False
        return state.free > 0 or bool(state.malleable_sizes())

    # ------------------------------------------------------------------------------------
    def current_limit(self, cl: WorkingView) -> float:
        """MAX_SLOWDOWN now: the static value, or the running jobs' average predicted slowdown."""
        if self.max_slowdown != "dynamic":
            return float(self.max_slowdown)
        sds = [self._slowdown(r, 0.0) for r in cl.running.values() if r.end != INF]
        return sum(sds) / len(sds) if sds else INF

    def penalty(self, r: Running, lent: int, duration: float) -> float:
        """Eq. 4: the mate's predicted slowdown if it lends ``lent`` nodes for ``duration`` (in the
        worst case, any loan sets its pace to that of a node with a slot lent: (s - 1) / s, half with two)."""
        return self._slowdown(r, duration / self.slots if self.worst_case else duration * lent / r.size)

    def select_mates(
        self, cl: WorkingView, prof: SnapshotProfile, job: Queued, limit: float
    ) -> MateChoice | None:
        """Listing 2 with whole nodes: the mate set of least impact, or None.

        The job's static end (its earliest start in ``prof`` plus its requested time) bounds the
        sizes tried (Listing 1: ``static_end > mall_end``); it is asked of the profile only once a
        size gets past the cheap checks (most jobs of a long queue find no mate ending after them,
        or none lending enough, and need no earliest start)."""
        assert job.malleable is not None
        if self.slots > 1:
            return self._select_shared(cl, prof, job, limit)
        want = job.node_count
        req = scaled_duration(job, want)
        if req == INF:
            return None
        static_end = -INF  # not asked yet
        found = self._mates(cl, limit)
        mates, by_end, tops = found.mates, found.by_end, found.tops
        if not mates:
            return None
        first = 0  # by_end[first:] are the mates ending at or after the job
        now = cl.now
        n_mates = len(by_end)
        k, k_min = want, max(job.min_nodes, 1)
        while k >= k_min:
            duration = req * want / k
            end = now + duration
            idle = min(cl.free, prof.min_free(now, end))  # idle nodes over [now, end)
            need = k - idle
            while first < n_mates and by_end[first].end < end:
                first += 1
            if first == n_mates:
                break  # no mate ends after the job, nor will one for any smaller k
            top = tops[first]  # the largest max_mates caps among by_end[first:], summed
            if need > 0 and top < need:
                # No group of at most max_mates mates lends more than the largest caps together,
                # and as k falls idle and those caps only fall: every size above idle + top fails.
                k = idle + top
                continue
            if static_end == -INF:
                static_end = prof.earliest_start(want, req) + req
            if end >= static_end:
                break  # smaller k only ends later
            if need <= 0:
                k -= 1
                continue  # no mate needed: that is a moldable start, not SD-Policy's
            # the new job must end inside each mate's allocation: by_end[first:] are those
            # a pure function of its arguments at one state of the pass: asked once per group of
            # queued jobs alike (the same size and requested time: arrays, a user's series)
            asked = (first, need, duration)
            sets = found.sets
            if asked in sets:
                best = sets[asked]
            else:
                best = sets[asked] = self._best_set(first, need, duration, limit, found)
            if best is not None:
                loans, impact = best
                return MateChoice(k, duration, loans, impact)
            k = self._past_none(found, first, k, idle, duration, now, req * want, k_min, limit) - 1
        return None

    def _past_none(
        self,
        found: _Mates,
        first: int,
        k: int,
        idle: int,
        duration: float,
        now: float,
        work: float,
        k_min: int,
        limit: float,
    ) -> int:
        """The least size ``k2`` (``k_min`` <= ``k2`` <= ``k``) such that ``_best_set`` is certainly
        None at every size from ``k2`` to ``k - 1`` (``select_mates`` then goes on at ``k2 - 1``);
        ``k`` when none is certain. Most loops would go through tens of sizes, each an O(mates)
        check. Sizes keep the same mates (``first``) down to the least one those mates allow; of
        them, certainly None are (1) those whose need is more than the most the ``max_mates``
        mates of largest reach below the limit may lend (:func:`_reach`, at this size's duration:
        less at any later end), and (2) those :func:`_crowded_below` finds crowded (galloping then
        bisection: its certificate holds for ``k2`` if it holds for any smaller size)."""
        if k <= k_min or not _plain(self):
            return k
        ends_at = found.by_end[first].end  # the sizes skipped keep ``first``: the job ends by it
        if ends_at <= now:
            return k
        # the least size the mates ending after the job allow
        lowest = max(k_min, ceil(work / (ends_at - now)))
        while lowest < k and now + work / lowest > ends_at:
            lowest += 1  # rounding
        if lowest >= k:
            return k
        rows = found.rows[first:]
        # a size's need is at least the size less the idle nodes here (fewer idle at later ends)
        reach = [_reach(base, size, den, cap, duration, limit) for base, size, den, cap in rows]
        k2 = max(lowest, idle + _sum_largest(reach, self.max_mates) + 1)
        if k2 < k or len(rows) <= self.candidate_mates:
            return min(k2, k)

        def certain(size: int) -> bool:  # sizes from ``size`` to k - 1 are crowded
            longest = work / size  # the loop's duration at that size (req * want / size)
            return _crowded_below(rows, size - idle, duration, longest, self.candidate_mates, self.max_mates)

        if certain(lowest):  # most searches skip down to it
            return lowest
        good, step = k, 1
        while good > lowest:
            cand = max(good - step, lowest)
            if not certain(cand):
                bad = cand
                break
            good, step = cand, step * 2
        else:
            return good
        while bad + 1 < good:  # certain(good), not certain(bad)
            mid = (bad + good) // 2
            if certain(mid):
                good = mid
            else:
                bad = mid
        return good

    def _select_shared(
        self, cl: WorkingView, prof: SnapshotProfile, job: Queued, limit: float
    ) -> MateChoice | None:
        """``select_mates`` with shared cores (sizes in slots): the job takes its ``n`` requested
        nodes, ``i`` of them idle (all their slots) and ``n - i`` shared (one slot of a mate's
        node each), the most idle nodes first (the earliest end)."""
        s = self.slots
        want = job.node_count
        n = want // s
        req = scaled_duration(job, want)
        if req == INF or n * s != want:
            return None  # not a whole-node request: no shape of 003's
        found = self._mates(cl, limit)
        if not found.mates:
            return None
        by_end, tops = found.by_end, found.tops
        now, first, static_end = cl.now, 0, -INF
        i = min(cl.free // s, n - 1)
        while i >= 0:
            k = i * s + (n - i)
            if k < job.min_nodes:
                break  # fewer idle nodes only means fewer slots
            # worst case: a node at one slot of s sets the pace (Eq. 6); ideal: linear in the slots
            duration = req * s if self.worst_case else req * want / k
            end = now + duration
            need = n - i  # mates' nodes, one slot each
            while first < len(by_end) and by_end[first].end < end:
                first += 1
            if first == len(by_end) or tops[first] < need:
                break  # fewer idle nodes: a later end and more slots needed, from fewer mates
            idle = min(cl.free, prof.min_free(now, end))
            if i * s > idle:
                # those idle nodes are not idle until the job's end; with fewer it ends later,
                # when at most as many are idle
                i = min(i - 1, idle // s)
                continue
            if static_end == -INF:
                static_end = prof.earliest_start(want, req) + req
            if end >= static_end:
                break
            asked = (first, need, duration)
            if asked not in found.sets:
                found.sets[asked] = self._best_set(first, need, duration, limit, found)
            best = found.sets[asked]
            if best is not None:
                return MateChoice(k, duration, best[0], best[1])
            i -= 1
        return None

    def _mates(self, cl: WorkingView, limit: float) -> _Mates:
        """The running jobs that may lend now (:class:`_Mates`).

        A job whose predicted slowdown already reaches the limit before it lends anything is no
        mate (Eq. 2: lending only adds to it); on a loaded machine that is most running jobs.
        Kept while the working copy is unchanged (its decision count): one pass over the queue
        asks for them once per malleable job that cannot start statically (the limit is the pass's)."""
        version = len(cl.decisions)
        cached = self._mate_cache
        if cached is not None and cached[0] is cl and cached[1] == version:
            return cached[2]
        malleable = cl.malleable_running()
        # The rest reads only these of each job (its start, submit time, bounds and requested time
        # do not change while it runs) and the limit; with shared cores, the loans too. The same
        # entries, too: the answer keeps them and reads their ends (a caller may change an entry
        # and put it back, as the simulator's working copy does).
        seen = [(r.job_id, r.size, r.end) for r in malleable]
        last = self._last_mates
        if (
            last is not None
            and self.slots == 1
            and last[0] == limit
            and last[2] == seen
            and all(map(is_, last[1], malleable))
        ):
            self._mate_cache = (cl, version, last[3])
            return last[3]
        if type(self).penalty is SDPolicy.penalty:  # else a subclass's penalty may fall: all are tried
            malleable = [r for r in malleable if self._slowdown(r, 0.0) < limit]
        caps = {r.job_id: self._cap(r) for r in malleable}
        mates = [r for r in malleable if caps[r.job_id] > 0]
        # As k falls the job ends later: fewer mates end after it (a shrinking suffix of
        # ``by_end``) and the idle window grows, so both are followed incrementally.
        by_end = sorted(mates, key=_end)
        terms = {r.job_id: self._terms(r) for r in mates}
        ids = [r.job_id for r in by_end]
        caps_by_end = [caps[jid] for jid in ids]
        rows = [(*terms[jid], cap) for jid, cap in zip(ids, caps_by_end, strict=True)]
        tops = _suffix_tops(caps_by_end, self.max_mates)
        found = _Mates(caps, mates, by_end, tops, terms, ids, caps_by_end, rows)
        self._mate_cache = (cl, version, found)
        self._last_mates = (limit, list(malleable), seen, found)
        return found

    # ------------------------------------------------------------------------------------
    def _best_set(self, first: int, need: int, duration: float, limit: float, found: _Mates) -> _Group | None:
        """The group of at most ``max_mates`` of ``found.by_end[first:]`` that lends ``need`` nodes
        for ``duration`` with the least impact, among the ``candidate_mates`` of least penalty."""
        caps = found.caps
        nm = self.candidate_mates
        mates = found.by_end[first:]
        plain = _plain(self)
        if len(mates) > nm and plain and _crowded(found.rows[first:], need, duration, nm, self.max_mates):
            return None  # (nearly every call on a large machine) no mate that may lend enough is ranked
        tables = _Penalties(self, need, duration, limit, found)
        if len(mates) <= nm:  # all are ranked (select_mates checked their caps): checked unsorted
            if self.max_mates <= 2 and not tables.feasible(mates):
                return None  # no single mate nor pair may lend ``need`` below the limit
            keys = self._keys(first, need, duration, plain, found)
        else:
            keys = self._keys(first, need, duration, plain, found)
            # The ranked mates are among those whose penalty is at most the nm-th least: if even
            # their largest caps fall short, no group of the ranked lends ``need`` (most calls).
            bar = sorted(keys)[nm - 1]
            held = [c for p, c in zip(keys, found.caps_by_end[first:], strict=True) if p <= bar]
            if _sum_largest(held, self.max_mates) < need:
                return None
        # sort by the penalty of lending what is needed (or all it can), keep the first nm (job
        # ids are unique: the mates themselves are never compared)
        ranked = [r for _, _, r in sorted(zip(keys, found.ids[first:], mates, strict=True))[:nm]]
        if len(mates) > nm and self.max_mates <= 2 and not tables.feasible(ranked):
            return None  # no single mate nor pair may lend ``need`` below the limit
        return _search(ranked, need, tables, caps, self.max_mates)

    def _keys(self, first: int, need: int, duration: float, plain: bool, found: _Mates) -> list[float]:
        """The penalty of each of ``found.by_end[first:]`` if it lends what is needed or all it can."""
        if plain:
            return list(_plain_keys(found.rows[first:], need, duration))
        caps = found.caps
        return [self.penalty(r, min(caps[r.job_id], need), duration) for r in found.by_end[first:]]

    def _cap(self, r: Running) -> int:
        s = self.slots
        if s > 1:  # one slot on each node it holds whole: a job that borrowed lends nothing
            return 0 if r.job_id in self.loans else max(0, r.size - r.max // s * (s - 1))
        # int() is floor here (a positive share), and a native conversion in the compiled build
        return min(r.size - r.min, int(self.sharing_factor * r.size))

    def _terms(self, r: Running) -> tuple[float, int, float]:
        """What ``penalty(r, a, duration)`` shares for every ``a`` and duration: it is ``(base +
        duration * a / size) / den`` (``_slowdown``'s expression, in the same order)."""
        start, end = r.start, r.end
        req = self.requested.get(r.job_id) or r.limit or max(end - start, 1e-9)
        return (start - r.submit) + (end - start), r.size, max(req, 1e-9)

    def _slowdown(self, r: Running, increase: float) -> float:
        submit = r.submit
        req = self.requested.get(r.job_id) or r.limit or max(r.end - r.start, 1e-9)
        return ((r.start - submit) + (r.end - r.start) + increase) / max(req, 1e-9)

    def _remember_requests(self, cl: WorkingView) -> None:
        """Record the requested time of each queued job the first time it is seen with one.

        Only the jobs appended since the last call are looked at when the queue is that call's
        (as its plan left it) with jobs appended and every job of it was recorded: the common
        case, where reading every queued job's fields at every call was a tenth of a run."""
        q = cl.pending
        seen = self._queue_seen
        k = len(seen)
        new = q[k:] if self._recorded and len(q) >= k and q[:k] == seen else q
        requested = self.requested
        recorded = True
        for j in new:
            jid = j.job_id
            if jid not in requested:
                limit = j.time_limit
                if limit is None:
                    recorded = False  # looked at again at every call until it has one
                else:
                    requested[jid] = limit
        self._recorded = recorded if new is q else recorded and self._recorded
        # Ended jobs' times are never read again (job ids are not reused): dropped now and then.
        if len(requested) > 2 * (len(q) + len(cl.running)) + 64:
            live = set(map(_job_id, q)).union(cl.running)
            for jid in [j for j in requested if j not in live]:
                del requested[jid]

    def _run_with_mates(self, cl: WorkingView, job: Queued, choice: MateChoice) -> None:
        for mate_id, lent in choice.loans:
            r = cl.running[mate_id]
            cl.resize(r, r.size - lent, f"SD: mate of job {job.job_id}, lends {lent} nodes", job.job_id)
        cl.start(job, choice.nodes, f"SD: malleable start with mates {[m for m, _ in choice.loans]}")
        self.loans[job.job_id] = choice.loans

    def _give_back(self, cl: WorkingView) -> None:
        """Mates get their nodes back when the job they made room for has ended (with shared
        cores, the new job gets a mate's slots on their shared nodes when the mate ends first)."""
        if self.slots > 1:
            self._take_over(cl)
        for new_id in [j for j in self.loans if j not in cl.running]:
            if any(j.job_id == new_id for j in cl.pending):
                continue
            for mate_id, lent in self.loans.pop(new_id):
                r = cl.running.get(mate_id)
                if r is None:
                    continue
                grow = min(lent, r.max - r.size, cl.free)
                if grow > 0:
                    cl.resize(r, r.size + grow, f"SD: job {new_id} ended, nodes back to mate")

    def _take_over(self, cl: WorkingView) -> None:
        for new_id, loans in list(self.loans.items()):
            r = cl.running.get(new_id)
            if r is None:
                continue
            ended = [(m, lent) for m, lent in loans if m not in cl.running]
            if not ended:
                continue
            grow = min(sum(lent for _, lent in ended) * (self.slots - 1), r.max - r.size, cl.free)
            if grow > 0:
                cl.resize(
                    r, r.size + grow, f"SD: mates {[m for m, _ in ended]} ended, their cores to job {new_id}"
                )
            kept = tuple(loan for loan in loans if loan[0] in cl.running)
            if kept:
                self.loans[new_id] = kept
            else:
                del self.loans[new_id]


def slots_per_node(sharing_factor: float) -> int:
    """Slots of a node when a mate lends ``sharing_factor`` of each node's cores: 1 / it, which
    must be a whole number (0.5: two slots, one per socket as on the paper's machine)."""
    s = round(1 / sharing_factor)
    if s < 2 or abs(s * sharing_factor - 1) > 1e-9:
        raise ValueError(f"sharing cores needs a sharing factor of 1/2, 1/3, ...; got {sharing_factor}")
    return s


@dataclass(frozen=True, slots=True)
class _Mates:
    """The running jobs that may lend, worked out once per state of a pass's working copy."""

    caps: dict[int, int]  # job id -> the most nodes it may lend (SharingFactor, its minimum)
    mates: list[Running]  # those with a cap, below the limit before lending
    by_end: list[Running]  # the same by expected end
    tops: list[int]  # tops[i]: the largest max_mates caps of by_end[i:], summed
    terms: dict[int, tuple[float, int, float]]  # job id -> SDPolicy._terms: its penalty's parts
    # by_end's job ids, caps and (*terms, cap): what ranking them reads, without a lookup per mate
    ids: list[int] = field(default_factory=list)
    caps_by_end: list[int] = field(default_factory=list)
    rows: list[_Row] = field(default_factory=list)
    # (first, need, duration) -> what _best_set answered (None: no group)
    sets: dict[tuple[int, int, float], _Group | None] = field(default_factory=dict)


class _Penalties:
    """Each mate's penalty (Eq. 4) per share lent, or None at or above the limit, computed once
    per mate and call of ``_best_set``: the groups read every share of every mate many times (a
    pair of mates tries up to ``need`` splits)."""

    def __init__(self, policy: SDPolicy, need: int, duration: float, limit: float, found: _Mates) -> None:
        self.policy, self.need, self.duration, self.limit = policy, need, duration, limit
        self.caps, self.terms = found.caps, found.terms
        self.tables: dict[int, list[float | None]] = {}
        self.plain = _plain(policy)

    def of(self, r: Running) -> list[float | None]:
        t = self.tables.get(r.job_id)
        if t is not None:
            return t
        t = [None]  # share 0: never lent
        top = min(self.caps[r.job_id], self.need)
        duration, limit = self.duration, self.limit
        if self.plain:  # penalty(r, a, duration) for every a, with what is the same for all a once
            base, size, den = self.terms[r.job_id]
            for a in range(1, top + 1):
                p = (base + duration * a / size) / den
                t.append(p if p < limit else None)
        else:
            for a in range(1, top + 1):
                p = self.policy.penalty(r, a, duration)
                t.append(p if p < limit else None)
        self.tables[r.job_id] = t
        return t

    def reach(self, r: Running) -> int:
        """The most nodes ``r`` may lend below the limit (at most what is needed)."""
        base, size, den = self.terms[r.job_id]
        return _reach(base, size, den, min(self.caps[r.job_id], self.need), self.duration, self.limit)

    def feasible(self, mates: list[Running]) -> bool:
        """Whether one mate, or two (if ``max_mates`` allows), may lend exactly ``need`` nodes with
        every penalty below the limit: a pair may iff each can lend one and together ``need``.
        Without the plain penalty (a subclass's own), every group is tried instead."""
        if not self.plain:
            return True
        reach = [self.reach(r) for r in mates]
        if max(reach, default=0) >= self.need:
            return True
        # no mate alone: a pair's shares then are each at least need - (the other's reach) >= 1
        return self.policy.max_mates >= 2 and _sum_largest(reach, 2) >= self.need


def _reach(base: float, size: int, den: float, hi: int, duration: float, limit: float) -> int:
    """The most nodes (at most ``hi``) a mate of penalty terms ``(base, size, den)`` may lend for
    ``duration`` with its penalty below ``limit``: the penalty grows with the share and the
    duration (rounding keeps that order), so the shares below it are 1..reach. Worked out in
    closed form, then moved to the first share whose penalty (the expression the tables
    compute) reaches the limit."""
    room = (limit * den - base) * size / duration if duration > 0 else INF
    a = hi if room >= hi else max(int(room), 0)  # int(): floor of a non-negative number
    while a > 0 and (base + duration * a / size) / den >= limit:
        a -= 1
    while a < hi and (base + duration * (a + 1) / size) / den < limit:
        a += 1
    return a


def _search(
    ranked: list[Running], need: int, tables: _Penalties, caps: dict[int, int], max_mates: int
) -> _Group | None:
    """The group search of ``_best_set`` (without its cheap checks): of the groups of 1 to
    ``max_mates`` of ``ranked`` that lend ``need`` nodes, the one of least impact."""
    best: _Group | None = None
    for m in range(1, min(max_mates, need) + 1):  # more mates than nodes: no split
        if m == 1:
            best = _best_single(ranked, need, tables, caps)
        elif m == 2:
            best = _best_pair(ranked, need, tables, caps, best)
        else:
            for group in combinations(ranked, m):
                split = _split(group, need, tables, caps)
                if split is not None and (best is None or split[1] < best[1] - 1e-12):
                    best = split
    return best


def _best_single(ranked: list[Running], need: int, tables: _Penalties, caps: dict[int, int]) -> _Group | None:
    """The one-mate groups of ``_best_set`` in order, each as ``_split`` would find it: the
    mate lends all ``need`` nodes, if it can."""
    best: _Group | None = None
    for r in ranked:
        if caps[r.job_id] < need:
            continue
        p = tables.of(r)[need]
        if p is not None and (best is None or p < best[1] - 1e-12):
            best = ((r.job_id, need),), p
    return best


def _best_pair(
    ranked: list[Running],
    need: int,
    tables: _Penalties,
    caps_of: dict[int, int],
    best: _Group | None,
) -> _Group | None:
    """The pairs of ``_best_set`` in ``combinations`` order, each split as ``_split`` does:
    up to 190 pairs per call, so the pairs that cannot lend ``need`` are passed over first."""
    caps = [caps_of[r.job_id] for r in ranked]
    for i, ri in enumerate(ranked):
        ci = caps[i]
        for j in range(i + 1, len(ranked)):
            cj = caps[j]
            if ci + cj < need:
                continue
            t0, t1 = tables.of(ri), tables.of(ranked[j])
            split: tuple[int, float] | None = None
            for a in range(max(1, need - cj), min(ci, need - 1) + 1):
                p0, p1 = t0[a], t1[need - a]
                if p0 is None or p1 is None:
                    continue
                total = p0 + p1
                if split is None or total < split[1]:
                    split = (a, total)
            if split is not None and (best is None or split[1] < best[1] - 1e-12):
                a = split[0]
                best = ((ri.job_id, a), (ranked[j].job_id, need - a)), split[1]
    return best


def _split(
    group: tuple[Running, ...], need: int, tables: _Penalties, caps_of: dict[int, int]
) -> _Group | None:
    """Best way for ``group`` to lend exactly ``need`` nodes, each mate at least one."""
    caps = [caps_of[r.job_id] for r in group]
    if sum(caps) < need or len(group) > need:
        return None
    tabs = [tables.of(r) for r in group]
    best: tuple[tuple[int, ...], float] | None = None
    for shares in _shares(caps, need):
        ps = [t[a] for t, a in zip(tabs, shares, strict=True)]
        if any(p is None for p in ps):
            continue
        total = sum(p for p in ps if p is not None)
        if best is None or total < best[1]:
            best = (shares, total)
    if best is None:
        return None
    return tuple((r.job_id, a) for r, a in zip(group, best[0], strict=True)), best[1]


def _plain_keys(rows: list[_Row], need: int, duration: float) -> Iterator[float]:
    """``penalty(r, min(cap, need), duration)`` of each mate's row ``(*_terms(r), cap)`` of
    :class:`_Mates`, in order: ``_terms``'s expression."""
    return ((base + duration * (cap if cap < need else need) / size) / den for base, size, den, cap in rows)


def _crowded(rows: list[_Row], need: int, duration: float, nm: int, max_mates: int) -> bool:
    """Whether at least ``nm`` of the mates' ``rows`` (with the plain penalty) have a smaller key
    (``_plain_keys``) than every mate that may lend ``need / max_mates`` nodes or more. Then the
    ``nm``-th least key is below all of those, so every mate ``_best_set`` ranks (a key at most
    that) lends fewer, and no group of ``max_mates`` of them lends ``need``. Exact; it stops at
    the ``nm``-th such key, where ranking computes every key and sorts them (``_best_set``'s
    check of the ranked mates' caps, which this one spares nearly always on a large machine).
    That is :func:`_crowded_below` over a range of one need and one duration (a mate that may
    not lend ``need / max_mates`` has a cap below ``need``: its key reads its cap)."""
    return _crowded_below(rows, need, duration, duration, nm, max_mates)


def _crowded_below(
    rows: list[_Row], need_low: int, d_low: float, d_high: float, nm: int, max_mates: int
) -> bool:
    """Whether ``_crowded`` is True at every (need, duration) with need >= ``need_low`` and
    ``d_low`` <= duration <= ``d_high``: at least ``nm`` mates too small to lend a share of
    ``need_low`` (so of any such need) have their key at ``d_high`` (their keys grow with the
    duration, and with a cap below the need do not depend on it) below the least key any mate
    that may lend ``need_low / max_mates`` could have there (its key at ``d_low`` and
    ``need_low``: keys grow with both). Then those mates are below ``_crowded``'s bar there."""
    low = INF
    for base, size, den, cap in rows:
        if cap * max_mates >= need_low:
            key = (base + d_low * (cap if cap < need_low else need_low) / size) / den
            if key < low:
                low = key
    below = 0
    for base, size, den, cap in rows:
        if cap * max_mates < need_low and (base + d_high * cap / size) / den < low:
            below += 1
            if below == nm:
                return True
    return False


def _sum_largest(values: list[int], m: int) -> int:
    """``sum(sorted(values, reverse=True)[:m])``, without the sort for one or two (the paper's)."""
    if m == 1:
        return max(values, default=0)
    if m == 2:
        first = second = 0  # values are caps: never negative
        for v in values:
            if v > first:
                first, second = v, first
            elif v > second:
                second = v
        return first + second
    return sum(sorted(values, reverse=True)[:m])


def _suffix_tops(caps: list[int], m: int) -> list[int]:
    """``[_sum_largest(caps[i:], m) for i in range(len(caps) + 1)]`` in one pass from the end."""
    tops = [0] * (len(caps) + 1)
    largest: list[int] = []  # the m largest caps seen so far, in descending order
    for i in range(len(caps) - 1, -1, -1):
        insort(largest, caps[i], key=neg)
        del largest[m:]
        tops[i] = sum(largest)
    return tops


def _plain(policy: SDPolicy) -> bool:
    """Whether ``policy``'s penalty is SD-Policy's own (Eq. 4, ideal model), which ``_terms`` splits up."""
    kind = type(policy)
    return kind.penalty is SDPolicy.penalty and kind._slowdown is SDPolicy._slowdown and not policy.worst_case


def _end(r: Running) -> float:
    return r.end


_job_id = attrgetter("job_id")


def _shares(caps: list[int], need: int) -> Iterator[tuple[int, ...]]:
    """All ways to write ``need`` as a sum of one share per mate, 1 <= share <= cap."""
    if len(caps) == 1:
        if 1 <= need <= caps[0]:
            yield (need,)
        return
    for a in range(1, min(caps[0], need - len(caps) + 1) + 1):
        for rest in _shares(caps[1:], need - a):
            yield (a, *rest)


def _rebuild(cl: WorkingView, old: SnapshotProfile) -> SnapshotProfile:
    """The working copy's profile now, with ``old``'s reservations at the times they were made."""
    prof = cl.profile()
    for t, dur, n in old.reservations():
        prof.reserve_at(t, dur, n)
    return prof
