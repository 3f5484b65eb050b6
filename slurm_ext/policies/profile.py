"""Availability profile: free nodes as a step function of time.

This is the "map of jobs reservations in time" that Maui (``000_*`` §IV.A), EASY backfilling
and SD-Policy (``003_*`` §3.1, ``get_wait_time``) use to find the earliest time a job fits and
to check that a backfilled job delays no reservation.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Iterable

INF = math.inf


class Profile:
    """Free nodes over ``[now, inf)``. ``times[i]`` starts a segment with ``free[i]`` nodes."""

    __slots__ = ("times", "free")

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int]] = ()) -> None:
        # An overdue running job (expected end <= now) still holds its nodes: its release is
        # placed just after now, never counted as free now.
        soon = math.nextafter(now, INF)
        deltas: dict[float, int] = {}
        for t, n in releases:
            if n <= 0 or t == INF:
                continue
            t = max(t, soon)
            deltas[t] = deltas.get(t, 0) + n
        self.times: list[float] = [now]
        self.free: list[int] = [free_now]
        cur = free_now
        for t in sorted(deltas):
            cur += deltas[t]
            self.times.append(t)
            self.free.append(cur)

    @property
    def now(self) -> float:
        return self.times[0]

    def _split(self, t: float) -> int:
        """Index of the segment starting exactly at ``t`` (created if needed)."""
        i = bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        insort(self.times, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def min_free(self, start: float, end: float) -> int:
        """Fewest free nodes over ``[start, end)``."""
        i = max(bisect_right(self.times, start) - 1, 0)
        low = self.free[i]
        for j in range(i + 1, len(self.times)):
            if self.times[j] >= end:
                break
            low = min(low, self.free[j])
        return low

    def earliest_start(self, nodes: int, duration: float) -> float:
        """Earliest time at which ``nodes`` stay free for ``duration``; ``inf`` if never."""
        for i, t in enumerate(self.times):
            if self.free[i] < nodes:
                continue
            if self.min_free(t, t + duration) >= nodes:
                return t
        return INF

    def reserve(self, start: float, duration: float, nodes: int) -> None:
        """Take ``nodes`` over ``[start, start + duration)``."""
        if nodes <= 0 or duration <= 0 or start == INF:
            return
        i = self._split(start)
        end = start + duration
        j = self._split(end) if end != INF else len(self.times)
        for k in range(i, j):
            self.free[k] -= nodes
