"""CG: conjugate gradients on a sparse SPD system, rows distributed in blocks over the ranks.

The system is the 2-D Poisson problem (5-point Laplacian, zero Dirichlet edges) on an ``--n`` x
``--n`` grid, ``A x = 1``: sparse and symmetric positive definite, applied row block by row block with
one halo row from each neighbour. The vectors ``x``, ``r``, ``p`` are redistributed on every resize;
the scalar ``rho`` is replicated. Each step does ``--iters`` iterations (fewer once converged),
preceded by a DMR reconfiguring point. At the end the true residual ``|b - A x| / |b|`` is recomputed
and must be below ``--tol``.

    dmr-run --ppn 2 -- python -m dmr_apps.cg --n 128 --steps 40 --iters 20 --max 8
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dmr_apps.common import add_model_option, check_args, modeled_step, parser, planned, report


def apply_a(comm, x: np.ndarray) -> np.ndarray:  # noqa: ANN001  (an MPI communicator)
    """``A x`` for this rank's rows of the grid (5-point Laplacian, zero outside the grid)."""
    from dmr.halo import exchange_rows

    above, below = exchange_rows(comm, x)
    if not len(x):
        return x.copy()
    zero = np.zeros((1, x.shape[1]))
    up = np.vstack([zero if above is None else above, x[:-1]])
    down = np.vstack([x[1:], zero if below is None else below])
    ax = 4.0 * x - up - down
    ax[:, 1:] -= x[:, :-1]
    ax[:, :-1] -= x[:, 1:]
    return ax


def dot(comm, a: np.ndarray, b: np.ndarray) -> float:  # noqa: ANN001
    return float(comm.allreduce(float(np.vdot(a, b))))


def main(argv: list[str] | None = None) -> int:
    ap = parser("cg", __doc__.split("\n\n")[0])
    add_model_option(ap)
    ap.add_argument("--n", type=int, default=128, help="grid points per side (>= --max; default 128)")
    ap.add_argument("--iters", type=int, default=20, help="CG iterations per step (default 20)")
    ap.add_argument("--tol", type=float, default=1e-8, help="relative residual to reach (default 1e-8)")
    args = check_args(ap, ap.parse_args(argv))
    if args.n < args.max_procs or args.iters < 1 or not 0 < args.tol < 1:
        ap.error("--n must be >= --max, --iters >= 1 and 0 < --tol < 1")
    import dmr
    from dmr.redistribute import block_range

    m = dmr.Malleable(args.min_procs, args.max_procs, args.factor, args.preferred, args.asynchronous)
    if not m.joined:
        lo, hi = block_range(args.n, m.size, m.rank)
        b = np.ones((hi - lo, args.n))
        m.arrays |= {"x": np.zeros_like(b), "r": b.copy(), "p": b.copy()}
        m.values |= {"rho": dot(m.comm, b, b), "bnorm": np.sqrt(dot(m.comm, b, b)), "iters": 0,
                     "t_start": time.time()}  # fmt: skip
    goal = (args.tol / 2 * m.values["bnorm"]) ** 2  # margin: the recurrence drifts from the true residual
    for _step in m.steps(args.steps, spec=lambda step: planned(args.plan, step, m.size)):
        a = m.arrays
        for _ in range(args.iters):
            if m.values["rho"] <= goal:
                break
            q = apply_a(m.comm, a["p"])
            alpha = m.values["rho"] / dot(m.comm, a["p"], q)
            a["x"] += alpha * a["p"]
            a["r"] -= alpha * q
            rho = dot(m.comm, a["r"], a["r"])
            a["p"] = a["r"] + (rho / m.values["rho"]) * a["p"]
            m.values["rho"] = rho
            m.values["iters"] += 1
        modeled_step(args.model_seconds, m.comm, args.scaling)
    # the true residual, not the recurrence's
    residual = np.ones_like(m.arrays["x"]) - apply_a(m.comm, m.arrays["x"])
    rel = np.sqrt(dot(m.comm, residual, residual)) / m.values["bnorm"]
    if m.rank != 0:
        return 0
    return report("CG", {
        "ok": bool(rel < args.tol), "residual": rel, "iterations": m.values["iters"],
        "final_size": m.size, "steps": args.steps, "resizes": [list(h) for h in m.history],
        "seconds": time.time() - m.values["t_start"],
    })  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
