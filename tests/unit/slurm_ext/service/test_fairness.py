"""One user cannot lock others out of the service: a real server, a second user (``nobody``,
in a child process) holding idle connections past its share and flooding checks, while root's
checks are answered; idle connections are closed and clients connect again."""

from __future__ import annotations

import os
import socket
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from dmr.client import ServiceClient
from slurm_ext import protocol as p
from slurm_ext.bench.faults import SYSTEM_PYTHON, run_flood
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.service.server import Limits

from .memory_backend import MemoryBackend

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
    reason="runs a second user's client (root, python3)",
)


class SlowSqueue(MemoryBackend):
    def snapshot(self):  # noqa: ANN201
        time.sleep(0.02)  # a reading costs what squeue does
        return super().snapshot()


def serve(idle_timeout: float) -> Server:
    backend = SlowSqueue(4)
    backend.add(5, 1)
    backend.add(9, 1)
    ctl = Controller(backend, DMRPolicy(), ServiceOptions(snapshot_interval=0.5))
    srv = Server(ctl, port=0, limits=Limits(user_connections=100, idle_timeout=idle_timeout))
    srv.start()
    return srv


@pytest.fixture
def server():  # noqa: ANN201
    srv = serve(idle_timeout=60.0)
    yield srv
    srv.stop()


@pytest.fixture
def quick_server():  # noqa: ANN201
    srv = serve(idle_timeout=1.0)
    yield srv
    srv.stop()


@needs_root
def test_a_user_past_its_connection_share_and_flooding_does_not_lock_root_out(server: Server) -> None:
    host, port = server.address
    # jobs that left the queue (3, 7), and jobs newer than any it holds (12, 40)
    unknown = [p.Check(job_id=j, current=1, min=1, max=4, nodes=["n1"]).encode() for j in (3, 7, 12, 40)]
    flood = ThreadPoolExecutor(1).submit(run_flood, host, port, 150, 16, 4, unknown)
    time.sleep(1.0)  # its idle connections are open, its flood under way
    mine = ServiceClient((host, port))
    waits = []
    for _ in range(100):
        t0 = time.perf_counter()
        answer = mine.request(p.Check(job_id=5, current=1, min=1, max=1, nodes=["n1"]))
        waits.append(time.perf_counter() - t0)
        assert isinstance(answer, p.Decision), answer  # never "too many connections"
        time.sleep(0.01)
    got = flood.result(timeout=60)
    assert got["held"] == 100 and got["refused"] == 50  # its share, and no more
    assert got["answered"] > 100  # the flood was answered too, just not at root's expense
    p99 = statistics.quantiles(waits, n=100)[98]
    assert p99 < 0.2, f"root's checks waited up to {p99 * 1e3:.0f} ms (p99) behind another user's flood"


def test_an_idle_connection_is_closed_and_the_client_connects_again(quick_server: Server) -> None:
    host, port = quick_server.address
    raw = socket.create_connection((host, port))
    raw.settimeout(5)
    assert raw.recv(10) == b""  # closed by the service after its idle timeout (1 s here)
    client = ServiceClient((host, port))
    check = p.Check(job_id=5, current=1, min=1, max=1, nodes=["n1"])
    assert isinstance(client.request(check), p.Decision)
    time.sleep(1.5)  # the service closes it meanwhile
    assert isinstance(client.request(check), p.Decision)  # a new connection, no warning, no lost step


def test_past_its_share_a_user_still_gets_its_acks_through_and_nothing_else(server: Server) -> None:
    """A leaving rank's ack ends a shrink that frees nodes: it is served even on a connection past
    the user's share (one that carries anything else is refused and closed)."""
    host, port = server.address
    share = server.limits.user_connections
    held = [socket.create_connection((host, port)) for _ in range(share)]
    time.sleep(0.3)
    ack = p.Connection(socket.create_connection((host, port)))
    reply = ack.request(p.Ack(job_id=5, token="t", rank=1))
    assert isinstance(reply, p.Done) and reply.reason == "no shrink of this job in flight"  # answered
    check = p.Connection(socket.create_connection((host, port)))
    reply = check.request(p.Check(job_id=5, current=1, min=1, max=1, nodes=["n1"]))
    assert isinstance(reply, p.Error) and "too many connections from uid" in reply.message
    for s in held:
        s.close()
    ack.close()
    check.close()
