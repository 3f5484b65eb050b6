"""An evolving job (paper 000) on the local cluster: it asks to grow, DBES grants the ask."""

from __future__ import annotations

import pytest

from slurm_ext.config import load_config
from slurm_ext.policies import make_policy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.slurm.adapter import SlurmCluster

from .conftest import stop_service

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]


def test_an_evolving_job_grows_when_it_asks_and_only_then(slurm):
    backend = SlurmCluster(slurm_conf=load_config().cluster.slurm_conf)
    options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5)
    server = Server(Controller(backend, make_policy("dbes"), options), host="127.0.0.1", port=0)
    server.start()
    try:
        # rigid at 1 rank (--plan 0:1) on an idle cluster; from step 3 on it asks for 4 ranks
        job = slurm.dmr_fs(server.address, 1, "--steps 8 --step-seconds 1 --state-mb 8 --plan 0:1 --grow 3:4",
                           ppn=1)  # fmt: skip
        slurm.wait_gone(job, timeout=180)
        res = slurm.fs_result("fs", job)
    finally:
        stop_service(server)
    assert res["checksum_ok"] and res["final_size"] == 4, res
    [(step, action, old, new)] = [tuple(r[:4]) for r in res["resizes"]]
    assert (action, old, new) == ("expand", 1, 4) and step >= 3
