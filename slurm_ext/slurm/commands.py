"""Runs Slurm commands and turns their failures into typed exceptions."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from slurm_ext.errors import InvalidRequest, JobNotFound, SlurmError, SlurmUnavailable

# Slurm's wording -> the exception that explains it best.
_PATTERNS: list[tuple[str, type[SlurmError]]] = [
    ("invalid job id", JobNotFound),
    ("unable to contact slurm controller", SlurmUnavailable),
    ("connection refused", SlurmUnavailable),
    ("could not establish a configuration source", SlurmUnavailable),
    ("unrecognized option", InvalidRequest),
    ("requested node configuration is not available", InvalidRequest),
    ("invalid option", InvalidRequest),
    ("invalid", InvalidRequest),
    ("not supported", InvalidRequest),
    ("dependency problem", InvalidRequest),
    ("must be", InvalidRequest),
]


def classify(stderr: str) -> type[SlurmError]:
    low = stderr.lower()
    return next((exc for text, exc in _PATTERNS if text in low), SlurmError)


class SlurmCommands:
    """Runs ``squeue``, ``scontrol`` & co. against one cluster (``SLURM_CONF``), with timeouts.

    ``prefix`` runs each command through another one, e.g. ``["docker", "exec", "-i", "login"]`` for a
    cluster whose commands live in a container (the environment is then the container's).
    """

    def __init__(
        self, slurm_conf: Path | None = None, timeout: float = 30.0, prefix: Sequence[str] = ()
    ) -> None:
        env = dict(os.environ)
        if slurm_conf is not None:
            env["SLURM_CONF"] = str(slurm_conf)
        # Inside a job scontrol would write slurm_job_<id>_resize.* files into the working
        # directory on every resize; the adapter acts for the cluster, not for its own job.
        for var in ("SLURM_JOB_ID", "SLURM_JOBID"):
            env.pop(var, None)
        self.env = env
        self.timeout = timeout
        self.prefix = list(prefix)

    def run(
        self, args: Sequence[str], timeout: float | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        try:
            res = subprocess.run(
                [*self.prefix, *cmd],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout or self.timeout,
                check=False,
            )
        except FileNotFoundError as exc:
            raise SlurmUnavailable(f"{cmd[0]}: command not found (is slurm-client installed?)", cmd) from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmUnavailable(f"{' '.join(cmd)} did not answer within {exc.timeout:.0f} s", cmd) from exc
        if check and res.returncode != 0:
            msg = (res.stderr or res.stdout).strip()
            raise classify(msg)(
                f"{cmd[0]}: {msg}" if msg else f"{' '.join(cmd)} exited {res.returncode}", cmd, msg
            )
        return res
