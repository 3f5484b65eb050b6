"""One snapshot of the cluster shared by every request, refreshed in the background.

A "no action" answer comes from the cached snapshot (sub-millisecond); before acting,
the controller asks for a fresh one (:meth:`SnapshotCache.fresh`), so actions never
rest on stale data. One reader at a time: callers waiting behind a refresh share the next one.
"""

from __future__ import annotations

import logging
import threading
import time

from slurm_ext.backend import ClusterBackend
from slurm_ext.model import Snapshot

log = logging.getLogger("slurm_ext.service")


class SnapshotCache:
    def __init__(self, backend: ClusterBackend, interval: float = 1.0) -> None:
        self.backend = backend
        self.interval = interval
        self._lock = threading.Lock()
        self._snap: Snapshot | None = None
        self._taken = 0.0  # when the cached snapshot was finished (its age)
        self._began = 0.0  # when its reading began: what it can have seen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, max_age: float | None = None) -> Snapshot:
        """The cached snapshot, refreshed first if older than ``max_age`` (default: the interval x 2)."""
        limit = self.interval * 2 if max_age is None else max_age
        snap = self._snap
        if snap is not None and time.monotonic() - self._taken <= limit:
            return snap
        return self.fresh()

    def current(self, max_age: float | None = None) -> Snapshot | None:
        """The cached snapshot if it is recent enough (as :meth:`get`), else None; never waits."""
        limit = self.interval * 2 if max_age is None else max_age
        snap = self._snap
        return snap if snap is not None and time.monotonic() - self._taken <= limit else None

    def fresh(self) -> Snapshot:
        """A snapshot whose reading began after this call: it sees everything done before it.

        Callers that queued behind one refresh share the next one. A refresh already under way
        when the call came may have read the queue before the caller's own ``sbatch``, so it
        does not count.
        """
        asked = time.monotonic()
        with self._lock:
            if self._snap is not None and self._began > asked:
                return self._snap
            began = time.monotonic()
            snap = self.backend.snapshot()
            self._snap, self._taken, self._began = snap, time.monotonic(), began
            return snap

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval):
                try:
                    self.fresh()
                except Exception as exc:  # keep serving from the last snapshot
                    log.warning("snapshot refresh failed: %s", exc)

        self._thread = threading.Thread(target=loop, name="snapshot-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
