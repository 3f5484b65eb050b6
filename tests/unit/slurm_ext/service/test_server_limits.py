"""The server under hostile input and load limits: every bad line gets one error, nothing stalls."""

from __future__ import annotations

import contextlib
import logging
import socket
import time

import pytest

from slurm_ext import protocol as p
from slurm_ext.service import Server
from slurm_ext.service.server import Limits

from .test_service import check, make

MALFORMED = [
    b"{nope",
    b"[1, 2]",
    b'"just a string"',
    b'{"v": 3, "type": ["check"]}',
    b'{"v": 3, "type": {"a": 1}}',
    b'{"v": true, "type": "ping"}',
    b'{"v": 3, "type": "check", "job_id": 1, "current": 1, "min": 1, "max": Infinity}',
    b'{"v": 3, "type": "check", "job_id": 1, "current": 1, "min": 1, "max": 1e400}',
    b'{"v": 3, "type": "check", "job_id": ' + b"9" * 5000 + b', "current": 1, "min": 1, "max": 2}',
    b'{"v": 3, "type": "check", "job_id": 1, "current": 1, "min": 1, "max": 2, "x": '
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    b'{"v": 3, "type": "check", "job_id": -5, "current": 1, "min": 1, "max": 2}',
    b'{"v": 3, "type": "check", "job_id": 1, "current": 1, "min": 1, "max": 2, "nodes": "n1"}',
    b'{"v": 3, "type": "commit", "job_id": 1, "token": "t", "ok": "yes"}',
    b'{"v": 3, "type": "ack", "job_id": 1}',
    b"\xff\xfe\x00",
    b"",
]


@pytest.fixture
def served():
    backend, ctl = make()
    backend.add(1, 1)
    server = Server(ctl, port=0, limits=Limits(max_connections=8, idle_timeout=1.0))
    server.start()
    yield backend, server
    server.stop()


def _lines(sock: socket.socket, timeout: float = 2.0) -> list[bytes]:
    """Every line the server sends until it closes the connection or goes quiet."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    return data.splitlines()


@pytest.mark.parametrize("bad", MALFORMED, ids=range(len(MALFORMED)))
def test_each_malformed_line_gets_one_error_then_a_valid_check_is_answered(served, bad, caplog):
    _, server = served
    caplog.set_level(logging.DEBUG)
    conn = p.Connection.connect(server.address)
    conn.settimeout(5)
    conn.sock.sendall(bad + b"\n")
    reply = conn.receive()
    assert isinstance(reply, p.Error) and reply.message, reply
    t0 = time.monotonic()
    answer = conn.request(check(1, 1, ["n1"], hi=1))
    assert isinstance(answer, p.Decision) and answer.action == "none"
    assert time.monotonic() - t0 < 1.0
    conn.close()
    assert not [r for r in caplog.records if r.exc_info], "bad input must not leave a traceback in the log"


def test_a_10_mb_line_gets_one_error_and_the_connection_is_closed(served):
    _, server = served
    with socket.create_connection(server.address) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # closed while we still send
            sock.sendall(b"x" * (10 << 20) + b"\n")
        lines = _lines(sock)
    assert len(lines) == 1 and b"longer than" in lines[0]
    conn = p.Connection.connect(server.address)
    assert isinstance(conn.request(p.Ping()), p.Pong)
    conn.close()


def test_connection_cap_and_idle_timeout(served):
    _, server = served
    idle = [socket.create_connection(server.address) for _ in range(8)]
    time.sleep(0.2)
    with socket.create_connection(server.address) as extra:  # past the cap: refused at its request
        extra.sendall(check(1, 1, ["n1"], hi=1).encode())
        lines = _lines(extra)
    assert len(lines) == 1 and b"too many connections" in lines[0]
    for sock in idle:  # silent clients are dropped after the idle timeout, freeing their slots
        sock.settimeout(3.0)
        assert sock.recv(1) == b""  # closed by the server (a timeout here would raise)
        sock.close()
    conn = p.Connection.connect(server.address)
    assert isinstance(conn.request(p.Ping()), p.Pong)
    conn.close()
