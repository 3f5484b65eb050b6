"""Running a request as another Unix user (for the authorisation tests)."""

from __future__ import annotations

import subprocess

from slurm_ext import protocol as p

# Runs as the other user, with the system's Python (ours is under /root): one request, one reply.
CLIENT = """
import socket, sys
host, port, line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with socket.create_connection((host, port), timeout=20) as sock:
    sock.sendall(line.encode())
    print(sock.makefile("rb").readline().decode(), end="")
"""


def as_user(user: str, address: tuple[str, int], msg: p.Message) -> p.Message:
    out = subprocess.run(
        ["runuser", "-u", user, "--", "/usr/bin/python3", "-c", CLIENT, *map(str, address),
         msg.encode().decode()],
        capture_output=True, text=True, timeout=30, check=True, cwd="/",
    )  # fmt: skip
    return p.decode_response(out.stdout)
