"""`cluster up` removes the MPICH segments a killed job left in the shared /dev/shm, and nothing a
running process maps or a job is setting up."""

from __future__ import annotations

import mmap
import os
import time
import uuid

import pytest

from slurm_ext.local.shm import SHM, remove_stale_segments


@pytest.mark.skipif(not SHM.is_dir(), reason="needs /dev/shm")
def test_only_old_unmapped_segments_are_removed() -> None:
    tag = uuid.uuid4().hex[:8]
    old, new, used = (SHM / f"mpich_shm_{tag}{kind}_0" for kind in ("old", "new", "use"))
    an_hour_ago = time.time() - 3600
    for path in (old, new, used):
        path.write_bytes(b"\0" * 4096)
    for path in (old, used):
        os.utime(path, (an_hour_ago, an_hour_ago))
    try:
        with used.open("r+b") as f, mmap.mmap(f.fileno(), 4096):
            removed = remove_stale_segments()
            assert old in removed and not old.exists()
            assert new.exists() and used.exists() and new not in removed and used not in removed
    finally:
        for path in (old, new, used):
            path.unlink(missing_ok=True)
