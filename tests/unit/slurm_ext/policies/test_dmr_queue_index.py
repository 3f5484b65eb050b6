"""DMR's queue index, kept from call to call, is always the one a fresh call would build.

The index is extended when jobs were only appended and otherwise carries each job's eligibility
over from the last snapshot (the same Job object), testing only the jobs it has not seen in that
order. Here the queue goes through random changes (jobs started from anywhere, appended, raised
to the head, reordered, the machine resized) with jobs that are not eligible among them (resizer
dependencies, held, larger than the machine), and after every update the index must equal a
fresh one's and must have said (``version``) whenever its sizes' first positions changed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.model import Job, JobState, Snapshot
from slurm_ext.policies.dmr import _QueueIndex


def _snapshot(pending: list[Job], total: int) -> Snapshot:
    # as the simulator builds one: the pending order given, not sorted again
    snap: Snapshot = object.__new__(Snapshot)
    snap.__dict__.update(pending=tuple(pending), total_nodes=total)
    return snap


@st.composite
def _job(draw: st.DrawFn, jid: int) -> Job:
    kind = draw(st.sampled_from(["plain", "plain", "plain", "resizer", "held", "big"]))
    nodes = draw(st.integers(1, 6)) if kind != "big" else 20
    return Job(
        jid,
        JobState.PENDING,
        nodes,
        dependency="expand:7" if kind == "resizer" else "",
        reason="JobHeldUser (held)" if kind == "held" else "",
    )


def _fields(index: _QueueIndex) -> tuple[list[int], list[int], list[int], list[int]]:
    return [id(j) for j in index.eligible], index.sizes, index.keys, index.firsts


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_kept_index_is_the_one_a_fresh_call_builds(data: st.DataObject) -> None:
    queue = [data.draw(_job(jid)) for jid in range(data.draw(st.integers(0, 12)))]
    next_id = len(queue)
    total = 8
    index = _QueueIndex()
    for _ in range(data.draw(st.integers(1, 15))):
        op = data.draw(st.sampled_from(["start", "append", "raise", "shuffle", "total", "same"]))
        if op == "start" and queue:  # jobs leave from anywhere (started)
            gone = set(data.draw(st.lists(st.integers(0, len(queue) - 1), max_size=4)))
            queue = [j for k, j in enumerate(queue) if k not in gone]
        elif op == "append":
            for _ in range(data.draw(st.integers(1, 3))):
                queue.append(data.draw(_job(next_id)))
                next_id += 1
        elif op == "raise" and queue:  # to the head, as a new Job (its priority changed)
            k = data.draw(st.integers(0, len(queue) - 1))
            job = queue.pop(k)
            queue.insert(0, Job(job.job_id, job.state, job.node_count, dependency=job.dependency, priority=9))
        elif op == "shuffle":
            queue = data.draw(st.permutations(queue))
        elif op == "total":
            total = data.draw(st.sampled_from([4, 8, 30]))
        snap = _snapshot(queue, total)
        before, version = _fields(index), index.version
        index.update(snap)
        fresh = _QueueIndex()
        fresh.update(snap)
        assert _fields(index) == _fields(fresh)
        # and a fresh one is what it says: each size's first eligible job, sizes ascending
        assert index.keys == sorted(set(index.sizes))
        assert index.firsts == [index.sizes.index(k) for k in index.keys]
        assert index.sizes == [j.node_count for j in index.eligible]
        if (index.keys, index.firsts) != (before[2], before[3]):
            assert index.version != version, "first positions changed without a new version"
