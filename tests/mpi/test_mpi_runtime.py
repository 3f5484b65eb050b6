"""Real MPI ranks: redistribution between arbitrary sizes, and spawn/merge/disconnect worlds."""

from __future__ import annotations

import time

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


def test_the_other_groups_end_when_the_first_group_dies_before_the_launch():
    """The first group exits (code 3) before it expects the others: the agent stops the second group
    after the failure grace, long before its launch deadline (30 s here), and dmr-run ends with the
    first's code."""
    t0 = time.monotonic()
    proc = run_dmr(["a", "b"], 1, "prog_first_fails.py", launch_timeout=30, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "dmr: the group on a ended with exit code 3: its peers cannot go on" in out, out
    assert time.monotonic() - t0 < 25, out
    assert "JOINED" not in out
