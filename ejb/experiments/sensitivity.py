"""Sensitivity analysis (section 6.2, Figure 8): experiment 1 under varied O_max, λ and Δ.

One parameter varies at a time, the others keep their values from ``base``. Runs with the
same parameters are computed once (the default point appears in every sweep).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ejb.experiments.one_elastic import OneElasticResult, one_elastic
from ejb.params import EJBParams
from slurm_ext.sim import Workload

O_MAX_VALUES = (2, 4, 8, 16, 32, 64)
MIGRATION_MINUTES = (1, 2, 4, 6, 8, 10)
DELTA_VALUES = (0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
PARAMETERS = ("o_max", "migration", "delta")


@dataclass(frozen=True, slots=True)
class Point:
    parameter: str  # o_max | migration | delta
    value: float  # migration in seconds
    targets: int
    tt_before: float  # mean baseline turnaround of the targets
    tt_after: float  # mean elastic turnaround
    wait_change: float
    run_change: float
    tt_change: float
    ci_low: float
    ci_high: float


def sweep_values(
    o_max: Sequence[int] = O_MAX_VALUES,
    migration_minutes: Sequence[float] = MIGRATION_MINUTES,
    delta: Sequence[float] = DELTA_VALUES,
    *,
    migration_seconds: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """The sweep's (parameter, value) points; λ in seconds (given in minutes, or in seconds)."""
    lam = [float(v) for v in migration_seconds] if migration_seconds is not None else None
    return (
        [("o_max", float(v)) for v in o_max]
        + [("migration", x) for x in (lam if lam is not None else [60.0 * m for m in migration_minutes])]
        + [("delta", float(d)) for d in delta]
    )


def sensitivity(
    workload: Workload,
    base: EJBParams | None = None,
    points: Sequence[tuple[str, float]] | None = None,
    *,
    sample: int = 1,
    workers: int = 1,
    rule: str = "table3",
    progress: Callable[..., None] | None = None,
) -> list[Point]:
    """One row per sweep point; ``progress(done, total, note)`` after each point (note: its result)."""
    base = base or EJBParams()
    points = list(points) if points is not None else sweep_values()
    cache: dict[EJBParams, OneElasticResult] = {}
    out: list[Point] = []
    for k, (name, value) in enumerate(points):
        params = point_params(base, name, value)
        if params not in cache:
            cache[params] = one_elastic(workload, params, sample=sample, workers=workers, rule=rule)
        r = cache[params]
        out.append(point_of(name, value, r))
        if progress is not None:
            tt = r.turnaround
            progress(k + 1, len(points), f"{name}={value:g}: t_t {tt.change * 100:+.1f}% ({r.seconds:.0f} s)")
    return out


def point_params(base: EJBParams, name: str, value: float) -> EJBParams:
    """``base`` with the swept parameter ``name`` set to ``value``."""
    if name not in PARAMETERS:
        raise ValueError(f"unknown parameter {name!r}; valid: {', '.join(PARAMETERS)}")
    change: dict[str, Any] = {name: int(value) if name == "o_max" else float(value)}  # one of PARAMETERS
    return replace(base, **change)


def point_of(name: str, value: float, r: OneElasticResult) -> Point:
    """A sweep point's row from its experiment 1."""
    tt = r.turnaround
    lo, hi = tt.ci_change
    return Point(name, value, tt.n, tt.before, tt.after, r.wait.change, r.run.change, tt.change, lo, hi)
