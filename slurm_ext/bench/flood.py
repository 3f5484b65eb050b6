"""Another user's flood of the control service, run as that user (stdlib only: it runs under the
system Python, outside this package's environment, or inside a container of the dockerized cluster).

``python3 flood.py HOST PORT IDLE FLOODERS SECONDS [--auth HEX] LINE_HEX...``: opens IDLE connections,
sends one request on each, and keeps those the service accepts open and silent; then (in room made
by closing FLOODERS of them) sends the request lines (hex-encoded, in turn) as fast as answers come
on FLOODERS connections for SECONDS. ``--auth``: every connection opens with this auth message
(hex-encoded), its ``MUNGE_CREDENTIAL`` replaced by a fresh ``munge -n`` credential: how a client on
another host proves who it is. Prints one JSON object: connections held and refused, requests
answered.
"""

import json
import socket
import subprocess
import sys
import threading
import time
from typing import BinaryIO

CREDENTIAL = b"MUNGE_CREDENTIAL"  # the placeholder in --auth's message


def connect(host: str, port: int, auth: bytes) -> tuple[socket.socket, BinaryIO]:
    """A connection and its reader; with ``auth``, proven to be this user's (raises if refused)."""
    sock = socket.create_connection((host, port))
    reader = sock.makefile("rb")
    if auth:
        res = subprocess.run(["munge", "-n"], capture_output=True, check=True)
        sock.sendall(auth.replace(CREDENTIAL, res.stdout.strip()))
        reply = reader.readline()
        if b'"ok":true' not in reply.replace(b" ", b""):
            sock.close()
            raise OSError(f"auth refused: {reply[:200]!r}")
    return sock, reader


def main() -> None:
    args = sys.argv[1:]
    auth = b""
    if "--auth" in args:
        at = args.index("--auth")
        auth = bytes.fromhex(args[at + 1])
        del args[at : at + 2]
    host, port, idle, flooders, seconds = args[0], int(args[1]), int(args[2]), int(args[3]), float(args[4])
    lines = [bytes.fromhex(h) for h in args[5:]]
    held, refused = [], 0
    for _ in range(idle):  # one request each: past its share the service refuses it and closes
        sock, reader = connect(host, port, auth)
        sock.sendall(lines[0])
        if b"too many connections" in reader.readline():
            refused += 1
            sock.close()
        else:
            held.append(sock)  # accepted: it stays open and silent
    for sock in held[:flooders]:
        sock.close()  # room in its share for the flooding connections
    time.sleep(0.2)
    answered = [0] * flooders

    def flood(i: int) -> None:
        try:
            sock, reader = connect(host, port, auth)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sock.sendall(lines[i % len(lines)])
                if not reader.readline():
                    return
                answered[i] += 1
        except OSError:
            return

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(flooders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result = {"held": len(held), "refused": refused, "answered": sum(answered)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
