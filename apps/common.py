"""What the malleable apps share: the DMR command-line options, the resize plan, the result line.

Every app takes ``--steps``, ``--min``/``--max``/``--factor`` (ranks), ``--async`` and ``--plan``
(STEP:RANKS,...: from STEP on, ask for exactly RANKS, e.g. to force a resize in a test), and ends
with one ``<NAME>_RESULT {json}`` line from rank 0 whose ``ok`` says whether its numerical check passed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--steps", type=int, default=10, help="reconfiguring points, one before each step")
    ap.add_argument("--min", dest="min_procs", type=int, default=1, help="minimum ranks (default 1)")
    ap.add_argument("--max", dest="max_procs", type=int, default=4, help="maximum ranks (default 4)")
    ap.add_argument("--factor", type=int, default=2, help="resize factor (default 2)")
    ap.add_argument("--preferred", type=int, default=None, help="preferred ranks (default none)")
    ap.add_argument("--async", dest="asynchronous", action="store_true", help="use icheck_status")
    ap.add_argument(
        "--scaling",
        type=float,
        default=1.0,
        help="how the modelled step time scales (0 < A <= 1): a step on N ranks takes seconds / N^A, "
        "so with A < 1 larger jobs run less efficiently (default 1: perfectly scalable)",
    )
    ap.add_argument(
        "--plan",
        default="",
        help="sizes to ask for, as STEP:RANKS,... (from STEP on, ask for exactly RANKS: min=max=RANKS); "
        "e.g. 1:4,3:8,5:2 (default: none, the policy decides within --min/--max)",
    )
    return ap


def check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """One argparse error (exit code 2) for impossible DMR options; parses ``--plan``."""
    for name in ("steps", "min_procs", "max_procs"):
        if getattr(args, name) < 1:
            flag = name.removesuffix("_procs").replace("_", "-")
            ap.error(f"--{flag} must be >= 1, got {getattr(args, name)}")
    if args.min_procs > args.max_procs:
        ap.error(f"--min ({args.min_procs}) must not exceed --max ({args.max_procs})")
    if args.factor < 2:
        ap.error(f"--factor must be >= 2, got {args.factor}")
    if not 0 < args.scaling <= 1:
        ap.error(f"--scaling must be in (0, 1], got {args.scaling}")
    try:
        args.plan = sorted((int(a), int(b)) for a, b in (x.split(":") for x in args.plan.split(",") if x))
    except ValueError:
        ap.error(f"--plan must be STEP:RANKS,... with integers, got {args.plan!r}")
    return args


def planned(plan: list[tuple[int, int]], step: int, current: int) -> tuple[int, int, int] | None:
    """(min, max, factor) asking for exactly the planned size at ``step`` (None: no plan yet)."""
    wanted = [ranks for at, ranks in plan if at <= step]
    if not wanted:
        return None
    n = wanted[-1]
    big, small = max(n, current), min(n, current)
    factor = big // small if big % small == 0 and big > small else 2
    return n, n, factor


def report(name: str, result: dict[str, Any]) -> int:
    """Print the result line; the exit code is 0 only if the app's own check passed."""
    print(f"{name}_RESULT " + json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


def add_model_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--model-seconds",
        type=float,
        default=0.0,
        help="modelled part of a step, seconds on one rank: slept as this / ranks x ranks per CPU "
        "after the real compute (the test cluster's nodes share one host's cores, so real compute "
        "does not speed up with nodes; default 0)",
    )


def step_time(seconds: float, ranks: int, scaling: float = 1.0) -> float:
    """A step of ``seconds`` on one rank, on ``ranks`` ranks: ``seconds / ranks^scaling``.

    A power law keeps the ratio between two sizes the same at every scale (a job 4x smaller runs
    4^A times longer whether it shrinks from 32 to 8 nodes or from 4 to 1), so an app measured on a
    large machine keeps its shape on the 8-node test cluster.
    """
    return seconds / ranks**scaling


def modeled_step(seconds: float, comm: Any, scaling: float = 1.0) -> None:
    """Sleep the modelled part of a step on this many ranks (see ``--model-seconds``)."""
    if seconds > 0:
        import time

        time.sleep(step_time(seconds, comm.Get_size(), scaling) * crowding(comm))


def crowding(comm: Any) -> float:
    """Ranks per CPU on the busiest node of ``comm`` (at least 1).

    An over-subscribed node (EJB runs a job's ranks on fewer nodes than it asked for) shares its
    CPUs among its ranks; a step of a bulk-synchronous app waits for the slowest node. The test
    cluster's nodes all share one host's cores, so apps that only sleep (FS) model this instead
    of suffering it.
    """
    import os

    from dmr.runtime import node_name

    cpus = os.environ.get("SLURM_CPUS_ON_NODE", "")
    mine = (node_name(), int(cpus) if cpus.isdigit() else 0)
    counts: dict[str, int] = {}
    cpus_of: dict[str, int] = {}
    for node, n in comm.allgather(mine):
        counts[node] = counts.get(node, 0) + 1
        cpus_of[node] = max(cpus_of.get(node, 0), n)
    return max([1.0] + [counts[n] / cpus_of[n] for n in counts if cpus_of[n] > 0])
