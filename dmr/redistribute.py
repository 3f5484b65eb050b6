"""Block redistribution of numpy arrays between any two numbers of ranks.

An array is distributed along axis 0: each rank holds a contiguous block, blocks in rank
order. :func:`redistribute` moves the blocks held by one ordered set of ranks of a
communicator (any split, even uneven) into the balanced block layout over another
(:func:`block_counts`). It covers expand (the communicator is the merged old+new world,
new ranks pass ``None``) and shrink (leaving ranks, wherever they sit, end with an empty
block) between arbitrary sizes, in one ``Alltoallv`` of whole rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mpi4py import MPI


def block_counts(length: int, parts: int) -> list[int]:
    """Balanced block sizes: the first ``length % parts`` blocks get one extra row."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    base, extra = divmod(length, parts)
    return [base + (1 if r < extra else 0) for r in range(parts)]


def block_range(length: int, parts: int, rank: int) -> tuple[int, int]:
    """``[lo, hi)`` of rank ``rank`` in the balanced layout."""
    counts = block_counts(length, parts)
    lo = sum(counts[:rank])
    return lo, lo + (counts[rank] if rank < parts else 0)


def _offsets(counts: list[int]) -> list[int]:
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _holders(spec: int | Sequence[int], size: int, what: str) -> list[int]:
    """``n`` -> ranks ``0..n-1``; a sequence -> those ranks (strictly increasing, within the comm)."""
    ranks = list(range(spec)) if isinstance(spec, int) else [int(r) for r in spec]
    if not ranks or any(b <= a for a, b in zip(ranks, ranks[1:], strict=False)) or ranks[0] < 0:
        raise ValueError(f"{what} must be >= 1 rank in increasing order, got {spec}")
    if ranks[-1] >= size:
        raise ValueError(f"{what} {spec} must be within 1..{size} (comm size)")
    return ranks


def redistribute(
    comm: MPI.Intracomm, local: np.ndarray | None, old: int | Sequence[int], new: int | Sequence[int]
) -> np.ndarray:
    """Collective over ``comm``: returns this rank's block of the new layout (empty if it holds none).

    ``old`` / ``new``: the ranks holding the array before and after, in order (an int ``n``
    means ranks ``0..n-1``): an expansion adds ranks at the end, a shrink may drop any.
    Ranks outside ``old`` pass ``None`` (they hold nothing yet). Rank 0 must hold a block
    (possibly empty) so that dtype and row shape are known to everyone.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    old_ranks, new_ranks = _holders(old, size, "old"), _holders(new, size, "new")
    if rank not in old_ranks:
        local = None
    elif local is None:
        raise ValueError(f"rank {rank} holds a block in the old layout and must pass it, got None")
    meta: tuple[str, tuple[int, ...]] | None = None
    if rank == 0:
        assert local is not None
        meta = (local.dtype.str, tuple(local.shape[1:]))
    dtype_str, row_shape = comm.bcast(meta, root=0)
    dtype = np.dtype(dtype_str)
    if local is None:
        local = np.empty((0, *row_shape), dtype=dtype)
    elif local.dtype != dtype or tuple(local.shape[1:]) != row_shape:
        raise ValueError(f"rank {rank}: {local.dtype}{local.shape} block, rank 0 has {dtype}{row_shape}")
    local = np.ascontiguousarray(local)
    old_counts = comm.allgather(int(local.shape[0]))
    length = sum(old_counts)
    old_offsets = _offsets(old_counts)
    new_counts = [0] * size
    for r, count in zip(new_ranks, block_counts(length, len(new_ranks)), strict=True):
        new_counts[r] = count
    new_offsets = _offsets(new_counts)

    mine_old = (old_offsets[rank], old_offsets[rank] + old_counts[rank])
    mine_new = (new_offsets[rank], new_offsets[rank] + new_counts[rank])
    send = [_overlap(mine_old, (new_offsets[r], new_offsets[r] + new_counts[r])) for r in range(size)]
    recv = [_overlap(mine_new, (old_offsets[r], old_offsets[r] + old_counts[r])) for r in range(size)]
    # where each piece sits in the local buffers (explicit: self's piece may be skipped below)
    sdispl = [max(mine_old[0], new_offsets[r]) - mine_old[0] if send[r] else 0 for r in range(size)]
    rdispl = [max(mine_new[0], old_offsets[r]) - mine_new[0] if recv[r] else 0 for r in range(size)]
    row_bytes = dtype.itemsize * int(np.prod(row_shape, dtype=np.int64))
    if row_bytes == 0 or length == 0:
        return np.empty((new_counts[rank], *row_shape), dtype=dtype)  # the same on every rank
    keep = mine_old[0] <= mine_new[0] and mine_new[1] <= mine_old[1]
    if keep:
        # everything this rank keeps is already here (expand): a view, no allocation, no copy;
        # it keeps the old block's memory alive until the caller drops the old array
        out = local[mine_new[0] - mine_old[0] : mine_new[1] - mine_old[0]]
        send[rank] = recv[rank] = sdispl[rank] = rdispl[rank] = 0
        recvbuf = np.empty((0, *row_shape), dtype=dtype)
    else:
        out = recvbuf = np.empty((new_counts[rank], *row_shape), dtype=dtype)
    rowtype = MPI.BYTE.Create_contiguous(row_bytes).Commit()
    try:
        comm.Alltoallv(
            [local, (send, sdispl), rowtype],
            [recvbuf, (recv, rdispl), rowtype],
        )
    finally:
        rowtype.Free()
    return out


def global_checksum(comm: MPI.Intracomm, local: np.ndarray, count: int | None = None) -> tuple[int, int]:
    """Order-sensitive checksum of the array distributed over the first ``count`` ranks.

    Returns ``(total bytes, sum of word_i * (2*i + 1) mod 2**64)`` over the global array
    viewed as 64-bit words (the weights make it sensitive to order, so a misplaced block
    shows). Collective over ``comm``; computed in chunks, so a 1 GB array is not copied.
    """
    rank = comm.Get_rank()
    count = comm.Get_size() if count is None else count
    data = np.ascontiguousarray(local) if rank < count else np.empty(0, dtype=np.uint64)
    raw = data.reshape(-1).view(np.uint8)
    if raw.size % 8:
        raise ValueError("checksum needs blocks whose size in bytes is a multiple of 8")
    words = raw.view(np.uint64)
    offset = comm.exscan(int(words.size)) or 0
    acc = np.uint64(0)
    chunk = 1 << 23
    with np.errstate(over="ignore"):
        for lo in range(0, words.size, chunk):
            part = words[lo : lo + chunk]
            index = np.arange(offset + lo, offset + lo + part.size, dtype=np.uint64)
            weights = index * np.uint64(2) + np.uint64(1)
            acc = acc + np.sum(part * weights, dtype=np.uint64)
    parts = comm.allgather((int(raw.size), int(acc)))
    return sum(p[0] for p in parts), sum(p[1] for p in parts) % (1 << 64)
