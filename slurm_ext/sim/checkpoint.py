"""Checkpoint and restore a :class:`~slurm_ext.sim.engine.Simulator` in time proportional to what
a run changes, not to the size of the trace.

"Run from the baseline state at time t, then throw the run away" (EJB experiment 1) used to
:meth:`Simulator.copy` every per-job column: about a millisecond per 28K jobs, per run. A
checkpoint instead remembers only what a later run can change:

* per-job columns of the jobs *live* at the checkpoint (queued or running): saved values;
* jobs that had not arrived (index >= ``arrived``) still hold their initial values, which are
  known; jobs that had finished are never written again (cancel of a finished job is a no-op);
* jobs a controller submits are appended at the end: truncated away (and their ids dropped
  from ``index_of``);
* everything else (queue, running set, event heap, timers, scalars) is small and copied.

:func:`restore` puts the simulator back into exactly the checkpointed state, so the next
:meth:`Simulator.advance` continues the baseline as if the run had never happened. Every
attribute of the simulator is classified below; an unknown one makes :func:`checkpoint` raise,
so a new engine field cannot be forgotten silently. Policies are not supported (they may keep
state of their own): use :meth:`Simulator.copy` with a policy.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slurm_ext.sim.jobtable import JobTable
from slurm_ext.sim.queue_index import QueueBySize
from slurm_ext.sim.snapshot import SnapshotCache

if TYPE_CHECKING:
    from slurm_ext.sim.engine import Simulator

# Per-job columns of the job table (``Simulator.table``) that never change once a job exists
# (appends only), and those a run writes, with the value a job has before it arrives.
STATIC_COLUMNS = JobTable.STATIC
MUTABLE_COLUMNS: dict[str, Any] = JobTable.MUTABLE
# Read-only after construction.
CONSTANTS = frozenset(
    {
        "workload_name",
        "total_nodes",
        "skipped",
        "scheduler_name",
        "_pass",
        "policy",
        "resize_overhead",
        "check_period",
        "strict",
        "record_timeline",
        "worst_case",
        "_plans_on_view",
        "_may_skip",
        "_n_trace",
    }
)
# Small containers: copied whole (sparse dicts keyed by job index, the queue, the running set...).
SMALL = frozenset(
    {
        "evolve_granted",
        "evolve_asking",
        "prog",
        "exp_end",
        "snapshot_cache",
        "malleable_running",
        "malleable_now",
        "queue",
        "qsizes",
        "queue_by_size",
        "ends",
        "_cancelled_timers",
        "_started_now",
    }
)
APPEND_ONLY = frozenset({"t_times", "t_busy", "t_running", "t_queued", "_rows", "rejected", "resize_log"})
SCALARS = frozenset(
    {
        "_next_id",
        "now",
        "free",
        "_arr",
        "_stopped",
        "_stable",
        "_dirty",
        "_qcount",
        "_raised",
        "busy_area",
        "frag_area",
        "queue_time",
        "last_t",
        "decisions",
        "wall_time",
        "_steps",
        "_idle_call",  # a tuple, replaced, never changed
        "_timeline_deferred",
    }
)
SPECIAL = frozenset({"table", "events", "controller"})
KNOWN = CONSTANTS | SMALL | APPEND_ONLY | SCALARS | SPECIAL
# The table's sparse columns (dicts keyed by job index): copied whole, like SMALL.
TABLE_SMALL = JobTable.SPARSE


class CheckpointError(RuntimeError):
    """The simulator cannot be checkpointed (a policy, a controller, or an unknown field)."""


@dataclass
class Checkpoint:
    """What :func:`restore` needs; single use."""

    n: int  # per-job rows at the checkpoint
    arrived: int  # trace jobs arrived (``Simulator.arrived``)
    live: list[int]  # queued and running job indices
    columns: dict[str, list[Any]]  # mutable column values of the live jobs
    small: dict[str, Any]
    table_small: dict[str, Any]
    lengths: dict[str, int]
    scalars: dict[str, Any]
    heap: list[tuple[float, int, int, Any, int]]
    seq: int
    used: bool = field(default=False)


def checkpoint(sim: Simulator) -> Checkpoint:
    """Remember ``sim``'s state (between two :meth:`Simulator.advance` calls, no controller)."""
    unknown = set(sim.__dict__) - KNOWN
    if unknown:
        raise CheckpointError(f"simulator fields unknown to the checkpoint: {', '.join(sorted(unknown))}")
    if sim.policy is not None:
        raise CheckpointError("a simulator with a policy cannot be checkpointed; use copy()")
    if sim.controller is not None:
        raise CheckpointError("checkpoint a simulator without a controller (the baseline)")
    sim._flush_rows()  # timeline rows into their arrays, whose lengths are kept below
    live = [*sim.queue, *sim.exp_end]
    d = sim.__dict__
    table = sim.table
    return Checkpoint(
        n=len(table),
        arrived=sim.arrived,
        live=live,
        columns={name: [getattr(table, name)[i] for i in live] for name in MUTABLE_COLUMNS},
        small={name: _copy(d[name]) for name in SMALL},
        table_small={name: _copy(getattr(table, name)) for name in TABLE_SMALL},
        lengths={name: len(d[name]) for name in APPEND_ONLY},
        scalars={name: d[name] for name in SCALARS},
        heap=list(sim.events.heap),
        seq=sim.events.seq,
    )


def restore(sim: Simulator, cp: Checkpoint) -> None:
    """Put ``sim`` back into the state of ``cp`` (taken from this same simulator)."""
    if cp.used:
        raise CheckpointError("a checkpoint restores once")
    cp.used = True
    d = sim.__dict__
    table = sim.table
    n = cp.n
    index_of = table.index_of
    for jid in table.jid[n:]:
        del index_of[jid]
    for name in (*STATIC_COLUMNS, *MUTABLE_COLUMNS):
        del getattr(table, name)[n:]
    # Jobs that arrived during the run go back to "not arrived yet".
    lo, hi = cp.arrived, sim.arrived
    if hi > lo:
        size, size0 = table.size, table.size0
        size[lo:hi] = size0[lo:hi]
        for name, initial in MUTABLE_COLUMNS.items():
            if initial is not None:
                getattr(table, name)[lo:hi] = [initial] * (hi - lo)
    for name, values in cp.columns.items():
        col = getattr(table, name)
        for i, v in zip(cp.live, values, strict=True):
            col[i] = v
    for name, value in cp.small.items():
        d[name] = value
    for name, value in cp.table_small.items():
        setattr(table, name, value)
    for name, length in cp.lengths.items():
        del d[name][length:]
    d.update(cp.scalars)
    sim.events.heap = cp.heap
    sim.events.seq = cp.seq
    sim.controller = None


def _copy(value: Any) -> Any:
    if value is None:  # a snapshot cache before the first snapshot, a rigid run's queue index
        return None
    if isinstance(value, array):
        return value[:]  # an array has no copy(): its slice is one
    if isinstance(value, list | dict | set | SnapshotCache | QueueBySize):
        return value.copy()
    raise CheckpointError(f"cannot copy a {type(value).__name__}")
