"""The checking inhibitor (DMR §5.1): calls that do not ask the service at all.

A call asks the service only if it is the N-th call since the last one that asked
(``DMR_INHIBIT_CALLS``) and at least ``DMR_INHIBIT_SECONDS`` have passed since then.
Decided on rank 0 (the clock) and shared with the decision broadcast.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Inhibitor:
    def __init__(self, seconds: float = 0.0, calls: int = 1, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.calls = max(1, calls)
        self.clock = clock
        self._count = 0
        self._last_ask: float | None = None

    def allow(self) -> bool:
        """Count one call; True if this call may ask the service (and then it counts as asking)."""
        self._count += 1
        if (self._count - 1) % self.calls:
            return False
        now = self.clock()
        if self._last_ask is not None and now - self._last_ask < self.seconds:
            self._count -= 1  # time-inhibited calls do not advance the every-N counter
            return False
        self._last_ask = now
        return True
