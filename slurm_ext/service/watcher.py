"""One snapshot of the cluster shared by every request, refreshed in the background.

A "no action" answer comes from the cached snapshot (sub-millisecond); before acting,
the controller asks for a fresh one (:meth:`SnapshotCache.fresh`), so actions never
rest on stale data. One reader at a time: callers waiting behind a refresh share the next one.

An answer never waits on a slow or absent slurmctld: with the watcher running, a request that
needs a fresh snapshot (``patience`` given) asks the watcher for its next reading and waits at
most ``patience`` seconds for it, and never past the age at which the watcher's readings are
overdue (two intervals and two readings' time); while Slurm is known to be unreachable (the last
reading failed: the circuit is open), or readings are overdue, it is told so at once. The
watcher keeps trying every interval and closes the circuit at its first good reading.
"""

from __future__ import annotations

import logging
import threading
import time

from slurm_ext.backend import ClusterBackend
from slurm_ext.errors import SlurmUnavailable
from slurm_ext.model import Snapshot

log = logging.getLogger("slurm_ext.service")


class SnapshotCache:
    def __init__(self, backend: ClusterBackend, interval: float = 1.0) -> None:
        self.backend = backend
        self.interval = interval
        self._lock = threading.Lock()  # one reading at a time
        self._cond = threading.Condition()  # readings finished (or failed), for waiting requests
        self._snap: Snapshot | None = None
        self._taken = 0.0  # when the cached snapshot was finished (its age)
        self._began = 0.0  # when its reading began: what it can have seen
        self._duration = 0.0  # how long that reading took
        self._outage: tuple[float, str] | None = None  # (since, error) while readings fail
        self._wanted = threading.Event()  # a request waits for the watcher's next reading
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, max_age: float | None = None, patience: float | None = None) -> Snapshot:
        """The cached snapshot, refreshed first if older than ``max_age`` (default: the interval x 2)."""
        snap = self.current(max_age)
        return snap if snap is not None else self.fresh(patience)

    def current(self, max_age: float | None = None) -> Snapshot | None:
        """The cached snapshot if it is recent enough (as :meth:`get`), else None; never waits."""
        limit = self.interval * 2 if max_age is None else max_age
        snap = self._snap
        return snap if snap is not None and time.monotonic() - self._taken <= limit else None

    @property
    def outage(self) -> str | None:
        """Why Slurm is taken to be unreachable now (the circuit is open), or None."""
        out = self._outage
        return None if out is None else f"for {time.monotonic() - out[0]:.0f} s: {out[1]}"

    def fresh(self, patience: float | None = None) -> Snapshot:
        """A snapshot whose reading began after this call: it sees everything done before it.

        ``patience`` None: read now (in this thread). Given, and the watcher running: the
        watcher's next reading, waited for at most ``patience`` seconds; raises
        :class:`SlurmUnavailable` at once while the circuit is open, or when the time is up.
        """
        if patience is None or self._thread is None or not self._thread.is_alive():
            return self._read()
        if (why := self.outage) is not None:
            raise SlurmUnavailable(f"unreachable {why}")
        asked = time.monotonic()
        if self._snap is not None:  # no waiting past the age at which readings are overdue
            overdue = max(patience, 2 * (self.interval + self._duration))
            age = asked - self._taken
            if age >= overdue:
                raise SlurmUnavailable(f"no reading of Slurm has finished for {age:.1f} s")
            patience = min(patience, overdue - age)
        self._wanted.set()
        with self._cond:
            self._cond.wait_for(
                lambda: self._began > asked or self._outage is not None or self._stop.is_set(), patience
            )
            if self._snap is not None and self._began > asked:
                return self._snap
        if (why := self.outage) is not None:
            raise SlurmUnavailable(f"unreachable {why}")
        raise SlurmUnavailable(f"no reading of Slurm has finished for {time.monotonic() - self._taken:.1f} s")

    def _read(self) -> Snapshot:
        """Read now, unless a reading that began after this call has finished meanwhile.

        Callers that queued behind one refresh share the next one. A refresh already under way
        when the call came may have read the queue before the caller's own ``sbatch``, so it
        does not count.
        """
        asked = time.monotonic()
        with self._lock:
            if self._snap is not None and self._began > asked:
                return self._snap
            began = time.monotonic()
            try:
                snap = self.backend.snapshot()
            except SlurmUnavailable as exc:
                with self._cond:
                    if self._outage is None:
                        log.warning("Slurm is unreachable; checks get 'no action' until it is back: %s", exc)
                        self._outage = (began, str(exc))
                    self._cond.notify_all()
                raise
            with self._cond:
                if self._outage is not None:
                    log.warning("Slurm is back after %.0f s", time.monotonic() - self._outage[0])
                    self._outage = None
                self._snap, self._taken, self._began = snap, time.monotonic(), began
                self._duration = self._taken - began
                self._cond.notify_all()
            return snap

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                self._wanted.wait(self.interval)  # the interval, or at once when a request waits
                self._wanted.clear()
                if self._stop.is_set():
                    return
                try:
                    self._read()
                except SlurmUnavailable:
                    pass  # logged once per outage; the circuit stays open until a good reading
                except Exception as exc:  # keep serving from the last snapshot
                    log.warning("snapshot refresh failed: %s", exc)

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="snapshot-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
