"""A policy's moldable start carried out on Slurm: DBES starts a malleable job at its minimum, so
the service sets the pending job's node count to it, scales its time limit and raises it."""

from __future__ import annotations

import pytest

from slurm_ext.policies.dbes import DBES

from .conftest import sh

pytestmark = pytest.mark.slurm


@pytest.mark.parametrize("tasks", [(), ("--ntasks-per-node=2",)], ids=["default-tasks", "2-per-node"])
def test_dbes_starts_a_pending_malleable_job_at_its_minimum(slurm, make_service, tasks):
    total = len(set(sh("sinfo", "-h", "-N", "-o", "%N").split()))
    rigid = slurm.sbatch(total - 2, "sleep 600", "rigid")
    slurm.wait(lambda: (slurm.job(rigid) or {}).get("state") == "RUNNING", timeout=60)
    make_service(policy=DBES(), plan_interval=1.0)  # the whole-cluster pass starts jobs
    # asks 4 nodes (2 are free), declares it can run on 1 to 4: DBES starts it at 1
    job = slurm.sbatch(4, "sleep 600", "moldable", args=("--comment", "dmr:min=1,max=4", *tasks))
    started = slurm.wait(lambda: (j := slurm.job(job)) and j["state"] == "RUNNING" and j, timeout=60)
    assert started["nodes"] == 1, started
    assert started["limit"] == "40:00", started  # 10 min on 4 nodes: 40 on 1
    if tasks:  # its tasks scaled with its nodes (else Slurm holds it: BadConstraints)
        assert "NumTasks=2 " in sh("scontrol", "show", "job", "-o", str(job))
