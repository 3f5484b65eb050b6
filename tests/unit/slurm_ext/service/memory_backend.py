"""A hand-made in-memory backend, for the few service tests that inject what a real cluster cannot
be made to do on cue: a race or a delay inside a call (``expand_delay``, a replaced ``expand``),
resizer jobs left behind by another service, a job owned by a named user, and a record of the
calls made (``calls``: a time limit set after a shrink, which the simulator has no counterpart for).

Every other service test runs on :class:`slurm_ext.sim.SimCluster`, the simulator through the same
backend interface as live Slurm; Slurm's own behaviour is tested on the real local cluster.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from slurm_ext.backend import RESIZER_PREFIX, ClusterBackend
from slurm_ext.errors import ResizeTimeout
from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot


class MemoryBackend(ClusterBackend):
    def __init__(self, nodes: int) -> None:
        self.names = [f"n{i + 1}" for i in range(nodes)]
        self.jobs: dict[int, Job] = {}
        self.lock = threading.Lock()
        self.calls: list[tuple] = []
        self.expand_delay = 0.0

    def add(
        self, job_id: int, count: int, pending: bool = False, limit: float = 3600.0, user: str = "root",
        malleable: MalleableSpec | None = None,
    ) -> Job:  # fmt: skip
        with self.lock:
            nodes = () if pending else tuple(self._idle()[:count])
            assert pending or len(nodes) == count, "not enough idle nodes"
            state = JobState.PENDING if pending else JobState.RUNNING
            job = Job(job_id, state, count, nodes=nodes, start_time=time.time(), time_limit=limit, user=user,
                      submit_time=float(job_id), reason="Resources" if pending else "",
                      malleable=malleable)  # fmt: skip
            self.jobs[job_id] = job
            return job

    def _idle(self) -> list[str]:
        used = {n for j in self.jobs.values() for n in j.nodes}
        return [n for n in self.names if n not in used]

    def snapshot(self) -> Snapshot:
        with self.lock:
            idle = set(self._idle())
            nodes = tuple(Node(n, NodeState.IDLE if n in idle else NodeState.ALLOCATED) for n in self.names)
            return Snapshot(time=time.time(), nodes=nodes, jobs=tuple(self.jobs.values()))

    def expand(self, job_id: int, new_size: int, timeout: float = 10.0, snap: Snapshot | None = None) -> None:
        self.calls.append(("expand", job_id, new_size))
        time.sleep(self.expand_delay)
        with self.lock:
            job = self.jobs[job_id]
            idle = self._idle()
            extra = new_size - job.node_count
            if extra > len(idle):
                raise ResizeTimeout(f"no {extra} free node(s) for job {job_id}; resizer cancelled")
            self.jobs[job_id] = _with(job, job.nodes + tuple(idle[:extra]))

    def shrink(
        self, job_id: int, new_size: int, keep: list[str] | None = None, snap: Snapshot | None = None
    ) -> None:
        self.calls.append(("shrink", job_id, new_size, tuple(keep or ())))
        with self.lock:
            job = self.jobs[job_id]
            self.jobs[job_id] = _with(job, tuple(keep) if keep else job.nodes[:new_size])

    def raise_priority(self, job_id: int) -> None:
        self.calls.append(("raise_priority", job_id))

    def resize_pending(self, job_id: int, nodes: int, time_limit: float | None = None) -> None:
        self.calls.append(
            ("resize_pending", job_id, nodes, None if time_limit is None else round(time_limit))
        )
        with self.lock:
            self.jobs[job_id] = replace(self.jobs[job_id], node_count=nodes)

    def set_time_limit(self, job_id: int, seconds: float) -> bool:
        self.calls.append(("set_time_limit", job_id, round(seconds)))
        return True

    def cancel_orphan_resizers(self, older_than: float, snap: Snapshot | None = None) -> list[int]:
        # Same contract as SlurmCluster.cancel_orphan_resizers (tested on the real cluster).
        self.calls.append(("sweep", older_than))
        now = time.time()
        with self.lock:
            old = [
                i
                for i, j in self.jobs.items()
                if j.name.startswith(RESIZER_PREFIX) and now - j.submit_time > older_than
            ]
            for i in old:
                del self.jobs[i]
        return old

    def submit(self, request):  # noqa: ANN001, ANN201
        raise NotImplementedError

    def cancel(self, job_id: int) -> None:
        with self.lock:
            self.jobs.pop(job_id, None)

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None:
        self.calls.append(("cancel", job_id))
        job = self.jobs.get(job_id)
        if job is not None and (name is None or job.name == name):
            self.cancel(job_id)


def _with(job: Job, nodes: tuple[str, ...]) -> Job:
    return replace(job, nodes=nodes, node_count=len(nodes))
