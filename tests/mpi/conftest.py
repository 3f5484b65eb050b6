"""Run real MPI ranks with the ``mpich`` wheel's ``mpiexec`` (no Slurm needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MPIEXEC = shutil.which("mpiexec")


def run_mpi(ranks: int, program: str, *args: str, timeout: float = 60, env: dict | None = None):
    """``mpiexec -n ranks python program args``; returns the completed process (output captured)."""
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    assert ranks <= 4, "keep MPI tests to <= 4 ranks on the shared 2-core machine"
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("SLURM_JOB_ID", None)
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, str(HERE / program), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=HERE)
