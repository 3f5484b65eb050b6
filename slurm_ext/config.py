"""The toolkit's configuration: ``conf/elastic.yaml`` plus overrides.

Lookup order: the file named by ``ELASTIC_SLURM_CONF``, else the site's
``/etc/elastic-slurm/elastic.yaml`` (``slurm-ext install-units`` writes it), else the project's
``conf/elastic.yaml``.

The file is read into a typed settings model (:class:`ConfigFile`, msgspec structs, one per
section) whose defaults are those of ``conf/elastic.yaml``: a file may set any subset of the keys
(``cluster: {name: mine}`` alone is a whole configuration). A wrong type or value, or an unknown
key, is a :class:`ConfigError` of one line naming the key. The model is then flattened into
:class:`ClusterConfig` and :class:`ServiceConfig`, which the rest of the toolkit uses.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec
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
    select: str  # SelectType: linear (whole nodes) or cons_tres (Slurm's default: jobs share nodes)
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
    slurm_conf: Path | None = None  # the site's slurm.conf (None: the local cluster's, else Slurm's lookup)


@dataclass(frozen=True)
class Config:
    cluster: ClusterConfig
    service: ServiceConfig
    source: Path

    @property
    def slurm_conf(self) -> Path | None:
        """The slurm.conf the service and the manager use: the one named in ``service.slurm_conf``,
        else the local cluster's if `cluster up` made one, else None (Slurm's own lookup:
        ``SLURM_CONF``, then its compiled-in path)."""
        if self.service.slurm_conf is not None:
            return self.service.slurm_conf
        return self.cluster.slurm_conf if self.cluster.slurm_conf.exists() else None


# -- the file's typed model (defaults = conf/elastic.yaml) ---------------------------------------
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
ExpandStrategy = Literal["auto", "merge", "expander"]
Select = Literal["linear", "cons_tres"]
SELECTS: tuple[str, ...] = ("linear", "cons_tres")


class _Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The sections' base. Its options are inherited at run time, but type checkers (PEP 681's
    dataclass_transform) see ``frozen`` per class only, so each section says ``frozen=True`` too."""


class ClusterSection(_Section, frozen=True):
    name: str = "local"
    nodes: PositiveInt = 8
    cpus_per_node: PositiveInt = 2
    expansion: bool = True
    select: Select = "linear"
    real_memory_mb: PositiveInt = 1000
    partition: str = "debug"
    bf_interval: PositiveInt = 1


class PathsSection(_Section, frozen=True):
    state_dir: str = "/var/lib/elastic-slurm"


class PortsSection(_Section, frozen=True):
    slurmctld: PositiveInt = 6817
    slurmdbd: PositiveInt = 6819
    mariadb: PositiveInt = 3307
    slurmd_base: PositiveInt = 17001


class AccountingSection(_Section, frozen=True):
    database: str = "slurm_acct_db"
    user: str = "slurm"
    password: str = ""


class ServiceSection(_Section, frozen=True):
    host: str = "127.0.0.1"
    port: PositiveInt = 7117
    policy: str = "dmr"
    expand_timeout_s: float = 10.0
    expand_strategy: ExpandStrategy = "auto"
    slurm_conf: str = ""


class ConfigFile(_Section, frozen=True):
    """``elastic.yaml`` as typed sections; every key has the default of ``conf/elastic.yaml``."""

    cluster: ClusterSection = ClusterSection()
    paths: PathsSection = PathsSection()
    ports: PortsSection = PortsSection()
    accounting: AccountingSection = AccountingSection()
    service: ServiceSection = ServiceSection()


def _tidy(raw: dict[str, Any]) -> dict[str, Any]:
    """Empty YAML values (``key:``, ``section:``) mean "the default"; numbers where text is
    expected (``password: 1234``) are that text, as they always were."""
    out: dict[str, Any] = {}
    sections = {f.name: f.type for f in msgspec.structs.fields(ConfigFile)}
    for name, value in raw.items():
        if value is None:
            continue
        if isinstance(value, dict) and name in sections:
            text = {f.name for f in msgspec.structs.fields(sections[name]) if f.type is str}
            value = {
                k: str(v) if k in text and isinstance(v, int | float) and not isinstance(v, bool) else v
                for k, v in value.items()
                if v is not None
            }
        out[name] = value
    return out


def _field_type(keys: list[str]) -> Any:
    t: Any = ConfigFile
    for k in keys:
        fields = {f.name: f.type for f in msgspec.structs.fields(t)} if isinstance(t, type) else {}
        if k not in fields:
            return None
        t = fields[k]
    return t


# msgspec's names of the expected types, in the words of the error line (every int key is positive)
WANTED = {
    "int": "a positive integer",
    "int >= 1": "a positive integer",
    "float": "a number",
    "str": "text",
    "bool": "true or false",
    "object": "a mapping",
}


def _explain(exc: msgspec.ValidationError, raw: dict[str, Any]) -> str:
    """msgspec's ``Expected `int` >= 1 - at `$.cluster.nodes``` as ``cluster.nodes must be ...``."""
    text, _, where = str(exc).partition(" - at `$")
    keys = [k for k in where.rstrip("`").split(".") if k]
    unknown = re.match(r"Object contains unknown field `(.*)`", text)
    if unknown:
        t = _field_type(keys)
        valid = ", ".join(f.name for f in msgspec.structs.fields(t)) if isinstance(t, type) else ""
        return f"unknown key {'.'.join([*keys, unknown.group(1)])} (valid: {valid})"
    value: Any = raw
    for k in keys:
        value = value.get(k) if isinstance(value, dict) else None
    t = _field_type(keys)
    if text.startswith("Invalid enum value"):
        want = f"one of {', '.join(get_args(t))}"
    else:
        want = re.sub(r", got `\w+`$", "", text).removeprefix("Expected ").replace("`", "")
        want = WANTED.get(want, want)
    return f"{'.'.join(keys)} must be {want}, got {value!r}"


SITE_CONFIG = Path("/etc/elastic-slurm/elastic.yaml")


def config_path() -> Path:
    env = os.environ.get("ELASTIC_SLURM_CONF")
    if env:
        return Path(env)
    return SITE_CONFIG if SITE_CONFIG.exists() else DEFAULT_CONFIG


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
    try:
        f = msgspec.convert(_tidy(raw), ConfigFile)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_explain(exc, raw)}") from None
    c, ports, acct, svc = f.cluster, f.ports, f.accounting, f.service
    cluster = ClusterConfig(
        name=c.name,
        nodes=c.nodes,
        cpus_per_node=c.cpus_per_node,
        real_memory_mb=c.real_memory_mb,
        partition=c.partition,
        bf_interval=c.bf_interval,
        expansion=c.expansion,
        select=c.select,
        state_dir=Path(f.paths.state_dir),
        slurmctld_port=ports.slurmctld,
        slurmdbd_port=ports.slurmdbd,
        mariadb_port=ports.mariadb,
        slurmd_base_port=ports.slurmd_base,
        db_name=acct.database,
        db_user=acct.user,
        db_password=acct.password,
    )
    service = ServiceConfig(
        host=svc.host,
        port=svc.port,
        policy=svc.policy,
        expand_timeout_s=float(svc.expand_timeout_s),
        expand_strategy=svc.expand_strategy,
        slurm_conf=Path(svc.slurm_conf) if svc.slurm_conf else None,
    )
    return Config(cluster=cluster, service=service, source=path)
