"""The TCP server: one thread per connection, each request dispatched to the controller.

Requests on one connection are answered in order; connections are independent, so one
job's long expansion never blocks another job's "no action" answer.
"""

from __future__ import annotations

import logging
import socketserver
import threading

from slurm_ext import protocol as p
from slurm_ext.service.controller import Controller

log = logging.getLogger("slurm_ext.service")


class _Handler(socketserver.StreamRequestHandler):
    server: _TCPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(p.socket.IPPROTO_TCP, p.socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        controller = self.server.controller
        while True:
            try:
                line = self.rfile.readline(p.MAX_LINE)
            except OSError:
                return
            if not line:
                return
            reply = dispatch(controller, line)
            try:
                self.wfile.write(reply.encode())
                self.wfile.flush()
            except OSError:
                return


def dispatch(controller: Controller, line: bytes) -> p.Message:
    """One request line -> one response message (never raises)."""
    try:
        req = p.decode_request(line)
    except p.ProtocolError as exc:
        return p.Error(message=str(exc))
    try:
        match req:
            case p.Check():
                return controller.check(req)
            case p.Commit():
                return controller.commit(req)
            case p.ShrinkReady():
                return controller.shrink_ready(req)
            case p.Ack():
                return controller.ack(req)
            case p.Ping():
                return p.Pong()
            case p.StatusRequest():
                return controller.status()
    except Exception as exc:  # a bug or a backend failure must not kill the connection
        log.exception("request %s failed", type(req).__name__)
        return p.Error(message=f"{type(req).__name__} failed: {exc}")
    return p.Error(message=f"unhandled request {req!r}")


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], controller: Controller) -> None:
        self.controller = controller
        super().__init__(address, _Handler)


class Server:
    """``Server(controller, host, port).start()``; ``port=0`` picks a free port (see ``address``)."""

    def __init__(self, controller: Controller, host: str = "127.0.0.1", port: int = p.DEFAULT_PORT) -> None:
        self.controller = controller
        self._tcp = _TCPServer((host, port), controller)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._tcp.server_address[:2]
        return str(host), int(port)

    def start(self, housekeeping_interval: float = 5.0) -> None:
        self.controller.cache.start()
        serve = threading.Thread(target=self._tcp.serve_forever, name="dmr-server", daemon=True)

        def house() -> None:
            while not self._stop.wait(housekeeping_interval):
                self.controller.housekeeping()

        keep = threading.Thread(target=house, name="dmr-housekeeping", daemon=True)
        self._threads = [serve, keep]
        for t in self._threads:
            t.start()
        log.info("serving on %s:%s with policy %s", *self.address, self.controller.policy.name)

    def stop(self) -> None:
        self._stop.set()
        self._tcp.shutdown()
        self._tcp.server_close()
        self.controller.cache.stop()
        self.controller.housekeeping()
