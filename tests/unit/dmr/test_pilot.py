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


def test_a_pilot_reports_a_failed_group_at_once_and_stops_its_others(monkeypatch):
    import subprocess

    from dmr import launch

    monkeypatch.setattr(launch, "FAIL_GRACE", 0.3)
    a, b = socket.socketpair()
    p = Pilot(LaunchSpec(argv=["true"], cwd="/"), 7, ["n1", "n2"], "127.0.0.1:1:s3cret:sub")
    p.sock = a
    blocked = subprocess.Popen(["sleep", "60"])  # a group waiting in MPI on the dead ranks
    dying = subprocess.Popen(["sh", "-c", "sleep 0.3; kill -9 $$"])
    p.procs = [blocked, dying]
    p.nodes_of = {blocked.pid: "n1", dying.pid: "n2"}
    p.reported = False
    threading.Thread(target=p.watch, daemon=True).start()
    b.settimeout(10)
    reader = b.makefile()
    failed = json.loads(reader.readline())
    assert failed["op"] == "failed" and failed["code"] == 137
    assert failed["why"] == "the group on n2 of job 7 was killed by signal 9 (SIGKILL)"
    ended = json.loads(reader.readline())  # then, every group gone: the usual report
    assert ended["op"] == "ended" and blocked.poll() is not None
    a.close()
    b.close()


def test_a_pilot_names_the_group_that_ended_first_when_its_peers_have_crashed_too(monkeypatch):
    """Both groups have failed by the time the pilot looks (it looks every 0.2 s): the one that ended
    first is named, not the first in launch order (as the agent does: test_agent_failure.py)."""
    import subprocess

    from dmr import launch

    monkeypatch.setattr(launch, "FAIL_GRACE", 0.1)
    a, b = socket.socketpair()
    p = Pilot(LaunchSpec(argv=["true"], cwd="/"), 7, ["n1", "n2"], "127.0.0.1:1:s3cret:sub")
    p.sock = a
    peer = subprocess.Popen(["sh", "-c", "sleep 0.3; kill -11 $$"])  # crashes in MPI a moment later
    dead = subprocess.Popen(["sh", "-c", "kill -9 $$"])
    p.adopt([peer, dead], ["n1", "n2"])
    peer.wait()
    dead.wait()
    p._watch_failure()
    assert p.failure is not None
    assert p.failure["why"] == "the group on n2 of job 7 was killed by signal 9 (SIGKILL)"
    a.close()
    b.close()


def test_groups_stopped_on_an_order_are_no_failure():
    import subprocess

    a, b = socket.socketpair()
    p = Pilot(LaunchSpec(argv=["true"], cwd="/"), 7, ["n1"], "127.0.0.1:1:s3cret:sub")
    p.sock = a
    p.procs = [subprocess.Popen(["sleep", "60"])]
    p.reported = False
    p.stop()  # the manager's "exit": terminated, not failed
    p._watch_failure()
    assert p.failure is None
    a.close()
    b.close()


def test_a_failure_seen_while_the_coordinator_is_away_comes_with_the_next_hello(monkeypatch):
    import subprocess

    from dmr import launch

    monkeypatch.setattr(launch, "FAIL_GRACE", 0.2)
    port = free_port()
    p = Pilot(LaunchSpec(argv=["true"], cwd="/"), 7, ["n1", "n2"], f"127.0.0.1:{port}:s3cret:sub")
    blocked = subprocess.Popen(["sleep", "60"])
    dying = subprocess.Popen(["sh", "-c", "kill -9 $$"])
    p.procs = [blocked, dying]
    p.nodes_of = {blocked.pid: "n1", dying.pid: "n2"}
    p.reported = False
    threading.Thread(target=p.watch, daemon=True).start()  # p.sock is None: nobody to tell
    deadline = time.monotonic() + 10
    while blocked.poll() is None and time.monotonic() < deadline:  # stopped without a coordinator
        time.sleep(0.05)
    assert blocked.poll() is not None
    with socket.create_server(("127.0.0.1", port)) as srv:
        assert p.connect()  # the coordinator is back
        conn, _ = srv.accept()
        with conn, conn.makefile() as f:
            hello = json.loads(f.readline())
    assert hello["op"] == "hello" and not hello["running"]
    assert hello["failed"]["code"] == 137 and "the group on n2 of job 7" in hello["failed"]["why"]
    assert p.sock is not None
    p.sock.close()


def test_a_pilot_queues_only_held_sbatch_jobs_for_its_manager_and_reports_each(tmp_path):
    # what the manager asks of a pilot when its pool of spares runs low: the pilot (the job's owner)
    # runs sbatch; anything but a held sbatch is refused, and sbatch's failure goes back as said
    ours, theirs = socket.socketpair()
    p = pilot(free_port())
    p.sock = ours
    fake = tmp_path / "sbatch"  # the first sbatch on PATH: one that fails as Slurm's does at a limit
    fake.write_text("#!/bin/sh\necho 'sbatch: error: QOSMaxSubmitJobPerUserLimit' >&2\nexit 1\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    works = tmp_path / "ok"
    works.mkdir()
    (works / "sbatch").write_text("#!/bin/sh\necho '123;cluster'\n")  # sbatch --parsable's answer
    (works / "sbatch").chmod(0o755)
    p.queue_spares({"spares": [
        {"index": 4, "argv": ["rm", "-rf", str(tmp_path)], "env": env, "cwd": str(tmp_path)},
        {"index": 5, "argv": ["sbatch", "job.sh"], "env": env, "cwd": str(tmp_path)},
        {"index": 6, "argv": ["sbatch", "--hold", "job.sh"], "env": env, "cwd": str(tmp_path)},
        {"index": 7, "argv": ["sbatch", "--hold", "job.sh"], "env": {"PATH": str(works)}, "cwd": "/"},
    ]})  # fmt: skip
    ours.close()
    with theirs, theirs.makefile() as f:
        replies = [json.loads(line) for line in f]
    assert replies == [
        {"op": "spare", "index": 4, "error": "not a held sbatch"},
        {"op": "spare", "index": 5, "error": "not a held sbatch"},
        {"op": "spare", "index": 6, "error": "sbatch: error: QOSMaxSubmitJobPerUserLimit"},
        {"op": "spare", "index": 7, "job": 123},
    ]
    assert fake.exists()  # nothing but sbatch ran
