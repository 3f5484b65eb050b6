"""Stale MPICH shared-memory segments in the host's /dev/shm, which every local node shares.

MPICH leaves its segments (``/dev/shm/mpich_shm_*``) behind when ranks are killed (a cancelled job,
a crash). Their names repeat for the same job id, so a job of a second cluster on this host (whose
job ids overlap this one's, e.g. the tests' stock cluster) may meet one and fail in ``MPI_Init``
with "Out of memory". ``cluster up`` removes those no process maps any more (a
running job keeps its segments mapped); one younger than ``min_age`` may be being set up.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

SHM = Path("/dev/shm")
_SEGMENT = re.compile(r"/dev/shm/mpich_shm_\S+")


def mapped_segments(proc: Path = Path("/proc")) -> set[str]:
    """Paths of MPICH segments some process maps."""
    found: set[str] = set()
    for maps in proc.glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:  # the process ended, or is not ours to read
            continue
        found.update(_SEGMENT.findall(text))
    return found


def remove_stale_segments(shm: Path = SHM, min_age: float = 10.0) -> list[Path]:
    """Remove the MPICH segments no process maps and older than ``min_age`` s; returns them."""
    candidates = [p for p in shm.glob("mpich_shm_*") if p.is_file()]
    if not candidates:
        return []
    in_use = mapped_segments()
    now, removed = time.time(), []
    for path in candidates:
        try:
            old = now - path.stat().st_mtime > min_age
        except FileNotFoundError:
            continue
        if old and str(SHM / path.name) not in in_use:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
