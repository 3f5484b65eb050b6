"""The wire protocol between the DMR runtime (``dmr/``) and the control service.

Transport: TCP, one JSON object per line (UTF-8, ``\\n``-terminated), request/response in
order on one connection. A client may keep its connection open and pipeline a request
(the asynchronous ``icheck_status`` does: it sends now and reads the answer at the next
step). Every message carries ``"v"`` (the protocol version, :data:`VERSION`) and
``"type"``. A message with another major version is answered with an ``error``.

Requests (runtime -> service)
-----------------------------
``check``         rank 0 at a reconfiguring point: ``job_id``, ``current`` (nodes), ``min``,
                  ``max``, ``factor``, ``preferred`` (nodes or null), ``nodes`` (the
                  application's nodes in rank order), ``groups`` (its groups of ranks in rank
                  order, each ``{tag, job_id, nodes, size}``: ``job_id`` is the Slurm job
                  hosting the group, the application's own or an expander job), ``agent``
                  (``host:port:key`` of the application's agent, empty if it has none: then
                  it cannot grow), ``python`` (the interpreter expander jobs start the agent
                  with). Answer: ``decision``.
``commit``        rank 0 after an expansion: ``job_id``, ``token``, ``ok``. With ``ok`` false
                  the resize is cancelled: after an expand (the new groups did not join, or an
                  asynchronous answer nobody acted on) the service gives the new nodes back
                  (expander job cancelled); a pending shrink is dropped. Answer: ``done``.
``shrink_ready``  rank 0 after data has left the released nodes: ``job_id``, ``token``,
                  ``acks`` (how many leaving ranks will ``ack``). The service waits for
                  all acks, then shrinks. Answer: ``done``.
``ack``           a leaving rank, once it is done with MPI: ``job_id``, ``token``, ``rank``.
                  Answer: ``done``.
``ping``          health/latency probe. Answer: ``pong``.
``status``        in-flight reconfigurations and counters. Answer: ``status``.

Responses (service -> runtime)
------------------------------
``decision``      ``action`` (``expand`` | ``shrink`` | ``none``), ``new_size`` (nodes),
                  ``nodes`` (expand: the nodes just added; shrink: the nodes kept),
                  ``token`` (names this reconfiguration in later messages), ``reason``;
                  expand only: ``groups`` (how many new groups will connect) and ``launch``
                  (nodes on which the application's own agent starts them; empty when another
                  job, e.g. an expander job, starts them itself).
``done``          ``ok`` and ``reason``; ``nodes``: the job's nodes afterwards.
``pong`` / ``status`` / ``error`` (``message``).
"""

from __future__ import annotations

import json
import socket
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

VERSION = 2  # 2: groups (cross-job worlds) replace floor/levels
DEFAULT_PORT = 7117  # conf/elastic.yaml service.port
MAX_LINE = 1 << 20

ACTION_EXPAND = "expand"
ACTION_SHRINK = "shrink"
ACTION_NONE = "none"
ACTIONS = (ACTION_EXPAND, ACTION_SHRINK, ACTION_NONE)


class ProtocolError(ValueError):
    """A message that is not valid JSON, not an object, of another version or of unknown type."""


@dataclass(slots=True)
class Message:
    """Base of every message; ``type`` is a class constant."""

    TYPE: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"v": VERSION, "type": self.TYPE, **asdict(self)}

    def encode(self) -> bytes:
        return (json.dumps(self.to_dict(), separators=(",", ":")) + "\n").encode()


@dataclass(slots=True)
class Check(Message):
    TYPE: ClassVar[str] = "check"
    job_id: int
    current: int
    min: int
    max: int
    factor: int = 2
    preferred: int | None = None
    nodes: list[str] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    agent: str = ""
    python: str = ""


@dataclass(slots=True)
class Commit(Message):
    TYPE: ClassVar[str] = "commit"
    job_id: int
    token: str
    ok: bool = True


@dataclass(slots=True)
class ShrinkReady(Message):
    TYPE: ClassVar[str] = "shrink_ready"
    job_id: int
    token: str
    acks: int


@dataclass(slots=True)
class Ack(Message):
    TYPE: ClassVar[str] = "ack"
    job_id: int
    token: str
    rank: int = -1


@dataclass(slots=True)
class Ping(Message):
    TYPE: ClassVar[str] = "ping"


@dataclass(slots=True)
class StatusRequest(Message):
    TYPE: ClassVar[str] = "status"


@dataclass(slots=True)
class Decision(Message):
    TYPE: ClassVar[str] = "decision"
    action: str = ACTION_NONE
    new_size: int = 0
    nodes: list[str] = field(default_factory=list)
    token: str = ""
    reason: str = ""
    groups: int = 0
    launch: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ProtocolError(f"unknown action {self.action!r}; valid: {', '.join(ACTIONS)}")


@dataclass(slots=True)
class Done(Message):
    TYPE: ClassVar[str] = "done"
    ok: bool = True
    reason: str = ""
    nodes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Pong(Message):
    TYPE: ClassVar[str] = "pong"


@dataclass(slots=True)
class Status(Message):
    TYPE: ClassVar[str] = "status"
    in_flight: dict[str, str] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Error(Message):
    TYPE: ClassVar[str] = "error"
    message: str = ""


REQUESTS: dict[str, type[Message]] = {
    m.TYPE: m for m in (Check, Commit, ShrinkReady, Ack, Ping, StatusRequest)
}
RESPONSES: dict[str, type[Message]] = {m.TYPE: m for m in (Decision, Done, Pong, Status, Error)}


def decode(line: bytes | str, table: dict[str, type[Message]]) -> Message:
    """Parse one line into a message of ``table``; raises :class:`ProtocolError` with a one-line reason."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("message is not a JSON object")
    version = obj.pop("v", None)
    if version != VERSION:
        raise ProtocolError(f"protocol version {version!r} not supported (this side speaks {VERSION})")
    kind = obj.pop("type", None)
    cls = table.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ProtocolError(f"unknown message type {kind!r}; valid: {', '.join(table)}")
    known = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in obj.items() if k in known})
    except TypeError as exc:
        raise ProtocolError(f"bad {kind} message: {exc}") from None


def decode_request(line: bytes | str) -> Message:
    return decode(line, REQUESTS)


def decode_response(line: bytes | str) -> Message:
    return decode(line, RESPONSES)


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` (or ``host`` with the default port) -> ``(host, port)``."""
    host, _, port = text.rpartition(":")
    if not host:
        return text, DEFAULT_PORT
    try:
        return host, int(port)
    except ValueError:
        raise ValueError(f"bad service address {text!r}: expected host:port") from None


class Connection:
    """A line-framed JSON connection (either side). Not thread-safe: one user at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = sock.makefile("rb")

    @classmethod
    def connect(cls, address: tuple[str, int], timeout: float = 2.0) -> Connection:
        sock = socket.create_connection(address, timeout=timeout)
        return cls(sock)

    def send(self, msg: Message) -> None:
        self.sock.sendall(msg.encode())

    def read_line(self) -> bytes:
        line = self._reader.readline(MAX_LINE)
        if not line:
            raise ConnectionError("connection closed by peer")
        return line

    def receive(self) -> Message:
        return decode_response(self.read_line())

    def request(self, msg: Message) -> Message:
        self.send(msg)
        return self.receive()

    def settimeout(self, timeout: float | None) -> None:
        self.sock.settimeout(timeout)

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self.sock.close()
