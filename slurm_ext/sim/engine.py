"""The simulated cluster: node-exclusive, discrete-event, deterministic.

How a run goes
--------------
``Simulator(workload, scheduler="easy", policy=None, controller=None).run()`` returns a
:class:`~slurm_ext.sim.result.SimResult`. At every instant where something happens the loop
(1) handles job ends, evolving asks and malleable check points, (2) queues the jobs that arrive,
(3) fires controller timers, then (4) runs one *scheduling step*:

- the base scheduler pass (``fcfs``, ``easy``, ``backfill[:D]``, ``none``; see
  :mod:`slurm_ext.sim.schedulers`) starts what fits; it is skipped when the policy's
  ``schedules_jobs`` is true (the policy then starts every job with ``StartJob``);
- if a policy is set, it is called as ``policy.decide(snapshot, None)`` (a
  :class:`~slurm_ext.policies.base.ViewPolicy` as ``policy.plan(view, None)``, on the working
  copy of that snapshot built without it, :func:`~slurm_ext.sim.snapshot.build_view`) and its
  decisions are carried out (:meth:`Simulator.apply`); if any changed the machine, the base pass runs again
  so that nodes freed by a shrink are used at once (as Slurm's scheduler would). Unless an
  evolving ask is open, ``policy.may_act(self)`` comes first: when the policy can tell from
  the counters (free nodes, queued sizes, running malleable sizes) that it would only say
  ``NoAction``, no snapshot is built and ``decide`` is not called (``decisions``, the count of
  decisions returned, then counts none for that step);
- with a controller: ``on_start`` for the jobs started, then ``after_pass``; if either freed
  nodes or removed a queued job (cancel, shrink), the step starts over at the same instant.

Job times. Scheduling uses requested times only (a running job's expected end is its start plus
its limit); completion uses the actual run time, and a job whose run time exceeds its limit is
killed at the limit (state ``TIMEOUT``).

Policies (``slurm_ext.policies.base.Policy``)
----------------------------------------------
A policy sees a :class:`slurm_ext.model.Snapshot` built by :meth:`Simulator.snapshot` (a view
policy the :class:`~slurm_ext.policies.working_view.WorkingView` of it):

- ``nodes``: one ``Node`` per simulated node, the first ``free`` ones ``IDLE`` (node identities are
  not tracked: the machine is node-exclusive and homogeneous, so only counts matter);
- running jobs with ``node_count`` (current size), ``start_time``, ``end_time`` = expected end from
  the requested time (after resizes), ``time_limit`` = ``end_time - start_time``, ``malleable``;
- pending jobs in queue order, encoded as ``priority`` (higher = earlier) so that
  ``Snapshot.pending`` gives the simulator's order; ``end_time`` is ``None``.

Decisions are carried out in order: ``StartJob`` (a pending job, at ``nodes`` within its malleable
range, or its requested size if rigid), ``Expand``/``Shrink`` (a running malleable job, within
``[min_nodes, max_nodes]``; the factor is the policy's business), ``RaisePriority`` (move to the
queue head), ``NoAction``. A decision that cannot be carried out (not enough free nodes, wrong
state, size out of range) is recorded in ``SimResult.rejected`` with the reason, or raises
:class:`DecisionError` when the simulator is built with ``strict=True``.

``asking``: with ``check_period=P`` every running malleable job reaches a reconfiguring point
every ``P`` seconds of its run (``dmr.check_status``) and the policy is called with
``asking=[job_id]``; without it policies are only called at scheduling steps with ``asking=None``.

Evolving jobs (``SimJob.evolving``): at each ask point the policy is called with
``asking=[job_id]``; the asking job shows ``evolving=<target size>`` and a ``malleable`` spec
``[current, target]`` (see :attr:`slurm_ext.model.Job.evolving`).
An ``Expand`` of that job grants the ask; anything else refuses it. Without a policy the ask is
granted when enough nodes are idle.

Malleable jobs keep their work when resized: the work left runs on at the new size's rate
(:meth:`Simulator._resize`, :meth:`Simulator._rate`, :func:`slurm_ext.workloads.model.speedup`).

External controllers (Elastic Job Bundling)
-------------------------------------------
See :mod:`slurm_ext.sim.controller`: a controller gets ``on_submit``/``on_start``/``on_end``/
``on_timer``/``after_pass`` callbacks and may call :meth:`Simulator.submit`, :meth:`Simulator.cancel`,
:meth:`Simulator.set_timer`, :meth:`Simulator.easy_view` during a run. :meth:`Simulator.run`
with ``until`` stops before a given time and :meth:`Simulator.copy` clones the whole state
cheaply, for "start a run from the baseline state at time t".

State layout (stable names; controllers may read them, only the simulator writes them): the
per-job columns are the job table ``table`` (:class:`~slurm_ext.sim.jobtable.JobTable`, indexed by
an internal index ``i``: arrival order, controller submissions appended): ``jid``, ``sub``,
``size0`` (submitted nodes), ``size`` (current), ``lim`` and ``work`` (requested and actual time
at ``size0``), ``start_t``, ``end_t`` (-1 until known), ``state`` (see ``STATE_NAMES``),
``index_of[job_id] -> i``; each is also readable as ``sim.<column>``. Beside it: ``queue``
(indices in order), ``ends`` (sorted ``(expected_end, i)`` of running jobs), ``free``, ``now``.
The scheduler passes, snapshots and results read the simulator only through
:class:`~slurm_ext.sim.jobtable.SimView` (the table and these, plus :meth:`Simulator.start_queued`,
:attr:`Simulator.stable_prefix`, :attr:`Simulator.trace_jobs`, :attr:`Simulator.snapshot_cache`);
checkpoints read :attr:`Simulator.arrived` (and, by design, every field by name:
:mod:`slurm_ext.sim.checkpoint`).
"""

from __future__ import annotations

import copy as _copy
import math
import struct
import time as _time
from array import array
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from heapq import heappop
from typing import TYPE_CHECKING, Any, Protocol

from slurm_ext.decisions import Decision, Expand, NoAction, RaisePriority, Shrink, StartJob
from slurm_ext.model import MalleableSpec
from slurm_ext.policies.base import ViewPolicy
from slurm_ext.sim.core import ARRIVE, CHECK, END, EVOLVE, TIMER, EventQueue
from slurm_ext.sim.jobtable import JobTable
from slurm_ext.sim.queue_index import QueueBySize
from slurm_ext.sim.result import SimResult
from slurm_ext.sim.schedulers import (
    EasyView,
    SchedulerPass,
    base_scheduler,
    easy,
    no_scheduler,
    shadow_and_extra,
)
from slurm_ext.sim.snapshot import SnapshotCache, build_snapshot, build_view
from slurm_ext.sim.states import (
    CANCELLED,
    CLAIMED,
    COMPLETED,
    FUTURE,
    PENDING,
    RUNNING,
    STATE_NAMES,
    TIMEOUT,
    Rejected,
)
from slurm_ext.sim.timeline import Timeline, rigid_timeline
from slurm_ext.workloads.model import INF, EvolvingSpec, SimJob, Workload, speedup

if TYPE_CHECKING:
    from slurm_ext.model import Snapshot
    from slurm_ext.policies.base import Policy

# Job states and Rejected live in states.py; named here too, for callers that import them from here.
__all__ = [
    "CANCELLED",
    "CLAIMED",
    "COMPLETED",
    "FUTURE",
    "PENDING",
    "RUNNING",
    "STATE_NAMES",
    "TIMEOUT",
    "DecisionError",
    "Rejected",
    "Simulator",
    "rigid_job",
    "simulate",
]


# Timeline values kept in a list before they are packed into the arrays (see Simulator._rows).
_ROW_VALUES_KEPT = 4 * 4096


class DecisionError(RuntimeError):
    """A policy decision that the simulated cluster cannot carry out (``strict=True`` only)."""


class SimHooks(Protocol):
    """What an attached controller hears (see :mod:`slurm_ext.sim.controller`); the bodies here are
    the defaults a controller inherits by naming this class as its base."""

    def attach(self, sim: Simulator) -> None:
        """Called once by ``Simulator.attach``."""

    def on_submit(self, sim: Simulator, job_id: int) -> bool:
        """A workload job arrives. Return True to claim it (it will not be queued)."""
        return False

    def on_start(self, sim: Simulator, job_id: int) -> None:
        """A job started (after the scheduling step of this instant)."""

    def on_end(self, sim: Simulator, job_id: int) -> None:
        """A job ended: completed, killed at its time limit, or cancelled while running."""

    def on_timer(self, sim: Simulator, key: Any) -> None:
        """A timer set with ``sim.set_timer(when, key)`` fired."""

    def after_pass(self, sim: Simulator) -> None:
        """The scheduling step has nothing left to start: the nodes still free are idle slots.

        Called after every pass whose ``on_start`` callbacks freed nothing; freeing nodes here
        (a cancel) leads to another pass and another ``after_pass`` at the same instant.
        """


class _Column:
    """A job-table column read as an attribute of the simulator (``sim.size`` is
    ``sim.table.size``): the names controllers and drivers have always read. Read-only: the
    engine writes the table's lists in place."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, sim: Simulator | None, owner: type | None = None) -> Any:
        if sim is None:
            return self
        return getattr(sim.table, self.name)


class Simulator:
    """One simulated cluster running one workload. Build, optionally attach, then :meth:`run`."""

    # The job table's columns under their old names (see :class:`~slurm_ext.sim.jobtable.JobTable`).
    jid: list[int] = _Column()  # type: ignore[assignment]
    sub: list[float] = _Column()  # type: ignore[assignment]
    size0: list[int] = _Column()  # type: ignore[assignment]
    size: list[int] = _Column()  # type: ignore[assignment]
    lim: list[float] = _Column()  # type: ignore[assignment]
    work: list[float] = _Column()  # type: ignore[assignment]
    start_t: list[float] = _Column()  # type: ignore[assignment]
    end_t: list[float] = _Column()  # type: ignore[assignment]
    state: list[int] = _Column()  # type: ignore[assignment]
    resizes: list[int] = _Column()  # type: ignore[assignment]
    ver: list[int] = _Column()  # type: ignore[assignment]
    qkey: list[int] = _Column()  # type: ignore[assignment]
    spec: dict[int, MalleableSpec] = _Column()  # type: ignore[assignment]
    serial: dict[int, float] = _Column()  # type: ignore[assignment]
    evolving: dict[int, EvolvingSpec] = _Column()  # type: ignore[assignment]
    index_of: dict[int, int] = _Column()  # type: ignore[assignment]

    def __init__(
        self,
        workload: Workload,
        scheduler: str | SchedulerPass = "easy",
        policy: Policy | None = None,
        controller: SimHooks | None = None,
        *,
        resize_overhead: float = 0.0,
        check_period: float | None = None,
        strict: bool = False,
        record_timeline: bool = True,
        runtime_model: str = "ideal",
    ) -> None:
        self.workload_name = workload.name
        if runtime_model not in ("ideal", "worst"):
            raise ValueError(f"runtime model must be ideal or worst, got {runtime_model!r}")
        if runtime_model == "worst" and workload.slots != 2:
            raise ValueError(
                "the worst-case runtime model needs nodes of two slots (--share-cores, sharing factor 0.5)"
            )
        # 003's Eq. 6 on nodes of two slots: a job holding fewer slots than it asked for has a node
        # at one slot of two, and runs at that node's pace (half); Eq. 5 (ideal) is the linear rate
        self.worst_case = runtime_model == "worst"
        self.total_nodes = workload.nodes
        self.skipped = list(workload.skipped)
        self.scheduler_name = scheduler if isinstance(scheduler, str) else scheduler.__name__
        self._pass: SchedulerPass = base_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
        self.policy = policy
        if policy is not None and getattr(policy, "schedules_jobs", False):
            # The policy is the whole scheduler (Policy.schedules_jobs): no base pass.
            self._pass = no_scheduler
            self.scheduler_name = "none"
        self.resize_overhead = float(resize_overhead)
        if check_period is not None and check_period <= 0:
            raise ValueError(f"check_period must be > 0, got {check_period}")
        self.check_period = check_period
        self.strict = strict
        self.record_timeline = record_timeline

        jobs = workload.jobs
        n = len(jobs)
        # The per-job columns (jobtable.py); read through ``table`` by the passes and snapshots.
        self.table = table = JobTable(jobs)
        self.evolve_granted: set[int] = set()
        self.evolve_asking: dict[int, int] = {}  # index -> target size while an ask is open
        # Progress of resized jobs: (work done at t_ref, t_ref, rate in work units per second).
        self.prog: dict[int, tuple[float, float, float]] = {}
        self.exp_end: dict[int, float] = {}  # running jobs only
        if n and not (min(table.size0) >= 1 and max(table.size0) <= self.total_nodes):
            bad = next(j for j in jobs if not 1 <= j.nodes <= self.total_nodes)
            raise ValueError(f"job {bad.job_id} needs {bad.nodes} nodes; the machine has {self.total_nodes}")
        if n and min(table.lim) <= 0:
            bad = next(j for j in jobs if j.time_limit <= 0)
            raise ValueError(f"job {bad.job_id} has time limit {bad.time_limit}; it must be > 0")
        self._next_id = max(table.jid, default=0) + 1

        self.now = 0.0 if n == 0 else min(0.0, table.sub[0])
        self.free = self.total_nodes
        self.queue: list[int] = []
        self.ends: list[tuple[float, int]] = []  # running jobs by expected end
        self.events = EventQueue()
        self._arr = 0  # next workload arrival (index into the columns)
        self._n_trace = n
        self._stopped = False
        # Queue positions before this were examined by the last pass with the same free nodes
        # and running set; a pass may skip them (0 after any end, resize, cancel or decision).
        self._stable = 0
        # Set when nodes are freed or the queue shrinks; inside a scheduling step, another pass follows.
        self._dirty = False
        # Queue order is the per-job key ``table.qkey`` (arrival counter; negative after
        # RaisePriority, most recent first): snapshots encode it as Job.priority, so a pending Job
        # object stays valid.
        self._qcount = 0
        self._raised = 0
        # Queued jobs per size (index = nodes): lets a pass see at once that no queued job fits in
        # the free nodes (a long queue, e.g. DMR's, would otherwise be scanned after every end).
        self.qsizes: list[int] = [0] * (self.total_nodes + 1)
        # The queued jobs by size, for EASY's scan over a policy run's long queue (queue_index.py);
        # kept where qsizes is. None in other runs: a rigid run's queue is short.
        self.queue_by_size: QueueBySize | None = (
            QueueBySize(self.total_nodes) if policy is not None and self._pass is easy else None
        )
        # What the last snapshot built, for the next one (snapshot.py); told here what changed.
        # None until the first snapshot: a run that never builds one tells it nothing.
        self.snapshot_cache: SnapshotCache | None = None
        # (size, range) of each running malleable job by index, kept at every start, end and
        # resize: malleable_sizes() copies its values at C speed instead of walking every running
        # job; its answer is kept until one of them changes (None: stale).
        self.malleable_running: dict[int, tuple[int, MalleableSpec]] = {}
        self.malleable_now: list[tuple[int, MalleableSpec]] | None = None
        # What a view policy's last call saw when it decided nothing (None otherwise): the running
        # set's version and the queue (see _decide); only for a policy that may skip calls.
        self._idle_call: tuple[int, list[int]] | None = None
        # Whether the policy plans on a working copy: asked once (an ABC's isinstance is a Python
        # call, and _decide runs at most events).
        self._plans_on_view = isinstance(policy, ViewPolicy)
        self._may_skip = (
            isinstance(policy, ViewPolicy) and type(policy).still_idle is not ViewPolicy.still_idle
        )

        # Run accounting.
        self.busy_area = 0.0  # node-seconds busy
        self.frag_area = 0.0  # idle node-seconds while the queue is non-empty
        self.queue_time = 0.0  # seconds with a non-empty queue
        self.last_t = self.now
        self.t_times = array("d")
        self.t_busy = array("l")
        self.t_running = array("l")
        self.t_queued = array("l")
        # Rows recorded as time, busy, running, queued, one after the other in a plain list, and
        # moved into the arrays above a few thousand at a time (_flush_rows, before anything
        # reads them): an array's append parses its argument like a call (about 500 instructions,
        # four a step). Numbers, not a tuple per row: a tuple is tracked by the garbage collector.
        self._rows: list[float] = []
        # A plain rigid run records no rows as it goes: they follow from its job table
        # (timeline.py) and are computed when asked for. Whatever could break that (a controller,
        # submit, cancel, resize, a timer, decisions, a second step at one instant) first writes
        # the rows so far into the arrays above, which then record (_record_timeline).
        self._timeline_deferred = (
            record_timeline
            and policy is None
            and controller is None
            and not table.evolving
            and check_period is None
        )
        self.rejected: list[Rejected] = []
        self.resize_log: list[tuple[float, int, int, int]] = []  # (time, job id, old, new)
        self.decisions = 0
        self.wall_time = 0.0
        self._steps = 0

        self._cancelled_timers: set[int] = set()
        self.controller: SimHooks | None = None
        self._started_now: list[int] = []
        if controller is not None:
            self.attach(controller)

    # ------------------------------------------------------------------ the loop

    def attach(self, controller: SimHooks) -> None:
        """Attach an external controller (one at a time); calls ``controller.attach(self)``."""
        self._record_timeline()
        self.controller = controller
        controller.attach(self)

    def stop(self) -> None:
        """Make :meth:`run` return after the current instant (callable from callbacks)."""
        self._stopped = True

    def run(
        self,
        until: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> SimResult:
        """Run to the end (or to just before ``until``) and return the results so far."""
        self.advance(until, progress)
        return SimResult.from_sim(self)

    def advance(
        self,
        until: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Handle every event strictly before ``until`` (all events when ``None``).

        The clock is left at the last handled instant; a later call continues exactly where
        this one stopped. ``progress(arrived, total)`` is called every 1000 instants.
        """
        t0 = _time.perf_counter()
        self._stopped = False
        heap = self.events.heap
        sub = self.table.sub
        ver, state = self.table.ver, self.table.state
        n_trace = self._n_trace
        limit = INF if until is None else until
        handle, arrive, schedule = self._handle, self._arrive, self._schedule
        cancelled = self._cancelled_timers
        timeline = self.record_timeline and not self._timeline_deferred
        total = self.total_nodes
        rows = self._rows
        put_row = rows.append
        ends, queue = self.ends, self.queue
        # ``while True`` and a break, not ``while not self._stopped``: CPython 3.11 specialises a
        # function's bytecode once an unconditional backward jump has run a few times, and a
        # loop that ends in a test jumps back conditionally, so this one (called once per run)
        # ran unspecialised: a rigid run took 43 % more instructions.
        while True:
            if self._stopped:
                break
            # Drop events a resize, end or cancel made stale, so that no instant exists for them.
            while heap:
                _, kind, seq, i, version = heap[0]
                if kind <= CHECK:
                    if ver[i] == version and state[i] == RUNNING:
                        break
                elif kind != TIMER or seq not in cancelled:
                    break
                heappop(heap)
            a = self._arr
            t_arr = sub[a] if a < n_trace else INF
            t_ev = heap[0][0] if heap else INF
            t = t_arr if t_arr < t_ev else t_ev
            if t == INF or t >= limit:
                break
            if t != self.last_t:
                self._account(t)
            elif self._timeline_deferred and self._steps:
                # A second step at one instant (a job that ran for no time ended): the rows
                # would no longer follow from the table. Those so far are written; record on.
                self._record_timeline()
                timeline = True
            self.now = t
            # ends and the other events before this instant's arrivals, then the arrivals
            while heap and heap[0][0] == t and heap[0][1] < ARRIVE:
                handle(heappop(heap))
            while a < n_trace and sub[a] == t:
                arrive(a)
                a += 1
                self._arr = a
            while heap and heap[0][0] == t:
                handle(heappop(heap))
            schedule()
            if timeline:
                put_row(t)
                put_row(total - self.free)
                put_row(len(ends))
                put_row(len(queue))
                if len(rows) >= _ROW_VALUES_KEPT:
                    self._flush_rows()
            self._steps += 1
            if progress is not None and self._steps % 1000 == 0:
                progress(self._arr, self._n_trace)
        self._flush_rows()
        if progress is not None:
            progress(self._arr, self._n_trace)
        self.wall_time += _time.perf_counter() - t0

    def _flush_rows(self) -> None:
        """Move the recorded rows into the timeline's arrays, each column packed at once (the
        same values an append per row stores)."""
        rows = self._rows
        if not rows:
            return
        n = len(rows) // 4
        self.t_times.frombytes(struct.pack(f"{n}d", *rows[0::4]))
        self.t_busy.frombytes(struct.pack(f"{n}l", *rows[1::4]))
        self.t_running.frombytes(struct.pack(f"{n}l", *rows[2::4]))
        self.t_queued.frombytes(struct.pack(f"{n}l", *rows[3::4]))
        rows.clear()

    def _record_timeline(self) -> None:
        """Write a deferred timeline's rows so far, and record rows from now on."""
        if self._timeline_deferred:
            self._timeline_deferred = False
            recorded: tuple[array[Any], ...] = (self.t_times, self.t_busy, self.t_running, self.t_queued)
            for column, rows in zip(recorded, rigid_timeline(self.table, self._arr), strict=True):
                column.extend(rows)

    def timeline_columns(self) -> Timeline:
        """The run's timeline so far: one row per handled instant (time, busy nodes, running
        jobs, queued jobs), each column an array; empty without ``record_timeline``."""
        self._flush_rows()
        if self._timeline_deferred:
            return rigid_timeline(self.table, self._arr)
        return self.t_times, self.t_busy, self.t_running, self.t_queued

    def _account(self, t: float) -> None:
        dt = t - self.last_t
        busy = self.total_nodes - self.free
        self.busy_area += busy * dt
        if self.queue:
            self.frag_area += self.free * dt
            self.queue_time += dt
        self.last_t = t

    def _handle(self, ev: tuple[float, int, int, Any, int]) -> None:
        _, kind, seq, i, version = ev
        table = self.table
        if kind == END:
            if table.ver[i] == version and table.state[i] == RUNNING:
                self._finish(i, TIMEOUT if table.work[i] > table.lim[i] else COMPLETED)
        elif kind == ARRIVE:
            if table.state[i] == FUTURE:
                table.state[i] = PENDING
                self._enqueue(i)
        elif kind == TIMER:
            if seq not in self._cancelled_timers and self.controller is not None:
                self.controller.on_timer(self, i)
            self._cancelled_timers.discard(seq)
        elif table.ver[i] == version and table.state[i] == RUNNING:
            # EVOLVE or CHECK of a job that has not been resized or ended since it was set.
            if kind == EVOLVE:
                self._evolve_ask(i)
            else:
                self._check_point(i)

    def _arrive(self, i: int) -> None:
        state = self.table.state
        state[i] = PENDING
        ctrl = self.controller
        if ctrl is not None and ctrl.on_submit(self, self.table.jid[i]):
            state[i] = CLAIMED
            return
        self._enqueue(i)

    def _enqueue(self, i: int) -> None:
        table = self.table
        self.qsizes[table.size[i]] += 1
        if self.queue_by_size is not None:
            self.queue_by_size.sets[table.size[i]].add(i)
        self._qcount += 1
        table.qkey[i] = self._qcount
        self.queue.append(i)

    def _schedule(self) -> None:
        """One scheduling step: passes until no callback has freed nodes or changed the queue.

        ``_dirty`` is set by every end, cancel and resize; a pass (and the policy's decisions,
        which are followed by a pass of their own) sees everything before it, so only what the
        controller's ``on_start``/``after_pass`` (or ``on_end`` inside them) did calls for another.
        """
        ctrl = self.controller
        if ctrl is None and self.policy is None:
            # A rigid run: the loop below without its policy and controller steps.
            self._dirty = False
            self._pass(self)
            while self._dirty:  # a pass only starts jobs: never, unless a custom pass freed nodes
                self._dirty = False
                self._pass(self)
            self._stable = len(self.queue)
            return
        # A policy that starts every job itself runs with no pass: not called (an empty call per
        # step and per applied answer).
        pass_ = None if self._pass is no_scheduler else self._pass
        while True:
            self._dirty = False
            if pass_ is not None:
                pass_(self)
            # No snapshot and no call when the policy can tell from the counters that it would
            # only say NoAction (DMR at most events); an open evolving ask always calls.
            policy = self.policy
            if policy is not None and (self.evolve_asking or policy.may_act(self)):
                decisions = self._decide(policy, None)
                if decisions and self.apply(decisions):
                    self._stable = 0
                    if pass_ is not None:
                        pass_(self)
                    self._dirty = False
            elif policy is not None:
                self._idle_call = None  # still_idle speaks of the last call: this one was not made
            if ctrl is not None:
                if self._started_now:
                    self._controller_started(ctrl)
                if not self._dirty:
                    ctrl.after_pass(self)
            if not self._dirty:
                break
        # Until something other than an arrival happens, the jobs queued now stay unstartable.
        self._stable = len(self.queue)

    def _controller_started(self, ctrl: SimHooks) -> None:
        started, self._started_now = self._started_now, []
        for i in started:
            # A job that an earlier on_start cancelled has had its on_end already.
            if self.table.state[i] == RUNNING:
                ctrl.on_start(self, self.table.jid[i])

    # ------------------------------------------------------------------ job life cycle

    def _rate(self, i: int, nodes: int) -> float:
        """Work units per second on ``nodes`` nodes (1.0 at the submitted size)."""
        table = self.table
        n0 = table.size0[i]
        if nodes == n0:
            return 1.0
        if self.worst_case:
            return 0.5
        sf = table.serial.get(i)
        if not sf:
            return nodes / n0  # speedup(nodes, 0) / speedup(n0, 0): linear, the same float
        return speedup(nodes, sf) / speedup(n0, sf)

    def start_queued(self, i: int, nodes: int | None = None) -> None:
        """Start the queued job of index ``i`` now, on ``nodes`` nodes (default: its current size).

        For scheduler passes (:mod:`slurm_ext.sim.schedulers`): the caller has checked that the
        nodes are free and takes ``i`` out of :attr:`queue` itself."""
        now = self.now
        table = self.table
        size = table.size
        state = table.state
        if state[i] == PENDING:  # (always, from a pass or a StartJob: jobs start from the queue)
            self.qsizes[size[i]] -= 1
            if self.queue_by_size is not None:
                self.queue_by_size.sets[size[i]].discard(i)
        if nodes is not None and nodes != size[i]:
            size[i] = nodes
        n = size[i]
        self.free -= n
        cache = self.snapshot_cache
        if cache is not None:
            cache.running_changed(i)  # a restored state may have a Job of it: never stale
        spec = table.spec.get(i)
        if spec is not None:
            self.malleable_running[i] = (n, spec)
            self.malleable_now = None
        state[i] = RUNNING
        table.start_t[i] = now
        lim = table.lim[i]
        work = table.work[i]
        if n == table.size0[i]:
            exp = now + lim
            act = now + (work if work < lim else lim)
        else:
            rate = self._rate(i, n)
            self.prog[i] = (0.0, now, rate)
            exp = now + lim / rate
            act = now + (work if work < lim else lim) / rate
        self.exp_end[i] = exp
        insort(self.ends, (exp, i))
        self.events.push(act, END, i, table.ver[i])
        if table.evolving or self.check_period is not None:
            self._push_progress_events(i)
        if self.controller is not None:
            self._started_now.append(i)

    def _progress(self, i: int, t: float) -> tuple[float, float]:
        """(work done at ``t``, current rate)."""
        p = self.prog.get(i)
        if p is None:
            return t - self.table.start_t[i], 1.0
        done, t_ref, rate = p
        return done + max(0.0, t - t_ref) * rate, rate

    def _push_progress_events(self, i: int) -> None:
        """Schedule evolving asks and check points from the job's current progress and rate."""
        done, rate = self._progress(i, self.now)
        t_ref = max(self.now, self.prog[i][1]) if i in self.prog else self.now
        v = self.table.ver[i]
        evo = self.table.evolving.get(i)
        if evo is not None and i not in self.evolve_granted:
            w = self.table.work[i]
            for frac in evo.at:
                target = frac * w
                if target > done or (target == done and done == 0.0):
                    self.events.push(t_ref + (target - done) / rate, EVOLVE, i, v)
        if self.check_period is not None and i in self.table.spec:
            self.events.push(self.now + self.check_period, CHECK, i, v)

    def _finish(self, i: int, state: int) -> None:
        self._stable = 0
        self._dirty = True
        cache = self.snapshot_cache
        if cache is not None:
            cache.ended(i)
        if i in self.table.spec:
            del self.malleable_running[i]
            self.malleable_now = None
        ends = self.ends
        del ends[bisect_left(ends, (self.exp_end.pop(i), i))]
        table = self.table
        self.free += table.size[i]
        table.state[i] = state
        table.end_t[i] = self.now
        table.ver[i] += 1
        ctrl = self.controller
        if ctrl is not None:
            ctrl.on_end(self, table.jid[i])

    def _resize(self, i: int, new: int) -> None:
        now = self.now
        table = self.table
        done, _ = self._progress(i, now)
        rate = self._rate(i, new)
        p = self.prog.get(i)
        old_ref = now if p is None else p[1]
        t_ref = (old_ref if old_ref > now else now) + self.resize_overhead
        self._stable = 0
        self._dirty = True
        size = table.size
        old = size[i]
        self.resize_log.append((now, table.jid[i], old, new))
        cache = self.snapshot_cache
        if cache is not None:
            cache.running_changed(i)
        spec = table.spec.get(i)
        if spec is not None:
            self.malleable_running[i] = (new, spec)
            self.malleable_now = None
        exp_end = self.exp_end
        ends = self.ends
        del ends[bisect_left(ends, (exp_end[i], i))]
        self.free += old - new
        size[i] = new
        lim, work = table.lim[i], table.work[i]
        exp = t_ref + (lim - done) / rate
        act = t_ref + ((work if work < lim else lim) - done) / rate
        self.prog[i] = (done, t_ref, rate)
        exp_end[i] = exp
        insort(ends, (exp, i))
        v = table.ver[i] + 1
        table.ver[i] = v
        table.resizes[i] += 1
        self.events.push(act, END, i, v)
        if table.evolving or self.check_period is not None:
            self._push_progress_events(i)

    # ------------------------------------------------------------------ evolving and check points

    def _evolve_ask(self, i: int) -> None:
        if i in self.evolve_granted:
            return
        target = self.table.size[i] + self.table.evolving[i].extra_nodes
        if self.policy is None:
            if target - self.table.size[i] <= self.free:
                self._grant_evolve(i, target)
            return
        self.evolve_asking[i] = target
        try:
            decisions = self._decide(self.policy, [self.table.jid[i]])
            if decisions:
                self.apply(decisions)
        finally:
            self.evolve_asking.pop(i, None)

    def _grant_evolve(self, i: int, target: int) -> None:
        self.evolve_granted.add(i)
        self._resize(i, target)

    def _check_point(self, i: int) -> None:
        version = self.table.ver[i]
        if self.policy is not None:
            decisions = self._decide(self.policy, [self.table.jid[i]])
            if decisions:
                self.apply(decisions)
        # A resize already scheduled the next check point under the new version.
        if self.table.state[i] == RUNNING and self.table.ver[i] == version and self.check_period is not None:
            self.events.push(self.now + self.check_period, CHECK, i, self.table.ver[i])

    # ------------------------------------------------------------------ policies

    def malleable_sizes(self) -> list[tuple[int, MalleableSpec]]:
        """Size and range of every running malleable job (:class:`~slurm_ext.policies.base.QueueCounts`),
        in no particular order: the same list object until one starts, ends or is resized."""
        now = self.malleable_now
        if now is None:
            now = self.malleable_now = list(self.malleable_running.values())
        return now

    def head_min_size(self) -> int | None:
        """The queue head's smallest start size (:class:`~slurm_ext.policies.base.QueueCounts`)."""
        if not self.queue:
            return None
        i = self.queue[0]
        spec = self.table.spec.get(i)
        return self.table.size[i] if spec is None else spec.min_nodes

    def _decide(self, policy: Policy, asking: list[int] | None) -> list[Decision]:
        """The policy's answer now: a policy that plans on a working copy gets one built from the
        columns (no snapshot), any other a snapshot. No call (no answer) when the last one decided
        nothing, only arrivals happened since, and the policy says so it would again (``still_idle``)."""
        if self._plans_on_view:
            # a ViewPolicy, as _plans_on_view says: typed so without typing.cast, a call per step
            view: ViewPolicy = policy  # type: ignore[assignment]
            idle = self._idle_call
            self._idle_call = None
            ask = asking is not None or bool(self.evolve_asking)
            if idle is not None and not ask and view.still_idle(self.now) and self._unchanged_since(idle):
                self._idle_call = idle
                return []
            cl = build_view(self)  # on the snapshot cache's entries: changed back after the call
            try:
                decisions = view.plan(cl, asking)
            finally:
                cl.restore()
            if not decisions and not ask and self._may_skip:
                cache = self.snapshot_cache
                assert cache is not None  # built by build_view
                self._idle_call = (cache.run_ver, cache.view_pending[0])
            return decisions
        return policy.decide(self.snapshot(), asking)

    def _unchanged_since(self, idle: tuple[int, list[int]]) -> bool:
        """Whether only arrivals changed the state since the call that saw ``idle``: no job
        started, ended or was resized (the running set's version, which build_view keys its
        entries by; the idle nodes change only with it), and the queue is that call's with jobs
        appended (not raised, nor cancelled)."""
        run_ver, queue = idle
        cache = self.snapshot_cache
        q = self.queue
        return (
            cache is not None
            and cache.run_ver == run_ver
            and len(q) >= len(queue)
            and q[: len(queue)] == queue
        )

    def snapshot(self) -> Snapshot:
        if self.snapshot_cache is None:
            self.snapshot_cache = SnapshotCache()
        return build_snapshot(self)

    def apply(self, decisions: Sequence[Decision]) -> bool:
        """Carry out decisions in order; returns whether any changed the machine or queue."""
        changed = False
        if self._timeline_deferred:  # (the check of _record_timeline, without a call per answer)
            self._record_timeline()
        self.decisions += len(decisions)
        apply_one = self._apply_one
        for k, d in enumerate(decisions):
            if type(d) is NoAction:  # most of DMR's answers: nothing to check or carry out
                continue
            err = apply_one(d)
            if err is None:
                changed = changed or not isinstance(d, NoAction)
            elif self.strict:
                self.decisions -= len(decisions) - 1 - k  # counted only up to this one
                raise DecisionError(f"t={self.now:g}: cannot carry out {d!r}: {err}")
            else:
                self.rejected.append(Rejected(self.now, d, err))
        return changed

    def _apply_one(self, d: Decision) -> str | None:
        cls = type(d)
        if cls is NoAction or isinstance(d, NoAction):
            return None
        self._stable = 0
        table = self.table
        i = table.index_of.get(d.job_id)
        if i is None:
            return "unknown job"
        st = table.state[i]
        if isinstance(d, StartJob):
            if st != PENDING:
                return f"job is {STATE_NAMES[st]}, not PENDING"
            spec = self.table.spec.get(i)
            if spec is None and d.nodes != self.table.size0[i]:
                return f"rigid job needs exactly {self.table.size0[i]} nodes"
            if spec is not None and not spec.min_nodes <= d.nodes <= spec.max_nodes:
                return f"size {d.nodes} outside [{spec.min_nodes}, {spec.max_nodes}]"
            if d.nodes > self.free:
                return f"needs {d.nodes} nodes, {self.free} free"
            self.queue.remove(i)
            self.start_queued(i, d.nodes)
            return None
        if isinstance(d, RaisePriority):
            if st != PENDING:
                return f"job is {STATE_NAMES[st]}, not PENDING"
            self.queue.remove(i)
            self.queue.insert(0, i)
            self._raised += 1
            self.table.qkey[i] = -self._raised
            if self.snapshot_cache is not None:
                self.snapshot_cache.raised(i)
            return None
        if isinstance(d, Expand | Shrink):
            if st != RUNNING:
                return f"job is {STATE_NAMES[st]}, not RUNNING"
            cur = self.table.size[i]
            new = d.new_size
            if isinstance(d, Expand):
                if new <= cur:
                    return f"expand to {new} from {cur}"
                if i in self.evolve_asking:
                    if new > self.evolve_asking[i]:
                        return f"evolving job asked for {self.evolve_asking[i]}, not {new}"
                    if new - cur > self.free:
                        return f"needs {new - cur} more nodes, {self.free} free"
                    self._grant_evolve(i, new)
                    return None
            elif new >= cur:
                return f"shrink to {new} from {cur}"
            spec = self.table.spec.get(i)
            if spec is None:
                return "job is not malleable"
            if not spec.min_nodes <= new <= spec.max_nodes:
                return f"size {new} outside [{spec.min_nodes}, {spec.max_nodes}]"
            if new - cur > self.free:
                return f"needs {new - cur} more nodes, {self.free} free"
            self._resize(i, new)
            return None
        return f"unknown decision type {type(d).__name__}"

    # ------------------------------------------------------------------ controller API

    def submit(
        self,
        nodes: int,
        time_limit: float = INF,
        run_time: float = INF,
        *,
        at: float | None = None,
        malleable: MalleableSpec | None = None,
        serial_fraction: float = 0.0,
        name: str = "",
    ) -> int:
        """Submit a job now (or at ``at``); returns its job id.

        ``run_time=inf`` means the job runs until cancelled or killed at ``time_limit``
        (an EJB subjob). The job queues at the back and is seen by the next scheduling step,
        which happens at the current instant when called from a callback.
        """
        if not 1 <= nodes <= self.total_nodes:
            raise ValueError(f"job needs {nodes} nodes; the machine has {self.total_nodes}")
        if time_limit <= 0 or run_time < 0:
            raise ValueError(f"time limit must be > 0 and run time >= 0, got {time_limit}, {run_time}")
        self._record_timeline()
        t = self.now if at is None else max(self.now, at)
        jid = self._next_id
        self._next_id += 1
        i = self.table.append(jid, t, nodes, time_limit, run_time, malleable, serial_fraction)
        self.events.push(t, ARRIVE, i)
        return jid

    def cancel(self, job_id: int) -> None:
        """Cancel a pending or running job (a finished job is left as it is)."""
        i = self.table.index_of[job_id]
        self._record_timeline()
        st = self.table.state[i]
        if st == PENDING:
            self.queue.remove(i)
            self.qsizes[self.table.size[i]] -= 1
            if self.queue_by_size is not None:
                self.queue_by_size.sets[self.table.size[i]].discard(i)
            if self.snapshot_cache is not None:
                self.snapshot_cache.dequeued(i)
            self._stable = 0
            self._dirty = True
        elif st == RUNNING:
            self._finish(i, CANCELLED)
            return
        elif st != FUTURE:
            return
        self.table.state[i] = CANCELLED
        self.table.end_t[i] = self.now

    def resize(self, job_id: int, new_size: int) -> None:
        """Resize a running job to ``new_size`` nodes as a cluster would: any running job, no
        malleability range checked (a policy's ``Expand``/``Shrink`` goes through :meth:`apply`,
        which checks it). The work left runs on at the new size's rate. For a driver such as
        :class:`slurm_ext.sim.cluster.SimCluster`; ``ValueError`` if it cannot be done."""
        i = self.table.index_of[job_id]
        if self.table.state[i] != RUNNING:
            raise ValueError(f"job {job_id} is {STATE_NAMES[self.table.state[i]]}, not RUNNING")
        if not 1 <= new_size <= self.table.size[i] + self.free:
            raise ValueError(
                f"job {job_id} on {self.table.size[i]} nodes cannot hold {new_size} ({self.free} free)"
            )
        if new_size != self.table.size[i]:
            self._record_timeline()
            self._resize(i, new_size)

    def settle(self) -> None:
        """Handle what is due at the current instant (jobs just submitted arrive) and take a
        scheduling step, as a run does after every event. For a driver outside :meth:`run`
        (:class:`slurm_ext.sim.cluster.SimCluster`); never from a controller's callback."""
        self._record_timeline()  # a step outside the loop has no row of its own
        steps = self._steps
        self.advance(until=math.nextafter(self.now, INF))
        if self._steps == steps:
            self._schedule()

    @property
    def trace_jobs(self) -> int:
        """Jobs of the workload (indices ``0 .. trace_jobs - 1``); later indices are jobs that a
        controller submitted."""
        return self._n_trace

    @property
    def arrived(self) -> int:
        """Workload jobs that have arrived so far (the index of the next arrival)."""
        return self._arr

    @property
    def stable_prefix(self) -> int:
        """Queue positions before this one were examined by the last pass with the same free
        nodes and running set, and could not start: a pass may skip them (0 after any end,
        resize, cancel or decision)."""
        return self._stable

    @property
    def needs_pass(self) -> bool:
        """Whether nodes were freed or a queued job removed since the last pass of this step
        (another pass, and ``after_pass``, follow at this instant)."""
        return self._dirty

    def set_timer(self, when: float, key: Any = None) -> int:
        """Call ``controller.on_timer(sim, key)`` at ``when`` (not before now); returns a handle."""
        self._record_timeline()
        return self.events.push(max(self.now, when), TIMER, key)

    def cancel_timer(self, handle: int) -> None:
        self._cancelled_timers.add(handle)

    def easy_view(self) -> EasyView:
        """EASY's view of the queue head now: shadow time, extra nodes, free nodes."""
        q = self.queue
        if not q:
            return EasyView(self.now, self.free, INF, self.free, None, 0)
        need = self.table.size[q[0]]
        shadow, extra = shadow_and_extra(self.free, need, self.ends, self.table.size)
        if shadow == -math.inf:
            shadow = self.now
        return EasyView(self.now, self.free, shadow, extra, self.table.jid[q[0]], need)

    def job_state(self, job_id: int) -> str:
        return STATE_NAMES[self.table.state[self.table.index_of[job_id]]]

    def job_times(self, job_id: int) -> tuple[float, float, float]:
        """(submit, start, end) of a job; -1 for what has not happened."""
        i = self.table.index_of[job_id]
        return self.table.sub[i], self.table.start_t[i], self.table.end_t[i]

    def expected_end(self, job_id: int) -> float | None:
        return self.exp_end.get(self.table.index_of[job_id])

    def work_done(self, job_id: int) -> float:
        """Work units done so far by a running or finished job (seconds at its submitted size)."""
        i = self.table.index_of[job_id]
        if self.table.state[i] == RUNNING:
            return self._progress(i, self.now)[0]
        if self.table.start_t[i] < 0:
            return 0.0
        if i in self.prog:
            done, t_ref, rate = self.prog[i]
            return done + max(0.0, self.table.end_t[i] - t_ref) * rate
        return self.table.end_t[i] - self.table.start_t[i]

    # ------------------------------------------------------------------ checkpoint

    def copy(self) -> Simulator:
        """An independent simulator in exactly this state, with no controller attached.

        Lists are copied by slicing (cost linear in the number of jobs, about a millisecond
        for a 28K-job trace); the policy is deep-copied because policies may keep state.
        """
        new = object.__new__(type(self))
        d = new.__dict__
        for key, value in self.__dict__.items():
            if isinstance(value, list | dict | set | array):
                d[key] = _copy.copy(value)
            else:
                d[key] = value
        new.table = self.table.copy()
        new.events = self.events.copy()
        new.snapshot_cache = None if self.snapshot_cache is None else self.snapshot_cache.copy()
        new.queue_by_size = None if self.queue_by_size is None else self.queue_by_size.copy()
        new.controller = None
        new._started_now = []
        new.policy = _copy.deepcopy(self.policy) if self.policy is not None else None
        return new


def simulate(
    workload: Workload,
    scheduler: str | SchedulerPass = "easy",
    policy: Policy | None = None,
    **options: Any,
) -> SimResult:
    """Run ``workload`` once and return its :class:`~slurm_ext.sim.result.SimResult`."""
    return Simulator(workload, scheduler, policy, **options).run()


def rigid_job(job_id: int, submit: float, nodes: int, limit: float, run: float | None = None) -> SimJob:
    """A rigid job (``run`` defaults to ``limit``): shorthand for tests and examples."""
    return SimJob(job_id, submit, nodes, limit, limit if run is None else run)
