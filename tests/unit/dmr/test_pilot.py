"""The pilot's first contact with an EJB manager that is restarting (real sockets)."""

from __future__ import annotations

import json
import socket
import threading
import time

from dmr.launch import SUBJOB_NAME, LaunchSpec, is_subjob_of, subjob_name
from dmr.pilot import Pilot
from slurm_ext.protocol import free_port


def pilot(port: int) -> Pilot:
    return Pilot(LaunchSpec(argv=["true"], cwd="/"), 7, ["n1"], f"127.0.0.1:{port}:s3cret:sub")


def test_a_pilot_reaches_a_manager_that_comes_up_after_the_job_started():
    port = free_port()
    hello: list[dict] = []

    def manager_comes_up() -> None:
        time.sleep(1.5)  # the pilot's first attempts find nobody
        with socket.create_server(("127.0.0.1", port)) as srv:
            conn, _ = srv.accept()
            with conn, conn.makefile() as f:
                hello.append(json.loads(f.readline()))

    t = threading.Thread(target=manager_comes_up)
    t.start()
    p = pilot(port)
    assert p.first_contact(10.0)
    t.join(5)
    assert p.sock is not None
    p.sock.close()
    assert hello and hello[0]["op"] == "hello" and hello[0]["secret"] == "s3cret" and hello[0]["job"] == 7


def test_a_pilot_gives_up_after_its_wait():
    p = pilot(free_port())  # nobody listens
    t0 = time.monotonic()
    assert not p.first_contact(1.0)
    assert time.monotonic() - t0 >= 1.0


def test_a_placeholder_knows_its_own_subjobs_by_name_and_no_other_application_s():
    assert SUBJOB_NAME.fullmatch(subjob_name(9, 2))
    assert is_subjob_of(subjob_name(9, 2), 9)
    assert not is_subjob_of(subjob_name(90, 1), 9)  # another application whose id starts with 9
    assert not is_subjob_of(subjob_name(9, 2), 90)
    assert not is_subjob_of("ejb9.2x", 9) and not is_subjob_of("ejb9", 9) and not is_subjob_of("job9.2", 9)
