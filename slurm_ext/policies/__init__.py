"""Scheduling and malleability policies: pure functions of a cluster snapshot.

The live control service and the simulator run the very same classes. ``POLICIES`` maps a
name (as given to ``slurm-ext simulate --policy NAME``) to a factory taking keyword options;
:func:`make_policy` builds one and lists the valid names when a name is unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slurm_ext.policies.backfill import Backfill
from slurm_ext.policies.base import Policy
from slurm_ext.policies.dbes import DBES
from slurm_ext.policies.dmr import DMRPolicy, DMRReserve
from slurm_ext.policies.edf import EDF
from slurm_ext.policies.ep import EP
from slurm_ext.policies.esf import ESF
from slurm_ext.policies.ldf import LDF
from slurm_ext.policies.minagree import MinAgree
from slurm_ext.policies.moldable import MoldableBackfill, MoldableEASY, MoldableFCFS
from slurm_ext.policies.rigid import Rigid
from slurm_ext.policies.sdpolicy import SDPolicy

PolicyFactory = Callable[..., Policy]


def _sd_dynamic(**kw: Any) -> Policy:
    return SDPolicy(max_slowdown="dynamic", **kw)


def _easy(**kw: Any) -> Policy:
    return Backfill(reservation_depth=1, **kw)


POLICIES: dict[str, PolicyFactory] = {
    "rigid": Rigid,  # no resizes; the caller's base scheduler runs
    "backfill": Backfill,  # rigid Maui-style backfill, ReservationDepth 5 (000_*)
    "easy": _easy,  # rigid EASY backfill as a policy
    "dbes": DBES,  # 000_* Algorithm 2
    "dmr": DMRPolicy,  # 002_* §4: request an action / preferred size / wide optimization
    "dmr-reserve": DMRReserve,  # DMR keeping the first waiting job's reservation (EASY's rule)
    "ep": EP,  # 000_* §V equipartitioning
    "esf": ESF,  # earliest started first
    "edf": EDF,  # earliest deadline first
    "ldf": LDF,  # latest deadline first
    "minagree": MinAgree,  # 001_* Malleable-Algorithm
    "moldable-fcfs": MoldableFCFS,  # 001_* FCFS, moldable jobs on as many idle nodes as they take
    "moldable-backfill": MoldableBackfill,  # 001_* Backfilling (no reservation), moldable
    "moldable-easy": MoldableEASY,  # 001_* Easy-Backfilling, moldable
    "sd": SDPolicy,  # 003_* SD-Policy, static MAX_SLOWDOWN (10; sd:N for another)
    "sd-dynamic": _sd_dynamic,  # 003_* SD-Policy, dynamic MAX_SLOWDOWN (DynAVGSD)
}


def _max_slowdown(text: str) -> float | str:
    """SD-Policy's MAX_SLOWDOWN as written after ``sd:``: a number, ``inf`` or ``dynamic``."""
    if text == "dynamic":
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"sd:{text}: MAX_SLOWDOWN must be a number > 1, 'inf' or 'dynamic'") from None


# policies whose name takes one argument after a colon: the option it sets, and how it is read
ARGUMENTS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "sd": ("max_slowdown", _max_slowdown),  # sd:5, sd:50, sd:inf, sd:dynamic (003_*, Figs. 1-3)
}


def make_policy(name: str, **options: Any) -> Policy:
    """Build the policy called ``name`` (``NAME:ARGUMENT`` for those in :data:`ARGUMENTS`);
    raises ValueError listing the valid names."""
    key, colon, argument = name.partition(":")
    try:
        factory = POLICIES[key]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; valid: {', '.join(sorted(POLICIES))}") from None
    if colon:
        if key not in ARGUMENTS:
            raise ValueError(f"policy {key!r} takes no argument (given {name!r})")
        option, read = ARGUMENTS[key]
        options = {**options, option: read(argument.strip())}
    return factory(**options)


__all__ = ["ARGUMENTS", "POLICIES", "Policy", "PolicyFactory", "make_policy"]
