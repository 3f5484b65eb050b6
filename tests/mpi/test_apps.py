"""The DMR paper's apps at fixed sizes with real ranks (no service): each checks its own result."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import HERE, MPIEXEC, run_mpi

pytestmark = pytest.mark.mpi

REPO = HERE.parents[1]


@pytest.mark.parametrize("counts", ["3,1,2", "0,4,0,2", "1,0,0,5", "2,2"])
def test_halo_rows_cross_uneven_and_empty_blocks(counts):
    ranks = len(counts.split(","))
    res = run_mpi(ranks, "prog_halo.py", counts)
    assert res.returncode == 0 and res.stdout.count(" ok") == ranks, res.stderr


def run_app(ranks: int, module: str, *args: str) -> dict:
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    env = {**os.environ, "DMR_DISABLE": "1"}
    env.pop("SLURM_JOB_ID", None)
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", module, *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    line = next((ln for ln in res.stdout.splitlines() if "_RESULT " in ln), None)
    assert line is not None, res.stdout + res.stderr
    return json.loads(line.split("_RESULT ", 1)[1]) | {"returncode": res.returncode}


@pytest.mark.parametrize("ranks", [1, 3])
@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("dmr_apps.jacobi", ["--n", "48", "--steps", "3", "--sweeps", "20"]),
        ("dmr_apps.cg", ["--n", "32", "--steps", "10", "--iters", "20"]),
        ("dmr_apps.nbody", ["--bodies", "64", "--steps", "3", "--substeps", "5"]),
    ],
)
def test_apps_check_their_own_results(ranks, module, args):
    out = run_app(ranks, module, *args)
    assert out["ok"] and out["returncode"] == 0, out


def test_a_failed_check_is_reported():
    # CG with too few iterations to converge: the app says so, and exits 1
    out = run_app(2, "dmr_apps.cg", "--n", "32", "--steps", "1", "--iters", "3")
    assert not out["ok"] and out["returncode"] == 1 and out["residual"] > 1e-8
