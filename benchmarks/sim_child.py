"""``bench_sim.py``'s child: build one trace and simulate it; prints one JSON line.

python benchmarks/sim_child.py synthetic|concat JOBS NODES SCHEDULER [SWF ...]
"""

from __future__ import annotations

import json
import sys
import time

t0 = time.perf_counter()  # the imports count as building the workload

from slurm_ext.sim import Simulator  # noqa: E402
from slurm_ext.sim.invariants import capacity_violations  # noqa: E402
from slurm_ext.workloads import load_swf  # noqa: E402
from slurm_ext.workloads.model import Workload  # noqa: E402
from slurm_ext.workloads.synthetic import SyntheticConfig, generate  # noqa: E402


def concatenated(paths: list[str], n: int) -> Workload:
    """The traces end to end (an hour apart), repeated until ``n`` jobs, job ids renumbered."""
    parts = [load_swf(p) for p in paths]
    jobs, shift, jid = [], 0.0, 0
    while len(jobs) < n:
        for p in parts:
            base = p.jobs[0].submit
            for j in p.jobs:
                jid += 1
                jobs.append(j._replace(job_id=jid, submit=j.submit - base + shift))
            shift = jobs[-1].submit + 3600.0
    return Workload(jobs[:n], max(p.nodes for p in parts), "concat")


def main() -> None:
    kind, n, nodes, sched = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if kind == "synthetic":
        wl = generate(SyntheticConfig(jobs=n, nodes=nodes, seed=1, load=0.7))
    else:
        wl = concatenated(sys.argv[5:], n)
    t1 = time.perf_counter()
    r = Simulator(wl, sched).run()
    t2 = time.perf_counter()
    info = {"jobs": len(wl.jobs), "nodes": wl.nodes, "build": t1 - t0, "sim": t2 - t1,
            "over": int(len(capacity_violations(r))), "finished": int(r.finished.sum())}  # fmt: skip
    print(json.dumps(info))


if __name__ == "__main__":
    main()
