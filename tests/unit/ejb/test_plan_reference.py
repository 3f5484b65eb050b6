"""build_plan's inlined hot path equals the plain statement of section 2.2 (the reference below,
which is how build_plan read before it was optimised) on random subjob sets."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ejb.model import Interval, IntervalKind, Member, Target
from ejb.params import EJBParams
from ejb.progress import _EPS, _merge, _merge_windows, build_plan, runtime_on


def reference_plan(target: Target, params: EJBParams, launch: float, members: Sequence[Member]):
    lam = params.migration
    windows: list[tuple[float, float]] = []
    usable_from: dict[int, float] = {}
    usable_until: dict[int, float] = {}
    points: set[float] = {launch}
    for m in members:
        frm = m.start + lam if (m.join and m.start > launch) else m.start
        usable_from[m.key] = max(frm, launch)
        usable_until[m.key] = m.end
        if frm > m.start:
            windows.append((m.start, frm))
        points.update((m.start, frm, m.end))
        if math.isfinite(m.end) and lam > 0:
            points.add(m.end - lam)
    leave_checks = sorted(
        (m.end - lam, m.key) for m in members if math.isfinite(m.end) and lam > 0 and m.end > launch
    )
    times = sorted(p for p in points if math.isfinite(p) and p >= launch)
    by_key = {m.key: m for m in members}

    def in_window(t: float) -> bool:
        return any(s <= t < e for s, e in windows)

    def rate_at(t: float) -> tuple[float, int, tuple[int, ...]]:
        keys = tuple(k for k in by_key if usable_from[k] <= t < usable_until[k])
        q = min(target.procs, sum(by_key[k].procs for k in keys))
        if in_window(t):
            return 0.0, q, keys
        rt = runtime_on(target, q, params)
        return (0.0 if math.isinf(rt) else 1.0 / rt), q, keys

    segments: list[Interval] = []
    done, completion, li, i, t = 0.0, math.inf, 0, 0, launch
    while True:
        while li < len(leave_checks) and leave_checks[li][0] <= t + _EPS:
            when, key = leave_checks[li]
            li += 1
            end = by_key[key].end
            if end <= launch:
                continue
            rate, _, _ = rate_at(max(when, launch))
            if rate > 0 and done + rate * (end - max(t, when)) >= 1.0 - _EPS:
                continue
            start = max(when, launch)
            windows.append((start, end))
            usable_until[key] = start
        while i < len(times) and times[i] <= t + _EPS:
            i += 1
        nxt = times[i] if i < len(times) else math.inf
        if li < len(leave_checks):
            nxt = min(nxt, max(leave_checks[li][0], t + _EPS))
        rate, q, keys = rate_at(t)
        kind = IntervalKind.MIGRATE if in_window(t) else IntervalKind.RUN
        if rate > 0 and done + rate * (nxt - t) >= 1.0 - _EPS:
            completion = t + (1.0 - done) / rate
            segments.append(Interval(kind, t, completion - t, q, rate, keys))
            break
        if math.isinf(nxt):
            if kind is IntervalKind.MIGRATE or rate == 0:
                segments.append(Interval(kind, t, math.inf, q, 0.0, keys))
            break
        segments.append(Interval(kind, t, nxt - t, q, rate, keys))
        done += rate * (nxt - t)
        t = nxt
    return launch, _merge(segments), completion, _merge_windows(windows, completion)


times = st.integers(0, 20_000).map(float)


@st.composite
def cases(draw):
    target = Target(draw(st.integers(1, 40)), float(draw(st.integers(1, 20_000))))
    params = EJBParams(
        o_max=draw(st.sampled_from([1, 2, 4, 8, 16])),
        migration=float(draw(st.sampled_from([0, 30, 120, 600]))),
        delta=draw(st.sampled_from([0.8, 1.0, 1.5, 2.0])),
    )
    launch = draw(times)
    members = []
    for key in range(draw(st.integers(1, 5))):
        start = launch + draw(times) * draw(st.sampled_from([0, 1]))
        end = math.inf if draw(st.booleans()) else start + 1 + draw(times)
        members.append(Member(key, draw(st.integers(1, 24)), start, end, draw(st.booleans())))  # sums near P
    return target, params, launch, members


@settings(max_examples=600, deadline=None)
@given(cases())
def test_build_plan_equals_the_reference(case):
    plan = build_plan(*case)
    assert (plan.launch, plan.intervals, plan.completion, plan.migrations) == reference_plan(*case)
