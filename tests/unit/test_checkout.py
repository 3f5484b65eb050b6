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
