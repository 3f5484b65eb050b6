"""Typed errors for everything that talks to Slurm. Each carries Slurm's own message."""

from __future__ import annotations


class SlurmError(RuntimeError):
    """A Slurm command failed. ``command`` is what ran, ``stderr`` what Slurm said."""

    def __init__(self, message: str, command: list[str] | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.command = command or []
        self.stderr = stderr


class SlurmUnavailable(SlurmError):
    """slurmctld cannot be reached (cluster down, wrong SLURM_CONF) or a Slurm command is missing."""


class JobNotFound(SlurmError):
    """No pending or running job has this id (unknown, foreign cluster, or already finished)."""


class InvalidRequest(SlurmError):
    """The request is impossible as asked (bad option, bad size, job in the wrong state)."""


class ResizeTimeout(SlurmError):
    """The resizer job did not get its nodes before the deadline; it was cancelled."""
