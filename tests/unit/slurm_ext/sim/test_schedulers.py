"""Hand-built workloads whose FCFS / EASY / depth-d backfill schedules are known."""

from __future__ import annotations

import math

import pytest

from slurm_ext.sim import Workload, rigid_job, simulate
from slurm_ext.sim.invariants import capacity_violations, head_reservation_violations
from slurm_ext.sim.jobtable import SimView
from slurm_ext.sim.schedulers import SchedulerPass
from tests.unit.slurm_ext.sim.simworkloads import random_workload


def starts(result) -> dict[int, float]:
    return {int(j): float(s) for j, s in zip(result.job_id, result.start, strict=True)}


def ends(result) -> dict[int, float]:
    return {int(j): float(e) for j, e in zip(result.job_id, result.end, strict=True)}


def head_case() -> Workload:
    # A runs; B (whole machine) waits for A; C would end after B's shadow time and extra is 0;
    # D ends before the shadow time.
    return Workload(
        [
            rigid_job(1, 0, 2, 100),
            rigid_job(2, 1, 4, 100),
            rigid_job(3, 2, 2, 200),
            rigid_job(4, 3, 1, 50),
        ],
        nodes=4,
    )


def test_easy_backfill_does_not_delay_head() -> None:
    s = starts(simulate(head_case(), "easy"))
    assert s == {1: 0, 2: 100, 3: 200, 4: 3}


def test_fcfs_never_backfills() -> None:
    s = starts(simulate(head_case(), "fcfs"))
    assert s == {1: 0, 2: 100, 3: 200, 4: 200}


def test_easy_backfills_into_extra_nodes_and_then_a_job_must_wait() -> None:
    wl = Workload(
        [
            rigid_job(1, 0, 3, 100),
            rigid_job(2, 1, 2, 100),  # head: shadow 100, extra 2
            rigid_job(3, 2, 1, 1000),  # long, but uses one extra node
            rigid_job(4, 3, 1, 1000),  # no free node now: must wait
        ],
        nodes=4,
    )
    s = starts(simulate(wl, "easy"))
    assert s == {1: 0, 2: 100, 3: 2, 4: 100}


def test_early_completion_starts_the_head_at_the_actual_end() -> None:
    wl = Workload([rigid_job(1, 0, 4, 100, run=10), rigid_job(2, 1, 4, 100)], nodes=4)
    r = simulate(wl, "easy")
    assert starts(r) == {1: 0, 2: 10}
    assert ends(r) == {1: 10, 2: 110}


def test_job_is_killed_at_its_time_limit() -> None:
    wl = Workload([rigid_job(1, 0, 2, 50, run=80), rigid_job(2, 10, 4, 10)], nodes=4)
    r = simulate(wl, "easy")
    assert ends(r)[1] == 50
    assert list(r.state) == ["TIMEOUT", "COMPLETED"]
    assert starts(r)[2] == 50


def depth_case() -> Workload:
    return Workload(
        [
            rigid_job(1, 0, 4, 100),
            rigid_job(2, 1, 5, 50),  # head: reserved [100, 150), extra 1
            rigid_job(3, 2, 6, 100),  # second in line: reserved [150, 250) only with depth >= 2
            rigid_job(4, 3, 1, 1000),  # fits the extra node, but crosses job 3's reservation
        ],
        nodes=6,
    )


def test_depth_one_backfill_equals_easy_here() -> None:
    s = starts(simulate(depth_case(), "backfill:1"))
    assert s == {1: 0, 2: 100, 3: 1003, 4: 3}
    assert s == starts(simulate(depth_case(), "easy"))


def test_depth_two_protects_the_second_job() -> None:
    s = starts(simulate(depth_case(), "backfill:2"))
    assert s == {1: 0, 2: 100, 3: 150, 4: 250}


def test_depth_zero_is_greedy() -> None:
    s = starts(simulate(head_case(), "backfill:0"))
    assert s[3] == 2  # no reservation at all: the long job jumps ahead and delays the head
    assert s[2] > 100


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_backfill_depth_one_matches_easy_on_random_workloads(seed: int) -> None:
    wl = random_workload(seed)
    assert starts(simulate(wl, "easy")) == starts(simulate(wl, "backfill:1"))


def naive_backfill(depth: int) -> SchedulerPass:
    """Backfill as its definition reads, with no shortcut: for each queued job in order, the
    earliest time its nodes stay free for its limit, tried at now and at every change of the
    free nodes (running jobs' ends, reservations' starts and ends), each window checked whole;
    it starts if that is now, else the first ``depth`` such jobs reserve their window."""

    def pass_(sim: SimView) -> None:
        size, lim, now, free = sim.table.size, sim.table.lim, sim.now, sim.free
        ends = [(t, size[i]) for t, i in sim.ends]  # as the pass began: its starts are in ``taken``
        taken: list[tuple[float, float, int]] = []  # (start, end, nodes) of reservations and starts

        def free_at(t: float) -> int:
            return free + sum(n for e, n in ends if e <= t) - sum(n for a, b, n in taken if a <= t < b)

        def earliest(need: int, duration: float) -> float:
            changes = sorted({now, *(e for e, _ in ends), *(x for a, b, _ in taken for x in (a, b))})
            for t in (c for c in changes if c >= now):
                window = [t] + [c for c in changes if t < c < t + duration]
                if all(free_at(c) >= need for c in window):
                    return t
            return math.inf

        reserved = 0
        for i in list(sim.queue):
            t0 = earliest(size[i], lim[i])
            if t0 == now:
                sim.start_queued(i)
                sim.queue.remove(i)
                taken.append((now, now + lim[i], size[i]))
            elif reserved < depth:
                taken.append((t0, t0 + lim[i], size[i]))
                reserved += 1

    return pass_


@pytest.mark.parametrize("depth", [0, 1, 3, 100])
@pytest.mark.parametrize("seed", [4, 5])
def test_backfill_starts_what_the_definition_starts(depth: int, seed: int) -> None:
    wl = random_workload(seed, n=150, nodes=16)
    assert starts(simulate(wl, f"backfill:{depth}")) == starts(simulate(wl, naive_backfill(depth)))


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "backfill", "conservative"])
def test_never_more_nodes_busy_than_exist(scheduler: str) -> None:
    r = simulate(random_workload(7), scheduler)
    assert len(capacity_violations(r)) == 0
    assert r.timeline["busy"].max() == r.nodes  # the workload does fill the machine
    assert (r.start >= r.submit).all()


def test_easy_head_never_starts_after_its_reservation_when_estimates_are_exact() -> None:
    checked, late = head_reservation_violations(random_workload(11, n=400), "easy")
    assert checked > 50
    assert late == []


@pytest.mark.parametrize("scheduler", ["backfill:0", "fcfs"])
def test_the_reservation_check_catches_schedulers_without_the_guarantee(scheduler: str) -> None:
    # Greedy backfill delays heads; FCFS never backfills, so it keeps the promise trivially.
    _, late = head_reservation_violations(random_workload(11, n=400), scheduler)
    assert bool(late) == (scheduler == "backfill:0")


def test_jobs_the_machine_cannot_run_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match="job 2 needs 8 nodes; the machine has 4"):
        simulate(Workload([rigid_job(1, 0, 4, 10), rigid_job(2, 0, 8, 10)], nodes=4))
    with pytest.raises(ValueError, match="time limit"):
        simulate(Workload([rigid_job(1, 0, 4, 0)], nodes=4))
