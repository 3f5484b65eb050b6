"""Run real MPI ranks with the ``mpich`` wheel's ``mpiexec`` (no Slurm needed)."""

from __future__ import annotations

import os
import shutil
import signal
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


def start_dmr(
    nodes: list[str], ppn: int, command: list[str], options: tuple[str, ...] = (), launch_timeout: float = 120
) -> subprocess.Popen[str]:
    """``dmr-run --nodes ... --ppn ... [options] -- command`` outside Slurm: one mpiexec group per
    fake node, in a process group of its own (a timeout kills the agent and every group it started)."""
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "DMR_SERVICE": "127.0.0.1:1"}
    env.pop("SLURM_JOB_ID", None)
    cmd = [sys.executable, "-m", "dmr", "--nodes", ",".join(nodes), "--ppn", str(ppn),
           "--launch-timeout", str(launch_timeout), *options, "--", *command]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=HERE, start_new_session=True)  # fmt: skip


def finish(proc: subprocess.Popen[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Wait for a :func:`start_dmr` run (killed with all it started after ``timeout`` seconds)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {timeout} s)"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_dmr(
    nodes: list[str], ppn: int, program: str, *args: str, timeout: float = 60, launch_timeout: float = 120
):
    """``dmr-run --nodes ... --ppn ...`` outside Slurm, running ``program`` (a file here) to its end."""
    proc = start_dmr(nodes, ppn, [sys.executable, str(HERE / program), *args], launch_timeout=launch_timeout)
    return finish(proc, timeout)
