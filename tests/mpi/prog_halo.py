"""MPI program: halo rows between uneven and empty blocks equal the neighbours' edge rows."""

import sys

import numpy as np
from mpi4py import MPI

from dmr.halo import exchange_rows

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
counts = [int(c) for c in sys.argv[1].split(",")]  # rows per rank, zeros allowed
assert len(counts) == size
lo = sum(counts[:rank])
block = np.arange(lo, lo + counts[rank], dtype=float)[:, None] * np.ones((1, 3))
above, below = exchange_rows(comm, block)
holders = [r for r, c in enumerate(counts) if c]
if counts[rank]:
    first, last = lo, lo + counts[rank] - 1
    i = holders.index(rank)
    assert (above is None) == (i == 0) and (below is None) == (i == len(holders) - 1)
    if above is not None:
        assert np.all(above == first - 1), (rank, above)  # the previous holder's last row
    if below is not None:
        assert np.all(below == last + 1), (rank, below)
else:
    assert above is None and below is None
print(f"rank {rank} ok", flush=True)
