"""The one interface every cluster backend implements: live Slurm
(:class:`slurm_ext.slurm.SlurmCluster`) and the simulator (:class:`slurm_ext.sim.SimCluster`).
The control service and the EJB manager call nothing else on a backend.

The control service and EJB's simulator driver talk to a :class:`ClusterBackend`; they never know
which one. Both answer alike, errors included (``tests/unit/sim/test_sim_cluster.py`` checks the
simulator against what ``tests/slurm/test_adapter.py`` checks on Slurm).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from slurm_ext.errors import InvalidRequest
from slurm_ext.model import Job, Snapshot

# Helper jobs the service submits carry the id of the job they serve in their name, so a
# restarted service (or a sweep) can tell whose they are from the queue alone.
RESIZER_PREFIX = "resizer-for-"
EXPANDER_PREFIX = "expander-for-"


def resizer_name(job_id: int) -> str:
    return f"{RESIZER_PREFIX}{job_id}"


def expander_name(job_id: int) -> str:
    return f"{EXPANDER_PREFIX}{job_id}"


def expander_command(python: str, agent: str, token: str) -> str:
    """What an expander job runs: an agent that starts the new ranks and joins the application's."""
    return f"exec {shlex.quote(python)} -m dmr join --agent {shlex.quote(agent)} --token {shlex.quote(token)}"


def served_job(name: str, prefix: str) -> int | None:
    """The job a helper job named ``<prefix><id>`` serves, or None."""
    tail = name.removeprefix(prefix)
    return int(tail) if tail != name and tail.isdigit() else None


@dataclass(frozen=True)
class JobRequest:
    """A job to submit: a shape and a time limit, plus what to run (live) or how long it runs (sim)."""

    nodes: int
    time_limit: float | None = None  # seconds
    name: str = "job"
    command: str | None = None  # live: shell command wrapped by sbatch --wrap
    script: str | None = None  # live: path of a batch script
    extra_args: tuple[str, ...] = field(default=())  # live: further sbatch options
    dependency: str | None = None
    array: str | None = None  # live: a job array (sbatch --array, e.g. "0-9%2"); its id is the array's


@runtime_checkable
class ClusterBackend(Protocol):
    """Seven calls every backend answers, and seven that only a live Slurm has (helper jobs, job
    steps, pending jobs' sizes, time limits). Those have defaults meaning "this backend has none": a backend
    inherits them by naming this class as its base (the simulator does; ``SlurmCluster`` has all)."""

    def snapshot(self) -> Snapshot:
        """The cluster now: nodes and live (pending/running) jobs."""
        ...

    def submit(self, request: JobRequest) -> int:
        """Submit a job; returns its id."""
        ...

    def cancel(self, job_id: int) -> None: ...

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None:
        """Cancel without complaint if the job has ended; ``name``: only if the job still bears it
        (a slurmctld that lost its last seconds of state gives ids again)."""
        ...

    def shrink(
        self, job_id: int, new_size: int, keep: Sequence[str] | None = None, snap: Snapshot | None = None
    ) -> None:
        """Release nodes of a running job until it holds ``new_size`` (``keep``: which nodes stay).

        ``snap``: a snapshot the caller just took, so the backend need not read the cluster again.
        """
        ...

    def expand(self, job_id: int, new_size: int, timeout: float = 10.0, snap: Snapshot | None = None) -> None:
        """Grow a running job to ``new_size`` nodes, or raise if the nodes do not come in ``timeout``."""
        ...

    def raise_priority(self, job_id: int) -> None:
        """Put a pending job at the head of the queue."""
        ...

    # -- live Slurm only (defaults: none of it here) -------------------------------------------
    def expansion_permitted(self) -> bool:
        """Whether a running job can grow in place (Slurm: ``permit_job_expansion``)."""
        return True

    def submit_expander(
        self, app: Job, nodes: int, command: str, time_limit: float | None, agent: str = "", token: str = ""
    ) -> int:
        """Submit a second job hosting new ranks of ``app``, running ``command``, as its owner; returns
        its id. ``agent``/``token``: the application's agent and the expansion, where only the agent
        can submit as the owner."""
        raise InvalidRequest("this backend has no expander jobs")

    def job_state(self, job_id: int) -> tuple[str, tuple[str, ...]]:
        """(state, nodes) of one job, read at once; ("", ()) once it is gone."""
        job = self.snapshot().job(job_id)
        return ("", ()) if job is None else (job.state, tuple(job.nodes))

    def steps_on(self, job_id: int, nodes: Sequence[str]) -> list[str] | None:
        """The job's application steps running on any of ``nodes``; None: this backend has no steps."""
        return None

    def resize_pending(self, job_id: int, nodes: int, time_limit: float | None = None) -> None:
        """Set a pending job's node count (it starts on ``nodes`` nodes) and, if given, its time limit
        in seconds, in one update."""
        raise InvalidRequest("this backend cannot change a pending job's size")

    def set_time_limit(self, job_id: int, seconds: float) -> bool:
        """Set the job's time limit; False where a backend keeps none to set."""
        return False

    def cancel_orphan_resizers(self, older_than: float, snap: Snapshot | None = None) -> list[int]:
        """Cancel resizer jobs submitted more than ``older_than`` seconds ago; returns their ids."""
        return []

    def cancel_orphan_expanders(self, snap: Snapshot | None = None) -> list[int]:
        """Cancel expander jobs whose application no longer runs; returns their ids."""
        return []
