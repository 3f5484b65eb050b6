"""What the service did, as structured events (JSON lines) and Prometheus metrics.

Every decision and every step of a resize becomes one event: ``time``, ``kind`` (``decision``,
``expand``, ``shrink``, ``commit``, ``refused``, ``repair``, ``failed``), ``job``, ``policy`` and
what the kind has (sizes before/after, reason, each phase's duration in seconds). The events go to
``<state_dir>/service/events.jsonl`` (``slurm-ext events`` prints them) and feed the metrics that
``slurm-ext serve --metrics-port P`` exposes; benchmarks read their numbers from the events too.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

RESIZE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The service's Prometheus metrics, in a registry of their own (one per service)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "elastic_decisions", "Answers to checks, by policy and action", ["policy", "action"],
            registry=self.registry,
        )  # fmt: skip
        self.resize_seconds = Histogram(
            "elastic_resize_seconds", "Decision to nodes held (expand) or released (shrink)",
            ["kind", "strategy"], buckets=RESIZE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.errors = Counter("elastic_errors", "Failed resizes and refused requests", ["kind"],
                              registry=self.registry)  # fmt: skip
        self.jobs = Gauge("elastic_jobs", "Jobs on the cluster by state", ["state"], registry=self.registry)
        self.in_flight = Gauge("elastic_resizes_in_flight", "Resizes in flight", registry=self.registry)


class EventLog:
    """Appends events to a JSON-lines file (None: metrics only) and updates the metrics."""

    def __init__(self, path: Path | None, policy: str) -> None:
        self.path = path
        self.policy = policy
        self.metrics = Metrics()
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def emit(self, kind: str, job: int, **fields: Any) -> None:
        event = {"time": round(time.time(), 6), "kind": kind, "job": job, "policy": self.policy, **fields}
        m = self.metrics
        if kind == "decision":
            m.decisions.labels(self.policy, fields.get("action", "none")).inc()
        elif kind in ("expand", "shrink") and "seconds" in fields:
            m.resize_seconds.labels(kind, fields.get("strategy", "")).observe(fields["seconds"])
        elif kind in ("failed", "refused"):
            m.errors.labels(kind).inc()
        if self.path is None:
            return
        line = json.dumps(event, separators=(",", ":")) + "\n"
        with self._lock, self.path.open("a") as fh:
            fh.write(line)


def read_events(path: Path, job: int | None = None) -> Iterator[dict[str, Any]]:
    """The events in ``path`` (of one job if given); unreadable lines are skipped."""
    try:
        fh = path.open()
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if job is None or event.get("job") == job:
                yield event
