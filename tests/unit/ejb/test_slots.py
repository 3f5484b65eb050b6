"""Immediately backfillable slots (section 2.3, Table 1) from a snapshot and from the simulator."""

from __future__ import annotations

import math
import random

import pytest

from ejb.slots import SlotKind, easy_slots, slots_from_snapshot, slots_from_view
from slurm_ext.model import Job, JobState, Node, NodeState, Snapshot
from slurm_ext.sim import Simulator, Workload, rigid_job


def snapshot(now: float, total: int, running: list[tuple[int, float]], pending: list[int]) -> Snapshot:
    busy = sum(n for n, _ in running)
    nodes = tuple(Node(f"n{k}", NodeState.ALLOCATED if k < busy else NodeState.IDLE) for k in range(total))
    jobs = [
        Job(k + 1, JobState.RUNNING, n, start_time=0.0, end_time=end) for k, (n, end) in enumerate(running)
    ]
    jobs += [
        Job(100 + k, JobState.PENDING, n, submit_time=float(k), priority=0) for k, n in enumerate(pending)
    ]
    return Snapshot(now, nodes, tuple(jobs))


def test_figure3_type_i_and_type_ii():
    # 10 procs; running 4 until 100 and 3 until 200; 3 free; head wants 6.
    # At the shadow time 100: 3 + 4 = 7 available -> extra = 1.
    s = slots_from_snapshot(snapshot(10.0, 10, [(4, 100.0), (3, 200.0)], [6, 2]))
    assert (s.free, s.extra, s.shadow) == (3, 1, 100.0)
    assert s.type1 is not None and s.type1.kind is SlotKind.TYPE_I
    assert (s.type1.procs, s.type1.duration) == (1, math.inf)
    assert s.type2 is not None and (s.type2.procs, s.type2.duration) == (3, 90.0)


def test_empty_queue_makes_every_free_processor_type_i():
    s = slots_from_snapshot(snapshot(0.0, 10, [(4, 100.0)], []))
    assert s.type1 is not None and s.type1.procs == 6 and s.type2 is None


def test_no_type_ii_when_extra_covers_free():
    s = easy_slots(0.0, 3, [(8, 50.0)], 4)  # at 50: 11 available, extra 7 >= free 3
    assert s.type1 is not None and s.type1.procs == 3 and s.type2 is None


def test_jobs_ending_at_the_shadow_time_all_count():
    s = easy_slots(0.0, 1, [(2, 50.0), (3, 50.0), (4, 90.0)], 3)
    assert (s.shadow, s.extra) == (50.0, 3)


def test_no_slots_when_nothing_is_free():
    assert slots_from_view(5.0, 0, 10.0, 0, True).empty


def _random_sim(seed: int) -> Simulator:
    rng = random.Random(seed)
    jobs = [
        rigid_job(k + 1, float(rng.randrange(0, 400)), rng.randint(1, 16), float(rng.randrange(10, 300)))
        for k in range(60)
    ]
    return Simulator(Workload(jobs, 32), "easy")


@pytest.mark.parametrize("seed", range(5))
def test_snapshot_and_simulator_views_agree(seed: int):
    sim = _random_sim(seed)
    for t in range(0, 600, 37):
        sim.advance(until=float(t))
        v = sim.easy_view()
        a = slots_from_view(v.now, v.free, v.shadow, v.extra, v.head is not None)
        b = slots_from_snapshot(sim.snapshot())
        assert (a.type1, a.type2) == (b.type1, b.type2)


@pytest.mark.parametrize("seed", range(5))
def test_a_job_shaped_to_a_slot_starts_at_once(seed: int):
    """The defining property: EASY backfills anything within a type-I or type-II slot."""
    sim = _random_sim(seed)
    for t in range(50, 600, 61):
        sim.advance(until=float(t))
        trial = sim.copy()
        v = trial.easy_view()
        s = slots_from_view(v.now, v.free, v.shadow, v.extra, v.head is not None)
        for slot in (s.type1, s.type2):
            if slot is None:
                continue
            probe = trial.copy()
            limit = 1e6 if math.isinf(slot.duration) else slot.duration
            jid = probe.submit(slot.procs, time_limit=limit)
            probe.advance(until=probe.now + 1e-3)
            assert probe.job_state(jid) == "RUNNING", (t, slot)
            # one processor more than the slot allows (and a second longer) does not start
            if slot.procs < 32:
                probe = trial.copy()
                bigger = probe.submit(slot.procs + 1, time_limit=limit + 1)
                probe.advance(until=probe.now + 1e-3)
                assert probe.job_state(bigger) != "RUNNING", (t, slot)


def test_unlimited_running_job_never_frees_its_processors():
    snap = snapshot(0.0, 10, [(6, math.inf)], [8])
    s = slots_from_snapshot(snap)  # the head can never start: nothing to protect
    assert s.type1 is not None and s.type1.procs == 4 and s.type2 is None
