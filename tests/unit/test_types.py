"""The type checker is clean: ``python -m mypy`` over dmr, slurm_ext and ejb (and the apps they
import as ``dmr_apps``), as ``[tool.mypy]`` in pyproject.toml sets it up. About 8 s from nothing,
under a second with the cache (``.mypy_cache/`` in the checkout, ignored by git)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "dmr", "slurm_ext", "ejb"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, f"mypy found errors (exit {run.returncode}):\n{run.stdout}{run.stderr}"
