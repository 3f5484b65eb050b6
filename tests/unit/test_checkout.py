"""The code under test is this checkout's, not another worktree's (the editable install may point
elsewhere): ``python -m pytest`` puts the current directory first, and importlib mode keeps the
test packages ``tests/unit/ejb``, ``tests/unit/dmr``, ``tests/unit/slurm_ext`` and ``tests/unit/apps`` from
shadowing the packages of the same names."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


PACKAGES = ["ejb", "ejb.scheduler", "dmr", "dmr.runtime", "slurm_ext", "slurm_ext.sim"]


@pytest.mark.parametrize("package", PACKAGES)
def test_code_comes_from_this_checkout(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(ROOT), module.__file__


def test_every_package_folder_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages (apps/ is installed as dmr_apps): a new folder must be added."""
    import tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("dmr", "ejb", "slurm_ext")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert set(setup["packages"]) == folders | {"dmr_apps"}
    assert setup["package-dir"] == {"dmr_apps": "apps"} and (ROOT / "apps" / "__init__.py").is_file()


def test_the_apps_are_found_by_name() -> None:
    from dmr_apps import script

    assert script("fs").name == "fs.py" and script("fs").is_file()
    with pytest.raises(ValueError, match="no app named"):
        script("lulesh")
