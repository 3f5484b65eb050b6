"""What the EJB manager knows of each bundled application, and how it is kept on disk.

One :class:`AppRecord` per application, known by its placeholder ``J0``'s job id (the id
``ejb-submit`` printed); one :class:`SubjobRecord` per Slurm job EJB submitted for it (``J0``
is key 0), or took from the application's spares (held jobs ejb-submit queued for a manager that
cannot submit as their owner). The whole state -- these records and EJB-sched's own
(:class:`ejb.scheduler.EJBScheduler`) -- is written after every change, to a temporary file then
renamed, so a manager killed at any moment restarts from the last complete state.
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ejb.scheduler import EJBScheduler


@dataclass
class SubjobRecord:
    key: int
    job_id: int | None
    nodes: int
    limit: float  # seconds
    secret: str  # the pilot of this job proves who it is with it
    state: str = "pending"  # pending | running | gone
    hosts: list[str] = field(default_factory=list)
    members: bool = False  # groups of the application run here
    leaving: bool = False  # its ranks move away; the job ends once they have
    cancelled: bool = False  # EJB cancelled it: a late start or its ranks' exit codes do not count
    ended_at: float | None = None
    spare: int | None = None  # the spare (its index) this subjob was made from; None: submitted by EJB


@dataclass
class Migration:
    """A move of ranks: groups start in ``to`` (expand), then the groups in ``source`` leave (shrink)."""

    to: list[int]
    source: list[int]
    phase: str = "expand"  # expand | joining | shrink | leaving
    token: str = ""
    tries: int = 0
    started: float = 0.0


@dataclass
class AppRecord:
    eid: int  # J0's job id
    owner: str
    uid: int
    options: list[list[str | None]]  # the user's sbatch options as (name, value) pairs, value None: a flag
    script: list[str]  # the batch script and its arguments, or ["--wrap", command]
    cwd: str
    env: dict[str, str]
    ppn: int  # tasks per node the job asked for
    o_max: int = 4  # most ranks per CPU (ejb-submit --ejb-o-max, else the manager's)
    migration_cost: float = 10.0  # seconds a migration costs, for EJB-sched (--ejb-migration)
    command: str = ""  # the user's command line as typed (as scontrol's SubmitLine shows it to all)
    nodes: int = 0  # P: J0's node count (from Slurm)
    partition: str = ""  # J0's partition(s), Slurm's comma list: its subjobs' slots are found there
    limit: float = 0.0  # R: J0's time limit, seconds (from Slurm)
    output: str = ""  # J0's output file: every subjob appends to it
    error: str = ""  # J0's error file ("": errors go to the output file)
    submitted: float = 0.0
    phase: str = "waiting"  # waiting | running | done | failed | cancelled
    subjobs: dict[int, SubjobRecord] = field(default_factory=dict)
    launch_key: int | None = None  # the subjob whose pilot is to start the application
    migration: Migration | None = None  # the move under way
    queued: list[Migration] = field(default_factory=list)  # moves EJB-sched decided after it
    migrations: int = 0
    restarts: int = 0
    progress: float | None = None
    step_seconds: float | None = None
    exit_code: int | None = None
    ended: float | None = None  # when the application ended (or was cancelled)
    agent_port: int = 0
    agent_key: str = ""
    events: list[tuple[float, str]] = field(default_factory=list)  # (time, what and why)
    spare_secrets: list[str] = field(default_factory=list)  # the pilot secret of each spare, by index
    spares: dict[int, int] = field(default_factory=dict)  # index -> job id: held spares ready to use
    # index -> when it was asked for (of ejb-submit at registration, or of a pilot): not yet seen queued
    spares_asked: dict[int, float] = field(default_factory=dict)
    spares_refused: str = ""  # why a pilot could not queue a spare: no more are asked for

    def log(self, now: float, text: str) -> None:
        self.events.append((now, text))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AppRecord:
        raw = dict(raw)
        subs = {int(k): SubjobRecord(**v) for k, v in raw.pop("subjobs").items()}
        mig = raw.pop("migration")
        queued = [Migration(**m) for m in raw.pop("queued", [])]
        events = [(float(t), str(x)) for t, x in raw.pop("events")]
        spares = {int(k): int(v) for k, v in raw.pop("spares", {}).items()}  # JSON's keys are strings
        asked = {int(k): float(v) for k, v in raw.pop("spares_asked", {}).items()}
        return cls(**raw, subjobs=subs, migration=None if mig is None else Migration(**mig), queued=queued,
                   events=events, spares=spares, spares_asked=asked)  # fmt: skip


class Store:
    """``<dir>/apps.json`` (the records) and ``<dir>/scheduler.pickle`` (EJB-sched), both 0600."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def save(self, apps: dict[int, AppRecord], scheduler: EJBScheduler) -> None:
        self._write("apps.json", json.dumps({str(k): a.to_json() for k, a in apps.items()}).encode())
        self._write("scheduler.pickle", pickle.dumps(scheduler))

    def load(self) -> tuple[dict[int, AppRecord], EJBScheduler | None]:
        apps_file, sched_file = self.dir / "apps.json", self.dir / "scheduler.pickle"
        if not apps_file.exists() or not sched_file.exists():
            return {}, None
        apps = {int(k): AppRecord.from_json(v) for k, v in json.loads(apps_file.read_text()).items()}
        return apps, pickle.loads(sched_file.read_bytes())  # written by this manager only (0600)

    def _write(self, name: str, data: bytes) -> None:
        tmp = self.dir / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / name)
