"""The progress model of section 2.2 (equations 1-3) against the paper's Figure 2 example."""

from __future__ import annotations

import math

import pytest

from ejb.model import IntervalKind, Member, Target
from ejb.params import EJBParams
from ejb.progress import build_plan, min_procs, procs_for, runtime_on


def figure2():
    """J_t = (4, 800 s); J1 = (1, 1460 s) from 0, J2 = (1, 1060 s) from 400, J3 = (2, 440 s) from 820."""
    target = Target(4, 800.0)
    params = EJBParams(migration=20.0)
    members = [
        Member(1, 1, 0.0, 1460.0, join=False),
        Member(2, 1, 400.0, 400.0 + 1060.0),
        Member(3, 2, 820.0, 820.0 + 440.0),
    ]
    return target, params, build_plan(target, params, 0.0, members)


def test_figure2_completes_at_1460s():
    _, _, plan = figure2()
    assert plan.completion == pytest.approx(1460.0)


def test_figure2_has_the_papers_seven_intervals():
    _, _, plan = figure2()
    kinds = [iv.kind for iv in plan.intervals]
    R, M = IntervalKind.RUN, IntervalKind.MIGRATE
    assert kinds == [R, M, R, M, R, M, R]
    assert [iv.duration for iv in plan.intervals] == pytest.approx([400, 20, 400, 20, 400, 20, 200])
    assert [iv.procs for iv in plan.intervals if iv.kind is R] == [1, 2, 4, 2]


def test_figure2_progress_milestones():
    _, _, plan = figure2()
    assert plan.progress_at(400) == pytest.approx(0.125)
    assert plan.progress_at(820) == pytest.approx(0.375)
    assert plan.progress_at(1240) == pytest.approx(0.875)
    assert plan.progress_at(2000) == pytest.approx(1.0)
    assert plan.time_at(0.375) == pytest.approx(820)
    assert plan.migration_count(math.inf) == 3
    assert plan.migration_time(math.inf) == pytest.approx(60)


def test_no_migration_out_when_the_app_finishes_first():
    # J3 would end at 1260; if it lasted to 1500 the app would run on 4 procs to the end
    target, params = Target(4, 800.0), EJBParams(migration=20.0)
    members = [
        Member(1, 1, 0.0, 1460.0, join=False),
        Member(2, 1, 400.0, 1460.0),
        Member(3, 2, 820.0, 1500.0),
    ]
    plan = build_plan(target, params, 0.0, members)
    assert plan.completion == pytest.approx(840 + 0.625 * 800)
    assert plan.migration_count(math.inf) == 2


def test_equation_2_and_o_max_bound():
    t = Target(64, 1000.0)
    p = EJBParams(o_max=8, delta=1.5)
    assert runtime_on(t, 64, p) == 1000.0  # eq. (1): exclusive run, no penalty
    assert runtime_on(t, 100, p) == 1000.0
    assert runtime_on(t, 32, p) == 1.5 * 2 * 1000.0
    assert runtime_on(t, 30, p) == 1.5 * 3 * 1000.0
    assert min_procs(t, p) == 8
    assert runtime_on(t, 8, p) == 1.5 * 8 * 1000.0
    assert math.isinf(runtime_on(t, 7, p))


def test_procs_for_uses_fewest_processors_at_the_same_degree():
    t, p = Target(64, 1000.0), EJBParams()
    assert procs_for(t, 30, p) == 22  # ceil(64/30) = 3 procs per processor -> 22 suffice
    assert procs_for(t, 64, p) == 64
    assert procs_for(t, 99, p) == 64
    assert procs_for(t, 7, p) == 0  # below ceil(64/8)


def test_stall_below_o_max_bound_never_completes():
    t, p = Target(64, 1000.0), EJBParams(migration=0.0)
    plan = build_plan(t, p, 0.0, [Member(1, 16, 0.0, 500.0, join=False)])
    assert math.isinf(plan.completion)
    assert plan.progress_at(500) == pytest.approx(500 / 4000)


def test_delta_scales_over_subscribed_intervals_only():
    t, p = Target(8, 100.0), EJBParams(migration=0.0, delta=1.5)
    # 4 procs (degree 2, 300 s) for 150 s = 50%, then all 8 procs: 50 s at the exclusive rate
    plan = build_plan(t, p, 0.0, [Member(1, 4, 0.0, math.inf, join=False), Member(2, 4, 150.0, math.inf)])
    assert plan.completion == pytest.approx(200.0)


def test_zero_lambda_means_no_migrate_intervals():
    t, p = Target(4, 800.0), EJBParams(migration=0.0)
    members = [
        Member(1, 1, 0.0, 1460.0, join=False),
        Member(2, 1, 400.0, 1460.0),
        Member(3, 2, 820.0, 1260.0),
    ]
    plan = build_plan(t, p, 0.0, members)
    assert all(iv.kind is IntervalKind.RUN for iv in plan.intervals)
    # 12.5% by 400, +26.25% on 2 procs by 820, +55% on 4 by 1260 (93.75%), J3 leaves with no
    # migration: the last 6.25% on 2 procs takes 100 s
    assert plan.completion == pytest.approx(1360.0)


def test_time_at_is_the_inverse_of_progress_at():
    _, _, plan = figure2()
    for f in (0.05, 0.125, 0.3, 0.6, 0.875, 0.99, 1.0):
        assert plan.progress_at(plan.time_at(f)) == pytest.approx(f)
