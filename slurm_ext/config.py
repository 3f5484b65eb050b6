"""The toolkit's configuration: ``conf/elastic.yaml`` plus overrides.

Lookup order: the file named by ``ELASTIC_SLURM_CONF``, else the project's ``conf/elastic.yaml``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# conf/ of the checkout; an installed wheel carries a copy as package data (slurm_ext/data/conf)
_SHIPPED_CONF = Path(__file__).parent / "data" / "conf"
CONF_DIR = PROJECT_ROOT / "conf" if (PROJECT_ROOT / "conf").is_dir() else _SHIPPED_CONF
TEMPLATE_DIR = CONF_DIR / "templates"
DEFAULT_CONFIG = CONF_DIR / "elastic.yaml"


class ConfigError(ValueError):
    """The configuration file is missing, malformed or has an invalid value."""


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    nodes: int
    cpus_per_node: int
    real_memory_mb: int
    partition: str
    bf_interval: int
    expansion: bool  # SchedulerParameters=permit_job_expansion (off by default in Slurm since 19.05)
    state_dir: Path
    slurmctld_port: int
    slurmdbd_port: int
    mariadb_port: int
    slurmd_base_port: int
    db_name: str
    db_user: str
    db_password: str

    @property
    def slurm_conf(self) -> Path:
        return self.state_dir / "etc" / "slurm.conf"

    @property
    def node_names(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.nodes + 1)]

    def slurmd_port(self, node_index: int) -> int:
        """Port of node ``n<node_index>`` (1-based)."""
        return self.slurmd_base_port + node_index - 1

    def ports(self) -> dict[str, int]:
        """Every TCP port the cluster listens on, by daemon."""
        out = {
            "slurmctld": self.slurmctld_port,
            "slurmdbd": self.slurmdbd_port,
            "mariadb": self.mariadb_port,
        }
        out.update({f"slurmd {n}": self.slurmd_port(i) for i, n in enumerate(self.node_names, 1)})
        return out


@dataclass(frozen=True)
class ServiceConfig:
    host: str
    port: int
    policy: str
    expand_timeout_s: float
    expand_strategy: str = "auto"  # merge | expander | auto (merge only where Slurm permits it)


@dataclass(frozen=True)
class Config:
    cluster: ClusterConfig
    service: ServiceConfig
    source: Path


def _section(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"section '{name}' must be a mapping")
    return value


def _positive_int(section: dict[str, Any], key: str, where: str) -> int:
    value = section.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{where}.{key} must be a positive integer, got {value!r}")
    return value


def _choice(section: dict[str, Any], key: str, where: str, valid: tuple[str, ...], default: str) -> str:
    value = section.get(key, default)
    if value not in valid:
        raise ConfigError(f"{where}.{key} must be one of {', '.join(valid)}, got {value!r}")
    return str(value)


def _bool(section: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key} must be true or false, got {value!r}")
    return value


def config_path() -> Path:
    env = os.environ.get("ELASTIC_SLURM_CONF")
    return Path(env) if env else DEFAULT_CONFIG


def load_config(path: Path | None = None) -> Config:
    """Read and validate the YAML configuration."""
    path = path or config_path()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as exc:
        raise ConfigError(f"configuration file not found: {path}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    c, p, ports = _section(raw, "cluster"), _section(raw, "paths"), _section(raw, "ports")
    acct, svc = _section(raw, "accounting"), _section(raw, "service")
    cluster = ClusterConfig(
        name=str(c.get("name", "local")),
        nodes=_positive_int(c, "nodes", "cluster"),
        cpus_per_node=_positive_int(c, "cpus_per_node", "cluster"),
        real_memory_mb=_positive_int(c, "real_memory_mb", "cluster"),
        partition=str(c.get("partition", "debug")),
        bf_interval=_positive_int(c, "bf_interval", "cluster"),
        expansion=_bool(c, "expansion", "cluster", default=True),
        state_dir=Path(p.get("state_dir", "/var/lib/elastic-slurm")),
        slurmctld_port=_positive_int(ports, "slurmctld", "ports"),
        slurmdbd_port=_positive_int(ports, "slurmdbd", "ports"),
        mariadb_port=_positive_int(ports, "mariadb", "ports"),
        slurmd_base_port=_positive_int(ports, "slurmd_base", "ports"),
        db_name=str(acct.get("database", "slurm_acct_db")),
        db_user=str(acct.get("user", "slurm")),
        db_password=str(acct.get("password", "")),
    )
    service = ServiceConfig(
        host=str(svc.get("host", "127.0.0.1")),
        port=_positive_int(svc, "port", "service"),
        policy=str(svc.get("policy", "dmr")),
        expand_timeout_s=float(svc.get("expand_timeout_s", 10)),
        expand_strategy=_choice(svc, "expand_strategy", "service", ("auto", "merge", "expander"), "auto"),
    )
    return Config(cluster=cluster, service=service, source=path)
