"""``DBES.still_idle``: when it says a repeated call (later, with jobs appended to the queue)
decides nothing, that call does decide nothing and leaves the expansion marks as they were. The
simulator skips such calls, so a wrong yes would change results."""

from __future__ import annotations

import copy

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from slurm_ext.model import Job
from slurm_ext.policies.dbes import DBES
from tests.unit.slurm_ext.policies.helpers import pending, running, snapshot

NOW = 1000.0
TOTAL = 8


@st.composite
def scenes(draw: st.DrawFn) -> tuple[DBES, list[Job], list[Job], float, list[Job]]:
    """A policy with marks, running and queued jobs at NOW, a later time and jobs arriving then."""
    run: list[Job] = []
    used = 0
    full = draw(st.booleans())  # mostly a full machine: the only case still_idle may say yes
    while used < TOTAL:
        n = draw(st.integers(1, 3))
        if used + n > TOTAL or (not full and draw(st.booleans())):
            break
        used += n
        # some overdue (end before now), some ending together, some before the later time
        end = draw(st.sampled_from([NOW - 5, NOW + 60, NOW + 100, NOW + 100, NOW + 300, NOW + 900]))
        mall = (1, draw(st.integers(n, TOTAL))) if draw(st.booleans()) else None
        run.append(running(len(run) + 1, n, end, mall=mall))
    queued = [
        pending(100 + k, draw(st.integers(1, TOTAL)), draw(st.sampled_from([50.0, 200.0, 1000.0])),
                mall=(1, TOTAL) if draw(st.booleans()) else None, priority=-k)
        for k in range(draw(st.integers(0, 4)))
    ]  # fmt: skip
    policy = DBES(reservation_depth=draw(st.integers(1, 3)))
    for r in run:  # marks an earlier call may have left: for nobody or for a queued job
        if r.malleable is not None and draw(st.booleans()):
            policy.expanded_for[r.job_id] = draw(st.sampled_from([None, *(j.job_id for j in queued)]))
    later = draw(st.sampled_from([NOW, NOW + 50, NOW + 100, NOW + 150]))
    arriving = [
        pending(200 + k, draw(st.integers(1, TOTAL)), draw(st.sampled_from([50.0, 1000.0])),
                mall=(1, TOTAL) if draw(st.booleans()) else None, priority=-100 - k)
        for k in range(draw(st.integers(0, 3)))
    ]  # fmt: skip
    return policy, run, queued, later, arriving


@settings(max_examples=600, deadline=None)
@given(scenes())
def test_a_call_said_to_be_idle_decides_nothing_and_keeps_the_marks(scene) -> None:  # type: ignore[no-untyped-def]
    policy, run, queued, later, arriving = scene
    assume(not policy.decide(snapshot(TOTAL, run + queued, now=NOW)))
    said = policy.still_idle(later)
    event(f"still_idle: {said}")
    if not said:
        return
    again = copy.deepcopy(policy)
    assert again.decide(snapshot(TOTAL, run + queued + arriving, now=later)) == []
    assert again.expanded_for == policy.expanded_for


def test_idle_until_the_first_expected_end() -> None:
    # A full machine; the queued job (all 4 nodes) waits for both running jobs, the second of
    # which (malleable, at its max) ends at NOW + 100. Nothing to do now, nor at NOW + 99 with a
    # job appended; at NOW + 100 the first release has come: the call must run.
    policy = DBES(reservation_depth=1)
    run = [running(1, 2, NOW + 500), running(2, 2, NOW + 100, mall=(1, 2))]
    assert policy.decide(snapshot(4, [*run, pending(10, 4, 600.0)], now=NOW)) == []
    assert policy.still_idle(NOW + 99)
    assert not policy.still_idle(NOW + 100)
    # a call that found nodes idle, or fewer StartLater jobs than its depth, may not be repeated
    policy = DBES(reservation_depth=2)
    assert policy.decide(snapshot(4, [*run, pending(10, 4, 600.0)], now=NOW)) == []
    assert not policy.still_idle(NOW)
