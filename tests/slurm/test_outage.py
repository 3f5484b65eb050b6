"""Slurm unreachable must not look like an empty cluster."""

from __future__ import annotations

import re

import pytest

from slurm_ext.errors import SlurmUnavailable
from slurm_ext.slurm import SlurmCluster

pytestmark = pytest.mark.slurm


def test_an_unreachable_slurmctld_raises_instead_of_showing_no_jobs(local_cluster, tmp_path):
    # the real cluster's configuration, pointed at a port where no slurmctld listens:
    # squeue --json then exits 0 with an "errors" array and no jobs
    conf = local_cluster.cfg.slurm_conf.read_text()
    bad = tmp_path / "slurm.conf"
    bad.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", conf))
    with pytest.raises(SlurmUnavailable, match="squeue: Failed while looking for jobs"):
        SlurmCluster(slurm_conf=bad, timeout=60).snapshot()
