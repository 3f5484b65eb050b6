"""Seeded random workloads shared by the simulator tests."""

from __future__ import annotations

import random

from slurm_ext.sim import Workload, rigid_job


def random_workload(seed: int, n: int = 300, nodes: int = 32, exact: bool = False) -> Workload:
    rng = random.Random(seed)
    t = 0.0
    jobs = []
    for k in range(n):
        t += rng.expovariate(1 / 60)
        size = min(nodes, int(2 ** rng.uniform(0, 5.5)))
        limit = float(rng.choice([60, 600, 1800, 3600, 7200]))
        run = limit if exact else rng.uniform(1, limit * 1.2)
        jobs.append(rigid_job(k + 1, round(t), size, limit, run))
    return Workload(jobs, nodes)
