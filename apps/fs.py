"""Flexible Sleep (FS): the paper's synthetic malleable application, in mpi4py.

N steps; each sleeps ``--step-seconds / ranks`` (a perfectly scalable step, or
``/ ranks^A`` with ``--scaling A``; times the ranks per
CPU of the busiest node where nodes are over-subscribed, see :func:`dmr_apps.common.crowding`) and is preceded
by a DMR reconfiguring point. The job carries ``--state-mb`` of state in total (uint64
words, block-distributed), handed over on every expand/shrink; its order-sensitive
checksum is taken at the start and verified at the end. Rank 0 prints one line per
resize and a final ``FS_RESULT {json}`` line.

    srun --mpi=pmi2 -n 1 python -m dmr_apps.fs --steps 20 --state-mb 1024 --max 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from dmr_apps.common import check_args, crowding, parser, planned, step_time


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = parser("fs", __doc__.split("\n\n")[0])
    ap.add_argument("--step-seconds", type=float, default=1.0, help="a step on 1 rank, s (default 1.0)")
    ap.add_argument("--state-mb", type=float, default=64, help="total state in MiB (default 64)")
    ap.add_argument(
        "--join-delay",
        type=float,
        default=0.0,
        help="ranks started by an expansion wait this long first (tests)",
    )
    ap.add_argument(
        "--grow",
        default="",
        help="STEP:RANKS: from STEP on, an evolving job (paper 000): rigid at its size, asking the "
        "service to grow to RANKS (dmr.request_growth) until it has them",
    )
    args = check_args(ap, ap.parse_args(argv))
    raw = args.grow
    try:
        args.grow = tuple(int(x) for x in raw.split(":")) if raw else None
        if args.grow is not None and (len(args.grow) != 2 or min(args.grow) < 0 or args.grow[1] < 1):
            raise ValueError
    except ValueError:
        ap.error(f"--grow must be STEP:RANKS with STEP >= 0 and RANKS >= 1, got {raw!r}")
    if args.step_seconds < 0 or args.state_mb < 0 or args.join_delay < 0:
        ap.error("--step-seconds, --state-mb and --join-delay must be >= 0")
    return args


def initial_block(rank: int, size: int, words: int) -> np.ndarray:
    from dmr.redistribute import block_range

    lo, hi = block_range(words, size, rank)
    return np.arange(lo, hi, dtype=np.uint64)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import dmr
    from dmr.redistribute import global_checksum

    if args.join_delay and os.environ.get("DMR_TOKEN"):
        time.sleep(args.join_delay)
    m = dmr.Malleable(args.min_procs, args.max_procs, args.factor, args.preferred, args.asynchronous)
    if not m.joined:
        words = int(args.state_mb * (1 << 20)) // 8
        m.arrays["state"] = initial_block(m.rank, m.size, words)
        m.values["checksum"] = global_checksum(m.comm, m.arrays["state"])
        m.values["t_start"] = time.time()
    seen = len(m.history)

    def spec(step: int) -> tuple[int, int, int] | None:
        if args.grow is not None and step >= args.grow[0]:
            if m.size < args.grow[1]:
                dmr.request_growth(args.grow[1])
            return m.size, m.size, 2  # evolving: never resized but for its own ask
        return planned(args.plan, step, m.size)

    for _step in m.steps(args.steps, spec=spec):
        if m.rank == 0 and len(m.history) > seen:
            for st, action, old, new, took in m.history[seen:]:
                print(f"FS step {st}: {action} {old}->{new} in {took:.3f} s", flush=True)
            seen = len(m.history)
        time.sleep(step_time(args.step_seconds, m.size, args.scaling) * crowding(m.comm))
    final = global_checksum(m.comm, m.arrays["state"])
    if m.rank == 0:
        expect = tuple(m.values["checksum"])
        result = {
            "steps": args.steps,
            "final_size": m.size,
            "checksum_ok": tuple(final) == expect,
            "checksum": list(final),
            "resizes": [list(h) for h in m.history],
            "seconds": time.time() - m.values["t_start"],
        }
        print("FS_RESULT " + json.dumps(result), flush=True)
        return 0 if result["checksum_ok"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
