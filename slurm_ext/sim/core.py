"""The event core: a clock and a heap, nothing else (in the spirit of SimPy's ``Environment``).

Events are plain tuples ``(time, kind, seq, target, version)`` so that the heap compares them
quickly and deterministically: at equal times a lower ``kind`` runs first, then insertion order
(``seq``). ``version`` lets the simulator drop events that a resize or cancel made stale without
searching the heap.
"""

from __future__ import annotations

import heapq
from typing import Any

# Event kinds, in the order they are handled at one instant: completions free nodes before
# anything else looks at the machine; arrivals come before controller timers.
END = 0
EVOLVE = 1
CHECK = 2
ARRIVE = 3
TIMER = 4

Event = tuple[float, int, int, Any, int]


class EventQueue:
    __slots__ = ("heap", "seq")

    def __init__(self) -> None:
        self.heap: list[Event] = []
        self.seq = 0

    def push(self, time: float, kind: int, target: Any, version: int = 0) -> int:
        self.seq += 1
        heapq.heappush(self.heap, (time, kind, self.seq, target, version))
        return self.seq

    def pop(self) -> Event:
        return heapq.heappop(self.heap)

    def __len__(self) -> int:
        return len(self.heap)

    def copy(self) -> EventQueue:
        q = EventQueue()
        q.heap = list(self.heap)  # a copied heap list is still a valid heap
        q.seq = self.seq
        return q
