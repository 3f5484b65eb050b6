"""Names the CLI accepts for ``--policy``: the simulator's base schedulers and the policies.

``fcfs``, ``easy``, ``backfill`` (``backfill:D``), ``conservative`` are rigid baselines run by the
simulator's own fast passes (no snapshots). Any other name is looked up in
``slurm_ext.policies.POLICIES`` (``make_policy``), and runs on top of the base scheduler given by
``--base`` unless the policy's ``schedules_jobs`` says it is the whole scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slurm_ext.policies import ARGUMENTS, POLICIES, Policy, make_policy
from slurm_ext.sim.schedulers import BASE_SCHEDULERS, base_scheduler

RIGID = tuple(k for k in BASE_SCHEDULERS if k != "none")


@dataclass(frozen=True)
class Resolved:
    name: str
    scheduler: str
    policy: Policy | None


def policy_names() -> list[str]:
    return [*RIGID, *sorted(k for k in POLICIES if k not in RIGID)]


# the policies that take SD-Policy's options (``--share-cores``, ``--sharing-factor``)
SD_NAMES = ("sd", "sd-dynamic")


def resolve(name: str, base: str = "easy", sd_options: dict[str, Any] | None = None) -> Resolved:
    """Map a ``--policy`` name to a base scheduler and a policy object (new for every run);
    ``sd_options`` go to SD-Policy, and no other policy may be named with them (the rigid
    baselines may: they take none)."""
    key = name.strip().lower()
    if (
        sd_options
        and key.partition(":")[0] not in SD_NAMES
        and key not in RIGID
        and not key.startswith("backfill:")
    ):
        raise ValueError(
            f"--share-cores, --sharing-factor and --runtime-model apply to SD-Policy (sd, sd:N, sd-dynamic),"
            f" not {name!r}"
        )
    if key in RIGID or key.startswith("backfill:"):
        base_scheduler(key)  # validates backfill:D
        return Resolved(key, key, None)
    if key.partition(":")[0] not in POLICIES:
        with_argument = ", ".join(f"{k}:{option.upper()}" for k, (option, _) in ARGUMENTS.items())
        raise ValueError(f"unknown policy {name!r}; valid: {', '.join(policy_names())}; also {with_argument}")
    policy = make_policy(key, **(sd_options or {}))  # a bad argument (sd:0.5) says what it must be
    base_scheduler(base)
    return Resolved(key, base, policy)
