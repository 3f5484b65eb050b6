"""The TCP server: an asyncio loop for the connections, a bounded pool for the controller's work.

Requests on one connection are answered in order; connections are independent, so one
job's long expansion never blocks another job's "no action" answer. Limits keep one client
from hurting the others: a connection cap, and a share of it per user (the kernel's or MUNGE's
name for the peer; an unauthenticated remote peer counts by its address until it proves who it
is), an idle timeout (clients connect again, see :class:`dmr.client.ServiceClient`), a maximum
line length (one error, then the connection is closed), and a bounded pool of workers for
requests that may block (checks, commits, shrinks wait on Slurm) of which one user holds at most
a few at a time (the rest of that user's requests wait their turn, not the others'); acks, pings
and status never wait for that pool, so a shrink waiting for its acks cannot starve them. A check
whose answer is "no action" on the cached snapshot is answered on the loop too
(:meth:`Controller.check_now`): no thread hand-off for the common case.
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
from slurm_ext.service.handler import Handler

log = logging.getLogger("slurm_ext.service")


@dataclass(frozen=True)
class Limits:
    max_connections: int = 4096
    user_connections: int = 512  # one user's share of max_connections
    idle_timeout: float = 120.0  # a quiet connection is closed; its client connects again when it asks
    workers: int = 32  # concurrent blocking requests (checks, commits, shrinks)
    user_workers: int = 8  # of which one user's at a time
    backlog: int = 4096


def _who(peer: Peer, sock: socket.socket) -> str:
    """Whose share a connection counts against: its user, else (remote, not yet authenticated)
    the address it comes from."""
    if peer.uid is not None:
        return f"uid {peer.uid}"
    try:
        return f"host {sock.getpeername()[0]}"
    except OSError:
        return "unknown"


def handle(controller: Handler, req: p.Message, peer: Peer) -> p.Message:
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
_ALWAYS = (p.Ping, p.Ack)  # served even past the connection caps: a leaving rank's ack frees nodes
ACK_ONLY_IDLE = 5.0  # seconds a connection past a cap may stay silent (an ack comes at once)


class Server:
    """``Server(controller, host, port).start()``; ``port=0`` picks a free port (see ``address``)."""

    def __init__(
        self,
        controller: Handler,
        host: str = "127.0.0.1",
        port: int = p.DEFAULT_PORT,
        limits: Limits | None = None,
    ) -> None:
        self.controller = controller
        self.limits = limits or Limits()
        self.pool = ThreadPoolExecutor(max_workers=self.limits.workers, thread_name_prefix="dmr-req")
        self.loop = asyncio.new_event_loop()
        self.connections = 0
        self.per_user: dict[str, int] = {}  # open connections by whose share they count against
        self._turns: dict[str, asyncio.Semaphore] = {}  # each user's places in the worker pool
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
        sock = writer.get_extra_info("socket")
        peer = peer_from_socket(sock)  # one netlink round trip (~30 µs)
        who = self._count(_who(peer, sock))
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            first = True
            # a connection that came past a cap may still carry a leaving rank's ack (the shrink it
            # ends frees nodes), and nothing else; it is not kept waiting long for it
            over = self._over_cap(who)
            while True:
                idle = ACK_ONLY_IDLE if over else self.limits.idle_timeout
                try:
                    line = await asyncio.wait_for(reader.readuntil(b"\n"), idle)
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
                        if peer.uid is not None:  # from now on it counts against its user's share
                            self._uncount(who)
                            who = self._count(_who(peer, sock))
                            over = self._over_cap(who)
                    elif over and not isinstance(req, _ALWAYS):
                        await self._reply(writer, p.Error(message=over))
                        return
                    elif isinstance(req, _INLINE):
                        reply = handle(self.controller, req, peer)
                    elif isinstance(req, p.Check) and (now := self._check_now(req, peer)) is not None:
                        reply = now
                    else:
                        async with self._turn(who):
                            reply = await self.loop.run_in_executor(
                                self.pool, handle, self.controller, req, peer
                            )
                first = False
                if not await self._reply(writer, reply):
                    return
        except asyncio.CancelledError:
            pass  # the server stops
        finally:
            self.connections -= 1
            self._uncount(who)
            self._tasks.discard(task)
            writer.close()

    def _over_cap(self, who: str) -> str | None:
        """Why this connection is past a cap (the whole service's, or its user's share), or None."""
        if self.connections > self.limits.max_connections:
            return "too many connections; try again later"
        if self.per_user.get(who, 0) > self.limits.user_connections:
            return f"too many connections from {who}; close some"
        return None

    def _count(self, who: str) -> str:
        self.per_user[who] = self.per_user.get(who, 0) + 1
        return who

    def _uncount(self, who: str) -> None:
        left = self.per_user.get(who, 0) - 1
        if left > 0:
            self.per_user[who] = left
        else:  # the user's last connection: nobody holds its places in the pool
            self.per_user.pop(who, None)
            self._turns.pop(who, None)

    def _turn(self, who: str) -> asyncio.Semaphore:
        """One user's places in the worker pool (the loop's thread only: no lock needed)."""
        turn = self._turns.get(who)
        if turn is None:
            turn = self._turns[who] = asyncio.Semaphore(self.limits.user_workers)
        return turn

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
