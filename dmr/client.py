"""Rank 0's connection to the control service: one persistent TCP connection, one warning at most.

If the service cannot be reached, the call answers ``None`` (the runtime turns that into
"no action"), warns once per process, and tries to connect again at most every
``retry`` seconds, so an application never stops because the service is away.
"""

from __future__ import annotations

import time
import warnings

from slurm_ext import protocol as p


class DMRWarning(RuntimeWarning):
    """The runtime carries on without resizing (no Slurm job, service unreachable)."""


_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, DMRWarning, stacklevel=3)


class ServiceClient:
    def __init__(self, address: tuple[str, int], timeout: float = 60.0, retry: float = 5.0):
        self.address = address
        self.timeout = timeout
        self.retry = retry
        self._conn: p.Connection | None = None
        self._down_since: float | None = None
        self.pending = False  # a request was sent whose answer has not been read

    def _connection(self) -> p.Connection | None:
        if self._conn is not None:
            if self.pending or not self._conn.closed_by_peer():
                return self._conn
            self._conn.close()  # the service closed it while we were quiet: connect again
            self._conn = None
        if self._down_since is not None and time.monotonic() - self._down_since < self.retry:
            return None
        try:
            self._conn = p.Connection.connect(self.address, timeout=2.0)
            self._conn.settimeout(self.timeout)
            self._down_since = None
        except OSError as exc:
            self._fail(exc)
        return self._conn

    def _fail(self, exc: BaseException) -> None:
        host, port = self.address
        warn_once(
            "unreachable",
            f"dmr: control service at {host}:{port} unreachable ({exc}); no resizing, the app goes on",
        )
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self.pending = False
        self._down_since = time.monotonic()

    def send(self, msg: p.Message) -> bool:
        conn = self._connection()
        if conn is None:
            return False
        try:
            conn.send(msg)
            self.pending = True
            return True
        except OSError as exc:
            self._fail(exc)
            return False

    def receive(self) -> p.Message | None:
        if self._conn is None or not self.pending:
            return None
        try:
            msg = self._conn.receive()
            self.pending = False
        except (OSError, p.ProtocolError) as exc:
            self._fail(exc)
            return None
        if isinstance(msg, p.Error):
            warn_once("error:" + msg.message, f"dmr: service refused a request: {msg.message}")
            return None
        return msg

    def request(self, msg: p.Message) -> p.Message | None:
        if self.pending:
            self.receive()  # drop a stale asynchronous answer
        return self.receive() if self.send(msg) else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def send_ack(address: tuple[str, int], job_id: int, token: str, rank: int, timeout: float = 10.0) -> bool:
    """A leaving rank tells the service it is done with MPI (one short connection)."""
    try:
        conn = p.Connection.connect(address, timeout=timeout)
        try:
            conn.settimeout(timeout)
            reply = conn.request(p.Ack(job_id=job_id, token=token, rank=rank))
            return isinstance(reply, p.Done) and reply.ok
        finally:
            conn.close()
    except (OSError, p.ProtocolError):
        return False
