"""The main demo: a malleable mpi4py app (Flexible Sleep) driven by the DMR control service.

1. FS starts on 1 node of an idle cluster and grows to its maximum (wide optimization: free nodes,
   nobody waiting);  2. the rest of the cluster is filled and a rigid job is queued that cannot
   start;  3. FS shrinks at its next step, the rigid job gets top priority and the freed nodes;
4. FS finishes with its state intact (checksum). Every resize is a real Slurm resize.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dmr_apps import script
from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX, JobRequest
from slurm_ext.demo.resize import wait_until
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.service.controller import fold_expanders
from slurm_ext.slurm import SlurmCluster

FS_APP = script("fs")
Say = Callable[[str], None]


def _size(slurm: SlurmCluster, job_id: int) -> tuple[str, int, str]:
    """State, node count and nodes of a job, counting the nodes of its expander jobs as its own."""
    job = fold_expanders(slurm.snapshot()).job(job_id)
    return ("GONE", 0, "") if job is None else (job.state.value, job.node_count, ",".join(job.nodes))


def malleable_demo(
    slurm: SlurmCluster,
    say: Say,
    max_nodes: int = 4,
    state_mb: int = 256,
    ppn: int = 2,
    strategy: str = "auto",
    host: str = "127.0.0.1",
    workdir: Path | None = None,
) -> dict:
    """Run the scenario above, narrating it; returns FS's own result (sizes, checksum).

    FS runs under ``dmr-run`` with ``ppn`` ranks per node; ``strategy``: how the service grows it.
    ``host``: the address the nodes reach the service at; ``workdir``: where the job script and its
    output go (a directory the nodes share, when they are other machines or containers).
    """
    if slurm.snapshot().free < max_nodes + 2:
        raise RuntimeError(f"the demo needs {max_nodes + 2} idle nodes")
    options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, expand_strategy=strategy)
    ctl = Controller(slurm, DMRPolicy(), options)
    server = Server(ctl, host=host, port=0)
    server.start()
    host, port = server.address
    say(f"control service listening on {host}:{port} (policy dmr, expand strategy {ctl.strategy})")
    work = Path(tempfile.mkdtemp(prefix="dmr-demo-", dir=workdir))
    script = work / "fs.sh"
    script.write_text(
        "#!/bin/bash\n"
        f"export DMR_SERVICE={host}:{port}\n"
        f"{sys.executable} -m dmr --ppn {ppn} -- {sys.executable} {FS_APP} --steps 30 --step-seconds 8 "
        f"--state-mb {state_mb} --max {max_nodes * ppn}\n"
    )
    out = work / "fs.out"
    submitted: list[int] = []
    try:
        fs = slurm.submit(JobRequest(nodes=1, name="fs", time_limit=600, script=str(script),
                                     extra_args=("-o", str(out), f"--ntasks-per-node={ppn}")))  # fmt: skip
        submitted.append(fs)
        say(
            f"submitted FS (job {fs}) on 1 node, {ppn} ranks per node, malleable between 1 and "
            f"{max_nodes} nodes, {state_mb} MiB of state"
        )
        seen = (None, 0, "")

        def report() -> tuple[str, int, str]:
            nonlocal seen
            now = _size(slurm, fs)
            if now[:2] != seen[:2]:
                say(
                    f"  FS job {fs}: "
                    + ("finished" if now[0] == "GONE" else f"{now[0]} on {now[1]} node(s) {now[2]}")
                )
            seen = now
            return now

        wait_until(lambda: report()[1] == max_nodes, 90, f"FS to grow to {max_nodes} nodes")
        filler = slurm.submit(JobRequest(nodes=slurm.snapshot().free, name="filler", time_limit=600,
                                         command="sleep 600", extra_args=("-o", "/dev/null")))  # fmt: skip
        submitted.append(filler)
        wait_until(lambda: _size(slurm, filler)[0] == "RUNNING", 60, "the filler job to start")
        rigid = slurm.submit(JobRequest(nodes=max_nodes // 2, name="rigid", time_limit=600,
                                        command="sleep 20", extra_args=("-o", "/dev/null")))  # fmt: skip
        submitted.append(rigid)
        say(
            f"cluster full; queued rigid job {rigid} needing {max_nodes // 2} nodes: {_size(slurm, rigid)[0]}"
        )
        wait_until(lambda: report() and _size(slurm, rigid)[0] == "RUNNING", 90, "the rigid job to start")
        fs_state = report()
        say(f"  rigid job {rigid}: RUNNING on {_size(slurm, rigid)[2]}; FS now on {fs_state[1]} node(s)")
        slurm.cancel(filler)
        wait_until(lambda: report()[0] == "GONE", 300, "FS to finish")
        line = next((ln for ln in out.read_text().splitlines() if ln.startswith("FS_RESULT ")), None)
        if line is None:
            raise RuntimeError(f"FS printed no result; see {out}")
        result = json.loads(line.removeprefix("FS_RESULT "))
        say(f"FS finished: {len(result['resizes'])} resizes "
            f"({', '.join(f'{r[1]} {r[2]}->{r[3]}' for r in result['resizes'])}), "
            f"state checksum {'intact' if result['checksum_ok'] else 'CORRUPTED'}")  # fmt: skip
        return result
    finally:
        live = {j.job_id for j in slurm.snapshot().jobs}
        for job_id in submitted:
            if job_id in live:
                slurm.cancel(job_id)
        server.stop()
        ctl.background.shutdown(wait=True)
        left = [
            j.job_id for j in slurm.snapshot().jobs if j.name.startswith((RESIZER_PREFIX, EXPANDER_PREFIX))
        ]
        say(f"service stopped; resizer or expander jobs left behind: {left or 'none'}")
