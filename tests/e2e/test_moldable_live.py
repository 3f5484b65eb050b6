"""A policy's moldable start carried out on Slurm: DBES starts a malleable job at its minimum,
001's moldable EASY and FCFS on as many nodes as are idle, so the service sets the pending job's
node count to it, scales its time limit and raises it."""

from __future__ import annotations

import pytest

from slurm_ext.policies.base import Policy
from slurm_ext.policies.dbes import DBES
from slurm_ext.policies.moldable import MoldableEASY, MoldableFCFS

from .conftest import sh

pytestmark = pytest.mark.slurm


CASES = [  # policy, extra sbatch options, nodes it starts on (2 are idle), its time limit then
    (DBES(), (), 1, "40:00"),  # at its minimum: 10 min on 4 nodes is 40 on 1
    (DBES(), ("--ntasks-per-node=2",), 1, "40:00"),
    (MoldableEASY(), (), 2, "20:00"),  # as many as are idle
    (MoldableFCFS(), ("--ntasks-per-node=2",), 2, "20:00"),
]


IDS = ["dbes", "dbes-2-per-node", "moldable-easy", "moldable-fcfs-2-per-node"]


@pytest.mark.parametrize(("policy", "tasks", "nodes", "limit"), CASES, ids=IDS)
def test_a_policy_starts_a_pending_malleable_job_on_the_size_it_chose(
    slurm, make_service, policy: Policy, tasks: tuple[str, ...], nodes: int, limit: str
):
    total = len(set(sh("sinfo", "-h", "-N", "-o", "%N").split()))
    rigid = slurm.sbatch(total - 2, "sleep 600", "rigid")
    slurm.wait(lambda: (slurm.job(rigid) or {}).get("state") == "RUNNING", timeout=60)
    make_service(policy=policy, plan_interval=1.0)  # the whole-cluster pass starts jobs
    # asks 4 nodes (2 are free), declares it can run on 1 to 4
    job = slurm.sbatch(4, "sleep 600", "moldable", args=("--comment", "dmr:min=1,max=4", *tasks))
    started = slurm.wait(lambda: (j := slurm.job(job)) and j["state"] == "RUNNING" and j, timeout=60)
    assert (started["nodes"], started["limit"]) == (nodes, limit), started
    if tasks:  # its tasks scaled with its nodes (else Slurm holds it: BadConstraints)
        assert f"NumTasks={2 * nodes} " in sh("scontrol", "show", "job", "-o", str(job))
