"""The EJB manager's own port: users (``ejb-submit``, ``ejb status``, ``ejb cancel``) and pilots.

JSON lines. A user's connection is identified by the kernel (the peer socket's owner, as the
DMR service does); a pilot by the secret its job was submitted with. A pilot's connection stays
open: the manager's orders for its job go out on it (:class:`ejb.live.manager.PilotLink`).
"""

from __future__ import annotations

import json
import logging
import socketserver
import threading
from typing import Any

from ejb.live.manager import Manager
from slurm_ext.service.auth import peer_from_socket

log = logging.getLogger("ejb.manager")
MAX_LINE = 1 << 20


class _Handler(socketserver.StreamRequestHandler):
    server: ControlServer

    def handle(self) -> None:
        manager = self.server.manager
        peer = None
        while True:
            try:
                line = self.rfile.readline(MAX_LINE)
            except OSError:
                return
            if not line:
                return
            try:
                req = json.loads(line)
                op = req["op"]
            except (ValueError, KeyError, TypeError):
                self._reply({"ok": False, "error": "bad request: one JSON object with an 'op' per line"})
                continue
            if op == "hello":
                self._pilot(manager, req)
                return
            peer = peer or peer_from_socket(self.connection)
            try:
                if op == "register":
                    reply = manager.register(req, peer)
                elif op == "status":
                    eid = req.get("eid")
                    reply = manager.describe(None if eid is None else int(eid))
                elif op == "cancel":
                    reply = manager.cancel(int(req["eid"]), peer)
                elif op == "ping":
                    reply = {"ok": True, "pilot": manager.pilot_address, "spares": manager.spares}
                else:
                    reply = {"ok": False, "error": f"unknown op {op!r}"}
            except (KeyError, TypeError, ValueError) as exc:
                reply = {"ok": False, "error": f"bad {op} request: {exc}"}
            except Exception as exc:  # a bug or a Slurm failure: answered, logged, connection kept
                log.exception("%s failed", op)
                reply = {"ok": False, "error": f"{op} failed: {exc}"}
            self._reply(reply)

    def _pilot(self, manager: Manager, hello: dict[str, Any]) -> None:
        found = manager.pilot_hello(hello, self.connection)
        if isinstance(found, dict):
            self._reply(found)
            return
        failure = hello.get("failed")
        if isinstance(failure, dict):  # seen while this manager was away (or lost as it died)
            manager.pilot_failed(found, int(failure.get("code", 1)), str(failure.get("why", "")))
        try:
            for line in self.rfile:
                try:
                    msg = json.loads(line)
                    if msg.get("op") == "ended":
                        manager.pilot_ended(found, int(msg.get("code", 0)))
                    elif msg.get("op") == "failed":
                        manager.pilot_failed(found, int(msg.get("code", 1)), str(msg.get("why", "")))
                    elif msg.get("op") == "spare":
                        job = msg.get("job") if isinstance(msg.get("job"), int) else None
                        manager.pilot_spare(found, int(msg.get("index", -1)), job, str(msg.get("error", "")))
                except (AttributeError, TypeError, ValueError) as exc:  # one bad line: the pilot stays
                    log.warning("a malformed message from a pilot ignored (%s): %.200s", exc, line)
        except OSError:
            pass
        finally:
            manager.pilot_gone(found, self.connection)

    def _reply(self, msg: dict[str, Any]) -> None:
        try:
            self.wfile.write((json.dumps(msg) + "\n").encode())
            self.wfile.flush()
        except OSError:
            pass


class ControlServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, manager: Manager, host: str, port: int) -> None:
        self.manager = manager
        super().__init__((host, port), _Handler)

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, name="ejb-control", daemon=True).start()
