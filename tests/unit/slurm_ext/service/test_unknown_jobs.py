"""Checks for jobs that are not in Slurm's queue: answered from the cached snapshot, without a
reading of Slurm each (a flood of them costs the other users nothing)."""

from __future__ import annotations

from slurm_ext import protocol as p
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, ServiceOptions
from slurm_ext.service.auth import Peer
from slurm_ext.service.controller import left_queue

from .memory_backend import MemoryBackend


class Counting(MemoryBackend):
    def __init__(self, nodes: int) -> None:
        super().__init__(nodes)
        self.reads = 0

    def snapshot(self):  # noqa: ANN201
        self.reads += 1
        return super().snapshot()


def setup() -> tuple[Counting, Controller]:
    backend = Counting(4)
    backend.add(5, 1)
    backend.add(9, 1, user="alice")
    ctl = Controller(backend, DMRPolicy(), ServiceOptions(snapshot_interval=60))
    ctl.cache.fresh()
    return backend, ctl


def check(job_id: int) -> p.Check:
    return p.Check(job_id=job_id, current=1, min=1, max=4, nodes=["n1"])


def test_a_job_older_than_the_newest_in_the_snapshot_and_absent_from_it_has_left_the_queue() -> None:
    _, ctl = setup()
    snap = ctl.cache.fresh()
    assert left_queue(snap, 3) and left_queue(snap, 7)
    assert not left_queue(snap, 5)  # in it
    assert not left_queue(snap, 10)  # newer than anything read: maybe submitted since


def test_checks_for_ended_jobs_are_answered_on_the_spot_without_reading_slurm() -> None:
    backend, ctl = setup()
    reads = backend.reads
    bob = Peer(uid=1001, how="kernel")
    for job_id in (1, 2, 3, 4, 6, 7, 8):
        answer = ctl.check_now(check(job_id), bob)
        assert answer is not None and answer.action == "none", answer
        assert answer.reason == f"job {job_id} is not in Slurm's queue"
        answer = ctl.check(check(job_id), bob)  # the full check decides the same, as quickly
        assert answer.action == "none" and "not running" in answer.reason, answer
    assert backend.reads == reads


def test_a_job_newer_than_the_snapshot_is_looked_up_in_a_fresh_reading() -> None:
    backend, ctl = setup()
    reads = backend.reads
    assert ctl.check_now(check(12), None) is None  # the full check must look
    answer = ctl.check(check(12), None)
    assert answer.action == "none" and backend.reads == reads + 1
