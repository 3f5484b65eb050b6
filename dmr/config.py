"""Runtime settings from environment variables, and the check of ``check_status`` arguments.

=====================  ==========================================================  =================
variable               meaning                                                     default
=====================  ==========================================================  =================
DMR_SERVICE            ``host:port`` of the control service (``slurm-ext serve``)   127.0.0.1:7117
DMR_INHIBIT_SECONDS    after a call that asked the service, calls within this       0 (off)
                       many seconds return "no action" without asking it
DMR_INHIBIT_CALLS      ask the service only every N-th call; the others return      1 (every call)
                       "no action" without asking it
DMR_TIMEOUT            seconds to wait for an answer (an expansion may take         60
                       the service's whole expand deadline)
DMR_JOIN_TIMEOUT       seconds new groups of ranks may take to start and connect    30
                       (after that the expansion is undone: no action)
DMR_DISABLE            1: every call returns "no action" (no warning)               0
=====================  ==========================================================  =================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from slurm_ext.protocol import DEFAULT_PORT, parse_address


class DMRArgumentError(ValueError):
    """Invalid arguments to ``check_status``/``icheck_status``."""


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise DMRArgumentError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise DMRArgumentError(f"{name}={raw!r} must be >= 0")
    return value


@dataclass(frozen=True)
class Settings:
    service: tuple[str, int]
    inhibit_seconds: float = 0.0
    inhibit_calls: int = 1
    timeout: float = 60.0
    join_timeout: float = 30.0
    disabled: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        calls = int(_float("DMR_INHIBIT_CALLS", 1))
        return cls(
            service=parse_address(os.environ.get("DMR_SERVICE", f"127.0.0.1:{DEFAULT_PORT}")),
            inhibit_seconds=_float("DMR_INHIBIT_SECONDS", 0.0),
            inhibit_calls=max(1, calls),
            timeout=_float("DMR_TIMEOUT", 60.0),
            join_timeout=_float("DMR_JOIN_TIMEOUT", 30.0),
            disabled=os.environ.get("DMR_DISABLE", "0") == "1",
        )


def reachable(current: int, lo: int, hi: int, factor: int) -> list[int]:
    """Sizes in ``[lo, hi]`` reachable from ``current`` by multiplying/dividing by ``factor``."""
    out = {current} if lo <= current <= hi else set()
    n = current
    while n * factor <= hi:
        n *= factor
        if n >= lo:
            out.add(n)
    n = current
    while n % factor == 0 and n // factor >= lo:
        n //= factor
        if n <= hi:
            out.add(n)
    return sorted(out)


def validate(min_procs: int, max_procs: int, factor: int, preferred: int | None, current: int) -> None:
    """Raise :class:`DMRArgumentError` (one line) unless the arguments make sense for ``current`` ranks."""
    for name, value in (("min_procs", min_procs), ("max_procs", max_procs), ("factor", factor)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DMRArgumentError(f"{name} must be an int, got {value!r}")
    if min_procs < 1:
        raise DMRArgumentError(f"min_procs must be >= 1, got {min_procs}")
    if min_procs > max_procs:
        raise DMRArgumentError(f"min_procs ({min_procs}) > max_procs ({max_procs})")
    if factor < 2:
        raise DMRArgumentError(f"factor must be >= 2, got {factor}")
    if preferred is not None:
        if not min_procs <= preferred <= max_procs:
            raise DMRArgumentError(
                f"preferred ({preferred}) outside [min_procs, max_procs] = [{min_procs}, {max_procs}]"
            )
        if preferred not in reachable(current, min_procs, max_procs, factor):
            raise DMRArgumentError(
                f"preferred ({preferred}) is not reachable from {current} ranks by factor {factor}"
            )
    if not reachable(current, min_procs, max_procs, factor):
        raise DMRArgumentError(
            f"no size in [{min_procs}, {max_procs}] is reachable from {current} ranks by factor {factor}"
        )
