"""Which groups leave in a shrink (pure): newest first, never rank 0's, batch hosts respected."""

from __future__ import annotations

from slurm_ext.model import Job, JobState, Node, NodeState, Snapshot
from slurm_ext.service.controller import fold_expanders
from slurm_ext.service.groups import GroupRef, plan_shrink, release_by_job

A, B = 10, 11  # the application's job and one expander job


def g(tag: str, job: int, *nodes: str) -> GroupRef:
    return GroupRef(tag, job, nodes)


GROUPS = [g("a1", A, "n1"), g("a2", A, "n2"), g("b1", B, "n5"), g("b2", B, "n6"), g("a3", A, "n3")]
HOSTS = {A: "n1", B: "n5"}


def test_newest_first_and_any_size_down_to_one():
    assert [x.tag for x in plan_shrink(GROUPS, A, HOSTS, 4)] == ["a3"]
    # b1 sits on the expander's batch host: b2 goes before it, then both end job B
    assert [x.tag for x in plan_shrink(GROUPS, A, HOSTS, 3)] == ["a3", "b2"]
    assert [x.tag for x in plan_shrink(GROUPS, A, HOSTS, 2)] == ["a3", "b2", "b1"]
    assert [x.tag for x in plan_shrink(GROUPS, A, HOSTS, 1)] == ["a3", "b2", "b1", "a2"]


def test_the_first_group_and_the_application_batch_host_stay():
    assert plan_shrink(GROUPS, A, HOSTS, 0) is None
    on_host = [g("x", A, "n2"), g("y", A, "n1")]  # rank 0 on n2, the batch host n1 second
    assert plan_shrink(on_host, A, {A: "n1"}, 1) is None
    assert plan_shrink([g("s", A, "n1", "n2")], A, HOSTS, 1) is None  # one srun over two nodes


def test_release_by_job_says_which_job_ends():
    removed = plan_shrink(GROUPS, A, HOSTS, 2)
    assert removed is not None
    out = release_by_job(GROUPS, removed, {A: ["n1", "n2", "n3"], B: ["n5", "n6"]})
    assert out == {A: (["n1", "n2"], False), B: ([], True)}


def test_policies_see_an_expander_job_as_part_of_its_application():
    nodes = tuple(Node(f"n{i}", NodeState.ALLOCATED if i <= 3 else NodeState.IDLE) for i in range(1, 7))
    jobs = (
        Job(A, JobState.RUNNING, 1, nodes=("n1",), name="app"),
        Job(B, JobState.RUNNING, 2, nodes=("n2", "n3"), name=f"expander-for-{A}"),
        Job(12, JobState.PENDING, 1, name=f"expander-for-{A}"),
        Job(13, JobState.RUNNING, 1, nodes=("n9",), name="expander-for-999"),  # orphan: left visible
    )
    snap = fold_expanders(Snapshot(time=0.0, nodes=nodes, jobs=jobs))
    assert [j.job_id for j in snap.jobs] == [A, 13]
    app = snap.job(A)
    assert app is not None and app.node_count == 3 and app.nodes == ("n1", "n2", "n3")
