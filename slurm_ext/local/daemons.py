"""Start, find and stop the daemons of the local cluster, always by PID file.

Every daemon `cluster up` starts is written to a registry file, so that `cluster down`
stops exactly those processes (and not, say, a munged that was already running).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


class DaemonError(RuntimeError):
    """A daemon did not start or did not become ready; the message points to its log."""


@dataclass(frozen=True)
class Daemon:
    name: str  # e.g. "slurmd n3"
    pidfile: Path
    comm: str  # process name as in /proc/PID/comm, to never signal a recycled PID

    def pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None
        return pid if process_alive(pid, self.comm) else None

    def running(self) -> bool:
        return self.pid() is not None


def process_alive(pid: int, comm: str) -> bool:
    """True if ``pid`` runs a program named ``comm`` (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Format: "PID (comm) STATE ..."; comm is truncated to 15 characters and may hold spaces.
    name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
    if state == "Z":
        _reap(pid)
        return False
    return name == comm[:15]


def _reap(pid: int) -> None:
    """Collect a zombie that is our own child (a daemon started in-process, e.g. by tests)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class Registry:
    """The daemons this cluster started, in start order, persisted as JSON."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> tuple[int, list[Daemon]]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0, []
        daemons = [Daemon(d["name"], Path(d["pidfile"]), d["comm"]) for d in raw["daemons"]]
        return int(raw["nodes"]), daemons

    def save(self, nodes: int, daemons: Sequence[Daemon]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"nodes": nodes, "daemons": [asdict(d) | {"pidfile": str(d.pidfile)} for d in daemons]}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> float:
    """Poll ``check`` until true; returns the seconds waited or raises DaemonError naming ``what``."""
    start = time.monotonic()
    while True:
        if check():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise DaemonError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def run_quiet(args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 30) -> bool:
    """Run a probe command; True when it exits 0."""
    try:
        res = subprocess.run(args, env=env, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


def start_forking(daemon: Daemon, args: Sequence[str], env: dict[str, str], log: Path) -> None:
    """Start a daemon that forks itself and writes its own PID file; fail with its log tail."""
    daemon.pidfile.unlink(missing_ok=True)
    with open(log, "ab") as out:
        res = subprocess.run(args, env=env, stdout=out, stderr=out, check=False, timeout=60)
    if res.returncode != 0:
        raise DaemonError(f"{daemon.name} failed to start (exit {res.returncode}); see {log}")
    try:
        wait_for(daemon.running, 15, f"{daemon.name} to write {daemon.pidfile}")
    except DaemonError as exc:
        raise DaemonError(f"{exc}; see {log}") from None


def start_foreground(daemon: Daemon, args: Sequence[str], env: dict[str, str], log: Path) -> None:
    """Start a daemon that stays in the foreground, detached into its own session."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            args, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True
        )
    daemon.pidfile.parent.mkdir(parents=True, exist_ok=True)
    try:
        wait_for(daemon.running, 15, f"{daemon.name} to write {daemon.pidfile}")
    except DaemonError as exc:
        proc.kill()
        raise DaemonError(f"{exc}; see {log}") from None


def stop(daemon: Daemon, timeout: float = 15.0) -> bool:
    """SIGTERM, then SIGKILL after ``timeout``; True if the daemon was running."""
    pid = daemon.pid()
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    try:
        wait_for(lambda: not process_alive(pid, daemon.comm), timeout, f"{daemon.name} to stop")
    except DaemonError:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not process_alive(pid, daemon.comm), 5, f"{daemon.name} to die")
    return True
