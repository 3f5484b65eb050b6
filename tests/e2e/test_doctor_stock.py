"""`slurm-ext doctor` on a cluster as Slurm ships it (no permit_job_expansion): the service still
works (expander jobs), and doctor names the line that would enable merge expansion."""

from __future__ import annotations

import json
import sys

import pytest

from .conftest import slurm_env

pytestmark = pytest.mark.slurm


def test_doctor_names_the_missing_expansion_setting_and_passes(stock_cluster) -> None:
    import subprocess

    conf = stock_cluster.cfg.slurm_conf
    res = subprocess.run([sys.executable, "-m", "slurm_ext", "doctor", "--json"], capture_output=True,
                         text=True, env=slurm_env(conf), timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr  # expander jobs still grow jobs: nothing stops the service
    found = {f["feature"]: f for f in json.loads(res.stdout)["findings"]}
    merge = found["merge expansion"]
    assert merge["status"] == "off" and "permit_job_expansion" in merge["fix"], merge
    assert found["expander jobs"]["status"] == "ok"
