"""The YAML configuration: the shipped file loads, and a wrong expansion strategy is named."""

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
