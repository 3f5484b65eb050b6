"""The working copy the simulator hands a view policy without a snapshot (``build_view``) is the
copy of the snapshot it would have built, and planning on it gives the same schedule."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slurm_ext.decisions import Decision
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.policies.base import Policy, ViewPolicy
from slurm_ext.policies.dbes import DBES
from slurm_ext.policies.working_view import Running, WorkingView
from slurm_ext.sim import EvolvingSpec, Simulator, Workload
from slurm_ext.sim.registry import resolve
from slurm_ext.workloads.model import MalleableRule
from slurm_ext.workloads.synthetic import SyntheticConfig, generate


def _workload() -> Workload:
    """Synthetic, half malleable, and every seventh rigid job evolving (asks for 2 more nodes)."""
    wl = MalleableRule(fraction=0.5, seed=0).apply(
        generate(SyntheticConfig(jobs=300, nodes=32, seed=3, load=0.8))
    )
    jobs = [
        j._replace(evolving=EvolvingSpec((0.2, 0.5), 2)) if j.malleable is None and k % 7 == 0 else j
        for k, j in enumerate(wl.jobs)
    ]
    return Workload(jobs, wl.nodes, "evolving")


def _rows(cl: WorkingView) -> list[tuple[object, ...]]:
    return [(r.job_id, r.size, r.end, r.spec, r.start, r.submit, r.limit, r.ask) for r in cl.running.values()]


def _state(cl: WorkingView) -> tuple[object, ...]:
    return (cl.now, cl.total, cl.free, _rows(cl), cl.pending)


class Compared(ViewPolicy):
    """Plans as ``of`` does, after checking the view it got against the snapshot's copy."""

    def __init__(self, of: ViewPolicy) -> None:
        self.of, self.name, self.schedules_jobs = of, of.name, of.schedules_jobs  # type: ignore[misc]
        self.sim: Simulator | None = None
        self.calls = self.asked = 0

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        assert self.sim is not None
        assert _state(cl) == _state(WorkingView(self.sim.snapshot()))
        self.calls += 1
        self.asked += bool(asking) and any(r.ask for r in cl.running.values())
        return self.of.plan(cl, asking)


class ThroughSnapshot(Policy):
    """The same policy reached through ``decide``: the simulator builds a snapshot for it."""

    def __init__(self, of: Policy) -> None:
        self.of, self.name, self.schedules_jobs = of, of.name, of.schedules_jobs  # type: ignore[misc]

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        return self.of.decide(snap, asking)


def _schedule(sim: Simulator) -> tuple[list[float], list[float], list[int], int]:
    return list(sim.table.start_t), list(sim.table.end_t), list(sim.table.size), len(sim.resize_log)


@pytest.mark.parametrize("name", ["dbes", "sd", "minagree", "esf", "ep"])
def test_the_view_is_the_snapshots_copy_at_every_call_and_the_schedule_the_same(name: str) -> None:
    wl = _workload()
    r = resolve(name)
    assert isinstance(r.policy, ViewPolicy)
    compared = Compared(r.policy)
    sim = Simulator(wl, r.scheduler, compared, check_period=600)
    compared.sim = sim
    sim.run()
    assert compared.calls > 300 and compared.asked > 0  # evolving asks were seen too
    other = resolve(name)
    assert other.policy is not None
    plain = Simulator(wl, other.scheduler, ThroughSnapshot(other.policy), check_period=600)
    plain.run()
    assert _schedule(sim) == _schedule(plain)
    assert len(sim.resize_log) > 0


class CountedDBES(DBES):
    """DBES, counting the calls it plans and those the simulator skips on its word."""

    planned = skipped = 0

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        self.planned += 1
        return super().plan(cl, asking)

    def still_idle(self, now: float) -> bool:
        said = super().still_idle(now)
        self.skipped += said
        return said


def test_calls_skipped_as_still_idle_give_the_same_schedule() -> None:
    wl = MalleableRule(fraction=0.5, seed=0).apply(
        generate(SyntheticConfig(jobs=2000, nodes=64, seed=5, load=0.9))
    )
    counted = CountedDBES()
    sim = Simulator(wl, "none", counted, check_period=600)
    sim.run()
    assert counted.skipped > 50 and counted.planned > 1000
    plain = Simulator(wl, "none", ThroughSnapshot(DBES()), check_period=600)  # a snapshot each call, no skip
    plain.run()
    assert _schedule(sim) == _schedule(plain)


def test_restore_gives_the_caller_its_entries_back() -> None:
    spec = MalleableSpec(1, 8)
    entries = {
        1: Running(1, 4, 100.0, spec, 0.0, 0.0, 100.0),
        2: Running(2, 2, 50.0, None, 0.0, 0.0, 50.0, ask=4),
    }
    before = {k: (r.size, r.end, r.ask) for k, r in entries.items()}
    queue = []  # type: ignore[var-annotated]
    cl = WorkingView(state=(10.0, 8, 2, entries, queue))
    cl.serve_evolving(list, "test")  # job 2 gets its 2 nodes
    cl.resize(cl.running[1], 2, "test")
    cl.resize(cl.running[1], 3, "test")
    assert (entries[1].size, entries[2].size, entries[2].ask, cl.free) == (3, 4, None, 1)
    cl.restore()
    assert {k: (r.size, r.end, r.ask) for k, r in entries.items()} == before
    assert list(entries) == [1, 2] and len(cl.decisions) == 3


class Discards(ViewPolicy):
    """Shrinks every malleable job in its copy and keeps none of it (returns no decision)."""

    name = "discards"

    def __init__(self) -> None:
        self.sim: Simulator | None = None
        self.calls = 0

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        assert self.sim is not None
        assert _state(cl) == _state(WorkingView(self.sim.snapshot()))  # nothing left of the last call
        for r in cl.malleable_running():
            if r.size > r.min:
                cl.resize(r, r.min, "discarded")
                self.calls += 1
        return []


def test_the_simulator_restores_what_a_call_changed_but_did_not_decide() -> None:
    policy = Discards()
    sim = Simulator(_workload(), "easy", policy)
    policy.sim = sim
    sim.run()
    assert policy.calls > 10
