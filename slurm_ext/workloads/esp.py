"""The modified ESP workload of ``000_*`` (Table I): 230 jobs of 14 types, with chosen types
made malleable or evolving.

What comes from the paper
-------------------------
* The 14 types with their size (fraction of the machine), count and static execution time
  (Table I); the machine is 15 nodes x 8 cores, so sizes are counted in 120 cores, each a
  schedulable unit here (the evolving jobs ask for "4 additional cores").
* Malleability is given per *type*: 40% malleable is types F, G, H, I, K, L and 50% is F, I,
  J, K, L (§V.B); with 10% evolving jobs (F, G, H), 40% malleable is I, J, K, L (§V.C).
  Other fractions are not listed; they get the type subset whose job count is closest to the
  fraction (ties broken by the seed), so 100% is every type.
* A malleable job is submitted at its minimum (the Table I size) with a maximum; the only
  example in the paper (``qsub -l nodes=2 ... -L max=6``, §IV.B) is three times the minimum,
  so the maximum is ``max_factor`` (3) times the size, capped at the machine.
* Evolving jobs ask for 4 more cores at 16% of their run and, if refused, again at 25%
  (§V.A).

What is reconstructed (the paper does not say; the original ESP benchmark does roughly this)
-----------------------------------------------------------------------------------------------
* Submission: the jobs are put in a seeded pseudo-random order; an initial batch asking for
  about twice the machine is submitted at time 0, then one job every ``interval`` seconds.
* Time limits equal the static execution times (``walltime_factor`` 1.0): the synthetic
  runs take exactly their time, and an expanded job ends before its limit.
* The ESP rule that full-machine Z jobs run ahead of all others is not modelled (the
  simulator queue is first come, first served); Z jobs queue like any other.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from itertools import combinations

from slurm_ext.model import MalleableSpec
from slurm_ext.workloads.model import EvolvingSpec, SimJob, Workload


@dataclass(frozen=True, slots=True)
class EspType:
    name: str
    fraction: float  # of the machine
    count: int
    static_time: float  # seconds, at the Table I size
    evolving_time: float | None = None  # Table I, when the evolving ask is granted


# 000_* Table I
ESP_TYPES: tuple[EspType, ...] = (
    EspType("A", 0.03125, 75, 267),
    EspType("B", 0.06250, 9, 322),
    EspType("C", 0.50000, 3, 534),
    EspType("D", 0.25000, 3, 616),
    EspType("E", 0.50000, 3, 315),
    EspType("F", 0.06250, 9, 1846, 1230),
    EspType("G", 0.12500, 6, 1334, 1067),
    EspType("H", 0.15820, 6, 1067, 896),
    EspType("I", 0.03125, 24, 1432),
    EspType("J", 0.06250, 24, 725),
    EspType("K", 0.09570, 15, 487),
    EspType("L", 0.12500, 36, 366),
    EspType("M", 0.25000, 15, 187),
    EspType("Z", 1.00000, 2, 100),
)
ESP_JOBS = sum(t.count for t in ESP_TYPES)  # 230
EVOLVING_TYPES = "FGH"
EVOLVING_POINTS = (0.16, 0.25)
EVOLVING_EXTRA = 4  # cores

# The type sets 000_* names (fractions are the nominal ones of Fig. 4/Fig. 7).
PAPER_MALLEABLE_TYPES: dict[tuple[float, float], str] = {
    (0.4, 0.0): "FGHIKL",
    (0.5, 0.0): "FIJKL",
    (0.4, 0.1): "IJKL",
}


def esp_size(t: EspType, units: int) -> int:
    """Cores of a type on a machine of ``units`` cores (half rounds up, at least 1)."""
    return max(1, math.floor(t.fraction * units + 0.5))


def malleable_types(fraction: float, *, exclude: str = "", seed: int = 0) -> str:
    """Types made malleable for a nominal ``fraction`` of the 230 jobs (see module doc)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"malleable fraction must be in [0, 1], got {fraction}")
    evolving = round(sum(t.count for t in ESP_TYPES if t.name in exclude) / ESP_JOBS, 1)
    named = PAPER_MALLEABLE_TYPES.get((round(fraction, 2), evolving))
    if named is not None and not set(named) & set(exclude):
        return named
    pool = [t for t in ESP_TYPES if t.name not in exclude]
    if fraction >= 1.0 and not exclude:
        return "".join(t.name for t in pool)
    target = fraction * ESP_JOBS
    best: list[tuple[str, ...]] = []
    best_gap = math.inf
    for k in range(len(pool) + 1):
        for combo in combinations(pool, k):
            gap = abs(sum(t.count for t in combo) - target)
            if gap < best_gap - 1e-9:
                best, best_gap = [tuple(t.name for t in combo)], gap
            elif abs(gap - best_gap) <= 1e-9:
                best.append(tuple(t.name for t in combo))
    return "".join(random.Random(seed).choice(sorted(best)))


def esp_workload(
    malleable_fraction: float = 0.0,
    evolving_fraction: float = 0.0,
    seed: int = 0,
    *,
    units: int = 120,
    max_factor: int = 3,
    selection: str = "types",
    interval: float = 30.0,
    initial_load: float = 2.0,
    walltime_factor: float = 1.0,
) -> Workload:
    """The modified ESP workload as a simulator :class:`Workload` (see the module doc).

    ``selection="types"`` makes whole types malleable as the paper did; ``"jobs"`` picks
    ``round(fraction * 230)`` jobs at random instead. ``evolving_fraction`` picks jobs of types
    F, G and H (all 21 of them at 0.1, the paper's 10%).
    """
    if selection not in ("types", "jobs"):
        raise ValueError(f"selection must be 'types' or 'jobs', got {selection!r}")
    if not 0.0 <= evolving_fraction <= 1.0:
        raise ValueError(f"evolving fraction must be in [0, 1], got {evolving_fraction}")
    if max_factor < 1 or units < 1 or interval < 0 or walltime_factor < 1.0:
        raise ValueError("max_factor and units must be >= 1, interval >= 0, walltime_factor >= 1")
    rng = random.Random(seed)
    kinds = [t for t in ESP_TYPES for _ in range(t.count)]
    rng.shuffle(kinds)

    # evolving jobs: among F, G, H only (the types with an evolving time in Table I)
    evo_pool = [i for i, t in enumerate(kinds) if t.name in EVOLVING_TYPES]
    n_evo = min(len(evo_pool), round(evolving_fraction * ESP_JOBS))
    evolving = set(random.Random(seed + 1).sample(evo_pool, n_evo))
    evo_types = "".join(sorted({kinds[i].name for i in evolving})) if n_evo == len(evo_pool) else ""

    if selection == "types":
        mtypes = malleable_types(malleable_fraction, exclude=evo_types, seed=seed)
        malleable = {i for i, t in enumerate(kinds) if t.name in mtypes and i not in evolving}
    else:
        pool = [i for i in range(len(kinds)) if i not in evolving]
        k = min(len(pool), round(malleable_fraction * ESP_JOBS))
        malleable = set(random.Random(seed + 2).sample(pool, k))

    jobs: list[SimJob] = []
    t_submit = 0.0
    initial = 0
    for i, t in enumerate(kinds):
        size = esp_size(t, units)
        if initial < initial_load * units:
            initial += size  # part of the initial batch at time 0
        else:
            t_submit += interval
        spec = MalleableSpec(size, max(size, min(units, max_factor * size))) if i in malleable else None
        evo = EvolvingSpec(EVOLVING_POINTS, EVOLVING_EXTRA) if i in evolving else None
        jobs.append(
            SimJob(
                job_id=i + 1,
                submit=t_submit,
                nodes=size,
                time_limit=t.static_time * walltime_factor,
                run_time=t.static_time,
                malleable=spec,
                evolving=evo,
                name=t.name,
            )
        )
    name = f"esp-m{malleable_fraction:g}-e{evolving_fraction:g}-s{seed}"
    return Workload(jobs, units, name)
