"""Decisions and resizes: what the service does with each protocol request.

- ``check``: inject the job's (min, max, factor, preferred) into the snapshot, run the
  policy for that job, log the decision and its reason. Expand: get the nodes now with the
  configured strategy (``merge``: the resizer job merges them into the application's job;
  ``expander``: a second job hosts the new ranks), with a deadline (on timeout/failure: no
  action, nothing left behind), and answer with the nodes and how many groups will join.
  Shrink: answer with the nodes to keep (whole groups leave); the allocation shrinks later,
  in ``shrink_ready``, after every leaving rank acked.
- ``commit``: an expansion is over (ok) or undone (not ok: the nodes are given back, an
  expander job cancelled).
- ``shrink_ready``: wait for all acks, boost the pending job the shrink was for, release
  the nodes (node-list update of the application's job, expander jobs ended), extend the
  job's time limit in proportion.
One reconfiguration per job at a time (:mod:`.inflight`); any number of jobs concurrently.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from slurm_ext import protocol as p
from slurm_ext.backend import (
    EXPANDER_PREFIX,
    RESIZER_PREFIX,
    ClusterBackend,
    expander_command,
    expander_name,
    served_job,
)
from slurm_ext.decisions import Decision, Expand, RaisePriority, Shrink, StartJob
from slurm_ext.errors import SlurmUnavailable
from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.partitions import partition_names, partition_view
from slurm_ext.policies.base import Policy
from slurm_ext.service import journal as jr
from slurm_ext.service.auth import Peer, may_act
from slurm_ext.service.events import EventLog
from slurm_ext.service.groups import GroupRef, node_count, plan_shrink, ranks_of, release_by_job
from slurm_ext.service.inflight import InFlight, Reconf
from slurm_ext.service.journal import Journal, reconf_from
from slurm_ext.service.watcher import SnapshotCache

log = logging.getLogger("slurm_ext.service")


@dataclass(frozen=True)
class ServiceOptions:
    expand_timeout: float = 10.0  # deadline for the resizer job to get its nodes
    ack_timeout: float = 30.0  # how long shrink_ready waits for the leaving ranks
    commit_timeout: float = 300.0  # an expansion never committed, a shrink never ready: settled after this
    steps_grace: float = 3.0  # after all acks, wait this long for steps on released nodes to end
    snapshot_interval: float = 1.0
    extend_time_limit: bool = True  # after a shrink, stretch the time limit by old/new
    reduce_time_limit: bool = True  # after an expand, scale it back by old/new (never below the original)
    expand_strategy: str = "auto"  # "merge" | "expander" | "auto" (merge where Slurm permits it)
    journal_dir: Path | None = None  # where each resize step is recorded first (None: not recorded)
    events_path: Path | None = None  # JSON lines of what the service did (None: metrics only)
    min_efficiency: float = 0.0  # refuse to grow a job whose last growth scaled worse than this (0: off)
    decision_ttl: float = 60.0  # a resize decided for a job that is not asking waits this long for it
    plan_interval: float = 0.0  # run the policy on the whole cluster this often (0: only on checks)
    repair_grace: float = 3.0  # after a restart, how long ranks get to show up on nodes they were given
    slurm_patience: float = 2.0  # how long a check waits for a fresh reading of Slurm ("no action" after)
    # "no action" may rest on a snapshot this old (an action is always decided on a fresh one): when
    # readings stop (slurmctld away) checks are answered from the last one, not held until it is overdue
    no_action_max_age: float = 10.0


STRATEGIES = ("auto", "merge", "expander")


def served_by(job: Job) -> int | None:
    """The application an expander job serves (from its name), or None."""
    return served_job(job.name, EXPANDER_PREFIX)


def fold_expanders(snap: Snapshot) -> Snapshot:
    """The snapshot as policies should see it: every expander job folded into its application
    (its nodes counted as the application's; a pending one hidden: it is not a queued job).
    """
    extra: dict[int, list[str]] = {}
    kept: list[Job] = []
    live = {j.job_id for j in snap.jobs}
    for job in snap.jobs:
        app = served_by(job)
        if app is None or app not in live:
            kept.append(job)
        elif job.is_running:
            extra.setdefault(app, []).extend(job.nodes)
    jobs = []
    for job in kept:
        more = [n for n in extra.get(job.job_id, []) if n not in job.nodes]
        jobs.append(
            replace(job, nodes=job.nodes + tuple(more), node_count=job.node_count + len(more))
            if more
            else job
        )
    return Snapshot(time=snap.time, nodes=snap.nodes, jobs=tuple(jobs))


def _none(reason: str) -> p.Decision:
    return p.Decision(action=p.ACTION_NONE, reason=reason)


def left_queue(snap: Snapshot, job_id: int) -> bool:
    """Whether ``job_id``, absent from ``snap``, has left Slurm's queue (or never was in it): an id
    below the newest job's was submitted before the snapshot was read, which lists every pending
    and running job. A check for such a job needs no fresh reading (nor does a flood of them)."""
    return snap.job(job_id) is None and any(j.job_id > job_id for j in snap.jobs)


class Controller:
    def __init__(self, backend: ClusterBackend, policy: Policy, options: ServiceOptions | None = None):
        self.backend = backend
        self.policy = policy
        self.options = options or ServiceOptions()
        self.cache = SnapshotCache(backend, self.options.snapshot_interval)
        self.declared: dict[int, MalleableSpec] = {}  # job -> the spec its ranks declared at their checks
        self.waiting: dict[int, tuple[Expand | Shrink, int, float]] = {}  # job -> (decision, size, expiry)
        self._boosted: set[int] = set()
        self.molded: dict[int, int] = {}  # pending job -> the size a policy starts it at
        self.step_times: dict[int, dict[int, float]] = {}  # job -> nodes -> its last step's seconds
        self.grown: dict[int, tuple[int, int]] = {}  # job -> (old, new) nodes of its last growth
        self._planned_at = 0.0
        self.journal = Journal(self.options.journal_dir)
        self.events = EventLog(self.options.events_path, policy.name)
        self.inflight = InFlight(on_end=self.journal.remove)
        self.decide_lock = threading.Lock()  # decisions see each other's reservations
        self.acted = 0  # decisions acted on so far (a reading taken before one does not see it)
        self.expand_lock = threading.Lock()  # one resizer job on the cluster at a time
        self.counters: dict[str, int] = {
            "check": 0,
            "expand": 0,
            "shrink": 0,
            "none": 0,
            "failed": 0,
            "refused": 0,
        }
        self.background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dmr-bg")
        # seconds per operation, for the latency benchmark: "expand" = decision -> nodes merged
        # into the job; "shrink" = decision -> nodes released (acks included)
        self.timings: dict[str, list[float]] = {"expand": [], "shrink": [], "credential_wait": []}
        self._released: dict[tuple[int, str], float] = {}  # (job, node) -> wall time released
        self._base_limit: dict[int, float] = {}  # the time limit each job was submitted with
        if self.options.expand_strategy not in STRATEGIES:
            raise ValueError(
                f"expand strategy {self.options.expand_strategy!r}; valid: {', '.join(STRATEGIES)}"
            )
        self._strategy: str | None = (
            None if self.options.expand_strategy == "auto" else self.options.expand_strategy
        )

    @property
    def strategy(self) -> str:
        """The expansion strategy in use; ``auto`` asks Slurm once whether in-place growth is permitted."""
        if self._strategy is None:
            try:
                merge = bool(self.backend.expansion_permitted())
            except Exception as exc:
                log.warning("cannot read Slurm's configuration (%s); expanding with expander jobs", exc)
                merge = False
            self._strategy = "merge" if merge else "expander"
            log.info("expansion strategy: %s (auto: permit_job_expansion %s)", self._strategy,
                     "on" if merge else "off")  # fmt: skip
        return self._strategy

    # -- check -----------------------------------------------------------------------------------
    # -- who may ask ---------------------------------------------------------------------------
    def _refuse_job(self, job_id: int, peer: Peer | None) -> p.Error | None:
        """An error if ``peer`` may not act on the job (``peer`` None: a call from inside the service)."""
        if peer is None:
            return None
        patience = self.options.slurm_patience
        snap = self.cache.get(patience=patience)
        if left_queue(snap, job_id):
            return None  # answered "not running" below, from the same snapshot
        return self._refuse_owner(snap.job(job_id) or self.cache.fresh(patience).job(job_id), peer)

    def _refuse_owner(self, job: Job | None, peer: Peer) -> p.Error | None:
        if job is None or may_act(peer, job.user):
            return None  # an unknown job gets "no action" below
        return self._refusal(f"job {job.job_id} belongs to {job.user or 'another user'}", peer)

    def _refuse_reconf(self, r: Reconf, peer: Peer | None) -> p.Error | None:
        if peer is None or r.owner is None or may_act(peer, r.owner):
            return None
        return self._refusal(f"job {r.job_id} belongs to {r.owner}", peer)

    def _refusal(self, why: str, peer: Peer) -> p.Error:
        self.counters["refused"] += 1
        self.events.emit("refused", 0, peer=peer.name, uid=peer.uid, how=peer.how, reason=why)
        log.warning("refused a request from %s (uid %s, %s): %s", peer.name, peer.uid, peer.how, why)
        return p.Error(message=f"permission denied: {why}; you are {peer.name}")

    def check(self, req: p.Check, peer: Peer | None = None) -> p.Decision | p.Error:
        t0 = time.perf_counter()
        try:
            if (refused := self._refuse_job(req.job_id, peer)) is not None:
                self.counters["check"] += 1
                return refused
            decision = self._check(req)
        except SlurmUnavailable as exc:  # keep what is in flight; the app asks again at its next step
            decision = _none(f"Slurm unavailable: {exc}")
        return self._answered(req, decision, t0)

    def check_now(self, req: p.Check, peer: Peer | None = None) -> p.Decision | p.Error | None:
        """The answer to a check when it is "no action" from the cached snapshot, given without
        waiting for Slurm or for a lock another request holds (the server answers such checks on
        its event loop, so a thousand applications checking at once are not queued behind a pool of
        workers); None when the full :meth:`check` must run: no recent snapshot, the job's size
        changed since it was taken, the decision lock is busy, or the policy would resize."""
        t0 = time.perf_counter()
        snap = self.cache.current(
            max_age=max(self.options.no_action_max_age, 2 * self.options.snapshot_interval)
        )
        if snap is not None and left_queue(snap, req.job_id):
            return self._answered(req, _none(f"job {req.job_id} is not in Slurm's queue"), t0)
        if snap is None or (job := snap.job(req.job_id)) is None:
            return None
        if peer is not None and (refused := self._refuse_owner(job, peer)) is not None:
            self.counters["check"] += 1
            return refused
        if self.inflight.get(req.job_id) is not None:
            return self._answered(req, _none("a reconfiguration of this job is in flight"), t0)
        try:
            spec = MalleableSpec(max(1, req.min), max(1, req.max), req.factor, req.preferred)
        except ValueError as exc:
            return self._answered(req, _none(f"invalid request: {exc}"), t0)
        if not self.decide_lock.acquire(blocking=False):
            return None
        try:
            folded = fold_expanders(snap)
            cached = folded.job(req.job_id)
            if cached is None or cached.node_count != req.current:
                return None
            plan = self._decide(req, spec, folded)
        finally:
            self.decide_lock.release()
        if plan is None:
            return self._answered(req, _none("no decision"), t0)
        return self._answered(req, plan, t0) if isinstance(plan, p.Decision) else None

    def _answered(self, req: p.Check, decision: p.Decision, t0: float) -> p.Decision:
        """Count, record and log the answer to a check."""
        self.counters["check"] += 1
        self.counters[decision.action if decision.action in self.counters else "none"] += 1
        self.events.emit("decision", req.job_id, action=decision.action, old=req.current,
                         new=decision.new_size or req.current, reason=decision.reason, step=req.step_seconds,
                         seconds=round(time.perf_counter() - t0, 6))  # fmt: skip
        log.info(
            "job %s check cur=%s min=%s max=%s f=%s pref=%s -> %s %s (%s) [%.1f ms]",
            req.job_id, req.current, req.min, req.max, req.factor, req.preferred, decision.action,
            decision.new_size or "", decision.reason, (time.perf_counter() - t0) * 1e3,
        )  # fmt: skip
        return decision

    def _check(self, req: p.Check) -> p.Decision:
        if self.inflight.get(req.job_id) is not None:
            return _none("a reconfiguration of this job is in flight")
        try:
            spec = MalleableSpec(max(1, req.min), max(1, req.max), req.factor, req.preferred)
        except ValueError as exc:
            return _none(f"invalid request: {exc}")
        patience = self.options.slurm_patience  # an answer never waits longer on Slurm
        raw = self.cache.get(patience=patience)
        seen: int | None = None  # decisions acted on when ``raw`` began (None: a cached reading)
        cached = fold_expanders(raw).job(req.job_id)
        stale = cached is None or not cached.is_running or cached.node_count != req.current
        if stale and not left_queue(raw, req.job_id):
            # the cache predates the job's start or a resize (a job that checks is running)
            seen, raw = self.acted, self.cache.fresh(patience)
        # Slurm is read outside the decision lock, which every other job's answer needs: an action
        # is taken only on a reading begun after every decision acted on so far (else read again)
        for _ in range(3):
            with self.decide_lock:
                plan = self._decide(req, spec, fold_expanders(raw))
                if plan is None:
                    return _none("no decision")
                if isinstance(plan, p.Decision):
                    return plan
                if seen == self.acted:
                    if not self.inflight.begin(plan):
                        return _none("a reconfiguration of this job is in flight")
                    self.acted += 1
                    self.waiting.pop(req.job_id, None)  # a decision kept for it is being carried out
                    reconf = plan
                    break
            seen, raw = self.acted, self.cache.fresh(patience)
        else:
            return _none("the cluster changed under three decisions in a row; asked again at the next step")
        if reconf.kind == "shrink":
            reconf.state = "waiting-acks"
            self.journal.write(reconf, jr.SHRINK_DECIDED)
            if reconf.boosts:  # the boosted job cannot start before the shrink: boost it now
                self.background.submit(self._boost, reconf)
            return p.Decision(p.ACTION_SHRINK, reconf.new_size, reconf.nodes, reconf.token, self._why(reconf))
        return self._expand(reconf, req)

    def _decide(self, req: p.Check, spec: MalleableSpec, snap: Snapshot) -> Reconf | p.Decision | None:
        """``snap`` has expander jobs folded into their applications (:func:`fold_expanders`)."""
        job = snap.job(req.job_id)
        if job is None or not job.is_running:
            return _none(f"job {req.job_id} is not running on the cluster")
        if set(job.nodes) != set(req.nodes) or job.node_count != req.current:
            return _none(f"job holds {sorted(job.nodes)} but the application runs on {sorted(req.nodes)}")
        scope = partition_view(snap, job.partition)  # the nodes Slurm would ever give it
        cap = max(spec.min_nodes, len(scope.nodes))  # no policy need look past them
        if spec.max_nodes > cap:
            pref = None if spec.preferred is None else min(spec.preferred, cap)
            spec = replace(spec, max_nodes=cap, preferred=pref)
        self.declared[req.job_id] = spec  # what its ranks declare wins over its submission's comment
        if req.step_seconds is not None:
            self.step_times.setdefault(req.job_id, {})[req.current] = req.step_seconds
        asking = replace(job, malleable=spec)
        if req.evolving is not None and req.evolving > job.node_count:
            # an evolving request (paper 000) shows as the policies read one: the ask in the job's
            # typed field, a spec [current, ask] that only describes it; the policy grants or refuses it
            ask = min(req.evolving, cap)
            described = MalleableSpec(job.node_count, ask)
            asking = replace(job, malleable=described, evolving=ask)
        view = self._view(scope, asking)
        decisions = self.policy.decide(view, [req.job_id])
        self._remember(decisions, view, exclude=req.job_id)
        mine = next(
            (d for d in decisions if isinstance(d, (Expand, Shrink)) and d.job_id == req.job_id), None
        ) or self._waiting_for(job, view)
        if mine is None:
            reasons = "; ".join(d.reason for d in decisions if getattr(d, "job_id", None) == req.job_id)
            return _none(reasons or "policy: no action")
        # the sizes the application's runtime knows (an evolving request names its own)
        size = mine.new_size if req.evolving is not None else spec.toward(job.node_count, mine.new_size)
        if size == job.node_count:
            return _none(f"policy: {mine.reason}; but {mine.new_size} nodes is not reachable from "
                         f"{job.node_count} by the application's factor {spec.factor}")  # fmt: skip
        if size != mine.new_size:
            mine = replace(mine, new_size=size, reason=f"{mine.reason} ({size}: the factor's nearest)")
        # the pending jobs the policy starts or raises: on Slurm a start is top priority (after the shrink)
        boosts = [
            d.job_id
            for d in decisions
            if isinstance(d, (RaisePriority, StartJob)) and (j := view.job(d.job_id)) and j.is_pending
        ]
        if isinstance(mine, Expand) and (poor := self._poor_scaling(req.job_id)) is not None:
            return _none(f"policy: {mine.reason}; but {poor}")
        if isinstance(mine, Expand):
            if not req.agent:
                return _none(f"policy: {mine.reason}; but the application has no agent to start new ranks")
            return Reconf(
                req.job_id, "expand", job.node_count, mine.new_size, list(job.nodes), boosts=boosts,
                reason=mine.reason, owner=job.user,
            )  # fmt: skip
        groups = [GroupRef.from_check(g) for g in req.groups] or [
            GroupRef(f"node-{n}", req.job_id, (n,)) for n in req.nodes
        ]
        if node_count(groups) != job.node_count:
            return _none(
                f"the application's groups cover {node_count(groups)} nodes, the job {job.node_count}"
            )
        raw = self.cache.get(max_age=float("inf"))
        hosts = {j.job_id: j.batch_host for j in raw.jobs if j.batch_host}
        removed = plan_shrink(groups, req.job_id, hosts, mine.new_size)
        if removed is None:
            return _none(f"policy asked shrink to {mine.new_size}; no groups of the application can leave")
        gone = {n for g in removed for n in g.nodes}
        kept = [n for n in req.nodes if n not in gone]
        job_nodes = {j.job_id: list(j.nodes) for j in raw.jobs}
        reconf = Reconf(
            req.job_id, "shrink", job.node_count, len(kept), list(job.nodes), kept,
            for_job=mine.for_job, boosts=boosts, reason=mine.reason, owner=job.user,
        )  # fmt: skip
        reconf.release = release_by_job(groups, removed, job_nodes)
        reconf.leaving_ranks = ranks_of(groups, removed)
        return reconf

    def _poor_scaling(self, job_id: int) -> str | None:
        """Why growing this job again is not worth it (its last growth's measured parallel efficiency
        is below ``min_efficiency``), or None."""
        if not self.options.min_efficiency or job_id not in self.grown:
            return None
        old, new = self.grown[job_id]
        times = self.step_times.get(job_id, {})
        if old not in times or new not in times or times[new] <= 0:
            return None
        efficiency = (times[old] / times[new]) / (new / old)
        if efficiency >= self.options.min_efficiency:
            return None
        return (f"growing {old}->{new} nodes gave a parallel efficiency of {efficiency:.2f} "
                f"(< {self.options.min_efficiency:g})")  # fmt: skip

    # -- decisions for jobs that are not asking (the pull model of paper 002) ----------------------
    def _remember(self, decisions: list, view: Snapshot, exclude: int | None = None) -> None:
        """Keep the policy's resizes of other running jobs until they ask (they expire)."""
        expires = time.monotonic() + self.options.decision_ttl
        for d in decisions:
            if isinstance(d, (Expand, Shrink)) and d.job_id != exclude:
                job = view.job(d.job_id)
                if job is not None and job.is_running and job.malleable is not None:
                    self.waiting[d.job_id] = (d, job.node_count, expires)

    def _waiting_for(self, job: Job, view: Snapshot) -> Expand | Shrink | None:
        """A decision kept for ``job`` (still fresh, made at its current size, its beneficiary still
        waiting), used once."""
        kept = self.waiting.get(job.job_id)  # removed when carried out (a check may decide twice)
        if kept is None:
            return None
        decision, size, expires = kept
        beneficiary = view.job(decision.for_job) if decision.for_job is not None else None
        if (
            time.monotonic() > expires
            or size != job.node_count
            or (decision.for_job is not None and (beneficiary is None or beneficiary.is_running))
        ):
            self.waiting.pop(job.job_id, None)
            return None
        return replace(decision, reason=f"{decision.reason} (decided while it was not asking)")

    def plan_cluster(self) -> None:
        """Run the policy on the whole cluster, partition by partition: resizes wait for their job's
        next check; a pending job the policy would start now gets top priority (what Slurm lets us
        do for a start).
        """
        whole = self._view(fold_expanders(self.cache.fresh()), None)
        decisions: list[Decision] = []
        for part in partition_names(whole) or [""]:  # each partition's jobs within its nodes
            view = partition_view(whole, part)
            with self.decide_lock:
                mine = self.policy.decide(view, [])
            self._remember(mine, view)
            decisions += mine
        self._check_molded(whole)
        for d in decisions:
            job = whole.job(getattr(d, "job_id", -1))
            if isinstance(d, (StartJob, RaisePriority)) and job is not None and not job.is_running:
                if job.job_id in self._boosted:
                    continue
                self._boosted.add(job.job_id)
                if isinstance(d, StartJob) and d.nodes != job.node_count:
                    self._mold(job, d)
                try:
                    self.backend.raise_priority(job.job_id)
                    log.info("job %s: top priority (%s)", job.job_id, d.reason or "policy: start it")
                except Exception as exc:
                    log.warning("raising priority of job %s failed: %s", job.job_id, exc)
        live = {j.job_id for j in whole.jobs}
        self._boosted &= live
        for job_id in [j for j in self.waiting if j not in live]:
            del self.waiting[job_id]
        for table in (self.declared, self.step_times, self.grown):
            for job_id in [j for j in table if j not in live]:
                del table[job_id]

    # -- moldable starts ---------------------------------------------------------------------------
    def _mold(self, job: Job, d: StartJob) -> None:
        """A start at another size than asked (DBES at a malleable job's minimum, SD-Policy on fewer
        nodes, moldable FCFS/EASY): the pending job's node count is set to it, within the range the
        job declared, and its time limit scaled as its work spreads over fewer (or more) nodes."""
        spec = self.declared.get(job.job_id) or job.malleable
        size: int | None = None  # the size to start on: set only if the job can start on one
        if spec is None:
            why = "no declared range"
        elif not spec.min_nodes <= d.nodes <= spec.max_nodes:
            why = f"outside {spec.min_nodes}-{spec.max_nodes}"
        elif (size := spec.start_size(d.nodes)) is None:
            why = f"no size up to {d.nodes} reaches its preferred {spec.preferred} by factor {spec.factor}"
        if size is None:
            self.events.emit("mold", job.job_id, ok=False, old=job.node_count, new=d.nodes, reason=why)
            return
        try:
            limit = None if job.time_limit is None else job.time_limit * job.node_count / size
            self.backend.resize_pending(job.job_id, size, limit)
        except Exception as exc:
            self.events.emit("mold", job.job_id, ok=False, old=job.node_count, new=size, reason=str(exc))
            return
        self.molded[job.job_id] = size
        self.events.emit("mold", job.job_id, ok=True, old=job.node_count, new=size, reason=d.reason)

    def _check_molded(self, snap: Snapshot) -> None:
        """A molded job that started: on the size decided, or reported as not carried out."""
        for job_id, size in list(self.molded.items()):
            job = snap.job(job_id)
            if job is None or job.is_running:
                del self.molded[job_id]
                got = None if job is None else job.node_count
                self.events.emit("molded-start", job_id, ok=got == size, decided=size, nodes=got,
                                 reason="ended before it started" if job is None else "")  # fmt: skip

    def _view(self, snap: Snapshot, job: Job | None) -> Snapshot:
        """The snapshot with every job's declared spec (the asking job's from its check), and
        nodes promised to expansions shown busy."""
        jobs = tuple(
            job if job is not None and j.job_id == job.job_id
            else replace(j, malleable=self.declared[j.job_id]) if j.job_id in self.declared
            else j
            for j in snap.jobs
        )  # fmt: skip
        reserved = self.inflight.reserved_nodes()
        nodes: list[Node] = []
        for node in snap.nodes:
            if reserved and node.state is NodeState.IDLE:
                node, reserved = replace(node, state=NodeState.ALLOCATED), reserved - 1
            nodes.append(node)
        return Snapshot(time=snap.time, nodes=tuple(nodes), jobs=jobs)

    @staticmethod
    def _why(reconf: Reconf) -> str:
        return reconf.reason or f"{reconf.kind} {reconf.old_size}->{reconf.new_size}"

    # -- expand ----------------------------------------------------------------------------------
    def _expand(self, r: Reconf, req: p.Check) -> p.Decision:
        """Get the nodes with the strategy in use; then one answer: the nodes and how many groups join."""
        reason = self._why(r)
        r.state = "expanding"
        r.strategy = self.strategy
        self.journal.write(r, jr.EXPAND_DECIDED)
        t0 = time.perf_counter()
        try:
            if r.strategy == "merge":
                added, launch = self._grow_by_merge(r)
            else:
                added, launch = self._grow_by_expander(r, req)
        except Exception as exc:
            self.inflight.end(r.job_id, r.token)
            self.counters["failed"] += 1
            self.events.emit("failed", r.job_id, resize="expand", strategy=r.strategy, old=r.old_size,
                             new=r.new_size, reason=str(exc))  # fmt: skip
            return _none(f"expand {r.old_size}->{r.new_size} ({r.strategy}) failed: {exc}")
        self.timings["expand"].append(time.monotonic() - r.started)
        self.events.emit("expand", r.job_id, strategy=r.strategy, old=r.old_size, new=r.new_size, nodes=added,
                         seconds=round(self.timings["expand"][-1], 6),
                         phases={"nodes": round(time.perf_counter() - t0, 6)})  # fmt: skip
        r.nodes, r.state = added, "waiting-commit"
        self.journal.write(r, jr.EXPAND_ANSWERED)
        log.info("job %s expanded %s->%s by %s, added %s [%.0f ms]", r.job_id, r.old_size, r.new_size,
                 r.strategy, added, (time.perf_counter() - t0) * 1e3)  # fmt: skip
        job = self.cache.get(max_age=float("inf")).job(r.job_id)
        if self.options.reduce_time_limit and job is not None:
            self.background.submit(self._scale_time_limit, job, r.old_size, r.new_size)
        return p.Decision(
            p.ACTION_EXPAND, r.new_size, added, r.token, reason, groups=len(added), launch=launch
        )

    def _grow_by_merge(self, r: Reconf) -> tuple[list[str], list[str]]:
        """The resizer merge: the nodes join the application's own job; its agent starts the ranks."""
        own = self.cache.fresh().job(r.job_id)
        if own is None:
            raise RuntimeError("the job is gone")
        r.own_nodes = list(own.nodes)
        extra = r.new_size - r.old_size
        with self.expand_lock:
            self.backend.expand(r.job_id, own.node_count + extra, timeout=self.options.expand_timeout)
        job = self.cache.fresh().job(r.job_id)
        added = [n for n in (job.nodes if job else ()) if n not in r.own_nodes]
        r.nodes = added
        self.journal.write(r, jr.EXPAND_MERGED)
        self._wait_credentials(r.job_id, added)
        return added, added

    def _grow_by_expander(self, r: Reconf, req: p.Check) -> tuple[list[str], list[str]]:
        """A second job hosts the new ranks; its own agent starts them, so nothing to launch here."""
        app = self.cache.fresh().job(r.job_id)
        if app is None:
            raise RuntimeError("the job is gone")
        if not req.python.startswith("/"):
            raise RuntimeError(f"the application's interpreter {req.python!r} is not an absolute path")
        left = None
        if app.time_limit is not None and app.start_time is not None:
            left = app.time_limit - (time.time() - app.start_time)
            if left < 60:
                raise RuntimeError(f"the job has {left:.0f} s left: too little for an expander job")
        command = expander_command(req.python, req.agent, r.token)
        extra = r.new_size - r.old_size
        helper = self.backend.submit_expander(app, extra, command, left, agent=req.agent, token=r.token)
        r.helper_job = helper
        self.journal.write(r, jr.EXPANDER_SUBMITTED)
        deadline = time.monotonic() + self.options.expand_timeout
        delay = 0.01
        while True:
            state, nodes = self.backend.job_state(helper)
            if state == JobState.RUNNING and len(nodes) == extra:
                return list(nodes), []
            if state not in ("PENDING", "CONFIGURING", JobState.RUNNING) or time.monotonic() > deadline:
                self.backend.cancel_quietly(helper, expander_name(r.job_id))
                r.helper_job = None
                why = f"is {state or 'gone'}" if state not in ("PENDING", "CONFIGURING") else "did not start"
                raise RuntimeError(f"expander job {helper} {why} within {self.options.expand_timeout:.0f} s")
            time.sleep(delay)
            delay = min(0.05, delay * 1.5)

    def _note_released(self, job_id: int, nodes: list[str]) -> None:
        """Remember when a shrink gave these nodes back (``_wait_credentials`` reads it)."""
        now = time.time()
        self._released.update({(job_id, n): now for n in nodes})

    def _wait_credentials(self, job_id: int, nodes: list[str]) -> None:
        """Slurm revokes a job's credential on the nodes a shrink releases, to the second: a step
        launched there by the same job within that second is refused ("Job credential revoked").
        Before spawning onto a node this job released a moment ago, let the clock pass that second.
        """
        last = max((self._released.pop((job_id, n), 0.0) for n in nodes), default=0.0)
        wait = int(last) + 2 - time.time() if last else 0.0
        if wait > 0:
            self.timings["credential_wait"].append(wait)
            log.info("job %s: waiting %.2f s for Slurm's credential revocation on %s", job_id, wait, nodes)
            time.sleep(wait)

    def commit(self, req: p.Commit, peer: Peer | None = None) -> p.Done | p.Error:
        jr.crash_point(jr.COMMIT_RECEIVED)
        r = self.inflight.get(req.job_id, req.token)
        if r is None:
            return p.Done(ok=False, reason="no such reconfiguration in flight")
        if (refused := self._refuse_reconf(r, peer)) is not None:
            return refused
        if req.ok or r.kind == "shrink":
            self.inflight.end(r.job_id, r.token)
            verb = "committed" if req.ok else "cancelled"
            self.events.emit("commit", r.job_id, resize=r.kind, ok=req.ok, old=r.old_size, new=r.new_size)
            if req.ok and r.kind == "expand":
                self.grown[r.job_id] = (r.old_size, r.new_size)
            log.info("job %s %s %s %s->%s", r.job_id, verb, r.kind, r.old_size, r.new_size)
            return p.Done(
                ok=True, reason=verb, nodes=r.old_nodes + r.nodes if r.kind == "expand" else r.old_nodes
            )
        reason = self._give_back(r)  # the application could not use the new nodes
        self.events.emit("commit", r.job_id, resize=r.kind, ok=False, old=r.old_size, new=r.new_size,
                         reason=reason)  # fmt: skip
        self.inflight.end(r.job_id, r.token)
        return p.Done(ok=True, reason=reason, nodes=r.old_nodes)

    def _give_back(self, r: Reconf) -> str:
        """Undo an expansion the application does not use: its helper jobs end, merged nodes go back."""
        try:
            snap = self.cache.fresh()
            for helper in snap.jobs:  # a resizer still pending, an expander nobody joined
                serves = served_job(helper.name, EXPANDER_PREFIX) or served_job(helper.name, RESIZER_PREFIX)
                unused = helper.job_id == r.helper_job or self._steps(helper.job_id, helper.nodes) == []
                if serves == r.job_id and unused:
                    self.backend.cancel_quietly(helper.job_id, helper.name)
            job = snap.job(r.job_id)
            own = [n for n in (r.own_nodes or r.old_nodes) if job is not None and n in job.nodes]
            if job is not None and own and len(own) < job.node_count:
                given_back = [n for n in job.nodes if n not in own]
                self._wait_steps_gone(r.job_id, given_back)
                self.backend.shrink(r.job_id, len(own), keep=own)
                self._note_released(r.job_id, given_back)
            reason = f"expansion undone, back to {r.old_nodes}"
        except Exception as exc:
            reason = f"giving the nodes back failed: {exc}"
        self.cache.fresh()
        log.info("job %s: %s", r.job_id, reason)
        return reason

    def _steps(self, job_id: int, nodes: Sequence[str]) -> list[str] | None:
        """The job's application steps on ``nodes``; None where the backend cannot tell (no steps)."""
        found = self.backend.steps_on(job_id, list(nodes))
        return None if found is None else list(found)

    def _ranks_gone(self, r: Reconf, nodes: Sequence[str]) -> bool:
        """True only if the backend shows no step of the resize's jobs on ``nodes``."""
        found = [self._steps(j, nodes) for j in list(r.release) or [r.job_id]]
        return all(f is not None and not f for f in found)

    # -- shrink ----------------------------------------------------------------------------------
    def ack(self, req: p.Ack, peer: Peer | None = None) -> p.Done | p.Error:
        r = self.inflight.get(req.job_id, req.token)
        if r is not None and (refused := self._refuse_reconf(r, peer)) is not None:
            return refused
        ok = self.inflight.ack(req.job_id, req.token, req.rank)
        if not ok and r is not None and r.kind == "shrink":
            return p.Done(ok=False, reason=f"rank {req.rank} does not leave in this shrink")
        return p.Done(ok=ok, reason="" if ok else "no shrink of this job in flight")

    def shrink_ready(self, req: p.ShrinkReady, peer: Peer | None = None) -> p.Done | p.Error:
        jr.crash_point(jr.READY_RECEIVED)
        r = self.inflight.get(req.job_id, req.token)
        if r is not None and (refused := self._refuse_reconf(r, peer)) is not None:
            return refused
        if r is None or r.kind != "shrink":
            return p.Done(ok=False, reason="no shrink of this job in flight")
        r.state = "finishing"  # its deadline is the acks' now, not the commit timeout
        t0 = time.perf_counter()
        # the service counts the leaving ranks itself: a client saying "0 acks" cannot skip them
        need = max(req.acks, len(r.leaving_ranks))
        got = self.inflight.wait_acks(r.job_id, r.token, need, self.options.ack_timeout)
        leaving = [n for n in r.old_nodes if n not in r.nodes]
        if got < need and self._ranks_gone(r, leaving):
            log.warning(
                "job %s: %d of %d acks, but no rank runs on %s any more", r.job_id, got, need, leaving
            )
            got = need  # the acks were lost (e.g. sent to a service that restarted); the ranks are gone
        if got < need:
            self.inflight.end(r.job_id, r.token)
            log.warning("job %s: %d of %d acks; NOT shrinking (tasks would be killed)", r.job_id, got, need)
            return p.Done(ok=False, reason=f"only {got} of {need} acks in {self.options.ack_timeout} s")
        released = [n for n in r.old_nodes if n not in r.nodes]
        t_acks = time.perf_counter()
        for job_id, (keep, _ends) in (r.release or {r.job_id: (r.nodes, False)}).items():
            gone = [n for n in released if n not in keep]
            self._wait_steps_gone(job_id, gone)
        t_steps = time.perf_counter()
        self.journal.write(r, jr.SHRINK_ACKED)
        try:
            self._shrink_allocation(r)
        except Exception as exc:
            self.inflight.end(r.job_id, r.token)
            self.counters["failed"] += 1
            self.events.emit(
                "failed", r.job_id, resize="shrink", old=r.old_size, new=r.new_size, reason=str(exc)
            )
            log.warning("job %s: shrink failed: %s", r.job_id, exc)
            return p.Done(ok=False, reason=f"shrink failed: {exc}")
        self.timings["shrink"].append(time.monotonic() - r.started)
        self._note_released(r.job_id, released)
        self.inflight.end(r.job_id, r.token)
        self.background.submit(self._after_shrink, r)
        t_end = time.perf_counter()
        self.events.emit("shrink", r.job_id, old=r.old_size, new=r.new_size, released=released,
                         seconds=round(self.timings["shrink"][-1], 6), for_job=r.for_job,
                         phases={"acks": round(t_acks - t0, 6), "steps": round(t_steps - t_acks, 6),
                                 "slurm": round(t_end - t_steps, 6)})  # fmt: skip
        log.info(
            "job %s shrunk %s->%s, released %s [total %.0f ms: acks %.0f, steps %.0f, scontrol %.0f]",
            r.job_id, r.old_size, r.new_size, released, self.timings["shrink"][-1] * 1e3,
            (t_acks - t0) * 1e3, (t_steps - t_acks) * 1e3, (t_end - t_steps) * 1e3,
        )  # fmt: skip
        return p.Done(ok=True, reason="shrunk", nodes=list(r.nodes))

    def _shrink_allocation(self, r: Reconf) -> None:
        """Release the nodes not kept: a node-list update of each job that keeps some, the end of
        each expander job that keeps none. The decision checked, on a fresh snapshot, that the
        application runs on ``r.old_nodes``, and the in-flight lock kept anyone else from
        resizing it since: the cached snapshot is passed on so that the backend does not read
        the whole cluster again (that read costs a third of the shrink budget).
        """
        snap = self.cache.get(max_age=float("inf"))
        release = r.release or {r.job_id: (r.nodes, False)}
        for job_id, (keep, ends) in release.items():
            if ends:
                if job_id == r.job_id:
                    raise RuntimeError("the application's own job cannot end in a shrink")
                self.backend.cancel_quietly(job_id, expander_name(r.job_id))
            else:
                self.backend.shrink(job_id, len(keep), keep=keep, snap=snap)

    def _boost(self, r: Reconf) -> None:
        for job_id in r.boosts:
            try:
                self.backend.raise_priority(job_id)
                log.info("job %s: top priority (takes the nodes job %s frees)", job_id, r.job_id)
            except Exception as exc:
                log.warning("raising priority of job %s failed: %s", job_id, exc)

    def _after_shrink(self, r: Reconf) -> None:
        try:
            job = self.cache.fresh().job(r.job_id)
        except Exception as exc:
            log.warning("snapshot after shrink failed: %s", exc)
            return
        if job is not None and self.options.extend_time_limit:
            self._scale_time_limit(job, r.old_size, r.new_size)

    def _wait_steps_gone(self, job_id: int, released: list[str]) -> None:
        """Give the leaving ranks' job steps a moment to end before Slurm kills what is left."""
        deadline = time.monotonic() + self.options.steps_grace
        while time.monotonic() < deadline:
            try:
                if not self.backend.steps_on(job_id, released):  # none left (None: a backend without steps)
                    return
            except Exception:
                return
            time.sleep(0.005)  # a step ends some 10-30 ms after its last rank acked; squeue costs ~5 ms
        log.warning("job %s: steps still on %s after %.1f s; shrinking anyway", job_id, released,
                    self.options.steps_grace)  # fmt: skip

    # -- time limits -----------------------------------------------------------------------------
    def _scale_time_limit(self, job: Job, old: int, new: int) -> None:
        """Stretch (shrink) or compress (expand) the remaining time by old/new nodes."""
        if job.time_limit is None or job.start_time is None:
            return
        base = self._base_limit.setdefault(job.job_id, job.time_limit)
        elapsed = max(0.0, time.time() - job.start_time)
        remaining = max(0.0, job.time_limit - elapsed)
        limit = max(base, elapsed + remaining * old / new)  # never below what the user asked for
        if abs(limit - job.time_limit) < 60:
            return  # Slurm counts minutes
        try:
            if not self.backend.set_time_limit(job.job_id, limit):
                return  # a backend without time limits (the simulator)
            log.info(
                "job %s time limit %.0f s -> %.0f s (%s->%s nodes)",
                job.job_id,
                job.time_limit,
                limit,
                old,
                new,
            )
        except Exception as exc:
            log.warning("job %s: setting the time limit failed: %s", job.job_id, exc)

    # -- housekeeping ----------------------------------------------------------------------------
    def _sweep_resizers(self, snap: Snapshot | None = None) -> None:
        """Cancel resizer jobs left behind (e.g. a service killed mid-expansion).

        Only resizers older than any live expansion can be: other services may be expanding
        their jobs on the same cluster right now, and their resizers are not ours to cancel.
        """
        try:
            snap = snap or self.cache.fresh()
            max_age = max(self.options.expand_timeout, 10.0) + 60.0
            for job_id in self.backend.cancel_orphan_resizers(older_than=max_age, snap=snap):
                log.warning("cancelled orphan resizer job %s", job_id)
        except Exception as exc:
            log.warning("resizer sweep failed: %s", exc)

    # -- repair after a crash ---------------------------------------------------------------------
    def repair(self) -> None:
        """Carry on from the journal that a previous run of the service left behind.

        Before the application was answered, it never heard of the new nodes: give them back.
        Answered expansions and shrinks are taken over as in flight: a late commit or shrink_ready
        is handled as usual, and :meth:`housekeeping` settles the rest from what runs where.
        Nodes the application let go are released once every leaving rank is gone.
        """
        for record in self.journal.records():
            r = reconf_from(record)
            if self.inflight.get(r.job_id) is not None:
                continue
            step = record.get("step", "")
            job = self.cache.fresh().job(r.job_id)
            if job is None or not job.is_running:
                if r.helper_job is not None:
                    self.backend.cancel_quietly(r.helper_job, expander_name(r.job_id))
                self.journal.remove(r.job_id)
                log.warning("job %s: gone; dropped its %s from the journal", r.job_id, step)
                continue
            log.warning("job %s: taking over %s from the journal", r.job_id, step)
            self.events.emit("repair", r.job_id, step=step, resize=r.kind, old=r.old_size, new=r.new_size)
            if step in (jr.EXPAND_DECIDED, jr.EXPAND_MERGED, jr.EXPANDER_SUBMITTED):
                self._give_back(r)  # the application was never told about these nodes
                self.journal.remove(r.job_id)
                continue
            r.recovered = True
            r.state = "waiting-commit" if r.kind == "expand" else "waiting-acks"
            self.inflight.begin(r)
            if step == jr.SHRINK_ACKED:
                self._settle(r, force=True)
            elif r.kind == "shrink" and r.boosts:
                self.background.submit(self._boost, r)
        self._settle_all()

    def _settle_all(self) -> None:
        for r in list(self.inflight.snapshot().values()):
            try:
                self._settle(r)
            except Exception as exc:
                log.warning("job %s: repair failed: %s", r.job_id, exc)

    def _settle(self, r: Reconf, force: bool = False) -> None:
        """Make a resize that nobody will finish agree with what runs: after a restart (``recovered``)
        once the grace has passed, or one the application left unfinished past the commit timeout
        (an expansion never committed, a shrink never reported ready: a rank died, say).
        """
        age = time.monotonic() - r.started
        expired = r.state in ("waiting-commit", "waiting-acks") and age > self.options.commit_timeout
        if not force and not expired and not (r.recovered and age > self.options.repair_grace):
            return
        if r.kind == "expand":
            hosts = [r.helper_job] if r.helper_job is not None else [r.job_id]
            used = any(self._steps(j, r.nodes) != [] for j in hosts)  # unknown (None) counts as used
            if used:
                log.warning("job %s: ranks run on %s: expansion kept though never committed (ranks of an "
                            "expander job that never join end it themselves)", r.job_id, r.nodes)  # fmt: skip
            else:
                self._give_back(r)
            self.inflight.end(r.job_id, r.token)
            return
        leaving = [n for n in r.old_nodes if n not in r.nodes]
        if not self._ranks_gone(r, leaving) and not force:
            if age > self.options.ack_timeout + self.options.repair_grace:
                log.warning("job %s: leaving ranks still run on %s; shrink dropped", r.job_id, leaving)
                self.inflight.end(r.job_id, r.token)
            return
        snap = self.cache.fresh()
        holders = [snap.job(j) for j in list(r.release) or [r.job_id]]
        if any(h is not None and set(h.nodes) & set(leaving) for h in holders):
            self._shrink_allocation(r)
            log.warning("job %s: shrink %s->%s completed after a restart", r.job_id, r.old_size, r.new_size)
        self.inflight.end(r.job_id, r.token)
        self.cache.fresh()

    def housekeeping(self) -> None:
        """Forget resizes of finished jobs; settle those nobody finishes; cancel orphan helpers."""
        try:
            snap = self.cache.get()
            self.repair()  # records a failed start-up repair could not take over yet
        except Exception as exc:
            log.warning("housekeeping skipped: %s", exc)
            return
        states: dict[str, int] = {}
        for j in snap.jobs:
            states[j.state.value] = states.get(j.state.value, 0) + 1
        for state in ("PENDING", "RUNNING"):
            self.events.metrics.jobs.labels(state).set(states.get(state, 0))
        self.events.metrics.in_flight.set(len(self.inflight.snapshot()))
        for job_id, r in self.inflight.snapshot().items():
            job = snap.job(job_id)
            if job is None or not job.is_running:
                self.inflight.end(job_id, r.token)
                log.warning("job %s: dropped %s in flight (job gone)", job_id, r.kind)
        self._settle_all()
        if self.options.plan_interval and time.monotonic() - self._planned_at >= self.options.plan_interval:
            self._planned_at = time.monotonic()
            try:
                self.plan_cluster()
            except Exception as exc:
                log.warning("policy run on the whole cluster failed: %s", exc)
        self._sweep_resizers(snap)
        try:
            for job_id in self.backend.cancel_orphan_expanders(snap=snap):
                log.warning("cancelled expander job %s: its application is gone", job_id)
        except Exception as exc:
            log.warning("expander sweep failed: %s", exc)

    def status(self) -> p.Status:
        flights = {
            str(j): f"{r.kind} {r.old_size}->{r.new_size} {r.state}"
            for j, r in self.inflight.snapshot().items()
        }
        return p.Status(in_flight=flights, counters=dict(self.counters))
