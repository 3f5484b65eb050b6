"""The resize journal: each step of a resize is on disk before it is carried out.

One small JSON file per job with a resize in flight (written whole, then renamed into place, so a
crash leaves the old or the new record, never half of one). A service that starts again reads the
records its predecessor left and repairs what they describe (see ``Controller.repair``).

``crash_point(step)`` (:mod:`slurm_ext.faults`) ends the process at a named step when
``ELASTIC_CRASH_AT`` names it: the fault-injection hook of the crash tests, inert otherwise.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from slurm_ext.faults import crash_point
from slurm_ext.service.inflight import Reconf

# the steps, in the order a resize goes through them
EXPAND_DECIDED = "expand:decided"  # nodes not yet asked for
EXPAND_MERGED = "expand:merged"  # merge: the nodes are in the application's job
EXPANDER_SUBMITTED = "expand:expander-submitted"  # expander: the second job is in the queue
EXPAND_ANSWERED = "expand:answered"  # the answer goes out now; the application starts ranks, commits
SHRINK_DECIDED = "shrink:decided"  # the application is told which groups leave
SHRINK_ACKED = "shrink:acked"  # every leaving rank is gone: release the nodes
STEPS = (EXPAND_DECIDED, EXPAND_MERGED, EXPANDER_SUBMITTED, EXPAND_ANSWERED, SHRINK_DECIDED, SHRINK_ACKED)
# crash points that are not journal steps: a request of the application has just arrived
COMMIT_RECEIVED = "expand:commit-received"
READY_RECEIVED = "shrink:ready-received"


class Journal:
    """Records under ``directory`` (None: a journal that keeps nothing, for in-process services)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def write(self, r: Reconf, step: str) -> None:
        if self.directory is not None:
            record = {k: v for k, v in asdict(r).items() if k not in ("acks", "started")}
            record |= {"step": step, "wall": time.time()}
            path = self.directory / f"{r.job_id}.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(record))
            os.replace(tmp, path)
        crash_point(step)

    def remove(self, job_id: int) -> None:
        if self.directory is not None:
            (self.directory / f"{job_id}.json").unlink(missing_ok=True)

    def records(self) -> list[dict[str, Any]]:
        if self.directory is None:
            return []
        out = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                path.unlink(missing_ok=True)  # unreadable: nothing can be repaired from it
        return out


def reconf_from(record: dict[str, Any]) -> Reconf:
    """A journal record back as an in-flight resize (its clock restarted now)."""
    fields = {k: v for k, v in record.items() if k in Reconf.__dataclass_fields__}
    release = record.get("release", {})
    fields["release"] = {int(job): (list(keep), bool(ends)) for job, (keep, ends) in release.items()}
    return Reconf(**fields)
