"""Availability profile: free nodes as a step function of time.

This is the "map of jobs reservations in time" that Maui (``000_*`` §IV.A), EASY backfilling
and SD-Policy (``003_*`` §3.1, ``get_wait_time``) use to find the earliest time a job fits and
to check that a backfilled job delays no reservation.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from operator import attrgetter
from typing import Final

from slurm_ext.policies.entries import Running

INF: Final = math.inf  # Final: a C constant in the compiled build, not a module lookup per use
_end = attrgetter("end")


def _steps(now: float, free_now: int, running: list[Running]) -> tuple[list[float], list[int]] | None:
    """A profile's ``times`` and ``free`` from the running jobs' releases (each job's ``size``
    nodes at its expected ``end``) taken in order, or None if they are not in time order.
    Releases at one time add up. An overdue running job (expected end <= now) still holds its
    nodes: its release is placed just after now, never counted as free now. A job without a
    limit never releases them. (Read from the entries themselves: a list of (end, size) pairs
    built for it cost as much as the profile.)"""
    times: list[float] = [now]
    free: list[int] = [free_now]
    cur, last = free_now, now
    soon = -INF  # where an overdue release goes (just after now), worked out when needed
    for r in running:
        t, n = r.end, r.size
        if n <= 0 or t == INF:
            continue
        if t <= now:  # no float lies between now and soon: as ``t if t > soon else soon``
            if soon == -INF:
                soon = math.nextafter(now, INF)
            t = soon
        if t < last:
            return None
        cur += n
        if t == last:
            free[-1] = cur
        else:
            times.append(t)
            free.append(cur)
            last = t
    return times, free


def _profile_steps(now: float, free_now: int, running: Iterable[Running]) -> tuple[list[float], list[int]]:
    """``_steps`` in one pass when the jobs come in order of expected end (the simulator's
    working copies hand them so until a resize), else sorted by end first (order within a time
    does not matter: those releases add up)."""
    rel = running if isinstance(running, list) else list(running)  # read twice if out of order
    found = _steps(now, free_now, rel)
    if found is None:
        found = _steps(now, free_now, sorted(rel, key=_end))
        assert found is not None
    return found


def first_free(now: float, free_now: int, running: Iterable[Running], nodes: int) -> tuple[float, int]:
    """When ``nodes`` nodes are first free if nothing but the ``running`` jobs' ends change (then
    they stay free: :meth:`SnapshotProfile.earliest_start` of that profile, for any duration),
    and how many are free then (every release at that time counted); ``(inf, 0)`` if never."""
    if free_now >= nodes:
        return now, free_now
    times, free = _profile_steps(now, free_now, running)
    for t, avail in zip(times, free, strict=True):
        if avail >= nodes:
            return t, avail
    return INF, 0


class SnapshotProfile:
    """Free nodes over ``[now, inf)``. ``times[i]`` starts a segment with ``free[i]`` nodes.

    Built from a snapshot's running jobs, live or simulated: releases in any order, a job past its
    expected end still holding its nodes, a job without a limit never releasing them; or from
    ``steps``, a ``(times, free)`` pair already built (the simulator's backfill pass makes it from
    its sorted end list, which needs none of these checks, at every event).

    :meth:`reserve_earliest` is deferred until the profile is next asked anything (a pass that
    reserves for job after job of a full machine's queue may ask nothing more): ``times`` and
    ``free`` hold the reservations placed so far, all of them once :meth:`reservations` is read;
    ``free[0]`` is always exact (a deferred reservation starts later than now)."""

    __slots__ = (
        "times",
        "free",
        "_found",
        "_low",
        "_high",
        "_until",
        "_starts",
        "_not_before",
        "_deferred",
        "_placed",
    )

    def __init__(
        self,
        now: float,
        free_now: int,
        running: Iterable[Running] = (),
        steps: tuple[list[float], list[int]] | None = None,
    ) -> None:
        self._found = 0  # index of the last start earliest_start found (a hint for reserve)
        self.times, self.free = _profile_steps(now, free_now, running) if steps is None else steps
        # _low[i]: fewest free nodes over segments 0..i, known for a prefix of the segments (a
        # change at segment i drops _low[i:]): a window from now is then one bisect, where a
        # backfill pass asks it for every queued job and changes the profile for few of them
        self._low: list[int] = []
        self._high: list[int] = []  # _high[i]: most free nodes over segments 0..i, the same way
        self._until: dict[int, float] = {}  # nodes -> when fewer are first free (any change clears it)
        # earliest_start's answers (with their index, reserve's hint), the same way
        self._starts: dict[tuple[int, float], tuple[float, int]] = {}
        # earliest_start's answers, kept through changes: a change only takes nodes (reserve), so
        # no start found impossible becomes possible, and the next answer for the same job is no
        # earlier (a pass reserves for job after job alike: arrays, a user's series)
        self._not_before: dict[tuple[int, float], float] = {}
        self._deferred: list[tuple[int, float]] = []  # reserve_earliest's (nodes, duration), in order
        self._placed: list[tuple[float, float, int]] = []  # and its (start, duration, nodes), placed

    @property
    def now(self) -> float:
        return self.times[0]

    def reserve_earliest(self, nodes: int, duration: float) -> bool:
        """Reserve ``nodes`` for ``duration`` from their earliest start (``earliest_start`` then
        ``reserve``); False, and nothing reserved, if they never stay free that long. Deferred
        while both are sure: the job cannot start now and a start exists (nodes stay free for
        good from the last segment, where a finite reservation leaves as many as it found)."""
        if nodes > self.free[0] and nodes <= self.free[-1] and duration != INF:
            self._deferred.append((nodes, duration))
            return True
        if self._deferred:
            self._place_deferred()
        return self._place(nodes, duration)

    def _place(self, nodes: int, duration: float) -> bool:
        """``earliest_start`` then ``reserve``, kept among :meth:`reservations` if a start exists."""
        t = self.earliest_start(nodes, duration)
        if t == INF:
            return False
        self.reserve(t, duration, nodes)
        self._placed.append((t, duration, nodes))
        return True

    def reserve_at(self, start: float, duration: float, nodes: int) -> None:
        """``reserve``, kept among :meth:`reservations` (one made on an earlier profile of the pass)."""
        self.reserve(start, duration, nodes)
        self._placed.append((start, duration, nodes))

    def reservations(self) -> list[tuple[float, float, int]]:
        """``reserve_earliest``'s reservations, placed: ``(start, duration, nodes)`` in order."""
        if self._deferred:
            self._place_deferred()
        return self._placed

    def _place_deferred(self) -> None:
        """Place the deferred reservations, in the order they were asked for: the profile is then
        what it would be had each been placed at once (nothing else changed it in between).
        Every query checks ``_deferred`` before calling this (a call per query cost as much as
        the deferral saved, without the compiled build)."""
        deferred, self._deferred = self._deferred, []
        for nodes, duration in deferred:
            self._place(nodes, duration)

    def min_free(self, start: float, end: float) -> int:
        """Fewest free nodes over ``[start, end)``."""
        if self._deferred:
            self._place_deferred()
        times, free = self.times, self.free
        if start <= times[0]:  # from now, mostly
            return self._low_upto(max(bisect_left(times, end) - 1, 0))
        i = bisect_right(times, start) - 1
        low = free[i]
        n = len(times)
        j = i + 1
        while j < n and times[j] < end:
            if free[j] < low:
                low = free[j]
            j += 1
        return low

    def _changed(self, i: int) -> None:
        """Forget what was worked out from segment ``i`` on: it was just inserted or changed."""
        del self._low[i:], self._high[i:]
        self._until.clear()
        self._starts.clear()

    def fits_now(self, nodes: int, duration: float) -> bool:
        """Whether ``nodes`` stay free over ``[now, now + duration)``: ``min_free`` from now, as one
        dict lookup for a size already asked about since the last change (a pass asks it for every
        queued job, mostly of a few sizes, and changes the profile for few of them)."""
        if self._deferred:
            self._place_deferred()
        until = self._until.get(nodes)
        if until is None:
            free = self.free
            i = 0
            while i < len(free) and free[i] >= nodes:
                i += 1
            until = self._until[nodes] = INF if i == len(free) else self.times[i] if i else -INF
        return self.times[0] + duration <= until

    def _low_upto(self, j: int) -> int:
        """Fewest free nodes over segments ``0..j``."""
        low = self._low
        k = len(low)
        if k <= j:
            free = self.free
            cur = low[-1] if k else free[0]
            for i in range(k, j + 1):
                f = free[i]
                if f < cur:
                    cur = f
                low.append(cur)
        return low[j]

    def _first_with(self, nodes: int) -> int:
        """Index of the first segment with at least ``nodes`` free, ``len(times)`` if none."""
        high = self._high
        if high and high[-1] >= nodes:
            return bisect_left(high, nodes)
        free = self.free
        cur = high[-1] if high else -1
        for i in range(len(high), len(free)):
            f = free[i]
            if f > cur:
                cur = f
            high.append(cur)
            if cur >= nodes:
                return i
        return len(free)

    def earliest_start(self, nodes: int, duration: float) -> float:
        """Earliest time at which ``nodes`` stay free for ``duration``; ``inf`` if never."""
        if self._deferred:
            self._place_deferred()
        known = self._starts.get((nodes, duration))
        if known is not None:
            self._found = known[1]
            return known[0]
        times, free = self.times, self.free
        n = len(times)
        k = self._first_with(nodes)  # where the profile is full up to a later release: skipped at once
        after = self._not_before.get((nodes, duration))
        if after is not None:
            if after == INF:
                return INF
            k = max(k, bisect_left(times, after))
        while k < n:
            if free[k] < nodes:
                k += 1
                continue
            end = times[k] + duration
            j = k + 1
            while j < n and times[j] < end and free[j] >= nodes:
                j += 1
            if j == n or times[j] >= end:  # nodes stay free from segment k to the window's end
                self._found = k
                self._starts[nodes, duration] = times[k], k
                self._not_before[nodes, duration] = times[k]
                return times[k]
            k = j + 1  # segment j is short of nodes and lies in the window of every start up to it
        self._starts[nodes, duration] = INF, self._found
        self._not_before[nodes, duration] = INF
        return INF

    def reserve(self, start: float, duration: float, nodes: int) -> None:
        """Take ``nodes`` over ``[start, start + duration)``."""
        if self._deferred:
            self._place_deferred()
        if nodes <= 0 or duration <= 0 or start == INF:
            return
        times, free = self.times, self.free
        # the segment starting at ``start``, inserted if needed, where the start is not the one
        # earliest_start just found (its index kept: the time there tells if it holds)
        i = self._found
        if i >= len(times) or times[i] != start:
            i = 0 if start == times[0] else bisect_right(times, start) - 1  # starts now: the first
            if times[i] != start:
                i += 1
                times.insert(i, start)
                free.insert(i, free[i - 1])
        self._changed(i)
        # take the nodes from each segment up to the end, then start a segment at the end
        end = start + duration
        n = len(times)
        j = bisect_left(times, end, i)  # segments i..j-1 lie in [start, end)
        free[i:j] = [f - nodes for f in free[i:j]]
        if end != INF and (j == n or times[j] != end):
            times.insert(j, end)
            free.insert(j, free[j - 1] + nodes)  # as before the reservation
