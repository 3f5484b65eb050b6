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
                  with), ``step_seconds`` (its last step's compute time at this size, or null:
                  the service's efficiency feedback), ``progress`` (fraction of its work done,
                  or null), ``evolving`` (an evolving request, paper 000: the nodes the
                  application asks to grow to, or null; the policy grants or refuses it).
                  Answer: ``decision``.
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

import ipaddress
import json
import select
import shutil
import socket
import subprocess
from typing import Annotated, Any, ClassVar

import msgspec

VERSION = 3  # 3: typed and bounded messages, "auth"; 2: groups (cross-job worlds) replace floor/levels
DEFAULT_PORT = 7117  # conf/elastic.yaml service.port
MAX_LINE = 1 << 20  # longer lines are answered with one error, then the connection is closed

MAX_NODES = 100_000  # no message names more nodes than this; the controller checks the cluster's own size
MAX_ID = 2**32 - 1  # Slurm job ids and ranks are 32-bit

ACTION_EXPAND = "expand"
ACTION_SHRINK = "shrink"
ACTION_NONE = "none"
ACTIONS = (ACTION_EXPAND, ACTION_SHRINK, ACTION_NONE)

JobId = Annotated[int, msgspec.Meta(ge=0, le=MAX_ID)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_NODES)]
Rank = Annotated[int, msgspec.Meta(ge=-1, le=MAX_ID)]
Name = Annotated[str, msgspec.Meta(max_length=256)]
Text = Annotated[str, msgspec.Meta(max_length=4096)]
NodeList = Annotated[list[Name], msgspec.Meta(max_length=MAX_NODES)]


class ProtocolError(ValueError):
    """A message that is not valid JSON, not an object, of another version or of unknown type."""


class Message(msgspec.Struct, tag_field="type", kw_only=True):
    """Base of every message: ``v`` and ``type`` (the class's tag) on the wire."""

    TYPE: ClassVar[str] = ""
    v: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.encode())

    def encode(self) -> bytes:
        return _ENCODER.encode(self) + b"\n"


class GroupInfo(msgspec.Struct, forbid_unknown_fields=False):
    """One group of an application's ranks (see ``dmr/world.py``): the job hosting it and its nodes."""

    tag: Name
    job_id: JobId
    nodes: NodeList
    size: Count


def group_ranks(groups: list[tuple[int, bool]]) -> list[int]:
    """Ranks of the chosen groups, given (size, chosen) per group in rank order: a world made of
    groups numbers each group's ranks as one run after the previous group's (runtime and service
    both count this way)."""
    out: list[int] = []
    base = 0
    for size, chosen in groups:
        if chosen:
            out.extend(range(base, base + size))
        base += size
    return out


class Check(Message, tag="check", kw_only=False):
    job_id: JobId
    current: Count
    min: Count
    max: Count
    factor: Annotated[int, msgspec.Meta(ge=1, le=MAX_NODES)] = 2
    preferred: Count | None = None
    nodes: NodeList = msgspec.field(default_factory=list)
    step_seconds: Annotated[float, msgspec.Meta(ge=0, le=1e7)] | None = None  # the last step, at ``current``
    progress: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None  # fraction of the work done
    evolving: Count | None = None  # nodes the application asks to grow to (paper 000), or null
    groups: Annotated[list[GroupInfo], msgspec.Meta(max_length=MAX_NODES)] = msgspec.field(
        default_factory=list
    )
    agent: Name = ""
    python: Text = ""

    def __post_init__(self) -> None:  # built in code from plain dicts too
        self.groups = [g if isinstance(g, GroupInfo) else msgspec.convert(g, GroupInfo) for g in self.groups]


class Commit(Message, tag="commit", kw_only=False):
    job_id: JobId
    token: Name
    ok: bool = True


class ShrinkReady(Message, tag="shrink_ready", kw_only=False):
    job_id: JobId
    token: Name
    acks: Count


class Ack(Message, tag="ack", kw_only=False):
    job_id: JobId
    token: Name
    rank: Rank = -1


class Auth(Message, tag="auth", kw_only=False):
    """First message on a connection from another host: a MUNGE credential naming the sender."""

    credential: Annotated[str, msgspec.Meta(max_length=8192)]


class Ping(Message, tag="ping"):
    pass


class StatusRequest(Message, tag="status"):
    pass


class Decision(Message, tag="decision", kw_only=False):
    action: str = ACTION_NONE
    new_size: int = 0
    nodes: list[str] = msgspec.field(default_factory=list)
    token: str = ""
    reason: str = ""
    groups: int = 0
    launch: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise msgspec.ValidationError(f"unknown action {self.action!r}; valid: {', '.join(ACTIONS)}")


class Done(Message, tag="done", kw_only=False):
    ok: bool = True
    reason: str = ""
    nodes: list[str] = msgspec.field(default_factory=list)


class Pong(Message, tag="pong"):
    pass


class Status(Message, tag="status", kw_only=False):
    in_flight: dict[str, str] = msgspec.field(default_factory=dict)
    counters: dict[str, int] = msgspec.field(default_factory=dict)


class Error(Message, tag="error", kw_only=False):
    message: str = ""


_REQUEST_TYPES = (Check, Commit, ShrinkReady, Ack, Auth, Ping, StatusRequest)
_RESPONSE_TYPES = (Decision, Done, Pong, Status, Error)
for _m in (*_REQUEST_TYPES, *_RESPONSE_TYPES):
    _m.TYPE = str(_m.__struct_config__.tag)
REQUESTS: dict[str, type[Message]] = {m.TYPE: m for m in _REQUEST_TYPES}
RESPONSES: dict[str, type[Message]] = {m.TYPE: m for m in _RESPONSE_TYPES}
_ENCODER = msgspec.json.Encoder()
_DECODERS = {
    id(REQUESTS): msgspec.json.Decoder(Check | Commit | ShrinkReady | Ack | Auth | Ping | StatusRequest),
    id(RESPONSES): msgspec.json.Decoder(Decision | Done | Pong | Status | Error),
}


class _Header(msgspec.Struct):
    """What every message has, read on its own to explain a message that failed to decode."""

    v: Any = None
    type: Any = None


_HEADER = msgspec.json.Decoder(_Header)


def decode(line: bytes | str, table: dict[str, type[Message]]) -> Message:
    """Parse one line into a message of ``table``; raises :class:`ProtocolError` with a one-line reason."""
    if len(line) > MAX_LINE:
        raise ProtocolError(f"message longer than {MAX_LINE} bytes")
    try:
        msg = _DECODERS[id(table)].decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise ProtocolError(_explain(line, table, exc)) from None
    if msg.v != VERSION:
        raise ProtocolError(f"protocol version {msg.v!r} not supported (this side speaks {VERSION})")
    return msg


def _explain(line: bytes | str, table: dict[str, type[Message]], exc: Exception) -> str:
    """A one-line reason for a message that failed to decode: version and type first, then the field."""
    try:
        head = _HEADER.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        if isinstance(exc, msgspec.ValidationError):  # valid JSON, but not an object
            return "message is not a JSON object"
        return f"not JSON: {str(exc)[:200]}"
    version, kind = head.v, head.type
    if type(version) is not int or version != VERSION:
        return f"protocol version {str(version)[:20]!r} not supported (this side speaks {VERSION})"
    if not isinstance(kind, str) or kind not in table:
        return f"unknown message type {str(kind)[:40]!r}; valid: {', '.join(table)}"
    return f"bad {kind} message: {str(exc)[:300]}"


def decode_request(line: bytes | str) -> Message:
    return decode(line, REQUESTS)


def decode_response(line: bytes | str) -> Message:
    return decode(line, RESPONSES)


def free_port() -> int:
    """A TCP port free on the loopback now, for a server started next (tests, demos, benchmarks)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        """Connect; to a service on another host, prove who we are with a MUNGE credential first."""
        sock = socket.create_connection(address, timeout=timeout)
        conn = cls(sock)
        if not is_loopback(sock.getpeername()[0]) and (credential := munge_credential()) is not None:
            reply = conn.request(Auth(credential=credential))
            if isinstance(reply, Error):
                conn.close()
                raise ConnectionRefusedError(f"the service refused our MUNGE credential: {reply.message}")
        return conn

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

    def closed_by_peer(self) -> bool:
        """Whether the other side has closed this idle connection (the service closes idle ones):
        a look that neither waits nor consumes anything."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and self.sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self.sock.close()


def munge_credential(timeout: float = 5.0) -> str | None:
    """A fresh MUNGE credential for this process's user (``munge -n``), or None without munge."""
    munge = shutil.which("munge")
    if munge is None:
        return None
    try:
        res = subprocess.run([munge, "-n"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def is_loopback(host: str) -> bool:
    """A service on this host knows a loopback peer from the kernel; others need ``auth``."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
