"""The snapshot cache: a fresh snapshot sees everything done before it was asked for."""

from __future__ import annotations

import threading
import time

import pytest

from slurm_ext.errors import SlurmUnavailable
from slurm_ext.model import Snapshot
from slurm_ext.service.watcher import SnapshotCache


class SlowQueue:
    """A backend whose first read blocks until released; every read returns how many jobs were
    submitted when the read began (what a real squeue can have seen)."""

    def __init__(self) -> None:
        self.submitted = 0
        self.reading = threading.Event()
        self.release = threading.Event()
        self.reads = 0

    def snapshot(self) -> Snapshot:
        seen = self.submitted
        self.reads += 1
        if self.reads == 1:
            self.reading.set()
            self.release.wait(5)
        return Snapshot(time=float(seen), nodes=(), jobs=())


def test_a_refresh_under_way_when_asked_does_not_count_as_fresh() -> None:
    backend = SlowQueue()
    cache = SnapshotCache(backend)  # type: ignore[arg-type]
    background = threading.Thread(target=cache.fresh)
    background.start()  # the watcher's refresh: its squeue runs before the submission below
    assert backend.reading.wait(5)
    backend.submitted = 1  # the user's sbatch returns...
    got: list[Snapshot] = []
    caller = threading.Thread(target=lambda: got.append(cache.fresh()))
    caller.start()  # ...and the manager asks for a fresh snapshot to find the job
    backend.release.set()
    background.join(5)
    caller.join(5)
    assert got[0].time == 1.0, "the caller got a snapshot read before its job existed"
    assert backend.reads == 2


def test_every_caller_queued_behind_a_stale_refresh_sees_the_job() -> None:
    backend = SlowQueue()
    cache = SnapshotCache(backend)  # type: ignore[arg-type]
    first = threading.Thread(target=cache.fresh)
    first.start()
    assert backend.reading.wait(5)
    backend.submitted = 1
    got: list[Snapshot] = []
    callers = [threading.Thread(target=lambda: got.append(cache.fresh())) for _ in range(3)]
    for c in callers:
        c.start()
    backend.release.set()
    for c in [first, *callers]:
        c.join(5)
    assert [s.time for s in got] == [1.0, 1.0, 1.0]  # they may share one read, never the stale one


class Outage:
    """A backend that fails (``down``: as squeue does when slurmctld is away), hangs (``hang``
    seconds per read: slurmctld up but not answering) or answers."""

    def __init__(self) -> None:
        self.down = False
        self.hang = 0.0
        self.reads = 0

    def snapshot(self) -> Snapshot:
        self.reads += 1
        time.sleep(self.hang)
        if self.down:
            raise SlurmUnavailable("squeue: Unable to contact slurm controller")
        return Snapshot(time=time.time(), nodes=(), jobs=())


def watched(backend: Outage) -> SnapshotCache:
    cache = SnapshotCache(backend, interval=0.05)  # type: ignore[arg-type]
    cache.start()
    return cache


def test_while_slurm_is_down_a_request_is_told_at_once_and_served_again_when_it_is_back() -> None:
    backend = Outage()
    cache = watched(backend)
    try:
        cache.fresh(patience=1.0)
        backend.down = True
        with pytest.raises(SlurmUnavailable):
            cache.fresh(patience=1.0)  # the reading it waits for fails: the circuit opens
        assert cache.outage is not None and "Unable to contact" in cache.outage
        t0 = time.perf_counter()
        with pytest.raises(SlurmUnavailable, match="unreachable for"):
            cache.fresh(patience=1.0)
        assert time.perf_counter() - t0 < 0.01  # no Slurm call, no wait: the circuit is open
        backend.down = False
        deadline = time.monotonic() + 5
        while cache.outage is not None and time.monotonic() < deadline:
            time.sleep(0.01)  # the watcher keeps reading, and closes the circuit
        assert cache.outage is None and cache.fresh(patience=1.0) is not None
    finally:
        cache.stop()


def test_a_request_waits_no_longer_than_its_patience_for_a_slurm_that_hangs() -> None:
    backend = Outage()
    cache = watched(backend)
    try:
        cache.fresh(patience=1.0)  # a good reading first
        backend.hang = 3.0
        time.sleep(0.1)  # the watcher is inside a reading that will take 3 s
        t0 = time.perf_counter()
        with pytest.raises(SlurmUnavailable, match="no reading of Slurm has finished for"):
            cache.fresh(patience=0.2)
        assert time.perf_counter() - t0 < 0.5
        time.sleep(0.2)  # readings are overdue now: told at once
        t0 = time.perf_counter()
        with pytest.raises(SlurmUnavailable, match="no reading of Slurm has finished for"):
            cache.fresh(patience=0.2)
        assert time.perf_counter() - t0 < 0.01
    finally:
        backend.hang = 0.0
        cache.stop()


def test_requests_waiting_for_a_fresh_reading_share_the_watchers() -> None:
    backend = Outage()
    cache = watched(backend)
    try:
        backend.hang = 0.1  # a reading takes 0.1 s: the requests come while one is under way
        time.sleep(0.1)
        before = backend.reads
        got: list[Snapshot] = []
        callers = [threading.Thread(target=lambda: got.append(cache.fresh(patience=2.0))) for _ in range(20)]
        for c in callers:
            c.start()
        for c in callers:
            c.join(5)
        assert len(got) == 20
        assert backend.reads - before <= 3  # the one under way, the next (shared), maybe one more
    finally:
        cache.stop()


def test_without_the_watcher_a_fresh_reading_is_made_by_the_caller() -> None:
    backend = Outage()
    cache = SnapshotCache(backend)  # type: ignore[arg-type]
    cache.fresh(patience=0.1)
    assert backend.reads == 1
