"""Tiny hand-built traces for EJB decision tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ejb.params import EJBParams
from ejb.sim_driver import EJBController
from slurm_ext.sim import Simulator, Workload, rigid_job
from slurm_ext.sim.result import SimResult


@dataclass
class Run:
    ctrl: EJBController
    result: SimResult

    def elastic(self, job_id: int):
        return self.ctrl.ejb.jobs[job_id]

    def record(self, job_id: int):
        return self.ctrl.records()[job_id]

    def cases(self, job_id: int) -> list[tuple[float, str]]:
        return list(self.elastic(job_id).log)

    def state(self, job_id: int) -> str:
        return str(self.result.state[list(self.result.job_id).index(job_id)])

    def times(self, job_id: int) -> tuple[float, float, float]:
        k = list(self.result.job_id).index(job_id)
        return float(self.result.submit[k]), float(self.result.start[k]), float(self.result.end[k])


def run_trace(
    jobs: list[tuple[int, float, int, float, float]], nodes: int, targets: set[int], **params: float
) -> Run:
    """``jobs`` are ``(id, submit, nodes, limit, run)``; only ``targets`` go to EJB."""
    wl = Workload([rigid_job(j, s, n, lim, run) for j, s, n, lim, run in jobs], nodes)
    ctrl = EJBController(EJBParams(**params), select=lambda jid, _p: jid in targets)  # type: ignore[arg-type]
    sim = Simulator(wl, "easy", controller=ctrl)
    return Run(ctrl, sim.run())


@pytest.fixture
def trace():
    return run_trace
