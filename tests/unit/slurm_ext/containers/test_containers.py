"""The dockerized cluster's pieces that need no Docker: compose file, config rendering, image tags, CLI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from slurm_ext.cli import app
from slurm_ext.config import load_config
from slurm_ext.containers import compose, images, site
from slurm_ext.containers.releases import RELEASES, UnknownRelease, spec
from slurm_ext.local.docker_cli import exec_argv
from slurm_ext.local.render import in_containers, render, site_partitions
from slurm_ext.service.units import render as render_unit

runner = CliRunner()


def test_checked_in_compose_file_is_the_generated_one() -> None:
    assert compose.CHECKED_IN.read_text() == compose.compose_text(compose.DEFAULT_NODES)


def test_compose_file_shape() -> None:
    doc = yaml.safe_load(compose.compose_text(3))
    assert doc["version"] == "2.4"
    services = doc["services"]
    assert list(services) == ["init", "mariadb", "slurmdbd", "n1", "n2", "n3", "slurmctld", "login"]
    for name in ("n1", "n2", "n3", "slurmctld", "login", "slurmdbd", "mariadb"):
        assert services[name]["hostname"] == name
        assert "ports" not in services[name]  # nothing published on the host
    for name in ("n1", "n3", "login"):
        assert "shared:/shared" in services[name]["volumes"]
    # the DB secret reaches only the containers that need it
    holders = {n for n, s in services.items() if any(v.startswith("secret:") for v in s.get("volumes", []))}
    assert holders == {"init", "mariadb", "slurmdbd"}
    assert services["init"]["environment"]["NODES"] == "3"
    with pytest.raises(ValueError):
        compose.compose_doc(0)


def test_container_rendering_uses_the_shared_templates() -> None:
    cfg = replace(load_config().cluster, nodes=3, db_password="s3cret")
    conf = render("slurm.conf", cfg, addressing=in_containers(3))
    assert "SlurmctldHost=slurmctld\n" in conf and "AccountingStorageHost=slurmdbd\n" in conf
    assert "NodeName=n[1-3] NodeHostname=n[1-3] NodeAddr=n[1-3] " in conf
    host = render("slurm.conf", cfg)
    assert (
        "SlurmctldHost=localhost(127.0.0.1)\n" in host and "NodeHostname=localhost NodeAddr=127.0.0.1" in host
    )
    # everything but the addressing is the same as on the host
    differing = {a.split("=")[0] for a, b in zip(conf.splitlines(), host.splitlines(), strict=True) if a != b}
    assert differing == {"SlurmctldHost", "AccountingStorageHost", "NodeName"}
    dbd = render("slurmdbd.conf", cfg, addressing=in_containers(3))
    assert "DbdHost=slurmdbd\n" in dbd and "StorageHost=mariadb\n" in dbd and "StoragePass=s3cret\n" in dbd


def test_a_sites_select_plugin_is_rendered() -> None:
    cfg = load_config().cluster
    assert "\nSelectType=select/linear\n" in render("slurm.conf", cfg)
    conf = render("slurm.conf", replace(cfg, select="cons_tres", cpus_per_node=4))
    assert "\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n" in conf and " CPUs=4 " in conf
    assert "\nSlurmdParameters=config_overrides\n" in conf  # 4-CPU nodes on a 2-core host
    with pytest.raises(ValueError, match="unknown select plugin"):
        render("slurm.conf", replace(cfg, select="cons_res"))


def test_the_site_profile_has_two_partitions_sharing_a_node_and_enforces_accounting() -> None:
    cfg = replace(load_config().cluster, nodes=4, select="cons_tres", cpus_per_node=4, db_password="x")
    plain = render("slurm.conf", cfg, addressing=in_containers(4))
    conf = render("slurm.conf", cfg, addressing=in_containers(4), site=True)
    assert plain.count("PartitionName=") == 1 and "AccountingStorageEnforce" not in plain
    assert "\nPartitionName=debug Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP\n" in plain
    assert "\nAccountingStorageEnforce=associations,limits,qos\n" in conf
    assert "\nPartitionName=left Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP\n" in conf
    assert "\nPartitionName=right Nodes=n[3-4] MaxTime=INFINITE State=UP\n" in conf
    # nothing else differs from the plain cluster's
    differing = set(conf.splitlines()) ^ set(plain.splitlines())
    assert all(
        line.startswith(("PartitionName", "AccountingStorageEnforce", "# The site")) for line in differing
    )
    assert site_partitions(2) == {"left": "n1", "right": "n[1-2]"}
    assert site_partitions(7) == {"left": "n[1-4]", "right": "n[4-7]"}  # beyond 4 nodes: the middle one
    assert site_partitions(6) == {"left": "n[1-3]", "right": "n[3-6]"}
    assert site_partitions(1) == {"left": "n1", "right": "n1"}


def test_the_site_profiles_accounting_and_service_unit_commands() -> None:
    calls = [" ".join(c) for c in site.accounting_commands()]
    assert "sacctmgr -i add user alice,bob account=users" in calls
    assert "sacctmgr -i modify user elastic set AdminLevel=Operator" in calls
    assert any("MaxWall=" in c and "DenyOnLimit" in c for c in calls)
    text = render_unit("elastic-slurm.service", "elastic", site.SITE_CONFIG, Path("/var/lib/x"), "0.0.0.0")
    unit = site.parse_unit(text)
    assert unit.user == "elastic" and unit.environment == {"ELASTIC_SLURM_CONF": site.SITE_CONFIG}
    assert unit.exec_start_pre[-4:] == ["slurm_ext", "doctor", "--service-user", "elastic"]
    assert unit.exec_start[-4:] == ["slurm_ext", "serve", "--host", "0.0.0.0"]
    line = site.unit_shell(unit)
    # serve only after doctor passed
    assert line.index("doctor --service-user") < line.rindex("&& exec") < line.index("serve --host")
    assert "runuser -u elastic -- env ELASTIC_SLURM_CONF=" in line
    with pytest.raises(ValueError, match="no ExecStart"):
        site.parse_unit("[Service]\nUser=x\n")


def test_cluster_exec_runs_as_the_user_in_their_home() -> None:
    assert exec_argv("c", ["id", "-u"]) == ["docker", "exec", "-i", "c", "id", "-u"]
    assert exec_argv("c", ["sbatch", "--wrap", "a b"], "alice", "/shared/alice", tty=True) == [
        "docker", "exec", "-i", "-t", "-u", "alice", "-w", "/shared/alice", "c", "sbatch", "--wrap", "a b"
    ]  # fmt: skip


def test_image_tags_hash_their_inputs() -> None:
    rel = spec("24.11")
    assert images.base_tag(rel).startswith("elastic-slurm-base:trixie-")
    tag = images.image_tag(rel, images.base_tag(rel), "3.13")
    assert tag.startswith("elastic-slurm:24.11-") and tag == images.image_tag(
        rel, images.base_tag(rel), "3.13"
    )
    assert tag != images.image_tag(rel, images.base_tag(rel), "3.14")
    assert images.base_tag(spec("22.05")) != images.base_tag(rel)


def test_release_matrix() -> None:
    assert {r: s.suite for r, s in RELEASES.items()} == {
        "22.05": "bookworm",
        "24.11": "trixie",
        "26.05": "sid",
    }
    with pytest.raises(UnknownRelease, match="22.05, 24.11, 26.05"):
        spec("23.02")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cluster", "up", "--docker", "--release", "9.9"], "unknown Slurm release '9.9'"),
        (["cluster", "up", "--docker", "--nodes", "0"], "--nodes must be at least 1"),
        (["cluster", "up", "--release", "24.11"], "--release needs --docker"),
        (["cluster", "up", "--select", "cons_res"], "--select must be one of linear, cons_tres"),
        (["cluster", "up", "--docker", "--cpus-per-node", "0"], "--cpus-per-node must be at least 1"),
        (["cluster", "up", "--profile", "site"], "--profile site needs --docker"),
        (["cluster", "up", "--docker", "--profile", "big"], "--profile must be 'site'"),
        (["cluster", "up", "--docker", "--profile", "site", "--select", "linear"], "drop --select linear"),
        (["cluster", "images", "--release", "1.0"], "unknown Slurm release '1.0'"),
        (["cluster", "exec", "--", "id"], "cluster exec needs --docker"),
        (["cluster", "exec", "--docker"], "no command given"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(args: list[str], message: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.output.strip().startswith("error: ") and message in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_docker_commands_have_help() -> None:
    for args in (["cluster", "up"], ["cluster", "down"], ["cluster", "status"], ["cluster", "images"],
                 ["cluster", "exec"]):  # fmt: skip
        r = runner.invoke(app, [*args, "--help"])
        assert r.exit_code == 0 and "docker" in r.output.lower()


def test_images_install_every_dependency_of_the_toolkit() -> None:
    import tomllib

    from slurm_ext.config import PROJECT_ROOT

    deps = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wheels, sdists = images.requirements()
    assert sorted(wheels + sdists) == sorted(deps) and any(d.startswith("mpich") for d in wheels)
    assert all(d.startswith(images.NO_WHEEL) for d in sdists)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--profile", "site"], ("cons_tres", site.CPUS_PER_NODE)),
        (["--profile", "site", "--cpus-per-node", "8"], ("cons_tres", 8)),
        ([], (None, None)),
    ],
)
def test_the_site_profile_is_cons_tres_with_its_cpus(monkeypatch, args: list[str], expected) -> None:
    seen = []
    monkeypatch.setattr("slurm_ext.local.docker_cli.up", lambda *a: seen.append((a[3], a[4])))
    r = runner.invoke(app, ["cluster", "up", "--docker", *args])
    assert r.exit_code == 0, r.output
    assert seen == [expected]
