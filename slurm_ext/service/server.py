"""The TCP server: an asyncio loop for the connections, a bounded pool for the controller's work.

Requests on one connection are answered in order; connections are independent, so one
job's long expansion never blocks another job's "no action" answer. Limits keep one client
from hurting the others: a connection cap, an idle timeout, a maximum line length (one error,
then the connection is closed), and a bounded pool of workers for requests that may block
(checks, commits, shrinks wait on Slurm); acks, pings and status never wait for that pool, so a
shrink waiting for its acks cannot starve them. A check whose answer is "no action" on the
cached snapshot is answered on the loop too (:meth:`Controller.check_now`): no thread hand-off
for the common case.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from slurm_ext import protocol as p
from slurm_ext.service.auth import UNKNOWN, AuthError, Peer, peer_from_munge, peer_from_socket
from slurm_ext.service.controller import Controller

log = logging.getLogger("slurm_ext.service")


@dataclass(frozen=True)
class Limits:
    max_connections: int = 4096
    idle_timeout: float = 3600.0  # a rank 0 checks at every step; an hour of silence is a dead client
    workers: int = 32  # concurrent blocking requests (checks, commits, shrinks)
    backlog: int = 4096


def dispatch(controller: Controller, line: bytes, peer: Peer = UNKNOWN) -> p.Message:
    """One request line -> one response message (never raises)."""
    try:
        req = p.decode_request(line)
    except p.ProtocolError as exc:
        return p.Error(message=str(exc))
    return handle(controller, req, peer)


def handle(controller: Controller, req: p.Message, peer: Peer) -> p.Message:
    try:
        match req:
            case p.Ping():
                return p.Pong()
            case p.StatusRequest():
                return controller.status()
            case p.Auth():
                return p.Error(message="auth must be the first message on a connection")
            case p.Check():
                return controller.check(req, peer)
            case p.Commit():
                return controller.commit(req, peer)
            case p.ShrinkReady():
                return controller.shrink_ready(req, peer)
            case p.Ack():
                return controller.ack(req, peer)
    except Exception as exc:  # a bug or a backend failure must not kill the connection
        log.exception("request %s failed", type(req).__name__)
        return p.Error(message=f"{type(req).__name__} failed: {exc}")
    return p.Error(message=f"unhandled request {type(req).__name__}")


_INLINE = (p.Ping, p.StatusRequest, p.Ack)  # never block: answered on the loop's thread


class Server:
    """``Server(controller, host, port).start()``; ``port=0`` picks a free port (see ``address``)."""

    def __init__(
        self,
        controller: Controller,
        host: str = "127.0.0.1",
        port: int = p.DEFAULT_PORT,
        limits: Limits | None = None,
    ) -> None:
        self.controller = controller
        self.limits = limits or Limits()
        self.pool = ThreadPoolExecutor(max_workers=self.limits.workers, thread_name_prefix="dmr-req")
        self.loop = asyncio.new_event_loop()
        self.connections = 0
        self._tasks: set[asyncio.Task] = set()  # one per open connection, cancelled by stop()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # bind now, so a taken port fails here (and port 0 has its number before start())
        self._sock = socket.create_server((host, port), backlog=self.limits.backlog, reuse_port=False)
        self._server: asyncio.base_events.Server | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    def start(self, housekeeping_interval: float = 5.0) -> None:
        self.controller.cache.start()
        try:
            self.controller.repair()  # what a crashed predecessor left half done
        except Exception as exc:
            log.warning("repair from the journal failed (%s); housekeeping will retry", exc)
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self._server = self.loop.run_until_complete(
                asyncio.start_server(
                    self._serve, sock=self._sock, limit=p.MAX_LINE, backlog=self.limits.backlog
                )
            )
            ready.set()
            self.loop.run_forever()

        def house() -> None:
            while not self._stop.wait(housekeeping_interval):
                self.controller.housekeeping()

        self._threads = [
            threading.Thread(target=run, name="dmr-server", daemon=True),
            threading.Thread(target=house, name="dmr-housekeeping", daemon=True),
        ]
        for t in self._threads:
            t.start()
        ready.wait(10)
        log.info("serving on %s:%s with policy %s", *self.address, self.controller.policy.name)

    def stop(self) -> None:
        self._stop.set()

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):  # open connections end now, not at garbage collection
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._server is not None:
                await self._server.wait_closed()

        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._threads[0].join(10) if self._threads else None
        self._sock.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.controller.cache.stop()
        self.controller.housekeeping()

    # -- one connection -----------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if self.connections > self.limits.max_connections:
                await self._reply(writer, p.Error(message="too many connections; try again later"))
                return
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = peer_from_socket(sock)  # one netlink round trip (~30 µs)
            first = True
            while True:
                try:
                    line = await asyncio.wait_for(reader.readuntil(b"\n"), self.limits.idle_timeout)
                except asyncio.LimitOverrunError:
                    await self._reply(writer, p.Error(message=f"message longer than {p.MAX_LINE} bytes"))
                    return
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                try:
                    req = p.decode_request(line)
                except p.ProtocolError as exc:
                    reply: p.Message = p.Error(message=str(exc))
                else:
                    if isinstance(req, p.Auth) and first:
                        peer, reply = await self._authenticate(req)
                    elif isinstance(req, _INLINE):
                        reply = handle(self.controller, req, peer)
                    elif isinstance(req, p.Check) and (now := self._check_now(req, peer)) is not None:
                        reply = now
                    else:
                        reply = await self.loop.run_in_executor(self.pool, handle, self.controller, req, peer)
                first = False
                if not await self._reply(writer, reply):
                    return
        except asyncio.CancelledError:
            pass  # the server stops
        finally:
            self.connections -= 1
            self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()

    def _check_now(self, req: p.Check, peer: Peer) -> p.Message | None:
        """A "no action" answer the controller can give without blocking (most checks), or None."""
        try:
            return self.controller.check_now(req, peer)
        except Exception:  # the full check in a worker answers (and logs) it
            log.exception("quick check of job %s failed", req.job_id)
            return None

    async def _authenticate(self, req: p.Auth) -> tuple[Peer, p.Message]:
        try:
            peer = await self.loop.run_in_executor(self.pool, peer_from_munge, req.credential)
        except AuthError as exc:
            log.warning("refused a MUNGE credential: %s", exc)
            return UNKNOWN, p.Error(message=str(exc))
        return peer, p.Done(ok=True, reason=f"authenticated as {peer.name}")

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, msg: p.Message) -> bool:
        try:
            writer.write(msg.encode())
            await writer.drain()
            return True
        except (ConnectionError, OSError):
            return False
