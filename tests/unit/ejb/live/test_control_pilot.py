"""The manager's control port, pilot side, over a real socket: a pilot's malformed line is
logged and skipped, the connection and the messages after it are kept."""

from __future__ import annotations

import json
import socket
from typing import Any

from ejb.live.control import ControlServer


class Recorder:
    """Stands in for the manager: the calls a pilot's connection makes, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def pilot_hello(self, hello: dict[str, Any], sock: socket.socket) -> tuple[int, int]:
        return (7, 1)

    def pilot_ended(self, key: tuple[int, int], code: int) -> None:
        self.calls.append(("ended", key, code))

    def pilot_failed(self, key: tuple[int, int], code: int, why: str) -> None:
        self.calls.append(("failed", key, code, why))

    def pilot_spare(self, key: tuple[int, int], index: int, job: int | None, error: str) -> None:
        self.calls.append(("spare", key, index, job, error))

    def pilot_gone(self, key: tuple[int, int], sock: socket.socket) -> None:
        self.calls.append(("gone", key))


def test_a_malformed_pilot_message_is_skipped_and_the_connection_kept() -> None:
    manager = Recorder()
    server = ControlServer(manager, "127.0.0.1", 0)  # type: ignore[arg-type]
    server.start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=10) as sock:
            lines = [
                {"op": "hello", "secret": "s", "role": "subjob"},
                {"op": "spare", "index": "two", "job": 12},  # not an index
                {"op": "failed", "code": [1]},  # not a code
                "not json",
                [1, 2],  # not an object
                {"op": "spare", "index": 2, "job": 12},
                {"op": "ended", "code": 0},
            ]
            text = "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)
            sock.sendall(text.encode())
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(100) == b""  # the manager ends the talk once the pilot has
    finally:
        server.shutdown()
        server.server_close()
    assert manager.calls == [("spare", (7, 1), 2, 12, ""), ("ended", (7, 1), 0), ("gone", (7, 1))]
