"""Who may act on a job: the kernel names a local peer; only a job's owner (or root) may resize it."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from slurm_ext import protocol as p
from slurm_ext.service import Server, auth
from slurm_ext.service.auth import peer_from_munge, peer_from_socket, user_uid
from tests.users import as_user

from .test_service import check, make


def test_the_kernel_names_the_peer_of_a_local_connection():
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as listener:
            listener.bind((host, 0))
            listener.listen()
            with socket.create_connection(listener.getsockname()[:2]):
                accepted, _ = listener.accept()
                with accepted:
                    peer = peer_from_socket(accepted)
        assert peer.uid == os.getuid() and peer.how == "kernel"


def test_another_user_cannot_resize_ack_or_commit_for_my_job(other_user):
    backend, ctl = make()
    backend.add(1, 1, user="root")
    backend.add(2, 1, user=other_user)
    server = Server(ctl, port=0)
    server.start()
    try:
        refused = as_user(other_user, server.address, check(1, 1, list(backend.jobs[1].nodes), hi=1))
        assert isinstance(refused, p.Error) and "permission denied: job 1 belongs to root" in refused.message
        assert ctl.inflight.get(1) is None and ctl.counters["refused"] == 1
        # the owner is answered
        mine = as_user(other_user, server.address, check(2, 1, list(backend.jobs[2].nodes), hi=1))
        assert isinstance(mine, p.Decision), mine
        # root's job is growing: even with its token leaked, nobody else may ack, commit or shrink it
        ctl_check = ctl.check(check(1, 1, list(backend.jobs[1].nodes), hi=2))
        assert ctl_check.action == "expand", ctl_check
        for forged in (
            p.Ack(job_id=1, token=ctl_check.token, rank=1),
            p.Commit(job_id=1, token=ctl_check.token, ok=False),
            p.ShrinkReady(job_id=1, token=ctl_check.token, acks=0),
        ):
            answer = as_user(other_user, server.address, forged)
            assert isinstance(answer, p.Error) and "permission denied" in answer.message, (forged, answer)
        assert ctl.inflight.get(1) is not None  # untouched by the forgeries
        assert ctl.commit(p.Commit(job_id=1, token=ctl_check.token, ok=True)).ok  # the owner's side
    finally:
        server.stop()
    log_uid = user_uid(other_user)
    assert log_uid is not None and log_uid != 0
    assert json.loads(ctl.status().encode())["counters"]["refused"] == 4


# unmunge whose reverse lookup of the encoding host never answers (a resolver that lost the query):
# it prints ENCODE_HOST unless asked for other keys only
SLOW_RESOLVER_UNMUNGE = """#!/bin/sh
keys=ENCODE_HOST
for a in "$@"; do case "$a" in --keys=*) keys=${a#--keys=};; -k) keys=;; esac; done
cat >/dev/null
case ",$keys," in *,ENCODE_HOST,*) exec sleep 30;; esac
printf 'STATUS:          Success (0)\\nUID:             alice (2001)\\n'
"""


def test_a_munge_credential_is_decoded_without_looking_up_the_encoding_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in the dockerized cluster: one decode in a hundred or so took the resolver's 5 s (the
    reverse lookup of a container's address), as long as MUNGE_TIMEOUT, and the peer was refused."""
    fake = tmp_path / "unmunge"
    fake.write_text(SLOW_RESOLVER_UNMUNGE)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(auth, "MUNGE_TIMEOUT", 2.0)
    peer = peer_from_munge("MUNGE:credential:")
    assert peer.uid == 2001 and peer.how == "munge"
