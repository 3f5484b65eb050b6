"""EJB decisions on hand-built traces where the right choice is known (section 3).

Each trace is small enough to work out by hand; the comments give the arithmetic.
Target T = 99 unless said otherwise; λ = 20 s.
"""

from __future__ import annotations

import math

import pytest

from ejb.model import IntervalKind

LAM = 20.0


def names(run, jid=99):
    return [c for _, c in run.cases(jid)]


def subjob_shapes(run, jid=99):
    ej = run.elastic(jid)
    return [(s.procs, pytest.approx(s.limit)) for k, s in sorted(ej.subjobs.items()) if k != 0]


def test_j0_starting_at_once_means_no_elastic_job(trace):
    run = trace([(99, 0, 8, 100, 100)], 10, {99}, migration=LAM)
    assert names(run) == ["submit-j0", "launch-j0", "complete"]
    rec = run.record(99)
    assert rec.elastic is False and rec.subjobs == 1
    assert (rec.wait, rec.turnaround) == (0.0, 100.0)
    assert run.state(99) == "COMPLETED"  # J0 is the trace job itself and ran to its end


def test_wait_case_1_type_i_slot_only(trace):
    # 10 procs. A=5 until 1000, B=3 until 1000; T=(8,100) at 1: free 2, head T, shadow 1000,
    # extra 2 -> only a type-I slot of 2. ceil(8/2)=4 procs per processor -> J1=(2, 400).
    run = trace([(1, 0, 5, 1000, 1000), (2, 0, 3, 1000, 1000), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    assert names(run)[:3] == ["submit-j0", "wait-1", "launch"]
    assert subjob_shapes(run) == [(2, 400.0)]
    rec = run.record(99)
    assert (rec.wait, rec.turnaround, rec.migrations) == (0.0, 400.0, 0)
    assert run.state(99) == "CANCELLED"  # J0 never started and was withdrawn at completion


def test_wait_case_2_type_ii_slot_long_enough(trace):
    # A=6 until 1000; T at 1: free 4, shadow 1000, extra 2. Case 1: 2 procs -> 400 s;
    # case 2: 4 procs -> 200 s < R_max 999 -> J1=(4, 200), T_c = 201.
    run = trace([(1, 0, 6, 1000, 1000), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    assert names(run)[:3] == ["submit-j0", "wait-2", "launch"]
    assert subjob_shapes(run) == [(4, 200.0)]
    assert run.record(99).completed == pytest.approx(201.0)


def test_wait_case_3_two_subjobs(trace):
    # A=6 until 150; T at 1: free 4, shadow 150, extra 2 (R_max = 149).
    # Case 2: 200 s > 149, infeasible. Case 3: J1=(2,.) and J2=(2, 149): run on 4 procs for
    # L1 = 149 - 20 = 129 s (64.5%), migrate 20 s, then 35.5% on 2 procs = 142 s:
    # T_c = 1 + 129 + 20 + 142 = 292 < case 1's 401.
    run = trace([(1, 0, 6, 150, 150), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    log = run.cases(99)
    assert log[1] == (1.0, "wait-3")
    ej = run.elastic(99)
    j1, j2 = ej.subjobs[1], ej.subjobs[2]
    assert (j1.procs, j1.limit) == (2, pytest.approx(291.0))
    assert (j2.procs, j2.limit) == (2, pytest.approx(149.0))
    assert j1.start == j2.start == 1.0


def test_running_case_1_adds_long_subjob_and_migrates(trace):
    # A=5 until 1000, B=3 until 100; T at 1: type I of 2 -> J1=(2,400), T_c=401.
    # At 100 B ends: free 3, shadow 1000, extra 2. 99/400 done; adding 2 procs: migrate
    # 20 s then degree 2: T_c' = 120 + (1 - 99/400) * 200 = 270.5 < 401 -> J2=(2, 170.5).
    run = trace([(1, 0, 5, 1000, 1000), (2, 0, 3, 100, 100), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    assert names(run) == ["submit-j0", "wait-1", "launch", "run-1", "migrate-in", "complete"]
    assert subjob_shapes(run) == [(2, 400.0), (2, 170.5)]
    rec = run.record(99)
    assert rec.completed == pytest.approx(270.5)
    assert (rec.subjobs, rec.migrations) == (2, 1)
    for k in (1, 2):  # both subjobs cancelled at completion
        assert run.elastic(99).subjobs[k].stop == pytest.approx(270.5)


def test_running_no_subjob_when_migration_does_not_pay(trace):
    # A=5 until 380, B=3 until 1000; J1=(2,400) from 1. At 380 A ends: free 5, slots exist,
    # but only 21 s of work at degree 4 remain: any expansion costs 20 s of migration and
    # finishes at 410.5 > 401 -> nothing is submitted.
    run = trace([(1, 0, 5, 380, 380), (2, 0, 3, 1000, 1000), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    assert names(run) == ["submit-j0", "wait-1", "launch", "complete"]
    assert run.record(99).completed == pytest.approx(401.0)


SHORT_SLOT = [
    (1, 0, 11, 400, 400),  # A: ends at 400 -> X's shadow
    (2, 0, 4, 100, 100),  # B: ends at 100 -> opens the short slot
    (3, 0.5, 15, 1000, 1000),  # X: queue head from 0.5
    (99, 1, 8, 1000, 1000),  # T = (8, 1000)
]


def test_running_case_2_short_type_ii_slot_with_migration_before_it_ends(trace):
    # 16 procs. At 1: free 1, X needs 15 at shadow 400 (extra 1) -> J1=(1, 8000), T_c=8001.
    # At 100: free 4, X's shadow 400, extra 0 -> type II (4, 300). A long subjob would need
    # ~2000 s; a short one: migrate in [100,120), degree 2 until 380, migrate out [380,400).
    # 3 procs reach degree 2 as well as 4 (cheaper) -> J2=(3, 300).
    run = trace(SHORT_SLOT, 16, {99}, migration=LAM)
    ej = run.elastic(99)
    assert (100.0, "run-2") in run.cases(99)
    assert (ej.subjobs[2].procs, ej.subjobs[2].limit) == (3, pytest.approx(300.0))
    plan = ej.plan
    assert plan is not None
    migrate = [(iv.start, iv.end) for iv in plan.intervals if iv.kind is IntervalKind.MIGRATE]
    assert migrate[:2] == [(100.0, 120.0), (pytest.approx(380.0), pytest.approx(400.0))]
    # J2 ran its full 300 s: the application had left it before it ended
    assert ej.subjobs[2].stop == pytest.approx(400.0)
    assert plan.progress_at(400.0) == pytest.approx(99 / 8000 + 260 / 2000)


def test_j0_start_migrate_all(trace):
    # Same trace: X starts at 400 and ends at 1400, when J0 fits. Progress then is
    # 0.0124 + 0.13 + 1000/8000 = 0.2674: keeping J1 alone ends ~7261, restarting 2400,
    # migrating everything to J0 1400 + 20 + 0.7326 * 1000 = 2152.6 -> migrate-all.
    run = trace(SHORT_SLOT, 16, {99}, migration=LAM)
    assert (1400.0, "j0-migrate-all") in run.cases(99)
    ej = run.elastic(99)
    expected = 1420 + (1 - (99 / 8000 + 260 / 2000 + 1000 / 8000)) * 1000
    assert run.record(99).completed == pytest.approx(expected)
    assert ej.subjobs[1].stop == pytest.approx(1420.0)  # J1 cancelled once the migration is over
    assert run.state(99) == "CANCELLED" and run.times(99)[1] == 1400.0


def test_running_case_3_long_and_short_subjob(trace):
    # X needs 14 instead of 15: at 100 free 4, shadow 400, extra 1 -> type I (1) and
    # type II (4, 300). Case 3 (J=(1, long) + J=(3, 300)) beats case 1 and case 2.
    jobs = [(1, 0, 11, 400, 400), (2, 0, 4, 100, 100), (3, 0.5, 14, 1000, 1000), (99, 1, 8, 1000, 1000)]
    run = trace(jobs, 16, {99}, migration=LAM)
    assert (100.0, "run-3") in run.cases(99)
    ej = run.elastic(99)
    assert (ej.subjobs[2].procs, ej.subjobs[3].procs) == (1, 3)
    assert ej.subjobs[3].limit == pytest.approx(300.0)
    # long subjob lasts until the estimated completion at that time
    t_c = 400 + (1 - 99 / 8000 - 260 / 2000) * 4000
    assert ej.subjobs[2].limit == pytest.approx(t_c - 100)


def test_j0_start_cancel_j0_when_nearly_done(trace):
    # A, B end at 380: J0 fits. 21 s left at degree 4 (ends 401) vs 405.25 migrating, 480
    # restarting -> cancel J0 and finish on J1. C (4 procs, queued behind J0) gets J0's
    # processors at once, in the same instant.
    jobs = [(1, 0, 5, 380, 380), (2, 0, 3, 380, 380), (99, 1, 8, 100, 100), (3, 2, 4, 50, 50)]
    run = trace(jobs, 10, {99}, migration=LAM)
    assert (380.0, "j0-cancel-j0") in run.cases(99)
    assert run.record(99).completed == pytest.approx(401.0)
    assert run.times(99)[1:] == (380.0, 380.0)
    assert run.times(3)[1] == 380.0


def test_j0_start_restart_when_little_progress(trace):
    # A, B end at 10: J0 fits at 10 with 9/400 done: restart ends at 110, migrate-all 127.75.
    run = trace([(1, 0, 5, 10, 10), (2, 0, 3, 10, 10), (99, 1, 8, 100, 100)], 10, {99}, migration=LAM)
    assert (10.0, "j0-restart") in run.cases(99)
    rec = run.record(99)
    assert (rec.completed, rec.first_start, rec.restarts) == (110.0, 1.0, 1)
    assert run.elastic(99).subjobs[1].stop == 10.0
    assert run.state(99) == "COMPLETED"  # J0 ran the application to its natural end


def test_early_completion_cancels_subjobs_and_j0(trace):
    # Like case 1, but T really needs only 50 of its 100 s: at degree 4 it completes at 201,
    # not at the estimated 401. J1 and the queued J0 are cancelled then.
    run = trace([(1, 0, 5, 1000, 1000), (2, 0, 3, 1000, 1000), (99, 1, 8, 100, 50)], 10, {99}, migration=LAM)
    rec = run.record(99)
    assert rec.completed == pytest.approx(201.0)
    ej = run.elastic(99)
    assert ej.estimated_completion == pytest.approx(401.0)
    assert ej.subjobs[1].stop == pytest.approx(201.0)
    assert run.state(99) == "CANCELLED" and run.times(99)[2] == pytest.approx(201.0)
    sub = ej.subjobs[1].job_id
    assert run.state(sub) == "CANCELLED" and run.times(sub)[2] == pytest.approx(201.0)
    assert rec.proc_seconds == pytest.approx(2 * 200.0)


def test_small_jobs_are_not_eligible(trace):
    run = trace([(1, 0, 5, 1000, 1000), (99, 1, 7, 100, 100)], 10, {99}, migration=LAM)
    assert 99 not in run.ctrl.ejb.jobs
    assert run.times(99)[1] == 1000.0


def test_o_max_bound_blocks_too_small_slots(trace):
    # T=(64, 100) on 80 procs with 7 free: below ceil(64/8) = 8 -> no subjob; with O_max=16 it is allowed.
    jobs = [(1, 0, 73, 1000, 1000), (99, 1, 64, 100, 100)]
    assert names(trace(jobs, 80, {99}, migration=LAM))[:2] == ["submit-j0", "launch-j0"]
    run = trace(jobs, 80, {99}, migration=LAM, o_max=16)
    assert names(run)[1] == "wait-1"
    assert run.elastic(99).subjobs[1].procs == 7
    assert not math.isinf(run.record(99).completed)


def test_dominated_j0_is_withdrawn_only_with_the_extension(trace):
    # 10 procs: A=2 until 1000, B=6 until 100, C=9 queued from 0.5 (the head). T=(8,100) at 1:
    # case 2 gives J1=(2, 400). At 100 B ends: C still cannot start (shadow 1000, extra 1),
    # a type-II slot (6, 900) lets J_e grow to 8 = P_t (T_c = 100 + 20 + 75.25 = 195.25).
    # At full parallelism J0 can never complete the application earlier: the extension
    # withdraws it at once; the paper's EJB keeps it queued until the application completes.
    jobs = [(1, 0, 2, 1000, 1000), (2, 0, 6, 100, 100), (3, 0.5, 9, 1000, 1000), (99, 1, 8, 100, 100)]
    paper = trace(jobs, 10, {99}, migration=LAM)
    ext = trace(jobs, 10, {99}, migration=LAM, drop_dominated_j0=True)
    assert names(paper) == ["submit-j0", "wait-2", "launch", "run-1", "migrate-in", "complete"]
    assert names(ext) == ["submit-j0", "wait-2", "launch", "run-1", "migrate-in", "drop-j0", "complete"]
    assert paper.record(99).completed == ext.record(99).completed == pytest.approx(195.25)
    assert ext.times(99)[2] == 100.0 and paper.times(99)[2] == pytest.approx(195.25)


def test_j0_is_kept_while_it_could_still_help(trace):
    # Running case 1 trace: J_e reaches 4 of 8 procs; J0 starting would still give degree 1.
    jobs = [(1, 0, 5, 1000, 1000), (2, 0, 3, 100, 100), (99, 1, 8, 100, 100)]
    assert "drop-j0" not in names(trace(jobs, 10, {99}, migration=LAM, drop_dominated_j0=True))


def test_waiting_elastic_jobs_get_slots_before_running_ones_expand(trace):
    # 10 procs. A=5 until 1000, B=3 until 100. T1=(8,100) at 1 runs on J1=(2, 400). T2=(8,100)
    # arrives at 2 and finds no slot. At 100 B ends: 3 free (type I 2, type II 3 until 401).
    # Waiting first: T2 launches on all 3 (case 2) and T1 is not expanded. Arrival order: T1
    # expands on 2 (running case 1) and T2 launches on the 1 left (case 1, degree 8).
    jobs = [(1, 0, 5, 1000, 1000), (2, 0, 3, 100, 100), (98, 1, 8, 100, 100), (99, 2, 8, 100, 100)]
    first = trace(jobs, 10, {98, 99}, migration=LAM)
    assert (100.0, "wait-2") in first.cases(99)
    assert not any(c.startswith("run-") for c in names(first, 98))
    fcfs = trace(jobs, 10, {98, 99}, migration=LAM, waiting_first=False)
    assert (100.0, "run-1") in fcfs.cases(98)
    assert (100.0, "wait-1") in fcfs.cases(99)
