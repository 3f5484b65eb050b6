"""The control service's bookkeeping: one resize in flight per job, acks, timeouts, concurrency, TCP.

The cluster is the simulator through the backend interface (:class:`SimCluster`): its jobs hold
named nodes and its resizes answer as live Slurm's do. The hand-made :class:`MemoryBackend` stays
only where a test injects what a real cluster cannot be made to do on cue: a race or a delay
inside a call, leftover resizer jobs, a job owned by another user, or where it reads the calls
the simulator has no counterpart for (a time limit set after a shrink)."""

from __future__ import annotations

import threading
import time

import pytest

from slurm_ext import protocol as p
from slurm_ext.backend import JobRequest
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.sim import SimCluster

from .memory_backend import MemoryBackend


def make(nodes: int = 4, **opts) -> tuple[MemoryBackend, Controller]:
    backend = MemoryBackend(nodes)
    return backend, service(backend, **opts)


def make_sim(nodes: int = 4, **opts) -> tuple[SimCluster, Controller]:
    cluster = SimCluster.empty(nodes)
    return cluster, service(cluster, **opts)


def service(backend, **opts) -> Controller:  # noqa: ANN001
    options = ServiceOptions(snapshot_interval=0.05, ack_timeout=opts.pop("ack_timeout", 2.0), **opts)
    return Controller(backend, DMRPolicy(), options)


def nodes_of(cluster: SimCluster, job_id: int) -> tuple[str, ...]:
    return cluster.job(job_id).nodes


def check(job_id: int, cur: int, nodes: list[str], lo: int = 1, hi: int = 4, **kw) -> p.Check:
    """A check from an application with one group per node (as dmr-run launches it) and an agent."""
    kw.setdefault("groups", [{"tag": f"g-{n}", "job_id": job_id, "nodes": [n], "size": 1} for n in nodes])
    kw.setdefault("agent", "127.0.0.1:1:key")
    kw.setdefault("python", "/usr/bin/python3")
    return p.Check(job_id=job_id, current=cur, min=lo, max=hi, factor=2, nodes=nodes, **kw)


def test_expand_then_commit():
    cluster, ctl = make_sim()
    assert cluster.submit(JobRequest(1)) == 1
    d = ctl.check(check(1, 1, ["n1"]))
    assert d.action == "expand" and d.new_size == 4 and d.nodes == ["n2", "n3", "n4"] and d.reason
    assert ctl.inflight.get(1) is not None
    done = ctl.commit(p.Commit(job_id=1, token=d.token, ok=True))
    assert done.ok and ctl.inflight.get(1) is None and nodes_of(cluster, 1) == ("n1", "n2", "n3", "n4")


def test_one_reconfiguration_in_flight_per_job():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(1))
    first = ctl.check(check(1, 1, ["n1"]))
    again = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"]))
    assert first.action == "expand" and again.action == "none" and "in flight" in again.reason


def test_expand_failure_answers_no_action_and_leaves_nothing_in_flight():
    backend, ctl = make()  # MemoryBackend: another job takes the nodes inside the expand call
    backend.add(1, 1)
    backend.add(2, 1)
    backend.expand_delay = 0.0
    # another job grabs the free nodes between the decision and the resizer
    real_expand = backend.expand

    def racing_expand(job_id, new_size, timeout=10.0):
        backend.jobs.pop(2)
        backend.add(3, 3)
        return real_expand(job_id, new_size, timeout)

    backend.expand = racing_expand
    d = ctl.check(check(1, 1, ["n1"]))
    assert d.action == "none" and "failed" in d.reason
    assert ctl.inflight.get(1) is None
    assert backend.jobs[1].node_count == 1


def test_commit_not_ok_gives_the_nodes_back():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(1))
    d = ctl.check(check(1, 1, ["n1"]))
    assert nodes_of(cluster, 1) == ("n1", "n2", "n3", "n4")  # merged before the application's answer
    done = ctl.commit(p.Commit(job_id=1, token=d.token, ok=False))
    assert done.ok and nodes_of(cluster, 1) == ("n1",) and cluster.snapshot().free == 3


def _shrink_setup(ack_timeout: float = 2.0):
    # MemoryBackend: test_shrink_keeps_the_first_ranks_nodes... reads the time limit it sets
    backend, ctl = make(ack_timeout=ack_timeout)
    backend.add(1, 4)
    backend.add(9, 2, pending=True)
    # the application's rank order: n3 n1 n4 n2 (rank 0 on n3)
    d = ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"]))
    assert d.action == "shrink" and d.new_size == 2
    return backend, ctl, d


def test_shrink_keeps_the_first_ranks_nodes_and_waits_for_every_ack():
    backend, ctl, d = _shrink_setup()
    assert d.nodes == ["n3", "n1"]
    result: list[p.Done] = []
    waiter = threading.Thread(
        target=lambda: result.append(ctl.shrink_ready(p.ShrinkReady(job_id=1, token=d.token, acks=2)))
    )
    waiter.start()
    time.sleep(0.2)
    assert not result and not any(c[0] == "shrink" for c in backend.calls)  # one ack missing: no shrink
    assert ctl.ack(p.Ack(job_id=1, token=d.token, rank=2)).ok
    time.sleep(0.1)
    assert not result
    ctl.ack(p.Ack(job_id=1, token=d.token, rank=3))
    waiter.join(5)
    assert result and result[0].ok
    shrinks = [c for c in backend.calls if c[0] == "shrink"]
    assert len(shrinks) == 1 and shrinks[0][:3] == ("shrink", 1, 2) and set(shrinks[0][3]) == {"n3", "n1"}
    ctl.background.shutdown(wait=True)
    assert ("raise_priority", 9) in backend.calls
    limit = next(c for c in backend.calls if c[0] == "set_time_limit")
    assert limit[2] > 3600  # remaining time doubled for half the nodes


def test_shrink_without_all_acks_never_shrinks():
    cluster, ctl = make_sim(ack_timeout=0.3)
    cluster.submit(JobRequest(4))
    waiting = cluster.submit(JobRequest(2))
    d = ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"]))
    assert d.action == "shrink" and d.new_size == 2 and d.nodes == ["n3", "n1"]
    ctl.ack(p.Ack(job_id=1, token=d.token, rank=2))
    done = ctl.shrink_ready(p.ShrinkReady(job_id=1, token=d.token, acks=2))
    assert not done.ok and "1 of 2 acks" in done.reason
    assert nodes_of(cluster, 1) == ("n1", "n2", "n3", "n4") and ctl.inflight.get(1) is None
    assert cluster.job(waiting).state.value == "PENDING"


def test_a_shrink_the_application_never_reports_ready_is_settled_at_the_deadline():
    """A rank lost during a shrink: no acks, no shrink_ready. The shrink does not stay in flight
    for good: past the commit timeout it is settled from what runs (here: dropped, the job keeps
    its nodes), and the job can be resized again."""
    cluster, ctl = make_sim(commit_timeout=0.3, ack_timeout=0.1, repair_grace=0.1)
    cluster.submit(JobRequest(4))
    cluster.submit(JobRequest(2))
    d = ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"]))
    assert d.action == "shrink"
    ctl.housekeeping()
    assert ctl.inflight.get(1) is not None  # before its deadline: left alone
    time.sleep(0.4)
    ctl.housekeeping()
    assert ctl.inflight.get(1) is None and nodes_of(cluster, 1) == ("n1", "n2", "n3", "n4")
    assert ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"])).action == "shrink"  # decided anew


def test_only_the_leaving_ranks_acks_count_whatever_the_client_says():
    # the service counts the leaving ranks itself: "acks=0" or acks from staying ranks (0, 1)
    # or from ranks that do not exist cannot release nodes whose tasks still run
    cluster, ctl = make_sim(ack_timeout=0.3)
    cluster.submit(JobRequest(4))
    cluster.submit(JobRequest(2))
    d = ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"]))
    assert d.action == "shrink" and d.nodes == ["n3", "n1"]
    for rank in (0, 1, 7, -1):
        done = ctl.ack(p.Ack(job_id=1, token=d.token, rank=rank))
        assert not done.ok and "does not leave" in done.reason
    done = ctl.shrink_ready(p.ShrinkReady(job_id=1, token=d.token, acks=0))
    assert not done.ok and "0 of 2 acks" in done.reason
    assert nodes_of(cluster, 1) == ("n1", "n2", "n3", "n4")


def test_a_shrink_with_every_ack_hands_the_nodes_to_the_waiting_job():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(4))
    waiting = cluster.submit(JobRequest(2))
    d = ctl.check(check(1, 4, ["n3", "n1", "n4", "n2"]))
    for rank in (2, 3):
        assert ctl.ack(p.Ack(job_id=1, token=d.token, rank=rank)).ok
    done = ctl.shrink_ready(p.ShrinkReady(job_id=1, token=d.token, acks=2))
    assert done.ok and nodes_of(cluster, 1) == ("n1", "n3")
    ctl.background.shutdown(wait=True)
    assert nodes_of(cluster, waiting) == ("n2", "n4")  # raised to the head of the queue, started at once


def test_shrink_only_by_whole_groups():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(4))
    cluster.submit(JobRequest(2))
    # launched by plain `srun -N4`: one group over all four nodes, which cannot be split
    one = [{"tag": "g0", "job_id": 1, "nodes": ["n1", "n2", "n3", "n4"], "size": 4}]
    d = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"], groups=one))
    assert d.action == "none" and "no groups of the application can leave" in d.reason


def test_no_agent_no_expansion():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(1))
    d = ctl.check(check(1, 1, ["n1"], agent=""))
    assert d.action == "none" and "no agent" in d.reason and nodes_of(cluster, 1) == ("n1",)


def test_stale_application_size_is_no_action():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(2))
    d = ctl.check(check(1, 1, ["n1"]))
    assert d.action == "none" and "holds ['n1', 'n2']" in d.reason


def test_concurrent_jobs_never_get_the_same_nodes():
    backend, ctl = make(nodes=5)  # MemoryBackend: each expansion is slowed down, so that they overlap
    for job_id in (1, 2, 3, 4):
        backend.add(job_id, 1)
    backend.expand_delay = 0.2
    server = Server(ctl, port=0)
    server.start()
    answers: dict[int, p.Message] = {}

    def ask(job_id: int) -> None:
        conn = p.Connection.connect(server.address)
        answers[job_id] = conn.request(check(job_id, 1, [backend.jobs[job_id].nodes[0]]))
        conn.close()

    try:
        threads = [threading.Thread(target=ask, args=(j,)) for j in (1, 2, 3, 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    finally:
        server.stop()
    used = [n for j in backend.jobs.values() for n in j.nodes]
    assert len(used) == len(set(used)) <= 5
    decisions = [a for a in answers.values() if isinstance(a, p.Decision)]
    grown = sum(a.new_size - 1 for a in decisions if a.action == "expand")
    assert grown == 1  # exactly the one free node was handed out, once
    # and no decision was made on nodes already promised to another job's expansion
    assert not any("failed" in a.reason for a in answers.values() if isinstance(a, p.Decision))


def test_server_answers_ping_status_and_errors_on_one_connection():
    _, ctl = make_sim()
    server = Server(ctl, port=0)
    server.start()
    try:
        conn = p.Connection.connect(server.address)
        assert isinstance(conn.request(p.Ping()), p.Pong)
        conn.sock.sendall(b'{"v": 3, "type": "nope"}\n')
        err = conn.receive()
        assert isinstance(err, p.Error) and "unknown message type" in err.message
        conn.sock.sendall(b"garbage\n")
        assert isinstance(conn.receive(), p.Error)
        assert isinstance(conn.request(p.StatusRequest()), p.Status)
        conn.close()
    finally:
        server.stop()


@pytest.mark.parametrize("job_id", [42])
def test_unknown_job_is_no_action(job_id):
    _, ctl = make_sim()
    d = ctl.check(check(job_id, 1, ["n1"]))
    assert d.action == "none" and "not running" in d.reason


def test_a_check_from_a_job_the_cached_snapshot_shows_pending_reads_the_cluster_again():
    # a fast-starting program (C on libdmr) checks before the service's next snapshot saw it start
    backend, ctl = make()
    backend.add(1, 1, pending=True)
    ctl.cache.fresh()  # cached: job 1 pending
    started = backend.add(1, 1)  # it starts and checks at once
    d = ctl.check(check(1, 1, list(started.nodes)))
    assert d.action == "expand", d.reason


def test_housekeeping_cancels_only_stale_resizers():
    from slurm_ext.backend import resizer_name
    from slurm_ext.model import Job, JobState

    backend, ctl = make()  # MemoryBackend: resizer jobs left behind by another service
    now = time.time()
    backend.jobs[50] = Job(50, JobState.PENDING, 1, name=resizer_name(1), submit_time=now - 1000)
    backend.jobs[51] = Job(51, JobState.PENDING, 1, name=resizer_name(2), submit_time=now - 1)
    ctl.housekeeping()
    assert 50 not in backend.jobs  # left behind long ago: cancelled
    assert 51 in backend.jobs  # another service's live expansion: not ours to cancel


def test_slurm_unavailable_answers_no_action_and_keeps_what_is_in_flight():
    from slurm_ext.errors import SlurmUnavailable

    cluster, ctl = make_sim()
    cluster.submit(JobRequest(1))
    cluster.submit(JobRequest(1))
    d = ctl.check(check(1, 1, list(nodes_of(cluster, 1)), hi=2))
    assert d.action == "expand"
    second = list(nodes_of(cluster, 2))

    def down() -> None:
        raise SlurmUnavailable("squeue: Failed while looking for jobs")

    cluster.snapshot = down  # type: ignore[method-assign]  # slurmctld goes away
    time.sleep(0.1)  # older than the cache's 0.05 s: the next read goes to "Slurm"
    answer = ctl.check(check(2, 1, second, hi=1))
    assert answer.action == "none" and "Slurm unavailable" in answer.reason
    ctl.housekeeping()
    assert ctl.inflight.get(1) is not None  # not dropped as "job gone"


# -- checks answered at once (on the server's event loop) -------------------------------------------
def test_a_no_action_check_is_answered_at_once_as_the_full_check_answers_it():
    cluster, ctl = make_sim(nodes=2)
    cluster.submit(JobRequest(1))
    cluster.submit(JobRequest(1))  # no free node: the answer is "no action"
    ctl.cache.fresh()
    now = ctl.check_now(check(1, 1, ["n1"]))
    full = ctl.check(check(1, 1, ["n1"]))
    assert now is not None and now.action == "none" and (now.action, now.reason) == (full.action, full.reason)
    assert nodes_of(cluster, 1) == ("n1",) and ctl.counters["check"] == 2


def test_a_check_the_policy_would_act_on_is_left_to_the_full_check():
    cluster, ctl = make_sim()
    cluster.submit(JobRequest(1))
    ctl.cache.fresh()
    assert ctl.check_now(check(1, 1, ["n1"])) is None and ctl.inflight.get(1) is None
    assert ctl.check(check(1, 1, ["n1"])).action == "expand"


def test_no_quick_answer_without_a_recent_snapshot_or_while_another_decision_runs():
    cluster, ctl = make_sim(nodes=1)
    cluster.submit(JobRequest(1))
    assert ctl.check_now(check(1, 1, ["n1"])) is None  # nothing cached yet: the full check asks Slurm
    ctl.cache.fresh()
    with ctl.decide_lock:
        assert ctl.check_now(check(1, 1, ["n1"])) is None  # never waits on the loop
    assert ctl.check_now(check(1, 1, ["n1"])) is not None
    assert ctl.check_now(check(1, 2, ["n1", "n2"])) is None  # the cache predates its resize


def test_another_users_check_is_refused_on_the_quick_path_too():
    from slurm_ext.service.auth import Peer

    backend, ctl = make(nodes=1)  # MemoryBackend: a job owned by a named user
    backend.add(1, 1, user="root")
    ctl.cache.fresh()
    stranger = Peer(uid=4242, how="kernel")
    refused = ctl.check_now(check(1, 1, ["n1"]), stranger)
    assert isinstance(refused, p.Error) and "permission denied" in refused.message
