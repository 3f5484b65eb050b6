"""Under ``dmr-run --nodes a,b,c --ppn 2`` (mpiexec, no Slurm): three groups join at launch; a
fourth group joins through the agent (as in an expansion); then the middle group "b" leaves
(as in a shrink). The block-distributed data and its checksum survive each step.
"""

from __future__ import annotations

import sys

import numpy as np

from dmr.redistribute import block_range, global_checksum
from dmr.runtime import Runtime

LENGTH = 1000
rt = Runtime()


def log(msg: str) -> None:
    print(f"[{rt.world.tag} rank {rt.rank}/{rt.size}] {msg}", flush=True)


if rt.joining is None:  # launched with the application
    lo, hi = block_range(LENGTH, rt.size, rt.rank)
    data = np.arange(lo, hi, dtype=np.int64)
    expect = global_checksum(rt.comm, data)
    log(f"launch ok: {len(rt.world.groups)} groups, nodes {rt.world.nodes}")
    # an expansion by one group on node "d", started by the agent
    action, size, handle = rt._expand({"token": "t1", "groups": 1, "launch": ["d"]})
    assert handle is not None, "expansion failed"
else:
    handle = rt.joining
    data, expect = None, None
    log("joined")
expect = handle.bcast(expect)
data = handle.redistribute(data)
handle.finish()
if global_checksum(rt.comm, data) != expect:
    log("checksum mismatch after expand")
    sys.exit(1)
log(f"grow ok: now {rt.size} ranks on {rt.world.nodes}")

kept = [n for n in rt.world.nodes if n != "b"]
action, size, handle = rt._shrink({"nodes": kept, "token": "s1"})
assert handle is not None
data = handle.redistribute(data)
if handle.leaving:
    log("left")
handle.finish(exit=True)  # leaving ranks exit here
if global_checksum(rt.comm, data) != expect:
    log("checksum mismatch after shrink")
    sys.exit(1)
log(f"shrink ok: now {rt.size} ranks on {rt.world.nodes}")
rt.comm.Barrier()
if rt.rank == 0:
    print("DONE", flush=True)
