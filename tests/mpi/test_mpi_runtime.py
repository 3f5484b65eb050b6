"""Real MPI ranks: redistribution between arbitrary sizes, and spawn/merge/disconnect worlds."""

from __future__ import annotations

import pytest

from .conftest import run_mpi

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_redistribute_keeps_global_array(ranks):
    proc = run_mpi(ranks, "prog_redistribute.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "redistribute: 0 failures" in proc.stdout


def test_world_grows_by_spawn_and_shrinks_by_disconnect():
    proc = run_mpi(1, "prog_world.py")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "grow ok: now 2 ranks" in out and "grow ok: now 4 ranks" in out
    assert "shrink ok: now 2 ranks" in out and "shrink ok: now 1 ranks" in out
    assert out.count("left") == 3 and "DONE" in out
