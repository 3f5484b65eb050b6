"""Under mpiexec -n 1: grow 1 -> 2 -> 4 by spawn, shrink 4 -> 2 -> 1; the data survives each step."""

from __future__ import annotations

import os
import sys

import numpy as np

from dmr.redistribute import global_checksum, redistribute
from dmr.world import World

LENGTH = 1000
joined = World.join()
if joined is None:
    world = World.launch()
    data = np.arange(LENGTH, dtype=np.int64)
    expect = global_checksum(world.comm, data)
    step = 0
else:
    world, handover = joined
    expect = handover["expect"]
    step = handover["step"]
    # finish the expansion we were spawned by, as the parents do below
    data = redistribute(world.comm, None, handover["old"], world.size)
    if global_checksum(world.comm, data) != expect:
        sys.exit(1)


def log(msg: str) -> None:
    where = "gone" if world.left else f"rank {world.rank}/{world.size}"
    print(f"[pid {os.getpid()} {where}] {msg}", flush=True)


plan = [("grow", 1), ("grow", 2), ("shrink", 2), ("shrink", 1)]
while step < len(plan):
    kind, arg = plan[step]
    old = world.size
    step += 1
    if kind == "grow":
        world.spawn(arg, None, {"expect": expect, "step": step, "old": old})
        data = redistribute(world.comm, data, old, world.size)
    else:
        data = redistribute(world.comm, data, old, arg)
        stays = world.shrink_to(arg)
        if not stays:
            assert data.shape[0] == 0
            log("left")
            sys.exit(0)
    got = global_checksum(world.comm, data)
    if got != expect:
        log(f"FAIL after {kind} {arg}: {got} != {expect}")
        sys.exit(1)
    if world.rank == 0:
        log(f"{kind} ok: now {world.size} ranks, sizes {world.sizes}")
if world.rank == 0:
    log("DONE")
