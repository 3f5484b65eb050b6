"""Decisions within a job's partition: hand-built clusters with partitions that share nodes."""

from __future__ import annotations

from slurm_ext.decisions import Expand, Shrink
from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.partitions import partition_names, partition_view
from slurm_ext.policies.dmr import DMRPolicy

# n1-n4 in "lower", n5-n8 in "upper", every node in "all" (the default)
PARTS = {f"n{i}": ("all", "lower" if i <= 4 else "upper") for i in range(1, 9)}


def cluster(jobs: list[Job]) -> Snapshot:
    used = {n for j in jobs for n in j.nodes}
    nodes = tuple(Node(n, NodeState.ALLOCATED if n in used else NodeState.IDLE, partitions=p)
                  for n, p in PARTS.items())  # fmt: skip
    return Snapshot(0.0, nodes, tuple(jobs))


def run(jid: int, part: str, nodes: list[str], mall: tuple[int, int] | None = None) -> Job:
    spec = MalleableSpec(*mall) if mall else None
    return Job(jid, JobState.RUNNING, len(nodes), nodes=tuple(nodes), partition=part, start_time=0.0,
               end_time=3600.0, time_limit=3600.0, malleable=spec)  # fmt: skip


def wait(jid: int, part: str, nodes: int) -> Job:
    return Job(jid, JobState.PENDING, nodes, partition=part, submit_time=1.0, time_limit=600.0)


def test_a_node_in_two_partitions_is_one_node_of_each_view():
    snap = cluster([])
    assert partition_names(snap) == ["all", "lower", "upper"]
    assert [n.name for n in partition_view(snap, "upper").nodes] == ["n5", "n6", "n7", "n8"]
    assert len(partition_view(snap, "all").nodes) == 8
    assert partition_view(snap, "lower,upper").free == 8  # a pending job's list: every node once


def test_a_job_grows_only_onto_its_partitions_nodes_though_others_are_idle():
    job = run(1, "upper", ["n5"], (1, 8))
    view = partition_view(cluster([job]), "upper")
    (d,) = DMRPolicy().decide(view, [1])
    assert isinstance(d, Expand) and d.new_size == 4  # 3 free in upper, 4 more idle in lower


def test_another_partitions_job_on_shared_nodes_holds_them_and_is_not_resized_there():
    other = run(2, "all", ["n1", "n5", "n6"], (1, 8))
    view = partition_view(cluster([other, run(1, "upper", ["n7"], (1, 4))]), "upper")
    held = view.job(2)
    assert held is not None and held.nodes == ("n5", "n6") and held.malleable is None
    assert view.free == 1  # n8


def test_no_shrink_for_a_pending_job_that_cannot_use_the_freed_nodes():
    grown = run(1, "upper", ["n5", "n6", "n7", "n8"], (1, 4))
    full = run(2, "lower", ["n1", "n2", "n3", "n4"])
    waiting = wait(9, "lower", 2)  # lower is full; upper's nodes are no use to it
    view = partition_view(cluster([grown, full, waiting]), "upper")
    assert view.job(9) is None
    decisions = DMRPolicy().decide(view, [1])
    assert not any(isinstance(d, Shrink) for d in decisions), decisions
    # on the whole cluster the policy would have shrunk job 1 for it
    whole = DMRPolicy().decide(cluster([grown, full, waiting]), [1])
    assert any(isinstance(d, Shrink) and d.for_job == 9 for d in whole), whole


def test_a_shrink_for_a_pending_job_that_can_use_any_node_freed():
    grown = run(1, "upper", ["n5", "n6", "n7", "n8"], (1, 4))
    full = run(2, "lower", ["n1", "n2", "n3", "n4"])
    waiting = wait(9, "all", 2)
    decisions = DMRPolicy().decide(partition_view(cluster([grown, full, waiting]), "upper"), [1])
    assert any(isinstance(d, Shrink) and d.for_job == 9 and d.new_size == 2 for d in decisions), decisions


def test_one_partition_or_none_named_leaves_the_cluster_as_it_is():
    snap = Snapshot(0.0, (Node("n1", NodeState.IDLE),), ())
    assert partition_view(snap, "debug") is snap and partition_names(snap) == []
    one = Snapshot(0.0, (Node("n1", NodeState.IDLE, partitions=("debug",)),), (wait(9, "debug", 1),))
    assert partition_view(one, "debug") is one
