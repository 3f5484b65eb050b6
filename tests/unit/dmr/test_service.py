"""The control service's bookkeeping: one resize in flight per job, acks, timeouts, concurrency, TCP."""

from __future__ import annotations

import threading
import time

import pytest

from slurm_ext import protocol as p
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions

from .memory_backend import MemoryBackend


def make(nodes: int = 4, **opts) -> tuple[MemoryBackend, Controller]:
    backend = MemoryBackend(nodes)
    options = ServiceOptions(snapshot_interval=0.05, ack_timeout=opts.pop("ack_timeout", 2.0), **opts)
    return backend, Controller(backend, DMRPolicy(), options)


def check(job_id: int, cur: int, nodes: list[str], lo: int = 1, hi: int = 4, **kw) -> p.Check:
    """A check from an application with one group per node (as dmr-run launches it) and an agent."""
    kw.setdefault("groups", [{"tag": f"g-{n}", "job_id": job_id, "nodes": [n], "size": 1} for n in nodes])
    kw.setdefault("agent", "127.0.0.1:1:key")
    kw.setdefault("python", "/usr/bin/python3")
    return p.Check(job_id=job_id, current=cur, min=lo, max=hi, factor=2, nodes=nodes, **kw)


def test_expand_then_commit():
    backend, ctl = make()
    backend.add(1, 1)
    d = ctl.check(check(1, 1, ["n1"]))
    assert d.action == "expand" and d.new_size == 4 and d.nodes == ["n2", "n3", "n4"] and d.reason
    assert ctl.inflight.get(1) is not None
    done = ctl.commit(p.Commit(job_id=1, token=d.token, ok=True))
    assert done.ok and ctl.inflight.get(1) is None


def test_one_reconfiguration_in_flight_per_job():
    backend, ctl = make()
    backend.add(1, 1)
    first = ctl.check(check(1, 1, ["n1"]))
    again = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"]))
    assert first.action == "expand" and again.action == "none" and "in flight" in again.reason


def test_expand_failure_answers_no_action_and_leaves_nothing_in_flight():
    backend, ctl = make()
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
    backend, ctl = make()
    backend.add(1, 1)
    d = ctl.check(check(1, 1, ["n1"]))
    done = ctl.commit(p.Commit(job_id=1, token=d.token, ok=False))
    assert done.ok and backend.jobs[1].nodes == ("n1",)
    assert ("shrink", 1, 1, ("n1",)) in backend.calls


def _shrink_setup(ack_timeout: float = 2.0):
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
    backend, ctl, d = _shrink_setup(ack_timeout=0.3)
    ctl.ack(p.Ack(job_id=1, token=d.token, rank=2))
    done = ctl.shrink_ready(p.ShrinkReady(job_id=1, token=d.token, acks=2))
    assert not done.ok and "1 of 2 acks" in done.reason
    assert not any(c[0] == "shrink" for c in backend.calls) and ctl.inflight.get(1) is None


def test_shrink_only_by_whole_groups():
    backend, ctl = make()
    backend.add(1, 4)
    backend.add(9, 2, pending=True)
    # launched by plain `srun -N4`: one group over all four nodes, which cannot be split
    one = [{"tag": "g0", "job_id": 1, "nodes": ["n1", "n2", "n3", "n4"], "size": 4}]
    d = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"], groups=one))
    assert d.action == "none" and "no groups of the application can leave" in d.reason


def test_no_agent_no_expansion():
    backend, ctl = make()
    backend.add(1, 1)
    d = ctl.check(check(1, 1, ["n1"], agent=""))
    assert d.action == "none" and "no agent" in d.reason and not backend.calls


def test_stale_application_size_is_no_action():
    backend, ctl = make()
    backend.add(1, 2)
    d = ctl.check(check(1, 1, ["n1"]))
    assert d.action == "none" and "holds ['n1', 'n2']" in d.reason


def test_concurrent_jobs_never_get_the_same_nodes():
    backend, ctl = make(nodes=5)
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
    _, ctl = make()
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
    _, ctl = make()
    d = ctl.check(check(job_id, 1, ["n1"]))
    assert d.action == "none" and "not running" in d.reason


def test_housekeeping_cancels_only_stale_resizers():
    from slurm_ext.backend import resizer_name
    from slurm_ext.model import Job, JobState

    backend, ctl = make()
    now = time.time()
    backend.jobs[50] = Job(50, JobState.PENDING, 1, name=resizer_name(1), submit_time=now - 1000)
    backend.jobs[51] = Job(51, JobState.PENDING, 1, name=resizer_name(2), submit_time=now - 1)
    ctl.housekeeping()
    assert 50 not in backend.jobs  # left behind long ago: cancelled
    assert 51 in backend.jobs  # another service's live expansion: not ours to cancel


def test_slurm_unavailable_answers_no_action_and_keeps_what_is_in_flight():
    from slurm_ext.errors import SlurmUnavailable

    backend, ctl = make()
    backend.add(1, 1)
    backend.add(2, 1)
    d = ctl.check(check(1, 1, list(backend.jobs[1].nodes), hi=2))
    assert d.action == "expand"

    def down() -> None:
        raise SlurmUnavailable("squeue: Failed while looking for jobs")

    backend.snapshot = down  # slurmctld goes away
    time.sleep(0.1)  # older than the cache's 0.05 s: the next read goes to "Slurm"
    answer = ctl.check(check(2, 1, list(backend.jobs[2].nodes), hi=1))
    assert answer.action == "none" and "Slurm unavailable" in answer.reason
    ctl.housekeeping()
    assert ctl.inflight.get(1) is not None  # not dropped as "job gone"


# -- checks answered at once (on the server's event loop) -------------------------------------------
def test_a_no_action_check_is_answered_at_once_as_the_full_check_answers_it():
    backend, ctl = make(nodes=2)
    backend.add(1, 1)
    backend.add(2, 1)  # no free node: the answer is "no action"
    ctl.cache.fresh()
    now = ctl.check_now(check(1, 1, ["n1"]))
    full = ctl.check(check(1, 1, ["n1"]))
    assert now is not None and now.action == "none" and (now.action, now.reason) == (full.action, full.reason)
    assert backend.calls == [] and ctl.counters["check"] == 2


def test_a_check_the_policy_would_act_on_is_left_to_the_full_check():
    backend, ctl = make()
    backend.add(1, 1)
    ctl.cache.fresh()
    assert ctl.check_now(check(1, 1, ["n1"])) is None and ctl.inflight.get(1) is None
    assert ctl.check(check(1, 1, ["n1"])).action == "expand"


def test_no_quick_answer_without_a_recent_snapshot_or_while_another_decision_runs():
    backend, ctl = make(nodes=1)
    backend.add(1, 1)
    assert ctl.check_now(check(1, 1, ["n1"])) is None  # nothing cached yet: the full check asks Slurm
    ctl.cache.fresh()
    with ctl.decide_lock:
        assert ctl.check_now(check(1, 1, ["n1"])) is None  # never waits on the loop
    assert ctl.check_now(check(1, 1, ["n1"])) is not None
    assert ctl.check_now(check(1, 2, ["n1", "n2"])) is None  # the cache predates its resize


def test_another_users_check_is_refused_on_the_quick_path_too():
    from slurm_ext.service.auth import Peer

    backend, ctl = make(nodes=1)
    backend.add(1, 1, user="root")
    ctl.cache.fresh()
    stranger = Peer(uid=4242, how="kernel")
    refused = ctl.check_now(check(1, 1, ["n1"]), stranger)
    assert isinstance(refused, p.Error) and "permission denied" in refused.message
