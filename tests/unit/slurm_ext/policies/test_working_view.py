"""``WorkingView.backfill`` with one reservation (EASY, minAgree's step 1 and the ``easy``
policy) takes a shortcut without a profile: on random copies it starts the same jobs, in the
same order, with the same reservation as the general pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.model import Job, JobState, Snapshot
from slurm_ext.policies.working_view import WorkingView, max_size, min_size
from tests.unit.slurm_ext.policies.helpers import pending, running, snapshot

NOW = 1000.0
TOTAL = 16


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    jobs: list[Job] = []
    used = 0
    for k in range(draw(st.integers(0, 6))):
        n = draw(st.integers(1, 4))
        if used + n > TOTAL:
            break
        used += n
        if draw(st.booleans()) and k == 0:  # no limit: holds its nodes for ever
            jobs.append(Job(k + 1, JobState.RUNNING, n, start_time=0.0))
        else:  # some overdue (end before now), several ending together
            end = draw(
                st.sampled_from([NOW - 5, NOW, NOW + 100, NOW + 300, NOW + 300, NOW + 1000, NOW + 2500])
            )
            jobs.append(running(k + 1, n, end, start=0.0))
    for k in range(draw(st.integers(0, 10))):
        n = draw(st.integers(1, TOTAL + 2))  # some never fit
        limit = draw(st.sampled_from([0.0, 50.0, 200.0, 300.0, 1000.0, 5000.0]))  # 0: holds nothing
        mall = None
        if draw(st.booleans()):
            low = draw(st.integers(1, n))
            mall = (low, draw(st.integers(n, TOTAL + 4)))
        jobs.append(pending(100 + k, n, limit, mall=mall, priority=-k))
    if draw(st.booleans()) and jobs and jobs[-1].state is JobState.PENDING:  # no limit
        jobs[-1] = Job(jobs[-1].job_id, JobState.PENDING, jobs[-1].node_count, priority=jobs[-1].priority)
    return snapshot(TOTAL, jobs, now=NOW)


@settings(max_examples=400, deadline=None)
@given(snapshots(), st.sampled_from([min_size, max_size]))
def test_easy_shortcut_matches_the_general_pass(snap: Snapshot, size: object) -> None:
    cl, general = WorkingView(snap), WorkingView(snap)
    # a profile passed in takes the general path
    want = general.backfill(1, size, "b", general.profile())  # type: ignore[arg-type]
    got = cl.backfill(1, size, "b")  # type: ignore[arg-type]
    assert [(j.job_id, t) for j, t in got] == [(j.job_id, t) for j, t in want]
    assert cl.decisions == general.decisions
    assert cl.free == general.free
