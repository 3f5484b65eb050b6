"""The client side of a job agent's wire (:mod:`dmr.agent`): JSON lines, each carrying the agent's
key, a message with ``"bytes": n`` followed by ``n`` bytes. The application's ranks, expander jobs'
agents and the control service (which asks an agent to submit an expander job as its job's owner)
talk to agents through it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any


def parse_agent(text: str) -> tuple[str, int, str]:
    host, port, key = text.rsplit(":", 2)
    return host, int(port), key


class AgentClient:
    """One connection to an agent (``host:port:key``); requests answered in order."""

    def __init__(self, address: str, timeout: float | None = 60.0, within: float = 0.0) -> None:
        """``within``: seconds to keep trying to connect (an EJB manager hosting the agent may be
        restarting; it comes back on the same port)."""
        host, port, self.key = parse_agent(address)
        deadline = time.monotonic() + within
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=10.0)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
        self.sock.settimeout(timeout)
        self.reader = self.sock.makefile("rb")

    def request(self, op: str, data: bytes = b"", **fields: Any) -> dict[str, Any]:
        """The agent's reply; ``data`` goes with the request, the reply's bytes come as ``reply["data"]``."""
        if data:
            fields["bytes"] = len(data)
        self.sock.sendall((json.dumps({"op": op, "key": self.key, **fields}) + "\n").encode() + data)
        line = self.reader.readline()
        if not line:
            raise ConnectionError("the agent closed the connection")
        reply = json.loads(line)
        if reply.get("bytes"):
            reply["data"] = self.reader.read(int(reply["bytes"]))
            if len(reply["data"]) != int(reply["bytes"]):
                raise ConnectionError("the agent closed the connection")
        if not reply.get("ok"):
            raise RuntimeError(f"agent refused {op}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
