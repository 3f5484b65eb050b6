"""Real MPI ranks: redistribution between arbitrary sizes, and spawn/merge/disconnect worlds."""

from __future__ import annotations

import pytest

from .conftest import run_dmr, run_mpi

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_redistribute_keeps_global_array(ranks):
    proc = run_mpi(ranks, "prog_redistribute.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "redistribute: 0 failures" in proc.stdout


def test_world_of_groups_grows_through_the_agent_and_loses_a_middle_group():
    """dmr-run launches 3 groups of 2 ranks (mpiexec, no Slurm); one more joins, the middle one leaves."""
    proc = run_dmr(["a", "b", "c"], 2, "prog_world.py")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("launch ok: 3 groups") == 6
    assert out.count("joined") == 2 and out.count("grow ok: now 8 ranks on ['a', 'b', 'c', 'd']") == 8
    assert out.count("] left") == 2 and out.count("shrink ok: now 6 ranks on ['a', 'c', 'd']") == 6
    assert "DONE" in out
