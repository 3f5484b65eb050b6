"""``may_act``: False only when ``decide(snap, None)`` would carry nothing out (DMR: exactly then).

The simulator skips the snapshot and the call when it says False, so a wrong False would change
results: checked on random states against ``decide`` itself, and at every event of two runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.decisions import NoAction
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.policies.base import Policy
from slurm_ext.policies.dbes import DBES
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.policies.minagree import MinAgree
from slurm_ext.policies.sdpolicy import SDPolicy
from slurm_ext.sim import EvolvingSpec, Simulator, Workload
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.model import MalleableRule
from slurm_ext.workloads.synthetic import SyntheticConfig, generate
from tests.unit.slurm_ext.policies.helpers import make_snapshot, pending, running, snapshot


@dataclass
class Counts:
    """The counters the simulator gives ``may_act`` (a QueueCounts), for a hand-built snapshot."""

    free: int
    qsizes: list[int]
    running: list[tuple[int, MalleableSpec]]
    head: int | None = None
    total_nodes: int = 64
    queued: int = 0  # how many jobs are pending

    @property
    def queue(self) -> range:
        return range(self.queued)  # only its length is read

    def malleable_sizes(self) -> list[tuple[int, MalleableSpec]]:
        return self.running

    def head_min_size(self) -> int | None:
        return self.head


def counts(snap: Snapshot) -> Counts:
    qsizes = [0] * (snap.total_nodes + 1)
    for job in snap.pending:
        if job.node_count <= snap.total_nodes:  # a larger job can never start: no counter holds it
            qsizes[job.node_count] += 1
    running = [(j.node_count, j.malleable) for j in snap.running if j.malleable is not None]
    head = None
    if snap.pending:
        first = snap.pending[0]
        head = first.malleable.min_nodes if first.malleable else first.node_count
    return Counts(snap.free, qsizes, running, head, snap.total_nodes, len(snap.pending))


@st.composite
def states(draw: st.DrawFn) -> tuple[Snapshot, bool]:
    """A snapshot and whether every running malleable job is in mode 3 (no ask, no preferred)."""
    jobs = []
    mode3 = True
    for k in range(draw(st.integers(0, 5))):
        cur = draw(st.integers(1, 16))
        if draw(st.booleans()):
            jobs.append((k + 1, cur, None))
            continue
        factor = draw(st.sampled_from([2, 3, 4]))
        lo = draw(st.integers(1, cur))
        hi = draw(st.integers(cur, 32))
        preferred = None
        if draw(st.integers(0, 9)) == 0:  # mode 1: the range no longer holds the size
            lo, hi = draw(st.sampled_from([(cur + 1, cur + 4), (1, max(1, cur - 1))]))
            mode3 = mode3 and lo <= cur <= hi
        elif draw(st.integers(0, 9)) == 0:  # mode 2
            preferred = draw(st.integers(lo, hi))
            mode3 = False
        jobs.append((k + 1, cur, MalleableSpec(lo, hi, factor, preferred)))
    total = sum(c for _, c, _ in jobs) + draw(st.integers(0, 12))
    total = max(total, 1)
    queued = [(100 + k, s) for k, s in enumerate(draw(st.lists(st.integers(1, total), max_size=6)))]
    return make_snapshot(total, jobs, queued), mode3


@settings(max_examples=600, deadline=None)
@given(states())
def test_may_act_is_false_only_when_decide_says_only_noaction(state: tuple[Snapshot, bool]) -> None:
    snap, mode3 = state
    acts = DMRPolicy().may_act(counts(snap))
    decisions = DMRPolicy().decide(snap, None)
    quiet = all(type(d) is NoAction for d in decisions)
    if not acts:
        assert quiet, decisions
    if mode3:  # exact, not only safe: with every job in mode 3, True means decide acts
        assert acts == (not quiet), decisions


def test_may_act_answers_for_the_running_jobs_of_this_call_not_the_last() -> None:
    queue = [0, 0, 0, 0, 1, 0, 0, 0, 0]  # one pending job of 4 nodes, none free
    wide, fixed = MalleableSpec(1, 8, 2), MalleableSpec(8, 8, 2)
    policy = DMRPolicy()
    assert not policy.may_act(Counts(0, queue, [(1, wide)]))  # 1 node: nothing to give
    assert policy.may_act(Counts(0, queue, [(8, wide)]))  # 8 -> 4 frees the 4 it needs
    assert not policy.may_act(Counts(0, queue, [(8, fixed)]))  # the same size, a range of one
    assert not policy.may_act(Counts(0, [0] * 9, [(8, wide)]))  # nothing pending, nothing free
    half = MalleableSpec(4, 8, 2)  # 8 -> 4 gives 4 nodes at most: the window is (0, 4]
    assert policy.may_act(Counts(0, queue, [(8, half)]))  # the 4-node job: exactly at its edge
    assert not policy.may_act(Counts(0, [0, 0, 0, 0, 0, 1, 0, 0, 0], [(8, half)]))  # a 5-node job: past it
    grows = MalleableSpec(1, 16, 2)
    assert not policy.may_act(Counts(4, [0] * 17, [(8, grows)]))  # 8 -> 16 needs 8, 4 free
    assert policy.may_act(Counts(8, [0] * 17, [(8, grows)]))  # 8 free: it grows
    assert not policy.may_act(Counts(8, [0, 1] + [0] * 15, [(8, grows)]))  # a pending job fits them


@st.composite
def queues(draw: st.DrawFn) -> Snapshot:
    """Running jobs and a queue, malleable or rigid, any sizes (minAgree reads pending mins)."""
    jobs = []
    for k in range(draw(st.integers(0, 5))):
        cur = draw(st.integers(1, 16))
        mall = None
        if draw(st.booleans()):
            mall = (draw(st.integers(1, cur)), draw(st.integers(cur, 32)))
        jobs.append(running(k + 1, cur, draw(st.sampled_from([50.0, 100.0, 400.0])), mall=mall))
    total = max(1, sum(j.node_count for j in jobs) + draw(st.integers(0, 12)))
    for k in range(draw(st.integers(0, 5))):
        nodes = draw(st.integers(1, total + 2))
        mall = (draw(st.integers(1, nodes)), nodes) if draw(st.booleans()) else None
        jobs.append(pending(100 + k, nodes, draw(st.sampled_from([10.0, 60.0, 500.0])), submit=k, mall=mall))
    return snapshot(total, jobs)


@settings(max_examples=600, deadline=None)
@given(queues())
def test_minagree_says_it_may_not_act_only_when_it_would_do_nothing(snap: Snapshot) -> None:
    if not MinAgree().may_act(counts(snap)):
        assert MinAgree().decide(snap, None) == []


def test_minagree_may_act_when_its_donors_give_exactly_what_the_first_pending_job_needs() -> None:
    # The boundary a random search can miss: 4 nodes to give and a 4-node job first in line.
    for cur, acts in ((8, True), (7, False)):  # can give 4, then 3
        snap = snapshot(cur, [running(1, cur, 100.0, mall=(4, 8)), pending(2, 4, 60.0)])
        assert MinAgree().may_act(counts(snap)) is acts
        assert bool(MinAgree().decide(snap, None)) is acts


class Checked:
    """Wraps a policy's ``may_act``: whenever it says False, a fresh copy is asked anyway and
    must carry nothing out."""

    def __init__(self, make: type[Policy]) -> None:
        self.make = make
        self.skipped = self.called = 0

    def policy(self) -> Policy:
        checked = self

        class CheckedPolicy(self.make):  # type: ignore[misc, valid-type]
            def may_act(self, state: Simulator) -> bool:  # type: ignore[override]
                acts = super().may_act(state)
                if acts:
                    checked.called += 1
                    return True
                decisions = checked.make().decide(state.snapshot(), None)
                assert all(type(d) is NoAction for d in decisions), (state.now, decisions)
                checked.skipped += 1
                return False

        return CheckedPolicy()


@pytest.mark.parametrize(
    ("make", "skips"), [(DMRPolicy, 500), (MinAgree, 500), (SDPolicy, 200)], ids=["dmr", "minagree", "sd"]
)
def test_every_skipped_event_of_a_run_would_have_carried_nothing_out(make: type[Policy], skips: int) -> None:
    # SD is asked afresh (no loans): its skips are those without loans, as may_act's are
    checked = Checked(make)
    for name in ("kth-small", "esp"):
        workload = MalleableRule(fraction=0.5, seed=0).apply(load_workload(name))
        Simulator(workload, "easy", checked.policy()).run()
    assert checked.skipped > skips and checked.called > 100  # both ways taken, many times


class AlwaysCalled:
    """A stateful policy whose ``may_act`` always says True: every call is made."""

    @staticmethod
    def of(make: type[Policy]) -> Policy:
        class Called(make):  # type: ignore[misc, valid-type]
            def may_act(self, state: Simulator) -> bool:  # type: ignore[override]
                return True

        return Called()


@pytest.mark.parametrize("make", [DBES, SDPolicy], ids=lambda m: m.name)
def test_a_stateful_policy_that_skips_calls_schedules_as_if_every_call_was_made(make: type[Policy]) -> None:
    # DBES and SD keep state between calls (marks, loans, requested times): a skipped call must
    # leave nothing that a later call would read differently. The whole run is the check.
    skipped = 0
    for workload in _stateful_workloads():
        policy = make()
        calls = 0
        may_act = policy.may_act

        def counted(state: Simulator, may_act=may_act) -> bool:  # type: ignore[no-untyped-def]
            nonlocal calls
            acts = may_act(state)
            calls += not acts
            return acts

        policy.may_act = counted  # type: ignore[method-assign]
        runs = [Simulator(workload, "easy", p) for p in (policy, AlwaysCalled.of(make))]
        for sim in runs:
            sim.run()
        a, b = runs
        assert list(a.table.start_t) == list(b.table.start_t)
        assert list(a.table.end_t) == list(b.table.end_t)
        assert a.resize_log == b.resize_log and a.decisions == b.decisions
        skipped += calls
    assert skipped > 100


def _stateful_workloads() -> list[Workload]:
    """Half malleable; the last with evolving jobs too (every seventh rigid job asks for 2 more
    nodes), whose asks DBES serves by shrinking the jobs it marked (its marks' order counts)."""
    traces = [MalleableRule(fraction=0.5, seed=0).apply(load_workload(name)) for name in ("kth-small", "esp")]
    synthetic = generate(SyntheticConfig(jobs=1500, nodes=32, seed=3, load=0.9))
    wl = MalleableRule(fraction=0.5, seed=0).apply(synthetic)
    jobs = [
        j._replace(evolving=EvolvingSpec((0.2, 0.5), 2)) if j.malleable is None and k % 7 == 0 else j
        for k, j in enumerate(wl.jobs)
    ]
    return [*traces, Workload(jobs, wl.nodes, "evolving")]


def test_dbes_may_act_while_a_mark_names_a_job_even_with_nothing_pending() -> None:
    # Nothing pending and every malleable job at its max: a call decides nothing. It would turn a
    # mark made for a job (since started) into a mark for nobody, which the next call's evolving
    # asks read (marks for nobody shrink first): so it is made while such a mark is left.
    at_max = [(4, MalleableSpec(1, 4))]
    policy = DBES()
    assert not policy.may_act(Counts(2, [0] * 65, at_max))
    policy.expanded_for[1] = None
    assert not policy.may_act(Counts(2, [0] * 65, at_max))
    policy.expanded_for[1] = 7
    assert policy.may_act(Counts(2, [0] * 65, at_max))
    policy.expanded_for[1] = None
    assert policy.may_act(Counts(2, [0] * 65, [(3, MalleableSpec(1, 4))]))  # it may grow
    assert not policy.may_act(Counts(0, [0] * 65, [(3, MalleableSpec(1, 4))]))  # with no idle node
    assert policy.may_act(Counts(0, [0] * 65, at_max, head=2, queued=1))  # something pending
