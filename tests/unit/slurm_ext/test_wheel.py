"""A wheel built from the repository works outside the checkout: conf/ travels as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_wheel_carries_the_configuration_and_finds_it_installed(tmp_path: Path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    [wheel] = tmp_path.glob("elastic_slurm-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(site)
    assert {"slurm_ext/data/conf/elastic.yaml", "slurm_ext/data/conf/templates/slurm.conf.in"} <= names
    assert {
        "slurm_ext/data/conf/systemd/elastic-slurm.service.in",
        "slurm_ext/data/conf/systemd/ejb-manager.service.in",
    } <= names
    probe = (
        "import slurm_ext.config as c; from slurm_ext.local.render import render;"
        "cfg = c.load_config(); print(c.CONF_DIR); print(len(render('slurm.conf', cfg.cluster)))"
    )
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}  # the checkout is nowhere on the path
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env
    )
    assert run.returncode == 0, run.stderr
    conf_dir, size = run.stdout.split()
    assert conf_dir == str(site / "slurm_ext" / "data" / "conf") and int(size) > 500
