"""SD-Policy (003_* §3) adapted to whole nodes, on hand-built cases."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_ext.decisions import Expand, Shrink, StartJob
from slurm_ext.model import MalleableSpec
from slurm_ext.policies.sdpolicy import (
    SDPolicy,
    _crowded,
    _crowded_below,
    _Mates,
    _Penalties,
    _search,
    _sum_largest,
)
from slurm_ext.policies.working_view import Running
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot

NOW = 1000.0


def _mates(end_a: float = 10500.0, end_b: float = 10900.0) -> list:
    # A waited 500 s, B did not; both requested 10000 s: B's slowdown grows least
    a = running(1, 4, end_a, start=500.0, submit=0.0, mall=(1, 4), limit=10000.0)
    b = running(2, 4, end_b, start=900.0, submit=900.0, mall=(1, 4), limit=10000.0)
    return [a, b]


def _new(nodes: int = 2, limit: float = 100.0, mall: tuple[int, int] | None = (1, 2)):
    return pending(10, nodes, limit, submit=NOW, mall=mall)


def test_picks_the_mate_whose_slowdown_grows_least() -> None:
    d = SDPolicy().decide(snapshot(8, [*_mates(), _new()], NOW))
    assert [(s.job_id, s.new_size, s.for_job) for s in by_type(d, Shrink)] == [(2, 2, 10)]
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 2)]
    assert d.index(by_type(d, Shrink)[0]) < d.index(by_type(d, StartJob)[0])


def test_penalty_is_eq4_predicted_slowdown() -> None:
    pol = SDPolicy()
    from slurm_ext.policies.working_view import WorkingView

    cl = WorkingView(snapshot(8, [*_mates(), _new()], NOW))
    a, b = cl.running[1], cl.running[2]
    # (wait + run + increase) / requested; lending 2 of 4 nodes for 100 s costs 50 s
    assert pol.penalty(a, 2, 100.0) == pytest.approx((500 + 10000 + 50) / 10000)
    assert pol.penalty(b, 2, 100.0) == pytest.approx((0 + 10000 + 50) / 10000)


def test_refuses_when_the_new_job_would_end_after_its_mates() -> None:
    # both mates end at 1050, the new job would end at 1100: no malleable start
    mates = _mates(end_a=1050.0, end_b=1050.0)
    d = SDPolicy().decide(snapshot(8, [*mates, _new()], NOW))
    assert d == []


def test_refuses_when_waiting_ends_sooner_than_sharing() -> None:
    # Two 2-node mates can lend one node each; a rigid 2-node job ends at 1050. The new job
    # (2 nodes, 100 s, may run on 1) would end at 1150 if it waited (static_end).
    jobs = [
        running(1, 2, 9000.0, start=NOW, mall=(1, 2)),
        running(2, 2, 9000.0, start=NOW, mall=(1, 2)),
        running(3, 2, 1050.0, start=NOW),
        _new(nodes=2, mall=(1, 2)),
    ]
    # one mate only: it would run on 1 node for 200 s, ending at 1200 > 1150: it waits
    assert SDPolicy(max_mates=1).decide(snapshot(6, jobs, NOW)) == []
    # two mates: 2 nodes, ends at 1100 < 1150: co-scheduled
    d = SDPolicy(max_mates=2).decide(snapshot(6, jobs, NOW))
    assert sorted((s.job_id, s.new_size) for s in by_type(d, Shrink)) == [(1, 1), (2, 1)]
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 2)]


def test_static_max_slowdown_excludes_mates() -> None:
    d = SDPolicy(max_slowdown=1.004).decide(snapshot(8, [*_mates(), _new()], NOW))
    assert d == []  # B's penalty 1.005 reaches the cut-off, A's is higher


def test_dynamic_max_slowdown_is_average_running_slowdown() -> None:
    from slurm_ext.policies.working_view import WorkingView

    pol = SDPolicy(max_slowdown="dynamic")
    snap = snapshot(8, [*_mates(), _new()], NOW)
    cl = WorkingView(snap)
    pol._remember_requests(snap)
    assert pol.current_limit(cl) == pytest.approx(((500 + 10000) / 10000 + 1.0) / 2)
    d = pol.decide(snap)
    assert [(s.job_id, s.new_size) for s in by_type(d, Shrink)] == [(2, 2)]
    # only A as candidate: its penalty (1.055) is above the average (1.05): refused
    only_a = [_mates()[0], running(3, 4, 1100.0, start=NOW - 100, submit=NOW - 100), _new()]
    assert SDPolicy(max_slowdown="dynamic").decide(snapshot(8, only_a, NOW)) == []


def test_two_mates_when_one_cannot_lend_enough() -> None:
    # sharing factor 0.5: each 4-node mate lends at most 2; a 3-node job needs both
    d = SDPolicy().decide(snapshot(8, [*_mates(), _new(nodes=3, mall=(3, 3))], NOW))
    lent = {s.job_id: 4 - s.new_size for s in by_type(d, Shrink)}
    assert sorted(lent) == [1, 2] and sum(lent.values()) == 3
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 3)]


def test_max_mates_one_refuses_what_needs_two() -> None:
    d = SDPolicy(max_mates=1).decide(snapshot(8, [*_mates(), _new(nodes=3, mall=(3, 3))], NOW))
    assert d == []


def test_rigid_new_job_is_never_co_scheduled() -> None:
    d = SDPolicy().decide(snapshot(8, [*_mates(), _new(mall=None)], NOW))
    assert d == []


def test_mates_get_their_nodes_back_when_the_new_job_ends() -> None:
    pol = SDPolicy()
    pol.decide(snapshot(8, [*_mates(), _new()], NOW))
    a, b = _mates()
    b = running(2, 2, 11000.0, start=900.0, submit=900.0, mall=(1, 4), limit=10000.0)
    # the new job has ended: its 2 nodes are idle, B is expanded back to 4
    d = pol.decide(snapshot(8, [a, b], NOW + 100))
    assert [(e.job_id, e.new_size) for e in by_type(d, Expand)] == [(2, 4)]
    assert pol.loans == {}


def test_static_start_when_nodes_are_idle() -> None:
    a, b = _mates()
    d = SDPolicy().decide(snapshot(10, [a, b, _new()], NOW))
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 2)]
    assert by_type(d, Shrink) == []


@given(st.lists(st.integers(0, 20), max_size=8), st.integers(1, 4))
def test_the_largest_caps_summed_are_the_first_of_them_sorted(caps: list[int], m: int) -> None:
    assert _sum_largest(caps, m) == sum(sorted(caps, reverse=True)[:m])


_mate = st.tuples(
    st.integers(1, 12),  # size
    st.integers(1, 4),  # min
    st.floats(0, 5000),  # waited
    st.floats(1, 20000),  # run time from start to expected end
    st.sampled_from([None, 600.0, 3600.0, 20000.0]),  # requested time
)


@given(
    st.lists(_mate, min_size=1, max_size=6),
    st.integers(1, 12),
    st.floats(1, 50000),
    st.sampled_from([1.5, 2.0, 4.0, 10.0, float("inf")]),
    st.sampled_from([1, 2]),
)
def test_the_feasibility_check_is_the_search_over_every_group(
    mates_drawn, need, duration, limit, max_mates
) -> None:
    """``_Penalties.feasible``: True exactly when one mate, or a pair, may lend ``need`` nodes with
    every penalty in the tables ``_best_set`` searches below the limit."""
    policy = SDPolicy(max_mates=max_mates)
    mates = [
        Running(k, size, NOW + span, MalleableSpec(min(low, size), size), NOW, NOW - waited, req)
        for k, (size, low, waited, span, req) in enumerate(mates_drawn, start=1)
    ]
    caps = {r.job_id: policy._cap(r) for r in mates}
    mates = [r for r in mates if caps[r.job_id] > 0]
    found = _Mates(caps, mates, mates, [], {r.job_id: policy._terms(r) for r in mates})
    tables = _Penalties(policy, need, duration, limit, found)
    ok = list(map(tables.of, mates))
    single = any(len(t) > need and t[need] is not None for t in ok)
    pair = max_mates >= 2 and any(
        a < len(ok[i]) and need - a < len(ok[j]) and ok[i][a] is not None and ok[j][need - a] is not None
        for i in range(len(ok))
        for j in range(i + 1, len(ok))
        for a in range(1, need)
    )
    assert tables.feasible(mates) == (single or pair)


@given(
    st.lists(_mate, min_size=1, max_size=9),
    st.integers(1, 12),
    st.floats(1, 50000),
    st.sampled_from([1.5, 2.0, 4.0, 10.0, float("inf")]),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([2, 4, 20]),
)
def test_the_checks_before_the_search_reject_only_what_it_finds_nothing_in(
    mates_drawn, need, duration, limit, max_mates, candidate_mates
) -> None:
    """``_best_set``'s cheap checks (the ranked mates' caps, then ``feasible``) answer None only
    where the search over every group of the ranked mates finds none: the same answer as that
    search alone, whatever the mates, the need and the number ranked."""
    policy = SDPolicy(max_mates=max_mates, candidate_mates=candidate_mates)
    mates = [
        Running(k, size, NOW + span, MalleableSpec(min(low, size), size), NOW, NOW - waited, req)
        for k, (size, low, waited, span, req) in enumerate(mates_drawn, start=1)
    ]
    caps = {r.job_id: policy._cap(r) for r in mates}
    by_end = sorted((r for r in mates if caps[r.job_id] > 0), key=lambda r: r.end)
    terms = {r.job_id: policy._terms(r) for r in by_end}
    ids = [r.job_id for r in by_end]
    rows = [(*terms[jid], caps[jid]) for jid in ids]
    found = _Mates(caps, by_end, by_end, [], terms, ids, [caps[jid] for jid in ids], rows)
    tables = _Penalties(policy, need, duration, limit, found)
    keyed = sorted((policy.penalty(r, min(caps[r.job_id], need), duration), r.job_id, r) for r in by_end)
    ranked = [r for _, _, r in keyed[:candidate_mates]]
    assert policy._best_set(0, need, duration, limit, found) == _search(ranked, need, tables, caps, max_mates)


@given(
    st.lists(_mate, min_size=1, max_size=12),
    st.integers(1, 12),
    st.floats(1, 50000),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([1, 2, 4]),
)
def test_crowded_only_where_no_ranked_group_lends_enough(
    mates_drawn, need, duration, max_mates, candidate_mates
) -> None:
    """``_crowded`` (the check ``_best_set`` makes first) says True only where the mates ranked
    (the ``candidate_mates`` of least penalty) cannot lend ``need`` nodes together, whatever
    the ties: every mate with a penalty at most the ``candidate_mates``-th least has too small a cap."""
    policy = SDPolicy(max_mates=max_mates, candidate_mates=candidate_mates)
    mates = [
        Running(k, size, NOW + span, MalleableSpec(min(low, size), size), NOW, NOW - waited, req)
        for k, (size, low, waited, span, req) in enumerate(mates_drawn, start=1)
    ]
    mates = [r for r in mates if policy._cap(r) > 0]
    rows = [(*policy._terms(r), policy._cap(r)) for r in mates]
    keys = [policy.penalty(r, min(policy._cap(r), need), duration) for r in mates]
    if len(keys) < candidate_mates or not _crowded(rows, need, duration, candidate_mates, max_mates):
        return
    bar = sorted(keys)[candidate_mates - 1]
    held = [row[3] for row, key in zip(rows, keys, strict=True) if key <= bar]
    assert _sum_largest(held, max_mates) < need


@given(
    st.lists(
        st.tuples(st.integers(1, 12), st.integers(1, 12), st.floats(0, 5000), st.floats(0, 5000)),
        min_size=1,
        max_size=12,
    ),
    st.integers(2, 60),
    st.floats(1, 20000),
    st.floats(1, 40000),
    st.floats(1, 40000),
    st.sampled_from([1, 2, 3]),
)
def test_crowded_below_means_crowded_over_the_whole_range(
    drawn, need_low, d_low, d_span, base_span, max_mates
) -> None:
    """``_crowded_below`` (the certificate ``select_mates`` skips sizes on) is True only where
    ``_crowded`` is True at every need from ``need_low`` up and every duration of the range."""
    rows = [(base_span * (1 + b / 5000) + w, size, max(w, 1.0), cap) for size, cap, w, b in drawn]
    nm = max(1, len(rows) // 3)
    d_high = d_low + d_span
    if not _crowded_below(rows, need_low, d_low, d_high, nm, max_mates):
        return
    for need in (need_low, need_low + 1, need_low * 2, need_low * 5):
        for duration in (d_low, (d_low + d_high) / 2, d_high):
            assert _crowded(rows, need, duration, nm, max_mates)


@given(
    st.lists(
        st.tuples(st.integers(2, 40), st.floats(0, 5000), st.floats(100, 20000), st.floats(0.2, 3)),
        min_size=3,
        max_size=25,
    ),
    st.floats(0.05, 1),
    st.floats(100, 20000),
    st.integers(0, 5),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([1, 2, 4, 30]),
    st.sampled_from([1.5, 3.0, 50.0, "dynamic"]),
)
def test_select_mates_skipping_sizes_answers_as_trying_every_size(
    drawn, share, limit, idle, max_mates, candidate_mates, max_slowdown
) -> None:
    """The sizes ``_past_none`` skips (crowded, or beyond the mates' reach below the limit) are
    ones ``_best_set`` answers None at: the decisions are those of trying every size in turn."""
    jobs = [
        running(
            k,
            size,
            NOW + span,
            start=NOW - waited,
            submit=NOW - waited * late,
            mall=(1, size),
            limit=span + waited,
        )
        for k, (size, waited, span, late) in enumerate(drawn, start=1)
    ]
    total = sum(j.node_count for j in jobs) + idle
    want = max(2, round(share * total))
    jobs.append(pending(1000, want, limit, submit=NOW, mall=(max(1, want // 4), want)))
    snap = snapshot(total, jobs, now=NOW)

    def decide(skip: bool) -> list:
        policy = SDPolicy(max_mates=max_mates, candidate_mates=candidate_mates, max_slowdown=max_slowdown)
        if not skip:
            policy._past_none = lambda found, first, k, *rest: k  # type: ignore[method-assign]
        return policy.decide(snap)

    assert decide(True) == decide(False)


def test_crowded_below_reads_the_small_mates_keys_at_the_longest_duration() -> None:
    """A mate too small to lend (B, cap 1) is ranked before the one able to (A) at a short
    duration and after it at a long one: crowded over [1, 5], not over [1, 20]."""
    rows = [(20.0, 10, 1.0, 5), (12.0, 1, 1.0, 1)]  # (base, size, den, cap): A, then B
    assert _crowded(rows, 4, 1.0, 1, 1) and _crowded(rows, 4, 5.0, 1, 1)
    assert not _crowded(rows, 4, 20.0, 1, 1)  # B's key 32 is above A's 28
    assert _crowded_below(rows, 4, 1.0, 5.0, 1, 1)
    assert not _crowded_below(rows, 4, 1.0, 20.0, 1, 1)


def test_sizes_beyond_the_mates_reach_are_skipped_and_the_first_within_it_is_found() -> None:
    """One mate of 10 nodes (cap 5) whose penalty is 1 + D * a / 1e6 for a loan of a nodes over
    D seconds; limit 1.005. The job wants 110 nodes with 100 idle: 105 would need 5 of the mate,
    which may lend only 4 below the limit at that duration (and at 104's); 104 is the size."""
    mate = running(1, 10, NOW + 100_000, start=NOW, submit=NOW, mall=(1, 10), limit=100_000.0)
    new = pending(10, 110, 1000.0, submit=NOW, mall=(1, 110))
    decisions = SDPolicy(max_slowdown=1.005).decide(snapshot(110, [mate, new], now=NOW))
    assert [(d.job_id, d.nodes) for d in by_type(decisions, StartJob)] == [(10, 104)]
    assert [(d.job_id, d.new_size) for d in by_type(decisions, Shrink)] == [(1, 6)]
