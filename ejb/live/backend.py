"""What the live EJB manager asks of a cluster: :class:`EJBBackend`.

The manager talks to Slurm through nothing else. :class:`slurm_ext.slurm.SlurmCluster` satisfies
it; the simulator's cluster need not (EJB's simulator driver, :mod:`ejb.sim_driver`, uses only
:class:`slurm_ext.backend.ClusterBackend`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from slurm_ext.backend import ClusterBackend


class EJBBackend(ClusterBackend, Protocol):
    """:class:`ClusterBackend` and the live Slurm calls of the EJB manager and its probe."""

    def planned_starts(self) -> dict[int, tuple[float | None, tuple[str, ...]]]:
        """Pending jobs' planned start and nodes as the last backfill pass left them."""
        ...

    def test_only(
        self, nodes: int, time_limit: float | None = None, exclude: Sequence[str] = (), partition: str = "",
        whole: bool = False,
    ) -> tuple[float, tuple[str, ...]]:  # fmt: skip
        """When and where a job of this shape would start (``sbatch --test-only``; ``whole``: on whole
        nodes)."""
        ...

    def show_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job``'s ``Key=value`` words (empty for a job Slurm does not know)."""
        ...

    def stdout_of(self, job_id: int) -> str:
        """The file a job's output goes to, as Slurm resolved it."""
        ...

    def set_stdout(self, job_id: int, path: str) -> None:
        """Point a job's output at ``path``, without complaint if Slurm refuses."""
        ...

    def node_hostname(self, node: str) -> str:
        """The host a node runs on; the node's own name where Slurm does not say."""
        ...

    def job_file_append(self) -> bool:
        """Whether jobs' files are opened for appending unless a job asks otherwise."""
        ...

    def release_held(self, job_id: int, nodes: int, time_limit: float, name: str) -> None:
        """A held pending job set to ``nodes``, ``time_limit`` seconds and ``name``, then released."""
        ...

    def hold_again(self, job_id: int, name: str) -> None:
        """A pending job held and renamed; a RuntimeError if it has started."""
        ...

    def submit_as(
        self, user: str, argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout: float = 60.0
    ) -> int:
        """An ``sbatch --parsable`` command line run as ``user`` with ``env``; the new job's id.
        A RuntimeError with sbatch's message if it fails."""
        ...
