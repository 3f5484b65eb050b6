"""Under mpiexec: redistribute between every pair of sizes and check the global array is unchanged."""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

from dmr.redistribute import block_counts, global_checksum, redistribute

comm = MPI.COMM_WORLD
size, rank = comm.Get_size(), comm.Get_rank()
rng = np.random.default_rng(1)
failures = 0
for length in (0, 1, 7, 64, 1001):
    reference = np.arange(length * 3, dtype=np.float64).reshape(length, 3)
    for old in range(1, size + 1):
        # an uneven old split, the same on every rank
        cuts = np.sort(rng.integers(0, length + 1, size=old - 1)) if old > 1 else np.array([], dtype=int)
        bounds = [0, *cuts.tolist(), length]
        for new in range(1, size + 1):
            local = reference[bounds[rank] : bounds[rank + 1]].copy() if rank < old else None
            out = redistribute(comm, local, old, new)
            expect_counts = block_counts(length, new)
            mine = expect_counts[rank] if rank < new else 0
            ok = out.shape == (mine, 3)
            pieces = comm.gather(out, root=0)
            if rank == 0:
                ok = ok and np.array_equal(np.concatenate(pieces[:new]) if length else pieces[0], reference)
            ok = comm.allreduce(ok, op=MPI.LAND)
            if not ok:
                failures += 1
                if rank == 0:
                    print(f"FAIL length={length} old={old} new={new}", flush=True)
            before = global_checksum(
                comm, reference[bounds[rank] : bounds[rank + 1]] if rank < old else np.empty((0, 3)), old
            )
            after = global_checksum(comm, out, new)
            if before != after:
                failures += 1
                if rank == 0:
                    print(f"FAIL checksum length={length} old={old} new={new}", flush=True)
# the checksum must notice a swap of two rows
if size >= 1:
    data = np.arange(16, dtype=np.uint64).reshape(8, 2)
    swapped = data[[1, 0, *range(2, 8)]]
    if global_checksum(MPI.COMM_SELF, data) == global_checksum(MPI.COMM_SELF, swapped):
        failures += 1
if rank == 0:
    print(f"redistribute: {failures} failures", flush=True)
sys.exit(1 if failures else 0)
