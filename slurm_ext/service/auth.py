"""Who is on the other end of a connection, and whether they may act on a job.

A connection from this host (the usual case: ranks on the cluster's nodes talk to a service
in the same network namespace) is identified by the kernel: the uid that owns the peer's
socket, read from ``/proc/net/tcp``/``tcp6`` as identd does (no message needed). A connection
from elsewhere must open with an ``auth`` message carrying a MUNGE credential (``munge -n``);
``unmunge`` names its uid and refuses replays. A connection identified neither way may only
``ping`` and read ``status``.

Rules: root and the service's own user (the SlurmUser on a site) may act on any job; anyone
else only on their own jobs.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from functools import lru_cache

MUNGE_TIMEOUT = 5.0
MUNGE_KEYS = "STATUS,UID"  # what unmunge is asked for (see peer_from_munge)


class AuthError(Exception):
    """A credential that does not prove who sent it."""


@dataclass(frozen=True)
class Peer:
    """The sender of the requests on one connection; ``uid`` None: not identified."""

    uid: int | None
    how: str  # "kernel" | "munge" | "unknown"

    @property
    def name(self) -> str:
        return "unidentified" if self.uid is None else user_name(self.uid)


UNKNOWN = Peer(None, "unknown")


@lru_cache(maxsize=1024)
def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@lru_cache(maxsize=1024)
def user_uid(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return int(name) if name.isdigit() else None


def may_act(peer: Peer, owner: str) -> bool:
    """Whether ``peer`` may resize a job owned by the user named ``owner``."""
    if peer.uid is None:
        return False
    if peer.uid in (0, os.getuid()):
        return True
    return user_uid(owner) == peer.uid


# -- the kernel's answer for local peers --------------------------------------------------------
# sock_diag (what `ss` uses): ask the kernel for one TCP socket by its four-tuple and read the uid
# that owns it. One small netlink round trip, where scanning /proc/net/tcp costs O(connections).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr
_REQUEST = struct.Struct("=BBBBI")  # inet_diag_req_v2 before its sockid
_SOCKID = struct.Struct(">HH16s16s")  # sport, dport, src, dst (network order); then if + cookie
_TAIL = struct.Struct("=III")
_REPLY = struct.Struct("=BBBB")  # inet_diag_msg before its sockid (48 bytes), then expires..uid


def _addr(family: int, host: str) -> bytes:
    return socket.inet_pton(family, host).ljust(16, b"\0")


def _diag_uid(family: int, src: tuple[str, int], dst: tuple[str, int]) -> int | None:
    """The uid owning the TCP socket whose local end is ``src`` and remote end ``dst``."""
    sockid = _SOCKID.pack(src[1], dst[1], _addr(family, src[0]), _addr(family, dst[0]))
    body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    body += _TAIL.pack(0, _NO_COOKIE, _NO_COOKIE)
    msg = _HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendto(msg, (0, 0))
        data = nl.recv(8192)
    _length, kind, _flags, _seq, _pid = _HEADER.unpack_from(data)
    if kind == _NLMSG_ERROR:
        return None
    # inet_diag_msg: 4 bytes, sockid (48), expires, rqueue, wqueue, uid, inode
    uid_at = _HEADER.size + _REPLY.size + 48 + 12
    return int(struct.unpack_from("=I", data, uid_at)[0])


def _proc_key(host: str, port: int) -> str:
    """An address as ``/proc/net/tcp[6]`` prints it (each 32-bit word in host byte order)."""
    raw = ipaddress.ip_address(host).packed
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    text = "".join(int.from_bytes(w, "little").to_bytes(4, "big").hex().upper() for w in words)
    return f"{text}:{port:04X}"


def _proc_uid(family: int, src: tuple[str, int], dst: tuple[str, int]) -> int | None:
    """The same answer from ``/proc/net/tcp[6]`` (where netlink is not allowed)."""
    table = "/proc/net/tcp6" if family == socket.AF_INET6 else "/proc/net/tcp"
    want_local, want_remote = _proc_key(*src), _proc_key(*dst)
    try:
        with open(table, encoding="ascii") as fh:
            for line in fh:
                if want_local in line:
                    cols = line.split()
                    if len(cols) > 7 and cols[1] == want_local and cols[2] == want_remote:
                        return int(cols[7])
    except OSError:
        pass
    return None


def peer_from_socket(sock: socket.socket) -> Peer:
    """The peer of an accepted TCP connection, if it lives in this network namespace."""
    try:
        here, there = sock.getsockname()[:2], sock.getpeername()[:2]
    except OSError:
        return UNKNOWN
    for lookup in (_diag_uid, _proc_uid):
        try:
            uid = lookup(sock.family, there, here)
        except (OSError, ValueError, struct.error):
            continue
        if uid is not None:
            return Peer(uid, "kernel")
    return UNKNOWN


# -- MUNGE for peers on other hosts ---------------------------------------------------------------
_UID_LINE = re.compile(r"^UID:\s+\S+\s+\((\d+)\)", re.MULTILINE)


def peer_from_munge(credential: str) -> Peer:
    """Decode a MUNGE credential with ``unmunge``; raises :class:`AuthError` if it proves nothing."""
    unmunge = shutil.which("unmunge")
    if unmunge is None:
        raise AuthError("this service cannot check MUNGE credentials (unmunge not installed)")
    try:  # only the keys read here: the default output names the encoding host, a reverse DNS lookup
        # that takes the resolver's timeout (as long as ours) whenever a query of it is lost
        res = subprocess.run(
            [unmunge, f"--keys={MUNGE_KEYS}"],
            input=credential,
            capture_output=True,
            text=True,
            timeout=MUNGE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise AuthError("unmunge timed out (is munged running?)") from None
    if res.returncode != 0:  # a replayed or expired credential still names a UID: never read it then
        status = next(
            (ln.split(":", 1)[1].strip() for ln in res.stdout.splitlines() if ln.startswith("STATUS:")), ""
        )
        raise AuthError(f"MUNGE credential refused: {status or res.stderr.strip()[:200] or 'unmunge failed'}")
    found = _UID_LINE.search(res.stdout)
    if found is None:
        raise AuthError("MUNGE credential without a UID")
    return Peer(int(found.group(1)), "munge")
