"""The site profile of the dockerized cluster (``cluster up --docker --profile site``, which is
``--select cons_tres``): what a site has and the other test clusters lack, beyond the partitions and
enforcement its ``slurm.conf`` has (:func:`slurm_ext.local.render.partition_lines`).

- the service's own user, ``elastic``, in every container that knows users (slurmctld resolves the
  names accounting gives it to uids), with Slurm's operator level;
- accounting for alice and bob (account ``users``): with ``AccountingStorageEnforce=associations``
  no job of a user without an association runs; root keeps the one ``sacctmgr add cluster`` gave it;
- the QoS ``normal`` (every association's) with a wall-time limit, refused at submission;
- the control service and the EJB manager started as ``elastic`` by their systemd units' own
  commands (:func:`start_service`; both at ``cluster up`` with ``--start-units``).

The images hold none of this (their tags hash the entrypoint): it is added once the cluster is up.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

CPUS_PER_NODE = 4  # --profile site's nodes unless --cpus-per-node: enough for a small job beside a share
SERVICE_USER = "elastic"
SERVICE_UID = 2000  # alice and bob are 2001 and 2002 (docker/entrypoint.sh)
USERS_ACCOUNT = "users"
SITE_USERS = ("alice", "bob")
QOS = "normal"
QOS_MAX_WALL = "1-00:00:00"
UNIT_DIR = "/etc/systemd/system"
SITE_CONFIG = "/etc/elastic-slurm/elastic.yaml"


@dataclass(frozen=True)
class Daemon:
    """One of the two units, where it logs and where the started process writes its pid (in the
    state directory install-units makes for it, which its user owns)."""

    unit: str
    log: str
    pid: str


STATE = "/var/lib/elastic-slurm"
SERVICE = Daemon("elastic-slurm.service", "/var/log/elastic-slurm.log", f"{STATE}/service/serve.pid")
MANAGER = Daemon("ejb-manager.service", "/var/log/ejb-manager.log", f"{STATE}/ejb/manager.pid")


class Runner(Protocol):
    """What is needed of :class:`slurm_ext.containers.cluster.DockerCluster`."""

    def run(self, *args: str, service: str = "login", timeout: float = 60) -> _Completed: ...

    def container(self, service: str) -> str: ...


class _Completed(Protocol):
    returncode: int
    stdout: str
    stderr: str


# what sacctmgr says (exit 1) when an entry is there already: setting up twice changes nothing
UNCHANGED = ("already exist", "nothing added", "didn't affect anything", "nothing modified")


class SiteSetupError(RuntimeError):
    """The site profile could not be set up (a command in a container failed)."""


def accounting_commands() -> list[list[str]]:
    """The ``sacctmgr`` calls (as root, idempotent with ``-i``: an existing entry is reported, not
    an error) that give the site's users their associations and the QoS its limit."""
    return [
        ["sacctmgr", "-i", "add", "account", USERS_ACCOUNT, "Description=users", "Organization=site"],
        ["sacctmgr", "-i", "add", "user", ",".join(SITE_USERS), f"account={USERS_ACCOUNT}"],
        ["sacctmgr", "-i", "add", "user", SERVICE_USER, "account=root"],
        ["sacctmgr", "-i", "modify", "user", SERVICE_USER, "set", "AdminLevel=Operator"],
        ["sacctmgr", "-i", "modify", "qos", QOS, "set", f"MaxWall={QOS_MAX_WALL}", "Flags=DenyOnLimit"],
    ]


def add_user_script(user: str = SERVICE_USER, uid: int = SERVICE_UID) -> str:
    """Shell that creates the service's user (no home of its own: its state directory)."""
    return (
        f"id {user} >/dev/null 2>&1 || useradd -u {uid} -U -M -d /var/lib/elastic-slurm -s /bin/bash {user}"
    )


def setup(cluster: Runner, nodes: int, progress: Callable[[str], None], timeout: float = 60) -> None:
    """Add the service's user to every container, then the accounting; wait until slurmctld knows
    all three users (it hears of them from slurmdbd)."""
    for service in ("slurmctld", "login", *(f"n{k}" for k in range(1, nodes + 1))):
        _check(cluster.run("bash", "-c", add_user_script(), service=service), f"useradd in {service}")
    for args in accounting_commands():
        res = cluster.run(*args)
        said = (res.stdout + res.stderr).lower()
        if res.returncode != 0 and not any(m in said for m in UNCHANGED):
            _check(res, " ".join(args))
    users = (*SITE_USERS, SERVICE_USER)
    deadline = time.monotonic() + timeout
    while True:
        res = cluster.run("scontrol", "show", "assoc_mgr", "flags=users", f"users={','.join(users)}")
        if all(f"UserName={u}(" in res.stdout for u in users):
            break
        if time.monotonic() > deadline:
            raise SiteSetupError(f"slurmctld does not know {', '.join(users)} within {timeout:.0f} s")
        time.sleep(0.3)
    progress(
        f"site profile: users {', '.join(SITE_USERS)} (account {USERS_ACCOUNT}), {SERVICE_USER} "
        f"(AdminLevel=Operator), QoS {QOS} MaxWall={QOS_MAX_WALL}"
    )


def _check(res: _Completed, what: str) -> None:
    if res.returncode != 0:
        raise SiteSetupError(f"{what} failed: {(res.stderr or res.stdout).strip()[:300]}")


@dataclass(frozen=True)
class UnitCommands:
    """What systemd would run for ``elastic-slurm.service``, read from the installed unit."""

    user: str
    environment: dict[str, str]
    exec_start_pre: list[str]
    exec_start: list[str]


def parse_unit(text: str) -> UnitCommands:
    """The user, environment and commands of a unit file (the keys our templates use)."""
    user, env, pre, start = "root", {}, [], []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key == "User":
            user = value
        elif key == "Environment":
            name, _, val = value.partition("=")
            env[name] = val
        elif key == "ExecStartPre":
            pre = shlex.split(value)
        elif key == "ExecStart":
            start = shlex.split(value)
    if not start:
        raise ValueError("the unit has no ExecStart")
    return UnitCommands(user, env, pre, start)


def install_units(cluster: Runner, user: str = SERVICE_USER, daemon: Daemon = SERVICE) -> UnitCommands:
    """``slurm-ext install-units --user elastic`` in the login container (as root, as at a site);
    returns ``daemon``'s unit's commands."""
    res = cluster.run("slurm-ext", "install-units", "--user", user, "--unit-dir", UNIT_DIR,
                      "--config", SITE_CONFIG)  # fmt: skip
    _check(res, "slurm-ext install-units")
    unit = cluster.run("cat", f"{UNIT_DIR}/{daemon.unit}")
    _check(unit, "reading the unit")
    return parse_unit(unit.stdout)


def unit_shell(unit: UnitCommands, daemon: Daemon = SERVICE) -> str:
    """A shell line doing what systemd does with the unit: ExecStartPre, and only if it passes,
    ExecStart, as the unit's user with its environment; their output in ``daemon.log`` (emptied
    first)."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in unit.environment.items())
    pre = shlex.join(unit.exec_start_pre) if unit.exec_start_pre else "true"
    start = shlex.join(unit.exec_start)
    inner = f"{pre} && echo $$ >{daemon.pid} && exec {start}"
    log = daemon.log
    return (
        f": >{log} && chown {unit.user} {log} && "
        f"exec runuser -u {unit.user} -- env {env} bash -c {shlex.quote(inner)} >>{log} 2>&1"
    )


def start_service(cluster: Runner, user: str = SERVICE_USER, daemon: Daemon = SERVICE) -> UnitCommands:
    """Install the units in the login container and start ``daemon`` (the service, or the EJB
    manager) as its unit's ExecStartPre and ExecStart say, as ``user``, in the background (its
    output in ``daemon.log`` there); one already running is stopped first, as a restart would."""
    unit = install_units(cluster, user, daemon)
    stop_service(cluster, daemon)
    line = unit_shell(unit, daemon)
    res = subprocess.run(["docker", "exec", "-d", cluster.container("login"), "bash", "-c", line],
                         capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    _check(res, f"starting {daemon.unit}")
    return unit


def stop_service(cluster: Runner, daemon: Daemon = SERVICE) -> None:
    """Stop what :func:`start_service` started (by the pid it wrote), if it runs, and wait up to 15 s
    for it to exit (its ports free again)."""
    pid = daemon.pid
    cluster.run("bash", "-c", f"p=$(cat {pid} 2>/dev/null) && kill $p 2>/dev/null && for i in $(seq 150); do "
                f"kill -0 $p 2>/dev/null || break; sleep 0.1; done; rm -f {pid}", timeout=30)  # fmt: skip


def start_daemons(cluster: Runner, progress: Callable[[str], None], timeout: float = 60) -> None:
    """The service and the EJB manager started by their units' commands as the service's user
    (``cluster up --docker --profile site --start-units``); returns once both listen."""
    for daemon in (SERVICE, MANAGER):
        start_service(cluster, daemon=daemon)
    deadline = time.monotonic() + timeout
    for daemon in (SERVICE, MANAGER):
        while "listening on" not in (log := cluster.run("cat", daemon.log).stdout):
            if time.monotonic() > deadline:
                raise SiteSetupError(
                    f"{daemon.unit} does not listen within {timeout:.0f} s: {log.strip()[-600:]}"
                )
            time.sleep(0.3)
    logs = f"logs {SERVICE.log}, {MANAGER.log} in the login container"
    progress(f"site profile: {SERVICE.unit} and {MANAGER.unit} running as {SERVICE_USER} ({logs})")
