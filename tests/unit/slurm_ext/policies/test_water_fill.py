"""Equipartition's level computation gives every job the size the node-by-node giving does.

The reference is the definition (``000_*`` §II): one node at a time to the job then holding the
fewest, ties to the earlier start and then the lower job id, none past its max.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.model import MalleableSpec
from slurm_ext.policies.working_view import INF, Running, water_fill


def _one_at_a_time(jobs: list[tuple[int, int, float, int]], nodes: int) -> dict[int, int]:
    sizes = {jid: size for size, _, _, jid in jobs}
    heap = [(size, start, jid, top) for size, top, start, jid in jobs if size < top]
    heapify(heap)
    for _ in range(nodes):
        if not heap:
            break
        size, start, jid, top = heappop(heap)
        sizes[jid] = size + 1
        if size + 1 < top:
            heappush(heap, (size + 1, start, jid, top))
    return sizes


@st.composite
def _jobs(draw: st.DrawFn) -> list[tuple[int, int, float, int]]:
    n = draw(st.integers(1, 8))
    jids = draw(st.lists(st.integers(1, 99), min_size=n, max_size=n, unique=True))
    out = []
    for jid in jids:
        size = draw(st.integers(1, 12))
        top = size + draw(st.integers(1, 12))  # below its max: a job that may grow
        out.append((size, top, float(draw(st.integers(0, 3))), jid))  # equal starts: ids break ties
    return out


@settings(max_examples=500, deadline=None)
@given(_jobs(), st.integers(1, 120))
def test_levels_give_what_one_node_at_a_time_gives(jobs: list[tuple[int, int, float, int]], nodes: int):
    entries = [
        Running(jid, size, INF, MalleableSpec(1, top), start, 0.0, None) for size, top, start, jid in jobs
    ]
    sizes = water_fill(entries, nodes)
    assert dict(zip([jid for _, _, _, jid in jobs], sizes, strict=True)) == _one_at_a_time(jobs, nodes)
