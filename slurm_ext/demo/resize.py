"""`slurm-ext demo`: a running job shrunk and expanded on the live cluster, narrated step by step."""

from __future__ import annotations

import time
from collections.abc import Callable

from slurm_ext.backend import JobRequest
from slurm_ext.slurm import SlurmCluster

Say = Callable[[str], None]


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def resize_demo(slurm: SlurmCluster, say: Say, start: int = 4, sizes: tuple[int, ...] = (2, 1, 2, 4)) -> None:
    """Submit a ``start``-node job, resize it through ``sizes`` and cancel it, printing each step."""
    job_id = slurm.submit(
        JobRequest(
            nodes=start,
            name="resize-demo",
            time_limit=600,
            command="sleep 600",
            extra_args=("-o", "/dev/null"),
        )
    )
    try:
        # 90 s: Slurm 22.05 may hold a job that needs every node for 20-40 s after a pending job
        # was cancelled (docs/admin/slurm.md, known Slurm behaviour)
        wait_until(lambda: slurm.job(job_id).is_running, 90, f"job {job_id} to start")
        job = slurm.job(job_id)
        say(f"job {job_id} running on {job.node_count} nodes: {','.join(job.nodes)}")
        for size in sizes:
            current = slurm.job(job_id).node_count
            verb = "expand" if size > current else "shrink"
            t0 = time.perf_counter()
            if verb == "expand":
                slurm.expand(job_id, size)
            else:
                slurm.shrink(job_id, size)
            ms = (time.perf_counter() - t0) * 1000
            snap = slurm.snapshot()
            resized = snap.job(job_id)
            assert resized is not None
            say(
                f"{verb:>6} {current} -> {resized.node_count} nodes in {ms:5.0f} ms: "
                f"job on {','.join(resized.nodes)}; idle nodes now {len(snap.idle_nodes)}"
            )
    finally:
        slurm.cancel(job_id)
        say(f"job {job_id} cancelled")
        # its nodes back to Slurm before anything counts them (a job completes a while after)
        wait_until(lambda: slurm.snapshot().job(job_id) is None, 120, f"job {job_id} to leave the queue")
