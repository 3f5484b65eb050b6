"""Another user's flood of the control service, run as that user (stdlib only: it runs under the
system Python, outside this package's environment).

``python3 flood.py HOST PORT IDLE FLOODERS SECONDS LINE_HEX...``: opens IDLE connections, sends
one request on each, and keeps those the service accepts open and silent; then (in room made by
closing FLOODERS of them) sends the request lines (hex-encoded, in turn) as fast as answers come
on FLOODERS connections for SECONDS. Prints one JSON object: connections held and refused, requests answered.
"""

import json
import socket
import sys
import threading
import time


def main() -> None:
    host, port, idle, flooders, seconds = (
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
        float(sys.argv[5]),
    )
    lines = [bytes.fromhex(h) for h in sys.argv[6:]]
    opened = [socket.create_connection((host, port)) for _ in range(idle)]
    held, refused = [], 0
    for sock in opened:  # one request each: past its share the service refuses it and closes
        sock.sendall(lines[0])
        reply = sock.makefile("rb").readline()
        if b"too many connections" in reply:
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
            sock = socket.create_connection((host, port))
            reader = sock.makefile("rb")
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
