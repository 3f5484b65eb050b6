"""`slurm-ext cluster up | down | status`: the local multi-node Slurm cluster as a library."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from slurm_ext.config import ClusterConfig
from slurm_ext.local import prereqs
from slurm_ext.local.daemons import (
    Daemon,
    DaemonError,
    Registry,
    run_quiet,
    start_foreground,
    start_forking,
    stop,
    wait_for,
)
from slurm_ext.local.render import render, write_configs
from slurm_ext.local.shm import remove_stale_segments

MUNGE_SOCKET_DIR = Path("/run/munge")
MUNGE_PIDFILE = MUNGE_SOCKET_DIR / "munged.pid"
# Local clusters (each its own state dir) sharing the host's munged: the last one down stops it,
# and only if one of them started it.
MUNGE_USERS = MUNGE_SOCKET_DIR / "elastic-slurm.users"
MUNGE_STARTED = MUNGE_SOCKET_DIR / "elastic-slurm.started"
MAX_NODES = 128
# What slurmdbd does to its own database (tables, indexes, its stored procedures), nothing more.
DB_PRIVILEGES = (
    "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, LOCK TABLES, "
    "CREATE TEMPORARY TABLES, CREATE ROUTINE, ALTER ROUTINE, EXECUTE"
)  # each node is a slurmd process on this host
# Debian's Slurm reads /etc/slurm/slurm.conf when SLURM_CONF is unset; we link it there (if free)
# so that plain `sinfo`, `sbatch` and MPI's srun inside jobs find the local cluster.
SYSTEM_SLURM_CONF = Path("/etc/slurm/slurm.conf")

Progress = Callable[[str], None]
_SERVING = {"idle", "allocated", "mixed", "completing", "planned"}


class ClusterError(RuntimeError):
    """The local cluster cannot be brought up, or is in a state that needs the user's attention."""


class UsageError(ClusterError):
    """A bad argument (exit code 2 on the command line)."""


@dataclass(frozen=True)
class UpReport:
    nodes: int
    seconds: float
    already_running: bool


def _silent(_: str) -> None:
    pass


class LocalCluster:
    def __init__(self, cfg: ClusterConfig) -> None:
        self.cfg = cfg
        self.dir = cfg.state_dir
        self.registry = Registry(self.dir / "run" / "started.json")

    # ----- paths and environment -------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        return os.environ | {"SLURM_CONF": str(self.cfg.slurm_conf)}

    @property
    def db_dir(self) -> Path:
        return self.dir / "mysql"

    @property
    def db_socket(self) -> Path:
        return self.dir / "run" / "mysqld.sock"

    def _log(self, name: str) -> Path:
        return self.dir / "log" / f"{name}.log"

    # ----- queries -----------------------------------------------------------------------------
    def running_daemons(self) -> list[Daemon]:
        return [d for d in self.registry.load()[1] if d.running()]

    def is_up(self) -> bool:
        nodes, daemons = self.registry.load()
        return bool(daemons) and all(d.running() for d in daemons)

    def node_states(self) -> list[str]:
        """Base state of every node as sinfo reports it ('idle', 'allocated', 'down', ...)."""
        res = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env, capture_output=True, text=True, check=False
        )
        if res.returncode != 0:
            return []
        return [line.split()[-1].rstrip("*~#!%$@^-") for line in res.stdout.splitlines()]

    def idle_nodes(self) -> int:
        return self.node_states().count("idle")

    # ----- up ----------------------------------------------------------------------------------
    def up(
        self,
        nodes: int | None = None,
        progress: Progress = _silent,
        timeout: float = 120,
        expansion: bool | None = None,
        cpus_per_node: int | None = None,
        select: str | None = None,
    ) -> UpReport:
        """Start every daemon and wait until all nodes are idle. Idempotent; all-or-nothing.

        ``expansion``: SchedulerParameters=permit_job_expansion (None: the configuration's value);
        ``cpus_per_node``: CPUs of each node; ``select``: linear or cons_tres (None: the configuration's).
        """
        if nodes is not None:
            if not 1 <= nodes <= MAX_NODES:
                raise UsageError(f"--nodes must be between 1 and {MAX_NODES} (one slurmd each), got {nodes}")
            self.cfg = replace(self.cfg, nodes=nodes)
        if cpus_per_node is not None:
            if cpus_per_node < 1:
                raise UsageError(f"--cpus-per-node must be at least 1, got {cpus_per_node}")
            self.cfg = replace(self.cfg, cpus_per_node=cpus_per_node)
        if expansion is not None:
            self.cfg = replace(self.cfg, expansion=expansion)
        if select is not None:
            self.cfg = replace(self.cfg, select=select)
        prereqs.check_root()
        prereqs.check_programs()
        start = time.monotonic()
        running_nodes, registered = self.registry.load()
        if registered and all(d.running() for d in registered):
            if running_nodes != self.cfg.nodes:
                raise ClusterError(
                    f"the local cluster is already up with {running_nodes} nodes; run "
                    f"`slurm-ext cluster down` before starting it with {self.cfg.nodes}"
                )
            if self._config_differs():
                raise ClusterError(
                    f"the local cluster is already up with another configuration ({self.cfg.slurm_conf}); "
                    "run `slurm-ext cluster down` first"
                )
            # Running jobs may hold nodes: wait only until every node answers.
            progress(f"cluster already up ({running_nodes} nodes)")
            self._resume_own_nodes(progress)
            self._wait_serving(running_nodes, timeout)
            return UpReport(running_nodes, time.monotonic() - start, already_running=True)
        # Partly running (a daemon died under a live cluster): restart only what stopped, keeping jobs.
        # Nothing running (a reboot, a stale registry): a clean start below.
        partly = any(d.running() for d in registered if d.name != "munged")
        if partly and running_nodes == self.cfg.nodes and not self._config_differs():
            restarted = self._restart_missing(registered, progress)
            progress(f"restarted what had stopped: {', '.join(restarted)}")
            self._resume_own_nodes(progress)
            self._wait_serving(running_nodes, timeout)
            return UpReport(running_nodes, time.monotonic() - start, already_running=True)
        leftovers = self._with_strays(registered)
        if leftovers:
            progress("cleaning up a partly running cluster from an earlier start")
            self._stop_all(leftovers, progress)
        prereqs.check_ports(self.cfg)

        started: list[Daemon] = []
        try:
            self._prepare_dirs()
            if not self.cfg.db_password:
                self.cfg = replace(self.cfg, db_password=self._db_secret())
            write_configs(self.cfg)
            self._link_system_conf()
            if stale := remove_stale_segments():
                progress(f"removed {len(stale)} stale MPICH segment(s) from /dev/shm")
            self._start_munge(started, progress)
            self._start_mariadb(started, progress)
            self._start_slurmdbd(started, progress)
            self._start_slurmctld(started, progress)
            self._start_slurmds(started, progress)
            progress(f"waiting for {self.cfg.nodes} idle nodes")
            self._wait_idle(timeout)
        except BaseException:
            progress("start-up failed: stopping what was started")
            self._stop_all(started, progress)
            self.registry.clear()
            self._release_munge(progress)
            raise
        return UpReport(self.cfg.nodes, time.monotonic() - start, already_running=False)

    def _config_differs(self) -> bool:
        """True if the running cluster's slurm.conf is not what this configuration renders."""
        try:
            return self.cfg.slurm_conf.read_text() != render("slurm.conf", self.cfg)
        except FileNotFoundError:
            return True

    def _daemon(self, name: str, node: str = "") -> Daemon:
        """A daemon of this cluster, by the PID file it writes in the run directory."""
        if node:
            return Daemon(f"{name} {node}", self.dir / "run" / f"{name}-{node}.pid", name)
        return Daemon(name, self.dir / "run" / f"{name}.pid", name)

    def _with_strays(self, registered: list[Daemon]) -> list[Daemon]:
        """The registered daemons and any other of this cluster's that runs: a start killed before
        it registered a daemon (or a registry another process cleared) must not leave it running."""
        own = [self._daemon(n) for n in ("mariadbd", "slurmdbd", "slurmctld")]
        own += [self._daemon("slurmd", node) for node in self.cfg.node_names]
        return registered + [d for d in own if d not in registered and d.running()]

    def _register(self, started: list[Daemon], daemon: Daemon) -> None:
        started.append(daemon)
        self.registry.save(self.cfg.nodes, started)

    def _prepare_dirs(self) -> None:
        for sub in ("etc", "state", "log", "run", "spool", "tmp"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        for node in self.cfg.node_names:
            (self.dir / "spool" / node).mkdir(exist_ok=True)
            (self.dir / "tmp" / node).mkdir(exist_ok=True)

    def _db_secret(self) -> str:
        """This cluster's accounting DB password: made at the first start, kept mode 600."""
        path = self.dir / "etc" / "db-password"
        try:
            return path.read_text().strip()
        except FileNotFoundError:
            secret = secrets.token_urlsafe(24)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secret + "\n")
            return secret

    def _link_system_conf(self) -> None:
        link = SYSTEM_SLURM_CONF
        if not link.exists():  # free, or a dangling link left by a cluster that is gone
            link.parent.mkdir(parents=True, exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(self.cfg.slurm_conf)

    def _munge_works(self) -> bool:
        return run_quiet(["bash", "-c", "munge -n </dev/null | unmunge >/dev/null"])

    def _start_munge(self, started: list[Daemon], progress: Progress) -> None:
        """Use the host's munged, starting it if none runs; never registered as this cluster's own
        daemon: other local clusters may use it too (see :meth:`_release_munge`).
        """
        MUNGE_SOCKET_DIR.mkdir(parents=True, exist_ok=True)
        shutil.chown(MUNGE_SOCKET_DIR, "munge", "munge")
        self._munge_users(add=str(self.dir))
        if self._munge_works():
            progress("munged: already running, shared")
            return
        progress("starting munged")
        daemon = Daemon("munged", MUNGE_PIDFILE, "munged")
        start_forking(
            daemon,
            ["runuser", "-u", "munge", "--", prereqs.find_program("munged") or "munged"],
            self.env,
            self._log("munged-start"),
        )
        MUNGE_STARTED.touch()
        wait_for(self._munge_works, 10, "munge to answer")

    @staticmethod
    def _munge_users(add: str | None = None, remove: str | None = None) -> set[str]:
        """The state dirs of local clusters using munged, updated under a lock."""
        MUNGE_SOCKET_DIR.mkdir(parents=True, exist_ok=True)
        with open(MUNGE_USERS, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(0)
            users = {line.strip() for line in fh if line.strip()}
            users = (users | {add} if add else users) - {remove}
            fh.seek(0)
            fh.truncate()
            fh.write("".join(f"{u}\n" for u in sorted(users)))
        return users

    def _release_munge(self, progress: Progress) -> None:
        """This cluster no longer uses munged: stop it if we started it and nobody else uses it."""
        if self._munge_users(remove=str(self.dir)) or not MUNGE_STARTED.exists():
            return
        if stop(Daemon("munged", MUNGE_PIDFILE, "munged")):
            progress("stopped munged")
        MUNGE_STARTED.unlink(missing_ok=True)

    def _mysql(self, sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mariadb", "--protocol=socket", f"--socket={self.db_socket}", "-uroot", "-e", sql],
            capture_output=True,
            text=True,
            check=False,
        )

    def _start_mariadb(self, started: list[Daemon], progress: Progress) -> None:
        if not (self.db_dir / "mysql").is_dir():
            progress("initialising a private MariaDB data directory")
            res = subprocess.run(
                [
                    "mariadb-install-db",
                    "--user=root",
                    f"--datadir={self.db_dir}",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                shutil.rmtree(self.db_dir, ignore_errors=True)
                raise DaemonError(f"mariadb-install-db failed: {res.stderr.strip()[-500:]}")
        progress(f"starting MariaDB on 127.0.0.1:{self.cfg.mariadb_port}")
        daemon = self._daemon("mariadbd")
        daemon.pidfile.unlink(missing_ok=True)
        start_foreground(
            daemon,
            [
                prereqs.find_program("mariadbd") or "mariadbd",
                "--no-defaults",
                "--user=root",
                f"--datadir={self.db_dir}",
                f"--socket={self.db_socket}",
                f"--pid-file={daemon.pidfile}",
                "--bind-address=127.0.0.1",
                f"--port={self.cfg.mariadb_port}",
                f"--log-error={self._log('mariadbd')}",
                # slurmdbd's recommended InnoDB settings, small enough for a test host
                "--innodb-buffer-pool-size=128M",
                "--innodb-lock-wait-timeout=900",
            ],
            self.env,
            self._log("mariadbd-start"),
        )
        self._register(started, daemon)
        wait_for(lambda: self._mysql("select 1").returncode == 0, 30, "MariaDB to accept connections")
        c = self.cfg
        res = self._mysql(
            f"CREATE DATABASE IF NOT EXISTS `{c.db_name}`;"
            + "".join(
                f"CREATE USER IF NOT EXISTS '{c.db_user}'@'{host}' IDENTIFIED BY '{c.db_password}';"
                f"ALTER USER '{c.db_user}'@'{host}' IDENTIFIED BY '{c.db_password}';"
                f"REVOKE ALL PRIVILEGES, GRANT OPTION FROM '{c.db_user}'@'{host}';"
                f"GRANT {DB_PRIVILEGES} ON `{c.db_name}`.* TO '{c.db_user}'@'{host}';"
                for host in ("localhost", "127.0.0.1")
            )
        )
        if res.returncode != 0:
            raise DaemonError(f"could not create the accounting database: {res.stderr.strip()}")

    def _start_slurmdbd(self, started: list[Daemon], progress: Progress) -> None:
        progress("starting slurmdbd")
        daemon = self._daemon("slurmdbd")
        start_forking(
            daemon, [prereqs.find_program("slurmdbd") or "slurmdbd"], self.env, self._log("slurmdbd-start")
        )
        self._register(started, daemon)
        wait_for(
            lambda: run_quiet(["sacctmgr", "-n", "list", "cluster"], env=self.env),
            30,
            "slurmdbd to answer (see log/slurmdbd.log)",
            interval=0.3,
        )
        res = subprocess.run(
            ["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if self.cfg.name not in res.stdout.split():
            add = subprocess.run(
                ["sacctmgr", "-i", "add", "cluster", self.cfg.name],
                env=self.env,
                capture_output=True,
                text=True,
                check=False,
            )
            if add.returncode != 0:
                raise DaemonError(f"sacctmgr add cluster failed: {add.stderr.strip() or add.stdout.strip()}")

    def _start_slurmctld(self, started: list[Daemon], progress: Progress, clean: bool = True) -> None:
        progress("starting slurmctld" + ("" if clean else " (recovering its jobs)"))
        daemon = self._daemon("slurmctld")
        # -c: start from a clean state. A full `up` follows a `down` (which cancels every job) or a crash,
        # whose saved node states (drained, down) would otherwise keep nodes out of service. A restart of
        # a slurmctld that stopped under a running cluster recovers its jobs instead.
        args = [prereqs.find_program("slurmctld") or "slurmctld", *(["-c"] if clean else [])]
        start_forking(daemon, args, self.env, self._log("slurmctld-start"))
        self._register(started, daemon)
        wait_for(lambda: run_quiet(["scontrol", "ping"], env=self.env), 30, "slurmctld to answer", 0.2)

    def _start_slurmds(
        self, started: list[Daemon], progress: Progress, only: list[str] | None = None, clean: bool = True
    ) -> None:
        nodes = only if only is not None else self.cfg.node_names
        progress(f"starting {len(nodes)} slurmd")
        slurmd = prereqs.find_program("slurmd") or "slurmd"
        for node in nodes:
            daemon = self._daemon("slurmd", node)
            # -c: clear what a killed slurmd may have left in its spool (stale step sockets and locks);
            # not when it restarts under running jobs, whose steps it must find again
            args = [slurmd, *(["-c"] if clean else []), "-N", node]
            start_forking(daemon, args, self.env, self._log(f"slurmd-{node}-start"))
            self._register(started, daemon)

    def _restart_missing(self, registered: list[Daemon], progress: Progress) -> list[str]:
        """Start again only the daemons of a running cluster that stopped; jobs and state survive."""
        missing = [d for d in registered if not d.running()]
        scratch: list[Daemon] = []  # restarts re-register nothing new: the registry is restored below
        try:
            for daemon in missing:
                if daemon.name == "mariadbd":
                    self._start_mariadb(scratch, progress)
                elif daemon.name == "slurmdbd":
                    self._start_slurmdbd(scratch, progress)
                elif daemon.name == "slurmctld":
                    self._start_slurmctld(scratch, progress, clean=False)
                elif daemon.name.startswith("slurmd "):
                    self._start_slurmds(scratch, progress, only=[daemon.name.split()[1]], clean=False)
                elif daemon.name == "munged":
                    self._start_munge(scratch, progress)
        finally:
            self.registry.save(self.cfg.nodes, registered)
        return [d.name for d in missing]

    def _resume_own_nodes(self, progress: Progress) -> list[str]:
        """Put back in service the nodes Slurm holds out (drained, down: by hand, by a crash, by a
        slurmd that was away); every node of this cluster is its own. Returns the nodes resumed."""
        res = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"], env=self.env, capture_output=True,
                             text=True, check=False)  # fmt: skip
        resumed = []
        for line in res.stdout.splitlines() if res.returncode == 0 else []:
            node, state, reason = (line.split("|", 2) + ["", ""])[:3]
            base = state.rstrip("*~#!%$@^-")
            if base not in ("drained", "draining", "down", "fail", "failing"):
                continue
            ok = run_quiet(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=self.env)
            why = reason or "no reason given"
            progress(f"{'resumed' if ok else 'could not resume'} {node} (was {base}: {why})")
            if ok:
                resumed.append(node)
        if resumed:  # resumed, a node shows "idle*" until slurmctld has heard from its slurmd again
            wait_for(lambda: not self._unresponsive(resumed), 30, f"{','.join(resumed)} to respond", 0.2)
        return resumed

    def _unresponsive(self, nodes: list[str]) -> list[str]:
        res = subprocess.run(["sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%N %T"], env=self.env,
                             capture_output=True, text=True, check=False)  # fmt: skip
        if res.returncode != 0:
            return nodes
        return [ln.split()[0] for ln in res.stdout.splitlines() if ln.endswith("*")]

    def _wait_serving(self, count: int, timeout: float) -> None:
        """Wait until ``count`` nodes answer (idle or busy); a timeout names each node's state and why."""
        try:
            wait_for(lambda: sum(s in _SERVING for s in self.node_states()) >= count, timeout,
                     f"{count} responding nodes", 0.3)  # fmt: skip
        except DaemonError as exc:
            raise ClusterError(f"{exc}; {self._diagnosis()}") from None

    def _wait_idle(self, timeout: float) -> None:
        want = self.cfg.nodes
        try:
            wait_for(lambda: self.idle_nodes() >= want, timeout, f"{want} idle nodes", 0.3)
        except DaemonError as exc:
            raise ClusterError(f"{exc}; {self._diagnosis()}") from None

    def _diagnosis(self) -> str:
        """Why nodes are not idle: each node's state and reason, and slurmctld's last errors."""
        res = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N=%T(%E)"],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        nodes = " ".join(res.stdout.split()) if res.returncode == 0 else f"sinfo failed: {res.stderr.strip()}"
        try:
            log = self._log("slurmctld").read_text(errors="replace").splitlines()
        except OSError:
            log = []
        errors = [line for line in log if "error" in line.lower()][-3:]
        errors_text = " | ".join(errors) or "none"
        return f"nodes: {nodes}; slurmctld's last errors: {errors_text} (logs in {self.dir}/log)"

    # ----- down --------------------------------------------------------------------------------
    def down(self, progress: Progress = _silent) -> list[str]:
        """Cancel all jobs, stop every daemon `up` started (reverse order); returns their names."""
        _, registered = self.registry.load()
        daemons = self._with_strays(registered)
        if any(d.name == "slurmctld" and d.running() for d in daemons):
            progress("cancelling all jobs")
            run_quiet(["scancel", "--partition", self.cfg.partition], env=self.env)
            try:
                wait_for(lambda: not self._jobs_left(), 30, "jobs to end", 0.3)
            except DaemonError:
                # A job stuck in COMPLETING must not keep the daemons alive: stop them regardless.
                progress("some jobs did not end within 30 s; stopping the daemons anyway")
        stopped = self._stop_all(daemons, progress)
        self.registry.clear()
        self._release_munge(progress)
        if SYSTEM_SLURM_CONF.is_symlink() and SYSTEM_SLURM_CONF.resolve() == self.cfg.slurm_conf.resolve():
            SYSTEM_SLURM_CONF.unlink()
        return stopped

    def _jobs_left(self) -> bool:
        res = subprocess.run(
            ["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True, check=False
        )
        return res.returncode == 0 and bool(res.stdout.strip())

    def _stop_all(self, daemons: list[Daemon], progress: Progress) -> list[str]:
        stopped = []
        for daemon in reversed(daemons):
            if stop(daemon):
                progress(f"stopped {daemon.name}")
                stopped.append(daemon.name)
        return stopped

    # ----- status ------------------------------------------------------------------------------
    def status_text(self) -> str:
        _, daemons = self.registry.load()
        if not daemons:
            return "local cluster: down"
        lines = [
            f"local cluster: {'up' if self.is_up() else 'PARTLY RUNNING'} (SLURM_CONF={self.cfg.slurm_conf})"
        ]
        lines += [
            f"  {d.name:<12} {'pid ' + str(d.pid()) if d.running() else 'NOT RUNNING'}" for d in daemons
        ]
        for args in (["sinfo", "-N", "-o", "%N %T %c"], ["squeue", "-o", "%.8i %.10j %.8u %.9T %.5D %N %r"]):
            res = subprocess.run(args, env=self.env, capture_output=True, text=True, check=False)
            lines.append(res.stdout.rstrip() if res.returncode == 0 else f"{args[0]}: {res.stderr.strip()}")
        return "\n".join(lines)
