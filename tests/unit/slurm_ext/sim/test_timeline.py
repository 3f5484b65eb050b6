"""A rigid run's timeline computed from its job table is the one it would record, row for row."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.sim import Simulator, Workload, rigid_job
from slurm_ext.workloads import load_workload

from .simworkloads import random_workload

SCHEDULERS = ["easy", "fcfs", "backfill", "conservative"]


def recording(workload: Workload, scheduler: str) -> Simulator:
    sim = Simulator(workload, scheduler)
    assert sim._timeline_deferred  # a plain rigid run: its rows are computed, not recorded
    sim._record_timeline()  # ... unless told to record (nothing to write yet)
    return sim


def rows(sim: Simulator) -> list[tuple[float, int, int, int]]:
    return list(zip(*sim.timeline_columns(), strict=True))


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    nodes = draw(st.integers(1, 8))
    n = draw(st.integers(0, 30))
    jobs, t = [], 0
    for k in range(n):
        t += draw(st.integers(0, 20))  # equal submit times are common
        limit = draw(st.integers(1, 30))
        run = draw(st.integers(0, 40))  # zero (a second step at one instant) and over the limit
        jobs.append(rigid_job(k + 1, float(t), draw(st.integers(1, nodes)), float(limit), float(run)))
    return Workload(jobs, nodes)


@settings(max_examples=300, deadline=None)
@given(workloads(), st.sampled_from(SCHEDULERS), st.integers(0, 400))
def test_computed_rows_are_the_recorded_ones(workload: Workload, scheduler: str, stop: int) -> None:
    computed, recorded = Simulator(workload, scheduler), recording(workload, scheduler)
    for sim in (computed, recorded):  # stopped part-way, then run on
        sim.advance(until=float(stop))
    assert rows(computed) == rows(recorded)
    for sim in (computed, recorded):
        sim.advance()
    assert rows(computed) == rows(recorded)
    assert computed.run().timeline.keys() == recorded.run().timeline.keys()


def test_a_run_changed_from_outside_writes_its_rows_and_records_on() -> None:
    workload = random_workload(3, n=200)
    computed, recorded = Simulator(workload, "easy"), recording(workload, "easy")
    for sim in (computed, recorded):
        sim.advance(until=20_000.0)
        sim.cancel(sim.table.jid[sim.queue[0]])  # a cancelled queued job: no longer in the table's terms
        sim.submit(4, 600.0, 300.0)
        sim.advance()
    assert not computed._timeline_deferred
    assert rows(computed) == rows(recorded)
    assert len(rows(computed)) > 300


def test_kth_small_under_each_scheduler() -> None:
    workload = load_workload("kth-small")
    for scheduler in SCHEDULERS:
        computed, recorded = Simulator(workload, scheduler), recording(workload, scheduler)
        computed.run(), recorded.run()
        assert computed._timeline_deferred
        assert rows(computed) == rows(recorded)
        assert len(rows(computed)) == computed._steps


def test_no_rows_without_record_timeline() -> None:
    sim = Simulator(random_workload(1, n=50), "easy", record_timeline=False)
    sim.run()
    assert not sim._timeline_deferred
    assert rows(sim) == []


def test_recorded_rows_are_packed_in_batches_and_read_at_any_point() -> None:
    # More rows than one batch of Simulator._rows, read part-way (and from a copy) and at the end.
    workload = random_workload(4, n=6000)
    computed, recorded = Simulator(workload, "easy"), recording(workload, "easy")
    for sim in (computed, recorded):
        sim.advance(until=workload.jobs[5000].submit)
    assert len(recorded.t_times) == len(rows(recorded)) == recorded._steps > 4096
    assert rows(recorded.copy()) == rows(computed)
    for sim in (computed, recorded):
        sim.advance()
    assert rows(computed) == rows(recorded)
