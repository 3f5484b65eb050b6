"""Reconfigurations in progress: at most one per job, each waiting for a commit or for acks."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Reconf:
    """One resize of one job, from the decision to its end."""

    job_id: int
    kind: str  # "expand" | "shrink"
    old_size: int
    new_size: int
    old_nodes: list[str]
    nodes: list[str] = field(default_factory=list)  # expand: added; shrink: kept
    for_job: int | None = None
    boosts: list[int] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: str = "deciding"  # deciding -> expanding -> waiting-commit | waiting-acks -> finishing
    started: float = field(default_factory=time.monotonic)
    acks: set[int] = field(default_factory=set)
    reason: str = ""
    strategy: str = ""  # expand: "merge" | "expander"
    helper_job: int | None = None  # expand by expander: the job hosting the new ranks
    own_nodes: list[str] = field(default_factory=list)  # the application job's own nodes before
    release: dict[int, tuple[list[str], bool]] = field(default_factory=dict)  # shrink: job -> (keep, ends)
    leaving_ranks: list[int] = field(default_factory=list)  # shrink: only these ranks' acks count
    owner: str | None = None  # the job's user: only they (or the service's admins) may commit/ack
    recovered: bool = False  # carried over from the journal of a service that stopped mid-resize


class InFlight:
    """Thread-safe registry; ``changed`` wakes whoever waits for acks."""

    def __init__(self, on_end: Callable[[int], None] | None = None) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self._by_job: dict[int, Reconf] = {}
        self._on_end = on_end  # e.g. drop the job's journal record

    def begin(self, reconf: Reconf) -> bool:
        """Register ``reconf``; False if the job already has one in flight."""
        with self.lock:
            if reconf.job_id in self._by_job:
                return False
            self._by_job[reconf.job_id] = reconf
            return True

    def get(self, job_id: int, token: str | None = None) -> Reconf | None:
        with self.lock:
            r = self._by_job.get(job_id)
            return r if r is not None and (token is None or r.token == token) else None

    def end(self, job_id: int, token: str) -> Reconf | None:
        with self.lock:
            r = self._by_job.get(job_id)
            if r is None or r.token != token:
                return None
            del self._by_job[job_id]
            if self._on_end is not None:
                self._on_end(job_id)
            self.changed.notify_all()
            return r

    def ack(self, job_id: int, token: str, rank: int) -> bool:
        with self.lock:
            r = self._by_job.get(job_id)
            if r is None or r.token != token or r.kind != "shrink":
                return False
            if r.leaving_ranks and rank not in r.leaving_ranks:
                return False  # not a rank that leaves: it cannot vouch that its node is empty
            r.acks.add(rank)
            self.changed.notify_all()
            return True

    def wait_acks(self, job_id: int, token: str, count: int, timeout: float) -> int:
        """Block until ``count`` acks arrived (or ``timeout``); returns how many did."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                r = self._by_job.get(job_id)
                if r is None or r.token != token:
                    return 0
                if len(r.acks) >= count:
                    return len(r.acks)
                left = deadline - time.monotonic()
                if left <= 0:
                    return len(r.acks)
                self.changed.wait(left)

    def reserved_nodes(self) -> int:
        """Nodes promised to expansions being carried out (not yet visible in snapshots)."""
        with self.lock:
            return sum(
                r.new_size - r.old_size
                for r in self._by_job.values()
                if r.kind == "expand" and r.state in ("deciding", "expanding")
            )

    def snapshot(self) -> dict[int, Reconf]:
        with self.lock:
            return dict(self._by_job)
