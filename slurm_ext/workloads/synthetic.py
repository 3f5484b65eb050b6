"""A seeded synthetic workload in the style of Lublin & Feitelson (2003), as used by ``002_*``.

- Sizes: a job is serial with probability ``serial_prob``; otherwise ``log2(size)`` follows the
  model's two-stage uniform distribution on ``[u_low, u_med]`` / ``[u_med, u_high]`` (with
  ``u_high = log2(nodes)``), and the size is rounded to a power of two with probability
  ``pow2_prob``.
- Run times: ``ln(run time)`` follows the model's hyper-gamma distribution whose mixing
  probability falls with the job size (larger jobs run longer).
- Requested times: the run time times a user over-estimate factor drawn in ``[1, max_overestimate]``,
  rounded up to a round wall-clock value (the way users pick limits).
- Arrivals: a Poisson process whose rate gives the offered ``load`` (node-seconds asked per
  node-second of machine); set ``mean_interarrival`` to fix the rate directly instead.

The parameters are the model's published defaults; the daily arrival cycle is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slurm_ext.workloads.model import SimJob, Workload

_ROUND_LIMITS = np.array(
    [60, 300, 600, 900, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 18 * 3600, 24 * 3600,
     36 * 3600, 48 * 3600, 72 * 3600, 96 * 3600, 168 * 3600],
    dtype=float,
)  # fmt: skip


@dataclass(frozen=True)
class SyntheticConfig:
    jobs: int = 1000
    nodes: int = 128
    seed: int = 0
    load: float = 0.7
    mean_interarrival: float | None = None  # seconds; overrides ``load``
    serial_prob: float = 0.24
    pow2_prob: float = 0.75
    u_low: float = 0.8
    u_med_offset: float = 2.5  # u_med = log2(nodes) - offset
    u_prob: float = 0.86
    # hyper-gamma of ln(run time): two gamma components (shape a, scale b)
    a1: float = 4.2
    b1: float = 0.94
    a2: float = 312.0
    b2: float = 0.03
    pa: float = -0.0054  # mixing probability p = pa * size + pb
    pb: float = 0.78
    max_runtime: float = 7 * 24 * 3600.0
    max_overestimate: float = 5.0

    def __post_init__(self) -> None:
        if self.jobs < 1 or self.nodes < 1:
            raise ValueError(f"need jobs >= 1 and nodes >= 1, got {self.jobs}, {self.nodes}")
        if self.load <= 0:
            raise ValueError(f"load must be > 0, got {self.load}")


def _sizes(cfg: SyntheticConfig, rng: np.random.Generator) -> np.ndarray:
    n = cfg.jobs
    u_high = np.log2(cfg.nodes)
    u_med = max(cfg.u_low, u_high - cfg.u_med_offset)
    low_part = rng.random(n) < cfg.u_prob
    logs = np.where(low_part, rng.uniform(cfg.u_low, u_med, n), rng.uniform(u_med, u_high, n))
    pow2 = rng.random(n) < cfg.pow2_prob
    sizes = np.where(pow2, 2.0 ** np.round(logs), np.round(2.0**logs))
    sizes = np.where(rng.random(n) < cfg.serial_prob, 1.0, sizes)
    return np.clip(sizes, 1, cfg.nodes).astype(np.int64)


def _run_times(cfg: SyntheticConfig, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(sizes)
    p = np.clip(cfg.pa * sizes + cfg.pb, 0.0, 1.0)
    first = rng.random(n) < p
    logs = np.where(first, rng.gamma(cfg.a1, cfg.b1, n), rng.gamma(cfg.a2, cfg.b2, n))
    return np.clip(np.round(np.exp(logs)), 1.0, cfg.max_runtime)


def _limits(cfg: SyntheticConfig, runs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    wanted = runs * rng.uniform(1.0, cfg.max_overestimate, len(runs))
    k = np.searchsorted(_ROUND_LIMITS, wanted)
    rounded = _ROUND_LIMITS[np.minimum(k, len(_ROUND_LIMITS) - 1)]
    return np.maximum(rounded, runs)  # beyond the last round value: the run time itself


def generate(cfg: SyntheticConfig) -> Workload:
    """Generate ``cfg.jobs`` jobs; the same config always gives the same workload."""
    rng = np.random.default_rng(cfg.seed)
    sizes = _sizes(cfg, rng)
    runs = _run_times(cfg, sizes, rng)
    limits = _limits(cfg, runs, rng)
    mean_ia = cfg.mean_interarrival
    if mean_ia is None:
        # Offered load = (mean node-seconds per job) / (nodes * mean inter-arrival).
        mean_ia = float((sizes * runs).mean()) / (cfg.load * cfg.nodes)
    submits = np.round(np.cumsum(rng.exponential(mean_ia, cfg.jobs)))
    submits -= submits[0]
    jobs = [
        SimJob(k + 1, s, n, lim, r)
        for k, (s, n, lim, r) in enumerate(
            zip(submits.tolist(), sizes.tolist(), limits.tolist(), runs.tolist(), strict=True)
        )
    ]
    return Workload(jobs, cfg.nodes, f"synthetic-{cfg.jobs}-{cfg.nodes}-s{cfg.seed}")
