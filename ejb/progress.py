"""The progress model of section 2.2: equations (1)-(3), over-subscription and migration.

``p_A(q)`` (eqs. 1-2) is the run time of the target application on ``q`` processors:
``R_t`` on ``P_t`` or more, ``Δ·ceil(P_t/q)·R_t`` on fewer, and infinite below
``ceil(P_t/O_max)`` (the over-subscription bound). The application progresses at
``1/p_A(q_k)`` during RUN intervals and not at all during MIGRATE intervals; it completes
when the accumulated progress reaches 100% (eq. 3).

:func:`build_plan` turns the started subjobs of an elastic job (as :class:`Member` s) into
the interval list of ``J_e``: a migration of λ when a subjob joins a running application,
and a migration of λ before a subjob's allocation ends, unless the application is
expected to complete by then. The same plan answers "how far along is the application at
time t" and "when does it reach a given progress" -- the simulator uses the latter with
the true run time to fire completion (section 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ejb.model import Interval, IntervalKind, Member, Target
from ejb.params import EJBParams

_EPS = 1e-9


def min_procs(target: Target, params: EJBParams) -> int:
    """Fewest processors the application may run on: ``ceil(P_t / O_max)`` (section 2.2)."""
    return math.ceil(target.procs / params.o_max)


def runtime_on(target: Target, q: int, params: EJBParams) -> float:
    """``p_A(q)``, equations (1) and (2); ``inf`` if ``q`` is below the O_max bound."""
    if q >= target.procs:
        return target.limit
    if q < min_procs(target, params) or q <= 0:
        return math.inf
    return params.delta * math.ceil(target.procs / q) * target.limit


def procs_for(target: Target, available: int, params: EJBParams) -> int:
    """Fewest processors (``≤ available``) that reach the best over-subscription degree.

    With ``d = ceil(P_t / available)`` processes per processor, ``ceil(P_t / d)`` processors
    run as fast as ``available`` do; section 3.2.1 submits subjobs of this size.
    Returns 0 if ``available`` is below ``ceil(P_t / O_max)``.
    """
    if available < min_procs(target, params) or available <= 0:
        return 0
    if available >= target.procs:
        return target.procs
    d = math.ceil(target.procs / available)
    return math.ceil(target.procs / d)


@dataclass(frozen=True, slots=True)
class Plan:
    """``J_e.IntervalList`` from the launch to the estimated completion ``T_c``."""

    launch: float
    intervals: tuple[Interval, ...]
    completion: float  # A_t.T_c; inf if the application can never complete
    migrations: tuple[tuple[float, float], ...]  # MIGRATE windows (start, end), merged

    def progress_at(self, t: float) -> float:
        """Fraction of the work done by time ``t`` (eq. 3 summed up to ``t``), at most 1."""
        done = 0.0
        for iv in self.intervals:
            if iv.start >= t:
                break
            done += iv.rate * (min(iv.end, t) - iv.start)
        return min(done, 1.0)

    def time_at(self, fraction: float) -> float:
        """When the accumulated progress reaches ``fraction`` (``inf`` if never)."""
        if fraction <= 0:
            return self.launch
        done = 0.0
        for iv in self.intervals:
            gain = iv.rate * iv.duration
            if iv.rate > 0 and done + gain >= fraction - _EPS:
                return iv.start + max(0.0, fraction - done) / iv.rate
            done += gain
        return math.inf

    def migration_time(self, until: float) -> float:
        """Seconds spent migrating before ``until``."""
        return sum(max(0.0, min(e, until) - s) for s, e in self.migrations if s < until)

    def migration_count(self, until: float) -> int:
        """Bulk migrations started before ``until``."""
        return sum(1 for s, _ in self.migrations if s < until)


def build_plan(target: Target, params: EJBParams, launch: float, members: Sequence[Member]) -> Plan:
    """The intervals of ``J_e`` given its started subjobs (section 2.2, Figure 2).

    ``launch`` is when the application started (the first subjob started). A member with
    ``join`` adds a MIGRATE interval ``[start, start+λ)``; a member whose allocation ends
    at ``end`` adds ``[end-λ, end)`` unless the application is expected to complete by
    ``end`` at the rate it has at ``end-λ``. Overlapping migrations are merged into one.
    Processors beyond ``P_t`` are never used (at most ``P_t`` processes).
    """
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
    items = [(k, m.procs) for k, m in by_key.items()]
    p_t, limit, delta = target.procs, target.limit, params.delta
    q_min = min_procs(target, params)

    def in_window(t: float) -> bool:
        for s, e in windows:  # noqa: SIM110 -- a plain loop: any() over a generator is slower here
            if s <= t < e:
                return True
        return False

    def state_at(t: float) -> tuple[float, int, tuple[int, ...], bool]:
        """(rate, usable processors, their subjobs, migrating) at ``t``; the hot path, so
        eq. (1)-(2) (:func:`runtime_on`) is inlined here."""
        total = 0
        keys = []
        for k, procs in items:
            if usable_from[k] <= t < usable_until[k]:
                total += procs
                keys.append(k)
        q = p_t if total > p_t else total
        if in_window(t):
            return 0.0, q, tuple(keys), True
        if q >= p_t:
            rt = limit
        elif q < q_min or q <= 0:
            return 0.0, q, tuple(keys), False
        else:
            rt = delta * math.ceil(p_t / q) * limit
        return (0.0 if math.isinf(rt) else 1.0 / rt), q, tuple(keys), False

    segments: list[Interval] = []
    done = 0.0
    completion = math.inf
    li = 0
    i = 0
    t = launch
    while True:
        # leave decisions due now: migrate out unless completing by the allocation's end
        while li < len(leave_checks) and leave_checks[li][0] <= t + _EPS:
            when, key = leave_checks[li]
            li += 1
            end = by_key[key].end
            if end <= launch:
                continue
            rate = state_at(max(when, launch))[0]
            if rate > 0 and done + rate * (end - max(t, when)) >= 1.0 - _EPS:
                continue  # completes before the subjob ends: no migration needed
            start = max(when, launch)
            windows.append((start, end))
            usable_until[key] = start
        # next breakpoint strictly after t
        while i < len(times) and times[i] <= t + _EPS:
            i += 1
        nxt = times[i] if i < len(times) else math.inf
        if li < len(leave_checks):
            nxt = min(nxt, max(leave_checks[li][0], t + _EPS))
        rate, q, keys, migrating = state_at(t)
        kind = IntervalKind.MIGRATE if migrating else IntervalKind.RUN
        if rate > 0 and done + rate * (nxt - t) >= 1.0 - _EPS:
            completion = t + (1.0 - done) / rate
            segments.append(Interval(kind, t, completion - t, q, rate, keys))
            break
        if math.isinf(nxt):
            if migrating or rate == 0:
                segments.append(Interval(kind, t, math.inf, q, 0.0, keys))
            break
        segments.append(Interval(kind, t, nxt - t, q, rate, keys))
        done += rate * (nxt - t)
        t = nxt
    return Plan(launch, _merge(segments), completion, _merge_windows(windows, completion))


def _merge(segments: list[Interval]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    for s in segments:
        if s.duration <= _EPS and math.isfinite(s.duration):
            continue
        if out and out[-1].kind is s.kind and out[-1].procs == s.procs and out[-1].rate == s.rate:
            p = out[-1]
            out[-1] = Interval(p.kind, p.start, p.duration + s.duration, p.procs, p.rate, p.subjobs)
        else:
            out.append(s)
    return tuple(out)


def _merge_windows(windows: list[tuple[float, float]], until: float) -> tuple[tuple[float, float], ...]:
    merged: list[tuple[float, float]] = []
    for s, e in sorted(w for w in windows if w[0] < until):
        if merged and s <= merged[-1][1] + _EPS:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return tuple(merged)


def completion_with(target: Target, params: EJBParams, launch: float, members: Sequence[Member]) -> float:
    """Shortcut: ``A_t.T_c`` for these members."""
    return build_plan(target, params, launch, members).completion


__all__ = [
    "Plan",
    "build_plan",
    "completion_with",
    "min_procs",
    "procs_for",
    "runtime_on",
]
