"""N-body: gravitating bodies, positions replicated, forces computed by blocks of bodies.

Every rank holds all positions and velocities (replicated: carried to new ranks on an expand) and
computes the accelerations of its block of bodies against all of them; one ``allgather`` puts the
blocks together. Velocity Verlet, ``--substeps`` per step, each step preceded by a DMR
reconfiguring point. At the end rank 0 checks the energy drift against ``--drift`` and repeats the
whole run alone: the malleable run must end in the same state (to round-off).

    dmr-run --ppn 2 -- python -m dmr_apps.nbody --bodies 512 --steps 20 --substeps 10 --max 8
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dmr_apps.common import add_model_option, check_args, modeled_step, parser, planned, report

EPS2 = 0.05**2  # softening


def initial(bodies: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-1.0, 1.0, (bodies, 3))
    vel = rng.normal(0.0, 0.05, (bodies, 3))
    mass = np.full(bodies, 1.0 / bodies)
    return pos, vel, mass


def accel(pos: np.ndarray, mass: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Accelerations of bodies ``[lo, hi)`` from every body."""
    d = pos[None, :, :] - pos[lo:hi, None, :]
    inv = ((d**2).sum(-1) + EPS2) ** -1.5
    return (d * (mass[None, :] * inv)[:, :, None]).sum(1)


def energy(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray) -> float:
    kinetic = 0.5 * float((mass * (vel**2).sum(1)).sum())
    d = pos[None, :, :] - pos[:, None, :]
    inv = 1.0 / np.sqrt((d**2).sum(-1) + EPS2)
    np.fill_diagonal(inv, 0.0)
    return kinetic - 0.5 * float((mass[:, None] * mass[None, :] * inv).sum())


def advance(pos, vel, mass, acc, dt, blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # noqa: ANN001
    """One velocity-Verlet step; ``blocks(pos)`` returns the accelerations of all bodies."""
    vel = vel + 0.5 * dt * acc
    pos = pos + dt * vel
    acc = blocks(pos)
    return pos, vel + 0.5 * dt * acc, acc


def main(argv: list[str] | None = None) -> int:
    ap = parser("nbody", __doc__.split("\n\n")[0])
    add_model_option(ap)
    ap.add_argument("--bodies", type=int, default=256, help="number of bodies (>= --max; default 256)")
    ap.add_argument("--substeps", type=int, default=10, help="time steps per step (default 10)")
    ap.add_argument("--dt", type=float, default=1e-3, help="time step (default 1e-3)")
    ap.add_argument("--drift", type=float, default=1e-4, help="largest relative energy drift (default 1e-4)")
    args = check_args(ap, ap.parse_args(argv))
    if args.bodies < args.max_procs or args.substeps < 1 or args.dt <= 0:
        ap.error("--bodies must be >= --max, --substeps >= 1 and --dt > 0")
    import dmr
    from dmr.redistribute import block_range

    m = dmr.Malleable(args.min_procs, args.max_procs, args.factor, args.preferred, args.asynchronous)
    if not m.joined:
        pos, vel, mass = initial(args.bodies)
        m.values |= {"pos": pos, "vel": vel, "mass": mass, "acc": accel(pos, mass, 0, args.bodies),
                     "e0": energy(pos, vel, mass), "t_start": time.time()}  # fmt: skip

    def blocks(pos: np.ndarray) -> np.ndarray:
        lo, hi = block_range(args.bodies, m.size, m.rank)
        return np.vstack(m.comm.allgather(accel(pos, m.values["mass"], lo, hi)))

    for _step in m.steps(args.steps, spec=lambda step: planned(args.plan, step, m.size)):
        v = m.values
        for _ in range(args.substeps):
            v["pos"], v["vel"], v["acc"] = advance(v["pos"], v["vel"], v["mass"], v["acc"], args.dt, blocks)
        modeled_step(args.model_seconds, m.comm, args.scaling)
    if m.rank != 0:
        return 0
    v = m.values
    drift = abs(energy(v["pos"], v["vel"], v["mass"]) - v["e0"]) / abs(v["e0"])
    pos, vel, mass = initial(args.bodies)
    acc = accel(pos, mass, 0, args.bodies)
    for _ in range(args.steps * args.substeps):  # the same run on one rank
        pos, vel, acc = advance(pos, vel, mass, acc, args.dt, lambda p: accel(p, mass, 0, args.bodies))
    diff = float(np.max(np.abs(pos - v["pos"])))
    return report("NBODY", {
        "ok": bool(drift <= args.drift and diff <= 1e-10), "energy_drift": drift, "max_diff": diff,
        "final_size": m.size, "steps": args.steps, "resizes": [list(h) for h in m.history],
        "seconds": time.time() - v["t_start"],
    })  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
