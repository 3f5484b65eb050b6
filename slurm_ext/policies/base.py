"""The contract every policy fulfils.

How a caller (simulator or live control service) runs a policy
----------------------------------------------------------------
1. Build one :class:`~slurm_ext.model.Snapshot` of the cluster and call ``decide`` once per
   scheduling iteration (on every job arrival, job end and resize in the simulator; on a
   timer or a ``dmr.check_status`` call on live Slurm). Use one policy object per run: some
   policies remember things between calls (DBES remembers which pending job each expansion
   was made for; SD-Policy remembers which mates lent nodes to which job).
2. Carry the returned decisions out **in list order**. The list is consistent when applied
   sequentially: a ``Shrink`` always comes before the ``StartJob`` or ``Expand`` that uses
   the nodes it frees, and no prefix of the list needs more idle nodes than exist.
3. If the policy's ``schedules_jobs`` is ``True`` it is the whole scheduler: it returns
   ``StartJob`` for every pending job it wants started, and the caller must **not** also run
   its own base scheduler (FCFS/EASY/backfill) for it. If ``schedules_jobs`` is ``False``
   the caller runs its base scheduler as usual and applies the policy's resize decisions.
   On live Slurm, ``StartJob`` is not carried out (Slurm starts jobs itself); the live
   service uses the other decisions only.
4. A :class:`ViewPolicy` (DBES, SD-Policy, minAgree, the classic strategies) plans on a
   :class:`~slurm_ext.policies.working_view.WorkingView` of the snapshot: ``decide`` builds it.
   A caller that can build that copy without a snapshot (the simulator, from its columns) calls
   ``plan(view, asking)`` instead, then ``view.restore()``; the decisions are the same.
5. Optionally, before building the snapshot, ask ``may_act`` with the state's counters
   (:class:`QueueCounts`): ``False`` means the call would return only ``NoAction``, so the
   simulator skips it (at most events, for DMR). The answer is exact, not a heuristic: the
   results are the same with and without the skip. A ``ViewPolicy`` whose last call decided
   nothing may likewise say, through ``still_idle(now)``, that the next call would not either
   when only arrivals happened since (the simulator checks that; DBES says so when no idle node
   and its StartLater jobs are as before).

Sizes
-----
``StartJob.nodes``, ``Expand.new_size`` and ``Shrink.new_size`` are node counts in
``[malleable.min_nodes, malleable.max_nodes]``; any integer in that range is allowed
(``MalleableSpec.factor`` only restricts the sizes DMR picks). A malleable job may be
started at a size other than its ``node_count``: the caller conserves work, i.e. its run
time and time limit scale by ``node_count / nodes`` (linear model, the same model policies
use to predict end times, see :func:`slurm_ext.policies.working_view.scaled_duration`).

Times the policies read
-----------------------
``Job.end_time`` of a running job must be its expected end (start + current, resize-adjusted
time limit); if it is ``None`` the policies use ``start_time + time_limit``. ``Job.time_limit``
of a pending job is its requested time at ``node_count`` nodes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence, Sized
from typing import ClassVar, Protocol

from mypy_extensions import mypyc_attr

from slurm_ext.decisions import Decision
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.policies.working_view import WorkingView


class QueueCounts(Protocol):
    """What a caller that keeps its cluster's state in counters (the simulator) can tell a
    policy without building a snapshot: enough to see that ``decide`` would do nothing."""

    free: int  # idle nodes
    total_nodes: int

    @property
    def qsizes(self) -> Sequence[int]:
        """Pending jobs that could start if nodes were free, per size (index = nodes)."""
        ...

    @property
    def queue(self) -> Sized:
        """The pending jobs, in queue order; a policy reads only how many there are (``len``),
        a read of the caller's list, where ``head_min_size`` is a call into it."""
        ...

    def malleable_sizes(self) -> list[tuple[int, MalleableSpec]]:
        """``(node_count, malleable)`` of every running malleable job (none with an evolving ask),
        in no particular order; not to be changed by the caller (a simulator hands out the same
        list until one changes)."""
        ...

    def head_min_size(self) -> int | None:
        """The fewest nodes the first pending job can start on (its ``min_nodes`` if malleable,
        else its ``node_count``); None when nothing is pending."""
        ...


# Subclassed by users' own policies and test doubles, also when the policies are compiled (see
# setup.py): a compiled class refuses interpreted subclasses unless it says so.
@mypyc_attr(allow_interpreted_subclasses=True)
class Policy(ABC):
    """Looks at a snapshot, returns decisions; never touches a backend itself.

    ``asking`` lists running malleable jobs that are at a reconfiguring point right now
    (on live Slurm: the job whose rank 0 called ``dmr.check_status``). ``None`` means the
    caller is a scheduler iteration that may act on any job (simulator, or a
    scheduler-driven policy such as DBES). Decisions on jobs that are not asking are held
    by the live service until that job next asks.
    """

    name: ClassVar[str]
    # True: the policy starts jobs itself (returns StartJob); the caller runs no base scheduler.
    schedules_jobs: ClassVar[bool] = False

    @abstractmethod
    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]: ...

    def may_act(self, state: QueueCounts) -> bool:
        """False only when ``decide(snapshot of state, None)`` would return nothing but
        :class:`~slurm_ext.decisions.NoAction`: a caller that knows ``state`` cheaply may skip
        the snapshot and the call then. The default never says so; a policy that says so must
        keep no state from one call to the next that such a call would have changed, unless its
        next call changes it the same before reading it (DBES's marks of ended jobs)."""
        return True


@mypyc_attr(allow_interpreted_subclasses=True)
class ViewPolicy(Policy):
    """A policy that plans on a :class:`~slurm_ext.policies.working_view.WorkingView` of the
    snapshot (DBES, SD-Policy, minAgree, the classic strategies, backfill): ``decide`` builds the
    view and calls ``plan``. A caller that keeps its state in columns (the simulator) may build
    the same view itself and call ``plan`` directly, without a snapshot; the answer is the same.
    The view holds what the policies read of each job, not its Job (:mod:`~slurm_ext.policies.entries`):
    a ``Running`` entry per running job and a ``Queued`` one per pending job, in queue order."""

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        return self.plan(WorkingView(snap), asking)

    def still_idle(self, now: float) -> bool:
        """True only if ``plan(view, None)`` at time ``now`` would decide nothing and change
        nothing the policy keeps, where ``view`` is the view of this policy's last call (which
        decided nothing, with no evolving ask open) at ``now``, with jobs appended to its queue.
        A caller that knows that is all that changed (the simulator) may skip the call then. The
        default never says so. Like ``may_act``, exact, not a heuristic."""
        return False

    @abstractmethod
    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        """Plan on ``cl`` and return ``cl.decisions``. The copy's Running entries may be the
        caller's (``WorkingView(state=...)``, changed back after the call): read them during
        the call only, keep none for the next."""
