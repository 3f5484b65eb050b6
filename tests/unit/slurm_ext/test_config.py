"""The YAML configuration: typed, every key defaulted; a wrong key, type or value is named in one line."""

from pathlib import Path

import pytest
import yaml

from slurm_ext.config import ConfigError, config_path, load_config


def _with_service(tmp_path: Path, **service: object) -> Path:
    raw = yaml.safe_load(config_path().read_text())
    raw["service"].update(service)
    out = tmp_path / "elastic.yaml"
    out.write_text(yaml.safe_dump(raw))
    return out


def test_shipped_configuration_grows_jobs_by_auto() -> None:
    assert load_config().service.expand_strategy == "auto"


@pytest.mark.parametrize("strategy", ["merge", "expander", "auto"])
def test_expand_strategy_is_read(tmp_path: Path, strategy: str) -> None:
    assert load_config(_with_service(tmp_path, expand_strategy=strategy)).service.expand_strategy == strategy


def test_unknown_expand_strategy_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="service.expand_strategy must be one of auto, merge, expander"):
        load_config(_with_service(tmp_path, expand_strategy="spawn"))


def _write(tmp_path: Path, raw: object) -> Path:
    out = tmp_path / "elastic.yaml"
    out.write_text(raw if isinstance(raw, str) else yaml.safe_dump(raw))
    return out


def test_model_defaults_are_the_shipped_file() -> None:
    import msgspec

    from slurm_ext.config import DEFAULT_CONFIG, ConfigFile

    shipped = msgspec.convert(yaml.safe_load(DEFAULT_CONFIG.read_text()), ConfigFile)
    assert shipped == ConfigFile()  # every key the file sets has the file's value as its default


@pytest.mark.parametrize("raw", [{"cluster": {"name": "local"}}, "", "cluster:\naccounting:\n  password:\n"])
def test_a_partial_file_is_a_whole_configuration(tmp_path: Path, raw: object) -> None:
    full = load_config(config_path())
    partial = load_config(_write(tmp_path, raw))
    assert partial.cluster == full.cluster and partial.service == full.service


def test_keys_set_override_defaults(tmp_path: Path) -> None:
    raw = {
        "cluster": {"name": "mine", "nodes": 3},
        "paths": {"state_dir": "/tmp/x"},
        "accounting": {"password": 1234},
    }
    cfg = load_config(_write(tmp_path, raw))
    assert (cfg.cluster.name, cfg.cluster.nodes, cfg.cluster.cpus_per_node) == ("mine", 3, 2)
    assert cfg.cluster.state_dir == Path("/tmp/x") and cfg.cluster.slurm_conf == Path("/tmp/x/etc/slurm.conf")
    assert cfg.cluster.db_password == "1234"  # YAML read it as a number; it is text
    assert cfg.service.port == 7117 and cfg.service.expand_timeout_s == 10.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cluster": {"nodess": 3}}, "unknown key cluster.nodess (valid: name, nodes,"),
        (
            {"clusters": {"name": "x"}},
            "unknown key clusters (valid: cluster, paths, ports, accounting, service)",
        ),
        ({"cluster": {"nodes": "8"}}, "cluster.nodes must be a positive integer, got '8'"),
        ({"ports": {"slurmctld": 0}}, "ports.slurmctld must be a positive integer, got 0"),
        (
            {"cluster": {"expansion": "yes please"}},
            "cluster.expansion must be true or false, got 'yes please'",
        ),
        ({"service": {"expand_timeout_s": "soon"}}, "service.expand_timeout_s must be a number, got 'soon'"),
        ({"service": 7}, "service must be a mapping, got 7"),
        ("- a list\n", "top level must be a mapping"),
    ],
)
def test_a_bad_key_or_type_is_one_line_naming_it(tmp_path: Path, raw: object, message: str) -> None:
    path = _write(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text
