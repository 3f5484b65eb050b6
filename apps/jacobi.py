"""Jacobi: heat on a 2-D grid, rows in blocks over the ranks, halo rows exchanged every sweep.

The grid is ``--n`` x ``--n`` with the top edge held at 1 and the other edges at 0. Each step does
``--sweeps`` Jacobi sweeps, preceded by a DMR reconfiguring point; the grid's rows are
redistributed on every resize. At the end rank 0 repeats the same sweeps on the whole grid alone
and checks that the malleable run gave the same grid (to round-off; Jacobi updates are local, so in
practice bit for bit).

    dmr-run --ppn 2 -- python -m dmr_apps.jacobi --n 256 --steps 20 --sweeps 50 --max 8
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dmr_apps.common import add_model_option, check_args, modeled_step, parser, planned, report


def initial(n: int, lo: int, hi: int) -> np.ndarray:
    u = np.zeros((hi - lo, n))
    if lo == 0 and hi > 0:
        u[0, :] = 1.0  # the hot edge
    return u


def sweep(u: np.ndarray, lo: int, n: int, above: np.ndarray | None, below: np.ndarray | None) -> np.ndarray:
    """One Jacobi sweep of rows ``[lo, lo + len(u))`` given the rows just above and below them."""
    if not len(u):
        return u
    ext = np.vstack([x for x in (above, u, below) if x is not None])
    off = 0 if above is None else 1
    rows = np.arange(lo, lo + len(u))
    inner = np.nonzero((rows > 0) & (rows < n - 1))[0]
    new = u.copy()
    if inner.size:
        c = inner + off
        new[inner, 1:-1] = 0.25 * (ext[c - 1, 1:-1] + ext[c + 1, 1:-1] + ext[c, :-2] + ext[c, 2:])
    return new


def reference(n: int, sweeps: int) -> np.ndarray:
    u = initial(n, 0, n)
    for _ in range(sweeps):
        u = sweep(u, 0, n, None, None)
    return u


def main(argv: list[str] | None = None) -> int:
    ap = parser("jacobi", __doc__.split("\n\n")[0])
    add_model_option(ap)
    ap.add_argument("--n", type=int, default=256, help="grid points per side (>= --max; default 256)")
    ap.add_argument("--sweeps", type=int, default=50, help="Jacobi sweeps per step (default 50)")
    args = check_args(ap, ap.parse_args(argv))
    if args.n < max(3, args.max_procs) or args.sweeps < 1:
        ap.error(f"--n must be >= max(3, --max) and --sweeps >= 1, got --n {args.n} --sweeps {args.sweeps}")
    import dmr
    from dmr.halo import exchange_rows
    from dmr.redistribute import block_range

    m = dmr.Malleable(args.min_procs, args.max_procs, args.factor, args.preferred, args.asynchronous)
    if not m.joined:
        lo, hi = block_range(args.n, m.size, m.rank)
        m.arrays["u"] = initial(args.n, lo, hi)
        m.values["t_start"] = time.time()
    for _step in m.steps(args.steps, spec=lambda step: planned(args.plan, step, m.size)):
        lo = m.comm.exscan(len(m.arrays["u"])) or 0
        for _ in range(args.sweeps):
            above, below = exchange_rows(m.comm, m.arrays["u"])
            m.arrays["u"] = sweep(m.arrays["u"], lo, args.n, above, below)
        modeled_step(args.model_seconds, m.comm, args.scaling)
    blocks = m.comm.gather(m.arrays["u"], root=0)
    if m.rank != 0:
        return 0
    grid = np.vstack(blocks)
    ref = reference(args.n, args.steps * args.sweeps)
    diff = float(np.max(np.abs(grid - ref)))
    return report("JACOBI", {
        "ok": diff <= 1e-12, "max_diff": diff, "final_size": m.size, "steps": args.steps,
        "resizes": [list(h) for h in m.history], "seconds": time.time() - m.values["t_start"],
    })  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
