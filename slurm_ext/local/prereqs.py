"""Checks made before anything starts, so that a failed `cluster up` leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import socket

from slurm_ext.config import ClusterConfig

APT_PACKAGES = "slurmctld slurmd slurm-client munge libslurm-dev slurmdbd mariadb-server"
APT_LINE = f"apt-get install -y --no-install-recommends {APT_PACKAGES}"

# Program -> Debian package that ships it.
REQUIRED_PROGRAMS = {
    "munged": "munge",
    "munge": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-client",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sinfo": "slurm-client",
    "sacctmgr": "slurm-client",
}


class PrerequisiteError(RuntimeError):
    """The host cannot run the local cluster; the message says how to fix it."""


def check_root(euid: int | None = None) -> None:
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        raise PrerequisiteError(
            "the local Slurm cluster must be started as root (it runs munged, MariaDB and the Slurm "
            "daemons as root); run with sudo or as root"
        )


def find_program(name: str, path: str | None = None) -> str | None:
    """Locate a program on PATH plus the sbin directories that a non-login root shell may miss."""
    search = path if path is not None else os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return shutil.which(name, path=search)


def check_programs(path: str | None = None) -> dict[str, str]:
    found: dict[str, str] = {}
    missing: list[str] = []
    for prog, package in REQUIRED_PROGRAMS.items():
        where = find_program(prog, path)
        if where is None:
            missing.append(f"{prog} ({package})")
        else:
            found[prog] = where
    if missing:
        raise PrerequisiteError(
            "missing programs: " + ", ".join(missing) + f". Install them with:\n  {APT_LINE}"
        )
    return found


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def check_ports(cfg: ClusterConfig) -> None:
    taken = [f"{port} ({who})" for who, port in cfg.ports().items() if port_in_use(port)]
    if taken:
        raise PrerequisiteError(
            "ports already in use: " + ", ".join(taken) + ". Stop what uses them, or choose other "
            "ports in the configuration (ports: section of conf/elastic.yaml or $ELASTIC_SLURM_CONF)"
        )
