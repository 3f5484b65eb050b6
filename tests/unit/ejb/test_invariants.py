"""Seeded random traces under all-elastic EJB: invariants that any correct run must keep."""

from __future__ import annotations

import random

import pytest

from ejb.params import EJBParams
from ejb.sim_driver import EJBController
from slurm_ext.sim import Simulator, Workload, rigid_job

PARAMS = [
    EJBParams(),
    EJBParams(o_max=64, migration=600.0, delta=2.0),
    EJBParams(o_max=2, migration=0.0, delta=0.8, waiting_first=False),
    EJBParams(migration=30.0, drop_dominated_j0=True),
]


def random_workload(seed: int, n: int = 120, nodes: int = 32) -> Workload:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for k in range(n):
        t += rng.expovariate(1 / 120)
        size = rng.choice([1, 2, 4, 8, 12, 16, 24, 32])
        limit = float(rng.randrange(60, 4000))
        run = limit * rng.uniform(0.05, 1.0)
        jobs.append(rigid_job(k + 1, round(t), size, limit, round(run, 1) or 1.0))
    return Workload(jobs, nodes)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("params", PARAMS, ids=["paper", "extreme", "mild-fcfs", "drop-j0"])
def test_invariants(seed: int, params: EJBParams) -> None:
    wl = random_workload(seed)
    ctrl = EJBController(params)
    res = Simulator(wl, "easy", controller=ctrl).run()
    n = len(wl.jobs)
    records = ctrl.records()
    assert set(records) == set(ctrl.ejb.jobs)  # every target application completed
    assert (res.start[:n] >= 0).sum() + sum(1 for j in ctrl.ejb.jobs.values() if j.j0.start is None) == n
    for eid, ej in ctrl.ejb.jobs.items():
        rec = records[eid]
        assert rec.first_start >= rec.submit and rec.completed > rec.first_start
        # the application cannot beat running exclusively on P_t from its first start
        assert rec.completed >= rec.first_start + rec.run_time - 1e-6
        for sj in ej.subjobs.values():
            assert sj.stop is not None and sj.stop <= rec.completed + 1e-6
            if sj.start is not None:
                assert sj.stop - sj.start <= sj.limit + 1e-6  # never past its own limit
        if not rec.elastic:
            assert rec.wait == 0.0
    subs = res.job_id > n
    assert (res.start[subs] == res.submit[subs]).all()  # every subjob filled a slot at once
    # the machine was never over-committed
    assert res.timeline["busy"].max() <= wl.nodes
