"""The snapshot cache: a fresh snapshot sees everything done before it was asked for."""

from __future__ import annotations

import threading

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
