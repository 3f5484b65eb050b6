"""Slurm config files generated from the templates in conf/templates (shared with docker/)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from slurm_ext.config import TEMPLATE_DIR, ClusterConfig


@dataclass(frozen=True)
class Addressing:
    """Where the daemons are reached: all on 127.0.0.1 here, one host name per container in docker/."""

    slurmctld_host: str  # SlurmctldHost
    slurmdbd_host: str  # AccountingStorageHost
    node_hostnames: str  # NodeHostname of n[1-N] (one name, or a hostlist of N)
    node_addrs: str  # NodeAddr of n[1-N]
    dbd_host: str  # slurmdbd.conf DbdHost (the host name slurmdbd runs on)
    dbd_addr: str  # slurmdbd.conf DbdAddr
    db_host: str  # slurmdbd.conf StorageHost (MariaDB)


ON_HOST = Addressing(
    slurmctld_host="localhost(127.0.0.1)",
    slurmdbd_host="127.0.0.1",
    node_hostnames="localhost",
    node_addrs="127.0.0.1",
    dbd_host="localhost",
    dbd_addr="127.0.0.1",
    db_host="127.0.0.1",
)


def in_containers(nodes: int) -> Addressing:
    """docker/'s compose cluster: each daemon in a container named after its service (n1..nN for nodes)."""
    names = f"n[1-{nodes}]"
    return Addressing("slurmctld", "slurmdbd", names, names, "slurmdbd", "slurmdbd", "mariadb")


def template_values(
    cfg: ClusterConfig, addressing: Addressing = ON_HOST, site: bool = False
) -> dict[str, str]:
    values = {
        "cluster_name": cfg.name,
        "state_dir": str(cfg.state_dir),
        "nodes": cfg.nodes,
        "cpus_per_node": cfg.cpus_per_node,
        "real_memory_mb": cfg.real_memory_mb,
        "partition": cfg.partition,
        "bf_interval": cfg.bf_interval,
        "select_lines": select_lines(cfg.select),
        "partition_lines": partition_lines(cfg, site),
        "scheduler_parameters": ",".join(
            (["permit_job_expansion"] if cfg.expansion else [])
            + [f"bf_interval={cfg.bf_interval}", "bf_resolution=1", "sched_interval=1"]
        ),
        "slurmctld_port": cfg.slurmctld_port,
        "slurmdbd_port": cfg.slurmdbd_port,
        "mariadb_port": cfg.mariadb_port,
        "slurmd_first_port": cfg.slurmd_port(1),
        "slurmd_last_port": cfg.slurmd_port(cfg.nodes),
        "db_name": cfg.db_name,
        "db_user": cfg.db_user,
        "db_password": cfg.db_password,
        **vars(addressing),
    }
    return {k: str(v) for k, v in values.items()}


def select_lines(select: str) -> str:
    """slurm.conf's SelectType (and, for cons_tres, what it allocates: cores, as sites mostly do)."""
    if select == "linear":
        return "SelectType=select/linear"
    if select == "cons_tres":
        return "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core"
    raise ValueError(f"unknown select plugin {select!r}; valid: linear, cons_tres")


# The site profile of the dockerized cluster (``cluster up --docker --select cons_tres``): what a site
# has and the other test clusters lack. Its users, accounts and QoS limit are added to accounting by
# slurm_ext.containers.site once the cluster is up.
SITE_PARTITIONS = ("left", "right")  # left (Default) and right, one node shared: see site_partitions
SITE_ENFORCE = "associations,limits,qos"


def site_partitions(nodes: int) -> dict[str, str]:
    """The site profile's partitions and their nodes (a Slurm hostlist), one node in both: up to 4
    nodes the last but one (n3 of 4: left = n[1-3], right = n[3-4]), beyond that the middle one
    (n4 of 7: left = n[1-4], right = n[4-7]), so that each partition has room for a demo; with one
    node, it is both partitions."""
    shared = max(1, nodes - 1) if nodes <= 4 else (nodes + 1) // 2
    first, second = SITE_PARTITIONS
    return {first: _node_range(1, shared), second: _node_range(shared, nodes)}


def _node_range(a: int, b: int) -> str:
    return f"n{a}" if a == b else f"n[{a}-{b}]"


def partition_lines(cfg: ClusterConfig, site: bool = False) -> str:
    """slurm.conf's partitions: one of every node; the site profile's two sharing a node, with
    associations, limits and QoS enforced (only jobs of users accounting knows run)."""
    if not site:
        return f"PartitionName={cfg.partition} Nodes=n[1-{cfg.nodes}] Default=YES MaxTime=INFINITE State=UP"
    lines = [
        "# The site profile: jobs only of users with an association, under their QoS's limits.",
        f"AccountingStorageEnforce={SITE_ENFORCE}",
    ]
    for i, (name, nodes) in enumerate(site_partitions(cfg.nodes).items()):
        default = " Default=YES" if i == 0 else ""
        lines.append(f"PartitionName={name} Nodes={nodes}{default} MaxTime=INFINITE State=UP")
    return "\n".join(lines)


def render(
    name: str,
    cfg: ClusterConfig,
    template_dir: Path = TEMPLATE_DIR,
    addressing: Addressing = ON_HOST,
    site: bool = False,
) -> str:
    """Fill ``<name>.in``; a placeholder without a value is an error, not an empty string.
    ``site``: the site profile's partitions and accounting enforcement (see :func:`partition_lines`)."""
    values = template_values(cfg, addressing, site)
    return Template((template_dir / f"{name}.in").read_text()).substitute(values)


def write_configs(cfg: ClusterConfig) -> Path:
    """Write slurm.conf and slurmdbd.conf (mode 600: it holds the DB password); returns the etc dir."""
    etc = cfg.slurm_conf.parent
    etc.mkdir(parents=True, exist_ok=True)
    cfg.slurm_conf.write_text(render("slurm.conf", cfg))
    dbd = etc / "slurmdbd.conf"
    dbd.write_text(render("slurmdbd.conf", cfg))
    dbd.chmod(0o600)
    return etc
