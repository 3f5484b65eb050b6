"""Talking to the EJB manager from a user's command (``ejb-submit``, ``ejb status``, ``ejb cancel``)."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

DEFAULT_MANAGER = "127.0.0.1:7118"


def manager_address(given: str | None = None) -> str:
    return given or os.environ.get("EJB_MANAGER") or DEFAULT_MANAGER


def request(address: str, msg: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """One request to the manager at ``host:port``; raises OSError if it does not answer."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as sock:
        sock.sendall((json.dumps(msg) + "\n").encode())
        line = sock.makefile("rb").readline()
    if not line:
        raise OSError("the EJB manager closed the connection")
    return json.loads(line)
