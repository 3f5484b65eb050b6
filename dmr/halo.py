"""Halo rows for block-distributed grids: each rank gets its neighbours' edge rows.

A 2-D grid distributed along axis 0 (see :mod:`dmr.redistribute`) needs, for a stencil, the last
``width`` rows of the rank before and the first ``width`` rows of the rank after. Ranks holding no
rows are skipped (their neighbours talk past them), so any layout works, balanced or not.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI


def exchange_rows(
    comm: MPI.Intracomm, block: np.ndarray, width: int = 1
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Collective: (rows just above this block, rows just below it); None at the grid's edges."""
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    counts = comm.allgather(block.shape[0])
    if block.shape[0] and block.shape[0] < width:
        raise ValueError(f"a block of {block.shape[0]} rows cannot give halos of {width} rows")
    holders = [r for r, c in enumerate(counts) if c > 0]
    rank = comm.Get_rank()
    if rank not in holders:
        return None, None
    i = holders.index(rank)
    up = holders[i - 1] if i > 0 else MPI.PROC_NULL
    down = holders[i + 1] if i + 1 < len(holders) else MPI.PROC_NULL
    shape = (width, *block.shape[1:])
    above = np.empty(shape, dtype=block.dtype)
    below = np.empty(shape, dtype=block.dtype)
    # send my first rows up while receiving the rows below me, then the other way round
    comm.Sendrecv(np.ascontiguousarray(block[:width]), dest=up, recvbuf=below, source=down)
    comm.Sendrecv(np.ascontiguousarray(block[-width:]), dest=down, recvbuf=above, source=up)
    return (above if up != MPI.PROC_NULL else None), (below if down != MPI.PROC_NULL else None)
